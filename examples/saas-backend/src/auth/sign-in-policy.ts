import type { Database, Queryable } from '../db/database.js';
import { lockUntilCommit } from '../db/locks.js';
import { byUser, currentRequestContext, recordAuthEvent, recordEvent } from '../events/events.js';
import { HttpError } from '../http/errors.js';
import { recordRefusalOnce } from '../idempotency/held-transaction.js';
import type { KeyedWrite } from '../idempotency/keyed-write.js';

/**
 * The one policy point of sign-in (docs/enterprise-identity.md, section 3). The rule is SQL,
 * `authstrap.sign_in_verdict`, because a trigger must ask it too: on every `session` row made and
 * every `account.password` written, whoever writes it (these routes, Better Auth through the
 * service API, a script), so it holds on both sign-in paths. `decideSignIn` asks the same rule
 * early, for an answer with a message before the rest of the work (a bcrypt comparison, a mail).
 */

/** How Better Auth signed someone in, as the adapter's path header names it (3.4). */
export type BetterAuthMethod = 'password' | 'sign-up' | 'password-reset' | 'magic-link' | 'email-otp' | 'social' | 'passkey' | 'sso' | 'other';

/** How an attempt proves who it is; the strings are what `session.authMethod` stores. */
export type SignInMethod =
  | 'password'
  | 'sign-up'
  | 'invitation'
  | 'password-reset'
  | 'password-change'
  | 'password-set'
  | 'email-change'
  | 'sso'
  /** An operator signed in as the user (src/operator/impersonation.ts); only with `session.impersonatedBy`. */
  | 'impersonation'
  | `better-auth:${BetterAuthMethod}`
  | 'service'
  | 'unknown';

export interface SignInAttempt {
  /** The address signing in, up, or resetting. */
  email: string;
  /** null when no account exists yet (a sign-up), or when only the domain may decide (before a password is checked). */
  userId: string | null;
  method: SignInMethod;
  /** The organization the session will act in, when it is known. */
  organizationId?: string | null;
  /** For 'sso': the connection that proved the address. */
  connectionId?: string | null;
}

export type SignInVerdict =
  | { allowed: true; breakGlass: boolean }
  | { allowed: false; code: 'SSO_REQUIRED'; organizationId: string; slug: string; domain: string }
  /** `organizationIds`: each organization whose directory turned the user off, of those the attempt concerns. */
  | { allowed: false; code: 'DEPROVISIONED'; organizationIds: string[] }
  | { allowed: false; code: 'BANNED' }
  /** Only the session trigger says this: an impersonation session that is not an operator's of a non-operator. */
  | { allowed: false; code: 'IMPERSONATION_REFUSED'; reason: 'not-marked' | 'not-an-operator' | 'operator-target' | 'not-at-creation' };

/** "May this address (user) sign in by this method, into this organization, now?" One statement. */
export async function decideSignIn(db: Queryable, attempt: SignInAttempt): Promise<SignInVerdict> {
  const { rows } = await db.query<{ verdict: SignInVerdict }>('SELECT authstrap.sign_in_verdict($1, $2, $3, $4, $5) AS "verdict"', [
    attempt.email,
    attempt.userId,
    attempt.method,
    attempt.organizationId ?? null,
    attempt.connectionId ?? null,
  ]);
  return rows[0]!.verdict;
}

/**
 * The verdict as the answer: nothing when allowed, else the 403. `SSO_REQUIRED` says where to sign
 * in instead (`appUrl`: APP_URL, where the links in mail go too).
 */
export function refusal(verdict: SignInVerdict, appUrl: string): HttpError | undefined {
  if (verdict.allowed) return undefined;
  switch (verdict.code) {
    case 'SSO_REQUIRED':
      return new HttpError(403, 'SSO_REQUIRED', `${verdict.domain} signs in with single sign-on`, {
        organization: verdict.slug,
        signInWith: `${appUrl}/sign-in/sso?${new URLSearchParams({ organization: verdict.slug })}`,
      });
    case 'DEPROVISIONED':
      return new HttpError(403, 'DEPROVISIONED', "Your access was turned off by your organization's directory");
    case 'BANNED':
      return new HttpError(403, 'BANNED', 'This account is banned');
    case 'IMPERSONATION_REFUSED':
      return new HttpError(403, 'FORBIDDEN', `Only an operator signs in as another user, who is no operator (${verdict.reason})`);
  }
}

