import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedOrigin, apiClient, signUp, startBackend, type Api, type SignedUp, type TestBackend } from './support/backend.js';

const evilOrigin = 'https://evil.example';

/** A CORS preflight as a browser sends it before a credentialed cross-origin POST. */
const preflight = (baseUrl: string, origin: string, path = '/Projects') =>
  fetch(new URL(path, baseUrl), {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-organization-id' },
  });

/** The attributes of a Set-Cookie line: `{ httponly: true, 'max-age': '604800', ... }`. */
function cookieAttributes(setCookie: string): Record<string, string | true> {
  const [, ...attributes] = setCookie.split(';').map((part) => part.trim());
  return Object.fromEntries(
    attributes.map((attribute) => {
      const [name, ...value] = attribute.split('=');
      return [name!.toLowerCase(), value.length ? value.join('=') : true];
    }),
  );
}

describe('CORS and CSRF', () => {
  let backend: TestBackend;
  let owner: SignedUp;
  let anonymous: Api;
  /** A request that authenticates with the session cookie only, as a browser does. */
  let withCookie: (method: string, path: string, headers?: Record<string, string>, body?: unknown) => ReturnType<Api>;
  const names = async () => (await owner.api('GET', '/Projects?limit=100')).body.data.map((project: { name: string }) => project.name).sort();

  beforeAll(async () => {
    backend = await startBackend('embedded');
    owner = await signUp(backend.url, 'csrf@example.com');
    anonymous = apiClient(backend.url);
    withCookie = (method, path, headers = {}, body) =>
      anonymous(method, path, { organizationId: owner.organizationId, headers: { cookie: `session=${owner.token}`, ...headers }, body });
  });
  afterAll(() => backend?.stop());

  it('answers a preflight from the allowed origin with that origin and credentials', async () => {
    const response = await preflight(backend.url, allowedOrigin);
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(allowedOrigin);
    expect(response.headers.get('access-control-allow-credentials')).toBe('true');
    expect(response.headers.get('access-control-allow-methods')).toContain('POST');
    expect(response.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-organization-id');
    // Caches must not hand one origin's answer to another.
    expect(response.headers.get('vary')).toMatch(/origin/i);
  });

  it('gives an unlisted origin no Access-Control-Allow-Origin, and never a wildcard', async () => {
    const refused = await preflight(backend.url, evilOrigin);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    const actual = await fetch(`${backend.url}/health`, { headers: { origin: evilOrigin } });
    expect(actual.headers.get('access-control-allow-origin')).toBeNull();
    for (const origin of ['null', `${allowedOrigin}.evil.example`, allowedOrigin.replace('5173', '5174')]) {
      expect((await preflight(backend.url, origin)).headers.get('access-control-allow-origin'), origin).toBeNull();
    }
    const noOrigin = await fetch(`${backend.url}/health`);
    expect(noOrigin.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('lets the allowed origin read the rate-limit headers and the request id of a real response', async () => {
    const response = await fetch(`${backend.url}/api/auth/get-session`, { headers: { origin: allowedOrigin, authorization: `Bearer ${owner.token}` } });
    expect(response.headers.get('access-control-allow-origin')).toBe(allowedOrigin);
    const exposed = response.headers.get('access-control-expose-headers')?.toLowerCase().split(/,\s*/) ?? [];
    expect(exposed).toEqual(expect.arrayContaining(['x-request-id', 'ratelimit', 'ratelimit-policy', 'retry-after']));
  });

  it('refuses a state change with the session cookie from a foreign origin, or with no origin, and creates nothing', async () => {
    const foreign = await withCookie('POST', '/Projects', { origin: evilOrigin }, { name: 'Forged' });
    expect(foreign.status).toBe(403);
    expect(foreign.body.success).toBe(false);
    expect(foreign.body.error.code).toBe('FORBIDDEN');

    const noOrigin = await withCookie('POST', '/Projects', {}, { name: 'No origin' });
    expect(noOrigin.status).toBe(403);
    expect(noOrigin.body.error.code).toBe('FORBIDDEN');

    // Sandboxed iframes and data: pages send "null": it is nobody's origin in particular.
    expect((await withCookie('POST', '/Projects', { origin: 'null' }, { name: 'Null origin' })).status).toBe(403);
    // A look-alike of the allowed origin is a different origin.
    expect((await withCookie('POST', '/Projects', { origin: `${allowedOrigin}.evil.example` }, { name: 'Look-alike' })).status).toBe(403);

    expect(await names()).not.toEqual(expect.arrayContaining(['Forged']));
    expect((await names()).filter((name: string) => ['Forged', 'No origin', 'Null origin', 'Look-alike'].includes(name))).toEqual([]);
  });

  it('accepts the session cookie from the allowed origin and from the backend itself', async () => {
    const fromApp = await withCookie('POST', '/Projects', { origin: allowedOrigin }, { name: 'From the app' });
    expect(fromApp.status).toBe(201);
    const own = await withCookie('POST', '/Projects', { origin: new URL(backend.url).origin }, { name: 'From the docs page' });
    expect(own.status).toBe(201);
    expect(await names()).toEqual(expect.arrayContaining(['From the app', 'From the docs page']));
  });

  it('needs no origin for a request that uses Authorization: Bearer and no cookie', async () => {
    const response = await owner.api('POST', '/Projects', { body: { name: 'From a script' } });
    expect(response.status).toBe(201);
  });

  it('allows safe methods with the cookie from a foreign origin (they change nothing)', async () => {
    const response = await withCookie('GET', '/Projects', { origin: evilOrigin });
    expect(response.status).toBe(200);
    expect(response.body.data.length).toBeGreaterThan(0);
    // The browser may send it, but without Access-Control-Allow-Origin the page cannot read it.
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('guards every state-changing method and /api/auth too: a forged delete or sign-out does nothing', async () => {
    const created = await owner.api('POST', '/Projects', { body: { name: 'Keep me' } });
    const id = created.body.data.id;
    expect((await withCookie('DELETE', `/Projects/${id}`, { origin: evilOrigin })).status).toBe(403);
    expect((await withCookie('PATCH', `/Projects/${id}`, { origin: evilOrigin }, { name: 'Renamed' })).status).toBe(403);
    expect((await owner.api('GET', `/Projects/${id}`)).body.data.name).toBe('Keep me');

    expect((await withCookie('POST', '/api/auth/sign-out', { origin: evilOrigin })).status).toBe(403);
    expect((await anonymous('GET', '/api/auth/get-session', { token: owner.token })).status).toBe(200);
  });

  it('treats a session cookie that is not valid percent-encoding as no session: 401, not a 500', async () => {
    for (const origin of [evilOrigin, allowedOrigin]) {
      const response = await anonymous('POST', '/Projects', { organizationId: owner.organizationId, headers: { cookie: 'session=%E0%A4%A', origin }, body: { name: 'Broken cookie' } });
      expect(response.status, origin).toBe(401);
      expect(response.body.error.code).toBe('UNAUTHORIZED');
    }
    expect((await anonymous('GET', '/api/auth/get-session', { headers: { cookie: 'session=%E0%A4%A' } })).status).toBe(401);
    expect((await owner.api('GET', '/Projects?search=Broken')).body.meta.total).toBe(0);
  });
});

describe('the session cookie', () => {
  const signIn = async (baseUrl: string, email: string) => {
    await signUp(baseUrl, email);
    const response = await apiClient(baseUrl)('POST', '/api/auth/sign-in/email', { body: { email, password: 'correct horse battery' } });
    expect(response.status).toBe(200);
    const cookies = response.headers.getSetCookie();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]!.startsWith(`session=${response.body.data.token};`)).toBe(true);
    return cookieAttributes(cookies[0]!);
  };

  it('is HttpOnly, SameSite=Lax, Path=/, 7 days, and not Secure outside production', async () => {
    const backend = await startBackend('embedded');
    try {
      const attributes = await signIn(backend.url, 'cookie@example.com');
      expect(attributes).toMatchObject({ httponly: true, samesite: 'Lax', path: '/', 'max-age': '604800' });
      expect(attributes).not.toHaveProperty('secure');
      expect(attributes).not.toHaveProperty('domain');
    } finally {
      await backend.stop();
    }
  });

  it('is Secure in production, also when sign-out clears it', async () => {
    // Signing up straight in: production's confirmation of the address first is identity.test.ts's.
    const backend = await startBackend('embedded', { NODE_ENV: 'production', AUTH_SECRET: 'a-production-secret-of-more-than-32-characters', REQUIRE_EMAIL_VERIFICATION: 'false' });
    try {
      const attributes = await signIn(backend.url, 'secure@example.com');
      expect(attributes).toMatchObject({ httponly: true, samesite: 'Lax', path: '/', 'max-age': '604800', secure: true });

      const owner = await signUp(backend.url, 'leaving@example.com');
      const out = await apiClient(backend.url)('POST', '/api/auth/sign-out', { token: owner.token });
      const cleared = out.headers.getSetCookie();
      expect(cleared).toHaveLength(1);
      expect(cleared[0]).toMatch(/^session=;/);
      expect(cookieAttributes(cleared[0]!)).toMatchObject({ secure: true, httponly: true, path: '/' });
    } finally {
      await backend.stop();
    }
  });
});

describe('ALLOWED_ORIGINS', () => {
  it('is matched as browsers send an origin: lowercase, without the default port', async () => {
    const backend = await startBackend('embedded', { ALLOWED_ORIGINS: 'HTTPS://App.Example.com:443/, http://localhost:5173' });
    try {
      const response = await preflight(backend.url, 'https://app.example.com');
      expect(response.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect((await preflight(backend.url, allowedOrigin)).headers.get('access-control-allow-origin')).toBe(allowedOrigin);
      const owner = await signUp(backend.url, 'origins@example.com');
      const created = await apiClient(backend.url)('POST', '/Projects', {
        organizationId: owner.organizationId,
        headers: { cookie: `session=${owner.token}`, origin: 'https://app.example.com' },
        body: { name: 'From the app' },
      });
      expect(created.status).toBe(201);
    } finally {
      await backend.stop();
    }
  });
});
