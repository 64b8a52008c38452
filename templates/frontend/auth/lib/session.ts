import { headers } from 'next/headers';
import { auth } from './auth';

/** Who is signed in, as the pages on the server need it. */
export interface CurrentUser {
  user: { id: string; email: string; name: string };
}

/** The backend's own session cookie (docs/frontend.md in authstrap): what a single sign-on sets. */
const backendCookieName = 'session';

/**
 * The request's session, on this server: Better Auth's (a sign-in or sign-up on this app's
 * /api/auth), else the backend's own `session` cookie, which a single sign-on ends with (the
 * backend finishes the identity provider's flow itself, docs/sso.md), asked of the backend. That
 * cookie reaches this server when the app and the backend share a host (localhost, or one origin
 * behind a proxy); on separate hosts it needs `Domain` (docs/frontend.md, "Cookies across origins").
 */
export async function currentSession(): Promise<CurrentUser | null> {
  const requestHeaders = await headers();
  const session = await auth.api.getSession({ headers: requestHeaders });
  if (session) return { user: session.user };
  const backendCookie = cookieOf(requestHeaders.get('cookie'), backendCookieName);
  if (!backendCookie) return null;
  const response = await fetch(`${process.env.AUTHSTRAP_URL}/api/auth/get-session`, {
    headers: { cookie: `${backendCookieName}=${backendCookie}` },
    cache: 'no-store',
  });
  if (!response.ok) return null;
  const { data } = (await response.json()) as { data: CurrentUser };
  return { user: { id: data.user.id, email: data.user.email, name: data.user.name } };
}

/** One cookie's raw value from a Cookie header. */
function cookieOf(header: string | null, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const separator = part.indexOf('=');
    if (separator > 0 && part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim() || undefined;
  }
  return undefined;
}
