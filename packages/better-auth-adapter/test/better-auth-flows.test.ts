import { betterAuth } from 'better-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedOrigin, apiClient, authSecret, databaseKinds, serviceApiKey, signUp, startBackend, type TestBackend } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';

/**
 * A real Better Auth (e-mail and password) keeping its data in the example backend through the
 * adapter, with the service key; then the backend's own sign-in for the same users, and the other
 * way round: both paths share one bcrypt hash in `account.password`.
 */
describe.each(databaseKinds)('Better Auth on the adapter, %s database', (kind) => {
  let backend: TestBackend;
  let auth: ReturnType<typeof makeAuth>;

  function makeAuth(baseUrl: string) {
    return betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl, serviceKey: serviceApiKey }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      // Joins here; the other suites below run without them.
      advanced: { database: { joins: true } },
      logger: { disabled: true },
    });
  }

  beforeAll(async () => {
    backend = await startBackend(kind);
    auth = makeAuth(backend.url);
  });
  afterAll(() => backend?.stop());

  const service = () => apiClient(backend.url, { token: serviceApiKey });

  it('signs up, gets the session, signs out and in again; the rows are in the backend', async () => {
    const signedUp = await auth.api.signUpEmail({ body: { email: 'ba-ada@example.com', password: 'correct horse battery', name: 'Ada' } });
    expect(signedUp.token).toEqual(expect.any(String));
    expect(signedUp.user).toMatchObject({ email: 'ba-ada@example.com', name: 'Ada', emailVerified: false });

    // The user and a credential account with a bcrypt hash are rows of the backend.
    const users = await service()('GET', `/Users?where=${encodeURIComponent(JSON.stringify([{ field: 'email', value: 'ba-ada@example.com' }]))}`);
    expect(users.body.data).toHaveLength(1);
    const accounts = await service()('GET', `/accounts?userId=${signedUp.user.id}`);
    expect(accounts.body.data).toEqual([expect.objectContaining({ providerId: 'credential', accountId: signedUp.user.id, password: expect.stringMatching(/^\$2[aby]\$04\$/) })]);

    // The browser's view: the session cookie Better Auth sets on sign-in.
    const signIn = await auth.api.signInEmail({ body: { email: 'ba-ada@example.com', password: 'correct horse battery' }, returnHeaders: true });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const headers = new Headers({ cookie });
    const session = await auth.api.getSession({ headers });
    expect(session?.user.id).toBe(signedUp.user.id);
    expect(session?.session.userId).toBe(signedUp.user.id);
    // Its session row is in the backend (the service key reads it by token).
    const stored = await service()('GET', `/sessions?where=${encodeURIComponent(JSON.stringify([{ field: 'token', value: signIn.response.token }]))}`);
    expect(stored.body.data).toEqual([expect.objectContaining({ userId: signedUp.user.id })]);

    await auth.api.signOut({ headers });
    expect(await auth.api.getSession({ headers })).toBeNull();
    expect((await service()('GET', `/sessions?where=${encodeURIComponent(JSON.stringify([{ field: 'token', value: signIn.response.token }]))}`)).body.data).toEqual([]);
    await expect(auth.api.signInEmail({ body: { email: 'ba-ada@example.com', password: 'wrong horse battery' } })).rejects.toThrow();
  });

  it('gives a user who signs up through Better Auth an organization of their own, as owner', async () => {
    const signedUp = await auth.api.signUpEmail({ body: { email: 'ba-owner@example.com', password: 'correct horse battery', name: 'Olive' } });
    const memberships = await service()('GET', `/members?userId=${signedUp.user.id}`);
    expect(memberships.body.data).toEqual([expect.objectContaining({ userId: signedUp.user.id, role: 'owner' })]);
    const organization = await service()('GET', `/Organizations/${memberships.body.data[0].organizationId}`);
    expect(organization.body.data.name).toBe("Olive's organization");
  });

  it("signs in on the backend's own path a user who signed up through Better Auth", async () => {
    await auth.api.signUpEmail({ body: { email: 'ba-grace@example.com', password: 'correct horse battery', name: 'Grace' } });
    const signIn = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'ba-grace@example.com', password: 'correct horse battery' } });
    expect(signIn.status).toBe(200);
    const wrong = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'ba-grace@example.com', password: 'not the password' } });
    expect(wrong.status).toBe(401);
  });

  it("signs in through Better Auth a user who signed up on the backend's own path", async () => {
    const signUp = await apiClient(backend.url)('POST', '/api/auth/sign-up/email', { body: { email: 'native-alan@example.com', name: 'Alan', password: 'correct horse battery' } });
    expect(signUp.status).toBe(201);
    const signedIn = await auth.api.signInEmail({ body: { email: 'native-alan@example.com', password: 'correct horse battery' } });
    expect(signedIn.user.id).toBe(signUp.body.data.user.id);
  });
});

