/**
 * An operator signed in as a user in this browser tab (the app's /operator pages; docs/operator.md
 * in authstrap, "The pages"). The backend answers an impersonation with a session token of the
 * user and sets no cookie, so the operator's own session (the cookie) stays theirs: the tab keeps
 * the token in sessionStorage, which no other tab reads and which ends with the tab, and the
 * typed client of lib/api.ts sends it as `Authorization: Bearer` instead of the cookie.
 */
export interface HeldImpersonation {
  /** The user's session token: a secret, kept only while the impersonation lasts. */
  token: string;
  sessionId: string;
  userId: string;
  email: string;
  name: string;
  /** When the backend ends the session, ISO 8601: it is never renewed. */
  expiresAt: string;
}

const storageKey = 'authstrap.impersonation';

/** This tab's impersonation, or undefined (none, on the server, or one past its end, which is forgotten). */
export function heldImpersonation(): HeldImpersonation | undefined {
  if (typeof window === 'undefined') return undefined;
  let held: HeldImpersonation | null = null;
  try {
    held = JSON.parse(sessionStorage.getItem(storageKey) ?? 'null');
  } catch {
    // Unreadable: as if there were none.
  }
  if (held && Date.parse(held.expiresAt) > Date.now()) return held;
  sessionStorage.removeItem(storageKey);
  return undefined;
}

/** Keeps the impersonation for this tab; the pages load again to act as the user. */
export function holdImpersonation(held: HeldImpersonation): void {
  sessionStorage.setItem(storageKey, JSON.stringify(held));
}

export function forgetImpersonation(): void {
  sessionStorage.removeItem(storageKey);
}
