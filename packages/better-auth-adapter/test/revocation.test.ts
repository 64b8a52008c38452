import { betterAuth } from 'better-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, authSecret, databaseKinds, serviceApiKey, startBackend, type TestBackend } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';

/**
 * A session revoked at the backend: the backend refuses it at once (every request looks the
 * session up, one statement); Better Auth in the frontend does too unless its cookie cache is on,
 * in which case it trusts the signed cookie until the cache's maxAge. The frontend template keeps
 * the cache off (docs/better-auth.md, "Revoking a session").
 */
describe.each(databaseKinds)('a session revoked at the backend, %s database', (kind) => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend(kind);
  });
  afterAll(() => backend?.stop());

  const makeAuth = (cookieCache: boolean) =>
    betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl: backend.url, serviceKey: serviceApiKey }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      session: { cookieCache: { enabled: cookieCache, maxAge: 300 } },
      logger: { disabled: true },
    });

  /** Signs up and in through Better Auth: the browser's cookies, and the session's token. */
  async function signedIn(auth: ReturnType<typeof makeAuth>, email: string) {
    await auth.api.signUpEmail({ body: { email, password: 'correct horse battery', name: 'Revoked' } });
    const signIn = await auth.api.signInEmail({ body: { email, password: 'correct horse battery' }, returnHeaders: true });
    const cookies = signIn.headers.getSetCookie().map((cookie) => cookie.split(';')[0]!).join('; ');
    return { headers: new Headers({ cookie: cookies }), token: signIn.response.token };
  }

  /** Signs the session out on the backend's own path, as another tab or the user's other device would. */
  async function revokeAtTheBackend(token: string) {
    const signOut = await apiClient(backend.url, { token })('POST', '/api/auth/sign-out');
    expect(signOut.status).toBe(200);
  }

  it('is refused by the backend at once, and by Better Auth without a cookie cache (the template) at once', async () => {
    const auth = makeAuth(false);
    const { headers, token } = await signedIn(auth, 'revoked-now@example.com');
    const backendSession = () => apiClient(backend.url)('GET', '/api/auth/get-session', { headers: { cookie: headers.get('cookie')! } });
    expect((await backendSession()).status).toBe(200);
    expect(await auth.api.getSession({ headers })).not.toBeNull();

    await revokeAtTheBackend(token);
    expect((await backendSession()).status).toBe(401);
    expect((await apiClient(backend.url, { token })('GET', '/api/auth/get-session')).status).toBe(401);
    expect(await auth.api.getSession({ headers })).toBeNull();
  });

  it("with Better Auth's cookie cache on, the frontend still trusts the cookie until maxAge while the backend refuses it", async () => {
    const auth = makeAuth(true);
    const { headers, token } = await signedIn(auth, 'revoked-cached@example.com');
    await revokeAtTheBackend(token);
    // The backend: refused at once, cookie cache or not (it never reads Better Auth's cached copy).
    expect((await apiClient(backend.url)('GET', '/api/auth/get-session', { headers: { cookie: headers.get('cookie')! } })).status).toBe(401);
    // Better Auth: the cached copy in the cookie still says signed in, for up to maxAge ...
    expect((await auth.api.getSession({ headers }))?.user.email).toBe('revoked-cached@example.com');
    // ... unless it is asked to look the session up.
    expect(await auth.api.getSession({ headers, query: { disableCookieCache: true } })).toBeNull();
  });
});