describe.each(databaseKinds)('one session for Better Auth and the backend, %s database', (kind) => {
  let backend: TestBackend;
  let auth: ReturnType<typeof makeAuth>;
  const makeAuth = (baseUrl: string) =>
    betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl, serviceKey: serviceApiKey }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      logger: { disabled: true },
    });
  beforeAll(async () => {
    backend = await startBackend(kind);
    auth = makeAuth(backend.url);
  });
  afterAll(() => backend?.stop());

  /** Signs up through Better Auth: the cookie it sets, its token, and the user's own organization. */
  async function signUpThroughBetterAuth(email: string) {
    const signedUp = await auth.api.signUpEmail({ body: { email, password: 'correct horse battery', name: 'Bea' }, returnHeaders: true });
    const cookie = signedUp.headers.get('set-cookie')!.split(';')[0]!;
    const service = apiClient(backend.url, { token: serviceApiKey });
    const memberships = await service('GET', `/members?userId=${signedUp.response.user.id}`);
    return { cookie, token: signedUp.response.token!, userId: signedUp.response.user.id, organizationId: memberships.body.data[0].organizationId as string };
  }

  it("accepts Better Auth's session cookie and its token as a Bearer on tenant-scoped routes", async () => {
    const bea = await signUpThroughBetterAuth('ba-one-session@example.com');
    expect(bea.cookie).toMatch(/^better-auth\.session_token=/);
    const api = apiClient(backend.url, { organizationId: bea.organizationId });

    const created = await api('POST', '/Projects', { body: { name: 'Made with the cookie' }, headers: { cookie: bea.cookie, origin: allowedOrigin } });
    expect(created.status).toBe(201);
    expect(created.body.data.organizationId).toBe(bea.organizationId);
    const listed = await api('GET', '/Projects', { token: bea.token });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((project: { name: string }) => project.name)).toEqual(['Made with the cookie']);
    // The name Better Auth uses on https, and the signed value its bearer plugin hands out.
    const secureName = bea.cookie.replace(/^better-auth/, '__Secure-better-auth');
    expect((await api('GET', '/Projects', { headers: { cookie: secureName } })).status).toBe(200);
    expect((await api('GET', '/Projects', { token: decodeURIComponent(bea.cookie.split('=')[1]!) })).status).toBe(200);
    const session = await api('GET', '/api/auth/get-session', { headers: { cookie: bea.cookie } });
    expect(session.body.data.user.id).toBe(bea.userId);
    // A cookie request that changes something still needs an allowed origin (CSRF).
    expect((await api('POST', '/Projects', { body: { name: 'Forged' }, headers: { cookie: bea.cookie, origin: 'https://evil.example' } })).status).toBe(403);
  });

  it('refuses a forged signature, and a stored hash of a native session presented as its token', async () => {
    const bea = await signUpThroughBetterAuth('ba-forged@example.com');
    const api = apiClient(backend.url, { organizationId: bea.organizationId });
    const [name, value] = bea.cookie.split('=') as [string, string];
    const [token] = decodeURIComponent(value).split('.');
    const forged = `${name}=${encodeURIComponent(`${token}.${Buffer.alloc(32).toString('base64')}`)}`;
    expect((await api('GET', '/Projects', { headers: { cookie: forged } })).status).toBe(401);
    expect((await api('GET', '/Projects', { headers: { cookie: `${name}=${token}` } })).status).toBe(401);

    // What the database keeps of a native session is its SHA-256; that value is no token.
    const native = await signUp(backend.url, 'native-hash@example.com');
    const service = apiClient(backend.url, { token: serviceApiKey });
    const stored = await service('GET', `/sessions?userId=${native.user.id}`);
    const storedHash = stored.body.data[0].token as string;
    expect(storedHash).toMatch(/^[0-9a-f]{64}$/);
    expect((await apiClient(backend.url)('GET', '/api/auth/get-session', { token: storedHash })).status).toBe(401);
    expect((await apiClient(backend.url)('GET', '/api/auth/get-session', { token: native.token })).status).toBe(200);
    // Nor does Better Auth take it: its lookup of a hash-shaped token finds nothing.
    const signed = await signedCookieValue(storedHash);
    expect(await auth.api.getSession({ headers: new Headers({ cookie: `better-auth.session_token=${signed}` }) })).toBeNull();
  });

  it("signs out on the backend a session Better Auth created, and Better Auth sees it gone", async () => {
    const bea = await signUpThroughBetterAuth('ba-sign-out@example.com');
    const signOut = await apiClient(backend.url)('POST', '/api/auth/sign-out', { headers: { cookie: bea.cookie, origin: allowedOrigin } });
    expect(signOut.status).toBe(200);
    expect(await auth.api.getSession({ headers: new Headers({ cookie: bea.cookie }) })).toBeNull();
    expect((await apiClient(backend.url)('GET', '/api/auth/get-session', { token: bea.token })).status).toBe(401);
  });
});