/**
 * The 403 of a refusal raised by the rule's triggers (SQLSTATE AS403, the verdict as DETAIL), so
 * that it reads the same as one `decideSignIn` answered. A detail that is not a verdict (it cannot
 * be, unless someone raised AS403 by hand) is still a refusal, without a reason to give.
 */
export function refusalOfDatabaseError(detail: string | undefined, appUrl: string): HttpError {
  const verdict = refusedVerdictOf({ code: 'AS403', detail });
  return (verdict && refusal(verdict, appUrl)) ?? new HttpError(403, 'FORBIDDEN', 'Sign-in refused');
}

/**
 * Records a refused attempt (`session.sign_in_refused`, see `refusalOrganizations`) and returns
 * its 403; nothing when the verdict allows it.
 */
export async function refuseSignIn(db: Database, verdict: SignInVerdict, attempt: SignInAttempt, appUrl: string): Promise<HttpError | undefined> {
  if (verdict.allowed) return undefined;
  await recordSignInRefusal(db, verdict, attempt);
  return refusal(verdict, appUrl);
}

/**
 * The audit logs a refusal belongs in (docs/enterprise-identity.md, 3.2): the organization whose
 * policy refused, since its owners and admins answer for it. SSO_REQUIRED: the organization that
 * requires SSO of the address. DEPROVISIONED: each organization whose directory turned the user
 * off (once in each). Anything else (an operator's ban, an impersonation refused) is the
 * platform's business, not an organization's: `null`, once, in the user's own security events.
 * Each organization already sees a ban itself (`operator.banned_user`), not each attempt after it.
 */
function refusalOrganizations(verdict: Extract<SignInVerdict, { allowed: false }>): (string | null)[] {
  if (verdict.code === 'SSO_REQUIRED') return [verdict.organizationId];
  // A verdict from before the rule named the organizations (a trigger of an older migration) names none.
  if (verdict.code === 'DEPROVISIONED' && verdict.organizationIds?.length) return verdict.organizationIds;
  return [null];
}

/**
 * `session.sign_in_refused` for a refused attempt, in each audit log it belongs in, in a
 * transaction of its own; for a request with an `Idempotency-Key`, in its keyed write with the
 * refusal's answer kept, so that the request sent again (its answer lost) is answered the same and
 * recorded once (`recordRefusalOnce`). `keyed`: the request's keyed write, when its statements do
 * not run in it (the service API's).
 */
async function recordSignInRefusal(db: Database, verdict: Extract<SignInVerdict, { allowed: false }>, attempt: SignInAttempt, keyed?: KeyedWrite): Promise<void> {
  await recordRefusalOnce(db, async (tx) => {
    for (const organizationId of refusalOrganizations(verdict)) {
      await recordAuthEvent(
        tx,
        {
          type: 'session.sign_in_refused',
          organizationId,
          userId: attempt.userId,
          entity: 'User',
          entityId: attempt.userId ?? undefined,
          data: { email: attempt.email, method: attempt.method, code: verdict.code },
        },
        { actorType: 'system' },
      );
    }
  }, keyed);
}

/**
 * A write the rule's triggers refused on Better Auth's path (the service API: a session, a
 * password; `method` as its adapter names the endpoint), on the record as the backend's own
 * refusals are. The trigger's detail names whom it refused (`attempt`); the request's statements
 * are rolled back by now, so this is a transaction of its own, and a user made in the same
 * transaction (a sign-up) is gone with it: the refusal then names the address only, as a refused
 * sign-up on the backend's path does. `keyed`: the write's Idempotency-Key, whose answer then
 * keeps the refusal (the adapter sends a write again when its answer is lost). Any other error:
 * nothing.
 */
