import { loopbackHostOf } from '../project/loopback-hosts.js';
import type { CheckResult } from '../checks/check.js';
import type { ProbeContext } from '../checks/probe-context.js';

/**
 * `authstrap verify --frontend URL`: the frontend on the checklist. Its page loads; a sign-up and
 * a sign-in through its Better Auth (`URL/api/auth`) give a session cookie that the backend itself
 * accepts. That last part is what breaks in practice: another AUTH_SECRET, another cookie name,
 * the adapter pointed at another backend. The user made here is removed with verify's others.
 */

/** Better Auth's session cookie (the `__Secure-` name on https), as a `cookie` header. */
export function sessionCookieOf(response: Response): string | undefined {
  const line = response.headers.getSetCookie().find((cookie) => /^(__Secure-)?better-auth\.session_token=/.test(cookie));
  return line?.split(';')[0];
}

type Outcome = Omit<CheckResult, 'id' | 'title'>;

export async function frontendChecks(context: ProbeContext, frontendUrl: string, backendUrl: string, timeoutMs = 30_000): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const record = (id: string, title: string, outcome: Outcome) => results.push({ id, title, ...outcome });
  const frontend = new URL(frontendUrl);
  const backend = new URL(backendUrl);
  const call = (pathname: string, body: unknown) =>
    fetch(new URL(pathname, frontend), {
      method: 'POST',
      // Better Auth refuses a POST without an Origin it trusts: the page's own.
      headers: { 'content-type': 'application/json', origin: frontend.origin },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });

  // 1. The page itself.
  let page: Response;
  try {
    page = await fetch(frontend, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    record('frontend-page', 'Frontend page loads', { status: 'fail', message: `${frontend.href} does not answer (${(error as Error).message})`, fix: 'start the frontend (npm run dev in its folder) or pass its address with --frontend' });
    return results;
  }
  const html = (page.headers.get('content-type') ?? '').includes('text/html');
  record('frontend-page', 'Frontend page loads', page.ok && html ? { status: 'pass', message: `${frontend.href} answers ${page.status} with a page` } : { status: 'fail', message: `${frontend.href} answers ${page.status} ${page.headers.get('content-type') ?? ''}` });

  const [frontendHost, backendHost] = [loopbackHostOf(frontend.href), loopbackHostOf(backend.href)];
  if (frontendHost && backendHost && frontendHost !== backendHost) {
    record('frontend-same-site', 'Frontend and backend on the same site', {
      status: 'warn',
      message: `the frontend is on ${frontend.hostname} and the backend on ${backend.hostname}: browsers treat them as different sites and drop the session cookie; use localhost for both`,
      fix: 'authstrap fix',
    });
  }

  // 2. Sign-up through the frontend; 3. the backend accepts that session; 4. sign-in likewise.
  const email = `verify-frontend-${context.runId}@example.com`;
  const password = `Verify-${context.runId}-password`;
  const backendAccepts = async (cookie: string | undefined) => {
    if (!cookie) return { ok: false, reason: 'no better-auth.session_token cookie was set' };
    const answer = await context.http('GET', '/api/auth/get-session', { cookie });
    const user = answer.body?.data?.user;
    if (answer.status !== 200 || user?.email !== email) return { ok: false, reason: `the backend answers ${answer.status} to that cookie` };
    if (!context.created.userIds.includes(user.id)) context.created.userIds.push(user.id);
    for (const organization of answer.body.data.organizations ?? []) if (!context.created.organizationIds.includes(organization.id)) context.created.organizationIds.push(organization.id);
    return { ok: true, reason: '' };
  };
  const sameSecret = 'check that the frontend has the backend\'s AUTH_SECRET, and AUTHSTRAP_URL pointing at this backend, in .env.local';

  const signUp = await call('/api/auth/sign-up/email', { email, password, name: 'Verify Frontend' }).catch((error: Error) => error);
  if (signUp instanceof Error || !signUp.ok) {
    const reason = signUp instanceof Error ? signUp.message : `${signUp.status} ${(await signUp.text()).slice(0, 200)}`;
    record('frontend-sign-up', 'Sign-up through the frontend', { status: 'fail', message: `POST /api/auth/sign-up/email: ${reason}`, fix: 'check the frontend\'s log, and SERVICE_API_KEY and AUTHSTRAP_URL in its .env.local' });
    return results;
  }
  const signedUp = await backendAccepts(sessionCookieOf(signUp));
  record('frontend-sign-up', 'Sign-up through the frontend, session accepted by the backend', signedUp.ok ? { status: 'pass', message: `${email} signed up; the backend accepts the cookie` } : { status: 'fail', message: signedUp.reason, fix: sameSecret });

  const signIn = await call('/api/auth/sign-in/email', { email, password }).catch((error: Error) => error);
  if (signIn instanceof Error || !signIn.ok) {
    record('frontend-sign-in', 'Sign-in through the frontend', { status: 'fail', message: `POST /api/auth/sign-in/email: ${signIn instanceof Error ? signIn.message : signIn.status}` });
    return results;
  }
  const signedIn = await backendAccepts(sessionCookieOf(signIn));
  record('frontend-sign-in', 'Sign-in through the frontend, session accepted by the backend', signedIn.ok ? { status: 'pass', message: 'the backend accepts the new session' } : { status: 'fail', message: signedIn.reason, fix: sameSecret });
  return results;
}