/** A value signed as Better Auth signs its cookies (HMAC-SHA256 with the secret, base64). */
async function signedCookieValue(value: string): Promise<string> {
  const { createHmac } = await import('node:crypto');
  return encodeURIComponent(`${value}.${createHmac('sha256', authSecret).update(value).digest('base64')}`);
}

describe.each(databaseKinds)('Better Auth password reset through verification, %s database', (kind) => {
  let backend: TestBackend;
  afterAll(() => backend?.stop());

  it('stores the reset token as a verification in the backend, resets the password, and uses the token up', async () => {
    backend = await startBackend(kind);
    let resetToken = '';
    const auth = betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl: backend.url, serviceKey: serviceApiKey }),
      emailAndPassword: {
        enabled: true,
        password: authstrapPassword({ cost: 4 }),
        sendResetPassword: async ({ token }) => {
          resetToken = token;
        },
      },
      logger: { disabled: true },
    });
    await auth.api.signUpEmail({ body: { email: 'ba-reset@example.com', password: 'correct horse battery', name: 'Reset' } });
    await auth.api.requestPasswordReset({ body: { email: 'ba-reset@example.com', redirectTo: 'http://localhost:3100/reset' } });
    expect(resetToken).not.toBe('');
    const service = apiClient(backend.url, { token: serviceApiKey });
    const stored = await service('GET', `/verifications?where=${encodeURIComponent(JSON.stringify([{ field: 'identifier', operator: 'contains', value: resetToken }]))}`);
    expect(stored.body.data).toHaveLength(1);

    await auth.api.resetPassword({ body: { token: resetToken, newPassword: 'a brand new password' } });
    // The new password works on both sign-in paths, the old one on neither.
    expect((await auth.api.signInEmail({ body: { email: 'ba-reset@example.com', password: 'a brand new password' } })).user.email).toBe('ba-reset@example.com');
    await expect(auth.api.signInEmail({ body: { email: 'ba-reset@example.com', password: 'correct horse battery' } })).rejects.toThrow();
    const native = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'ba-reset@example.com', password: 'a brand new password' } });
    expect(native.status).toBe(200);
    // The token is used up.
    await expect(auth.api.resetPassword({ body: { token: resetToken, newPassword: 'yet another password' } })).rejects.toThrow();
  });
});

describe('HTTP requests Better Auth makes through the adapter', () => {
  let backend: TestBackend;
  afterAll(() => backend?.stop());

  it('counts the requests of sign-up, sign-in and get-session', async () => {
    backend = await startBackend('embedded');
    const requests: string[] = [];
    const countingFetch: typeof fetch = (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      requests.push(`${init?.method ?? 'GET'} ${url.pathname}`);
      return fetch(input, init);
    };
    const auth = betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl: backend.url, serviceKey: serviceApiKey, fetch: countingFetch }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      // The backend embeds the session's user in the same request (and statement).
      advanced: { database: { joins: true } },
      logger: { disabled: true },
    });
    const measure = async (name: string, work: () => Promise<unknown>) => {
      requests.length = 0;
      await work();
      console.info(`[measured] Better Auth ${name}: ${requests.length} HTTP requests to the backend (${requests.join(', ')})`);
      return requests.length;
    };
    await measure('sign-up', () => auth.api.signUpEmail({ body: { email: 'ba-count@example.com', password: 'correct horse battery', name: 'Count' } }));
    let cookie = '';
    await measure('sign-in', async () => {
      const signIn = await auth.api.signInEmail({ body: { email: 'ba-count@example.com', password: 'correct horse battery' }, returnHeaders: true });
      cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    });
    let session: Awaited<ReturnType<typeof auth.api.getSession>> = null;
    const getSession = await measure('get-session', async () => {
      session = await auth.api.getSession({ headers: new Headers({ cookie }) });
    });
    expect(session!.user.email).toBe('ba-count@example.com');
    expect(session!.user.createdAt).toBeInstanceOf(Date);
    // One request: the session with its user embedded.
    expect(requests).toEqual(['GET /sessions']);
    expect(getSession).toBe(1);
  });
});