export async function recordRefusedWrite(db: Database, error: unknown, method: SignInMethod, keyed?: KeyedWrite): Promise<void> {
  const verdict = refusedVerdictOf(error);
  const attempt = refusedAttemptOf(error);
  if (!verdict || !attempt || verdict.allowed) return;
  const exists = attempt.userId !== null && (await db.query(`SELECT 1 FROM "User" WHERE "id" = $1`, [attempt.userId])).rows.length === 1;
  await recordSignInRefusal(db, verdict, { email: attempt.email, userId: exists ? attempt.userId : null, method }, keyed);
}

/**
 * An owner's break-glass sign-in (the session trigger marked its method `…:break-glass`) in the
 * audit log of the organization that requires SSO of their address, `sso.break_glass_used`, in
 * the session's transaction: on the backend's routes and on Better Auth's path (the service
 * API's sessions) alike, so that the organization sees every password sign-in past its policy.
 * The user is its actor; the transaction's own context is left as it is. `email`: the user's
 * address, when the caller has it.
 */
export async function recordBreakGlass(tx: Queryable, session: { id: string; userId: string; authMethod: string }, email?: string): Promise<void> {
  if (!session.authMethod.endsWith(':break-glass')) return;
  const address = email ?? (await tx.query<{ email: string }>(`SELECT "email" FROM "User" WHERE "id" = $1`, [session.userId])).rows[0]!.email;
  const byDomain = await decideSignIn(tx, { email: address, userId: null, method: 'password' });
  if (byDomain.allowed || byDomain.code !== 'SSO_REQUIRED') return;
  await recordEvent(
    tx,
    { type: 'sso.break_glass_used', organizationId: byDomain.organizationId, userId: session.userId, entity: 'session', entityId: session.id, data: { method: session.authMethod } },
    { ...currentRequestContext(), ...byUser(session.userId) },
  );
}

/** What a refusal's DETAIL holds: the verdict, and whom the rule's row triggers refused (identity-sql.ts). */
type RefusalDetail = SignInVerdict & { attempt?: { email: string; userId: string } };

