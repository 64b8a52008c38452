import { createAuthClient } from 'better-auth/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedOrigin, databaseKinds, startBackend, type TestBackend } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapClient } from '../src/client.js';

/**
 * A cookie jar standing in for the browser: keeps the cookies the backend sets and sends them
 * back, with the page's Origin (the backend's CSRF guard checks it on cookie-authenticated writes).
 */
function browserFetch() {
  const jar = new Map<string, string>();
  const fetchWithJar = async (input: string | URL | Request, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set('origin', allowedOrigin);
    if (jar.size > 0) headers.set('cookie', [...jar].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(input, { ...init, headers });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const [name = '', value = ''] = pair.split('=');
      const expired = value === '' || attributes.some((attribute) => /^\s*max-age=0\s*$/i.test(attribute) || /^\s*expires=thu, 01 jan 1970/i.test(attribute));
      if (expired) jar.delete(name.trim());
      else jar.set(name.trim(), value);
    }
    return response;
  };
  return { fetch: fetchWithJar, jar };
}

/**
 * Better Auth's own browser client (better-auth/client) pointed at the backend's /api/auth, with
 * no Better Auth server anywhere: the frontend-without-a-server case (a Vite or mobile app).
 */
describe.each(databaseKinds)("Better Auth's browser client on the backend's /api/auth, %s database", (kind) => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend(kind);
  });
  afterAll(() => backend?.stop());

  const client = (browser = browserFetch(), plugins = [authstrapClient()]) =>
    createAuthClient({ baseURL: `${backend.url}/api/auth`, plugins, fetchOptions: { customFetchImpl: browser.fetch } });

  it('signs up, reads the session, signs out and in again, with the cookie the backend sets', async () => {
    const browser = browserFetch();
    const auth = client(browser);

    const signedUp = await auth.signUp.email({ email: 'vite-ada@example.com', password: 'correct horse battery', name: 'Ada' });
    expect(signedUp.error).toBeNull();
    expect(signedUp.data).toMatchObject({ token: expect.any(String), user: { email: 'vite-ada@example.com', name: 'Ada', emailVerified: false } });
    expect(signedUp.data?.user).not.toHaveProperty('email_verified');
    expect(browser.jar.size).toBe(1);

    const session = await auth.getSession();
    expect(session.error).toBeNull();
    expect(session.data?.user).toMatchObject({ id: signedUp.data!.user.id, emailVerified: false });
    expect(session.data?.session.userId).toBe(signedUp.data!.user.id);
    // The backend's extra: the user's organizations, for an organization switcher.
    const { organizations } = session.data as unknown as { organizations: { id: string; role: string }[] };
    expect(organizations).toEqual([expect.objectContaining({ role: 'owner' })]);

    // The same cookie opens the tenant-scoped routes.
    const projects = await browser.fetch(`${backend.url}/Projects`, { headers: { 'x-organization-id': organizations[0]!.id } });
    expect(projects.status).toBe(200);

    const signedOut = await auth.signOut();
    expect(signedOut).toEqual({ data: { success: true }, error: null });
    expect(browser.jar.size).toBe(0);
    // No session is null, as from Better Auth's server, not an error.
    expect(await auth.getSession()).toEqual({ data: null, error: null });

    const signedIn = await auth.signIn.email({ email: 'vite-ada@example.com', password: 'correct horse battery' });
    expect(signedIn.data).toMatchObject({ redirect: false, token: expect.any(String), user: { id: signedUp.data!.user.id, emailVerified: false } });
    expect((await auth.getSession()).data?.user.email).toBe('vite-ada@example.com');
  });

  it("gives the backend's errors in Better Auth's error shape, with status, code and message", async () => {
    const auth = client();
    await auth.signUp.email({ email: 'vite-bob@example.com', password: 'correct horse battery', name: 'Bob' });

    const wrongPassword = await auth.signIn.email({ email: 'vite-bob@example.com', password: 'wrong horse battery' });
    expect(wrongPassword.data).toBeNull();
    expect(wrongPassword.error).toMatchObject({ status: 401, code: expect.any(String), message: expect.stringMatching(/password/i) });

    const taken = await client().signUp.email({ email: 'vite-bob@example.com', password: 'correct horse battery', name: 'Bob' });
    expect(taken.error).toMatchObject({ status: 409, code: 'CONFLICT' });

    const invalid = await client().signUp.email({ email: 'not an address', password: 'x', name: '' });
    expect(invalid.error?.status).toBe(422);
    expect(invalid.error).toHaveProperty('details');
  });

  it('keeps the session store in step: useSession sees sign-in and sign-out', async () => {
    const auth = client();
    const seen: (string | null)[] = [];
    const settled = () => new Promise((resolve) => setTimeout(resolve, 50));
    const stop = auth.useSession.subscribe((state) => {
      if (!state.isPending) seen.push(state.data?.user.email ?? null);
    });
    try {
      await auth.signUp.email({ email: 'vite-cy@example.com', password: 'correct horse battery', name: 'Cy' });
      await expect.poll(() => seen.at(-1), { timeout: 5000 }).toBe('vite-cy@example.com');
      await auth.signOut();
      await settled();
      await expect.poll(() => seen.at(-1), { timeout: 5000 }).toBeNull();
    } finally {
      stop();
    }
  });

  it('without the plugin the envelope hides the session from Better Auth (why the plugin exists)', async () => {
    const browser = browserFetch();
    await client(browser).signUp.email({ email: 'vite-dee@example.com', password: 'correct horse battery', name: 'Dee' });
    const bare = await client(browser, []).getSession();
    expect(bare.data).not.toHaveProperty('user');
    expect(bare.data).toHaveProperty('success', true);
  });
});