function refusalDetailOf(error: unknown): RefusalDetail | undefined {
  const { code, detail } = (error ?? {}) as { code?: unknown; detail?: unknown };
  if (code !== 'AS403' || typeof detail !== 'string') return undefined;
  try {
    const parsed = JSON.parse(detail) as RefusalDetail;
    return parsed?.allowed === false ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The verdict a trigger of the rule refused with (SQLSTATE AS403), or undefined for any other error. */
export function refusedVerdictOf(error: unknown): SignInVerdict | undefined {
  const detail = refusalDetailOf(error);
  if (!detail) return undefined;
  const { attempt: _attempt, ...verdict } = detail;
  return verdict as SignInVerdict;
}

/** Whom a trigger of the rule refused (the row's user and their address), when it says. */
function refusedAttemptOf(error: unknown): { email: string; userId: string } | undefined {
  return refusalDetailOf(error)?.attempt;
}

/**
 * The header by which the Better Auth adapter (2.2.0 and newer) names the Better Auth endpoint that
 * is writing (its path, e.g. `/sign-in/email`). A hint from the trusted server, used only to name
 * the method a session was made by: nothing is allowed because of it that the rule would not allow.
 */
export const betterAuthPathHeader = 'x-authstrap-better-auth-path';

/**
 * Better Auth's endpoint paths, by the method they sign in with (3.4). The first that matches
 * names it; anything else is `other`, which an organization that requires SSO refuses. Kept here,
 * in the backend, so that it learns a new Better Auth path without an adapter release.
 */
const betterAuthPaths: [RegExp, BetterAuthMethod][] = [
  [/^\/(sign-in\/(email|username)$|two-factor\/)/, 'password'],
  [/^\/sign-up\/email$/, 'sign-up'],
  [/^\/reset-password(\/|$)/, 'password-reset'],
  [/^\/magic-link\/verify$/, 'magic-link'],
  [/^\/(sign-in\/email-otp$|email-otp\/)/, 'email-otp'],
  [/^\/(sso\/callback\/|sso\/saml2\/)/, 'sso'],
  [/^\/(callback\/|oauth2\/callback\/)/, 'social'],
  [/^\/passkey\//, 'passkey'],
];

/**
 * The method a session made through the service API was made by: the Better Auth endpoint its
 * adapter names (`better-auth:<method>`), or `service` for a trusted server that names none (an
 * adapter before 2.2.0, a script): both are refused where SSO is required.
 */
export function betterAuthMethodOf(path: string | undefined): SignInMethod {
  if (path === undefined) return 'service';
  const method = betterAuthPaths.find(([pattern]) => pattern.test(path))?.[1] ?? 'other';
  return `better-auth:${method}`;
}

/** What a policy change turned to "no"; each ends the sessions it concerns (3.5). */
export type RefusingChange =
  /** The organization turned `ssoRequired` on (its owner's session that did so is kept). */
  | { kind: 'sso-required'; organizationId: string; keepSessionId?: string }
  /** A domain became verified while the organization requires SSO. */
  | { kind: 'domain-verified'; organizationId: string; domain: string }
  /** A membership was suspended by a directory. */
  | { kind: 'suspended'; organizationId: string; userId: string }
  /** A connection was disabled or deleted: the sessions it made. */
  | { kind: 'connection-disabled'; organizationId: string; connectionId: string };

/** A session an SSO connection of the organization made ($1): kept when the organization requires SSO. */
const madeBySso = `COALESCE(s."authMethod" = 'sso' AND s."ssoConnectionId" IN (SELECT c."id" FROM "authstrap_sso_connection" c WHERE c."organizationId" = $1), false)`;
/** The domain of the session's user's address, as the rule reads it. */
const usersDomain = `lower(substring(u."email" from '@([^@]*)$'))`;

/**
 * Ends the sessions a policy change has made refusable, in the change's own transaction `tx`
 * (scoped to the organization, as the change's route is, so that it reads the organization's
 * domains and connections). It first takes the exclusive lock the rule's session trigger takes
 * shared: a sign-in in flight commits before this DELETE runs (and is deleted by it), or waits and
 * then meets the new state. Returns how many sessions ended.
 */
export async function endRefusedSessions(tx: Queryable, change: RefusingChange): Promise<number> {
  switch (change.kind) {
    case 'sso-required': {
      await lockUntilCommit(tx, `sign-in:org:${change.organizationId}`);
      const { rowCount } = await tx.query(
        `DELETE FROM "session" s USING "User" u
          WHERE u."id" = s."userId" AND s."id" IS DISTINCT FROM $2::uuid AND NOT ${madeBySso}
            AND ${usersDomain} IN (SELECT d."domain" FROM "authstrap_domain" d WHERE d."organizationId" = $1 AND d."state" IN ('verified', 'failing'))`,
        [change.organizationId, change.keepSessionId ?? null],
      );
      return rowCount;
    }
    case 'domain-verified': {
      await lockUntilCommit(tx, `sign-in:domain:${change.domain}`, `sign-in:org:${change.organizationId}`);
      const { rowCount } = await tx.query(
        `DELETE FROM "session" s USING "User" u
          WHERE u."id" = s."userId" AND ${usersDomain} = $2 AND NOT ${madeBySso}
            AND EXISTS (SELECT 1 FROM "authstrap_sso_policy" p WHERE p."organizationId" = $1 AND p."ssoRequired")`,
        [change.organizationId, change.domain],
      );
      return rowCount;
    }
    case 'suspended': {
      await lockUntilCommit(tx, `sign-in:user:${change.userId}`);
      // Everywhere when the organization owns the address; else only the sessions acting in it.
      const { rowCount } = await tx.query(
        `DELETE FROM "session" s USING "User" u
          WHERE u."id" = s."userId" AND s."userId" = $2
            AND (s."activeOrganizationId" = $1
                 OR ${usersDomain} IN (SELECT d."domain" FROM "authstrap_domain" d WHERE d."organizationId" = $1 AND d."state" IN ('verified', 'failing')))`,
        [change.organizationId, change.userId],
      );
      return rowCount;
    }
    case 'connection-disabled': {
      await lockUntilCommit(tx, `sign-in:org:${change.organizationId}`);
      const { rowCount } = await tx.query(`DELETE FROM "session" WHERE "ssoConnectionId" = $1`, [change.connectionId]);
      return rowCount;
    }
  }
}
