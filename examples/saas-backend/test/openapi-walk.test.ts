import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, serviceApiKey, signUp, startBackend, type Api, type ApiResponse, type SignedUp, type TestBackend } from './support/backend.js';
import { sha256 } from './support/secrets.js';

const secretKeys = ['password', 'token', 'accessToken', 'refreshToken', 'idToken', 'value', 'passwordHash'];

/** Every key anywhere in a JSON value. */
function keysOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) keysOf(item, into);
  else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      into.add(key);
      keysOf(inner, into);
    }
  }
  return into;
}

// Walks every route the OpenAPI document lists, with every method, as a member of an
// organization and as the trusted server, and checks that no response to the member carries a
// password, a bcrypt hash or a session secret (raw or hashed). Sign-up and sign-in return the
// caller's own session secret by design (`data.token`), so those two are checked for hashes only.
// The trusted server reads the stored secrets (hashes, tokens) by design; it never gets a secret
// that is not stored (the session secret a client holds, a password) or its own key back.
describe('every route of the OpenAPI document', () => {
  let backend: TestBackend;
  let owner: SignedUp;
  let service: Api;
  const responses: { route: string; response: ApiResponse }[] = [];

  beforeAll(async () => {
    backend = await startBackend('embedded');
    owner = await signUp(backend.url, 'walker@example.com');
    service = apiClient(backend.url, { token: serviceApiKey, organizationId: owner.organizationId });
  });
  afterAll(() => backend?.stop());

  it('returns no password, hash or session secret from any route', async () => {
    const document = (await owner.api('GET', '/api/docs/openapi.json')).body;
    const project = (await owner.api('POST', '/Projects', { body: { name: 'Walked' } })).body.data;
    const task = (await owner.api('POST', `/Projects/${project.id}/Tasks`, { body: { title: 'Walked' } })).body.data;
    const account = (await owner.api('GET', '/accounts')).body.data[0];
    const session = (await owner.api('GET', '/sessions')).body.data[0];
    const member = (await owner.api('GET', '/members')).body.data[0];
    const verification = (await service('POST', '/verifications', { body: { identifier: 'walk', value: 'secret-value-123', expiresAt: new Date(Date.now() + 60_000).toISOString() } })).body.data;

    const idFor: Record<string, string> = {
      '/Users': owner.user.id,
      '/accounts': account.id,
      '/sessions': session.id,
      '/verifications': verification.id,
      '/Organizations': owner.organizationId,
      '/members': member.id,
      '/Projects': project.id,
      '/Tasks': task.id,
    };
    const bodies: Record<string, unknown> = {
      '/api/auth/sign-up/email': { email: 'walk-signup@example.com', name: 'Walk', password: 'walking-password' },
      '/api/auth/sign-in/email': { email: 'walker@example.com', password: 'correct horse battery' },
      '/Projects': { name: 'Walked again' },
      '/Tasks': { title: 'Walked again', projectId: project.id },
      '/Organizations': { name: 'Walk org', slug: `walk-${Date.now()}` },
    };

    const order = ['get', 'post', 'put', 'patch', 'delete'];
    const routes = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, methods]) => Object.keys(methods).map((method) => ({ path, method })))
      .filter(({ path, method }) => !(path === '/api/auth/sign-out' && method === 'post'))
      .sort((a, b) => order.indexOf(a.method) - order.indexOf(b.method));
    expect(routes.length).toBeGreaterThan(40);

    for (const { path, method } of routes) {
      const collection = `/${path.split('/')[1]}`;
      const concrete = path
        .replace('{id}', idFor[collection] ?? owner.user.id)
        .replace('{projectId}', project.id);
      const body = ['post', 'put', 'patch'].includes(method) ? (bodies[path] ?? bodies[collection] ?? {}) : undefined;
      for (const [who, api] of [['member', owner.api], ['service', service]] as const) {
        // Deleting is left to the service key at the very end, so the member's walk keeps its data.
        if (method === 'delete' && who === 'member') continue;
        const response = await api(method.toUpperCase(), concrete, { body });
        responses.push({ route: `${who} ${method.toUpperCase()} ${concrete}`, response });
      }
    }

    const forbiddenStrings = [owner.token, sha256(owner.token), serviceApiKey, 'correct horse battery', 'secret-value-123', '$2b$'];
    const neverStored = [owner.token, serviceApiKey, 'correct horse battery'];
    for (const { route, response } of responses) {
      expect(response.status, route).toBeLessThan(500);
      const text = typeof response.body === 'string' ? response.body : JSON.stringify(response.body ?? '');
      const signsIn = /\/api\/auth\/sign-(up|in)\/email$/.test(route);
      if (route.startsWith('service ') && !signsIn) {
        for (const secret of neverStored) expect(text.includes(secret), `${route} leaks ${secret.slice(0, 8)}…`).toBe(false);
        continue;
      }
      for (const secret of forbiddenStrings) {
        if (signsIn && secret === owner.token) continue;
        expect(text.includes(secret), `${route} leaks ${secret.slice(0, 8)}…`).toBe(false);
      }
      // Only what a route returns as data: an error's `details` names fields, it holds no values.
      const keys = keysOf(response.body?.data);
      for (const key of secretKeys) {
        if (signsIn && key === 'token') continue;
        expect(keys.has(key), `${route} returns a "${key}" field`).toBe(false);
      }
    }
    // The walk really reached data: successful reads of every collection.
    const ok = responses.filter(({ response }) => response.status === 200).map(({ route }) => route);
    for (const collection of Object.keys(idFor)) expect(ok.some((route) => route.includes(`GET ${collection}`)), collection).toBe(true);
  });

  it('says which routes are the service key\'s, and a user is refused exactly those', async () => {
    const document = (await apiClient(backend.url)('GET', '/api/docs/openapi.json')).body;
    const serviceOnly: string[] = [];
    for (const [path, methods] of Object.entries(document.paths as Record<string, Record<string, { summary: string; responses: Record<string, unknown> }>>)) {
      if (!/^\/(accounts|sessions|verifications)(\/\{id\})?$/.test(path)) continue;
      for (const [method, operation] of Object.entries(methods)) {
        if (!operation.summary.endsWith('(service key only)')) continue;
        serviceOnly.push(`${method.toUpperCase()} ${path}`);
        expect(operation.responses, `${method} ${path}`).toHaveProperty('403');
      }
    }
    expect(serviceOnly.sort()).toEqual(
      ['PATCH /accounts', 'DELETE /accounts', 'POST /accounts', 'PUT /accounts/{id}', 'PATCH /accounts/{id}', 'DELETE /accounts/{id}',
        'PATCH /sessions', 'DELETE /sessions', 'POST /sessions', 'PUT /sessions/{id}', 'PATCH /sessions/{id}',
        'GET /verifications', 'POST /verifications', 'PATCH /verifications', 'DELETE /verifications',
        'GET /verifications/{id}', 'PUT /verifications/{id}', 'PATCH /verifications/{id}', 'DELETE /verifications/{id}'].sort(),
    );
    // And the routes say the truth: a signed-in user (a fresh one: the walk above signed out) gets 403 from each.
    const user = await signUp(backend.url, 'refused@example.com');
    for (const route of serviceOnly.filter((entry) => !entry.includes('{id}'))) {
      const [method, path] = route.split(' ') as [string, string];
      const response = await user.api(method, `${path}${method === 'GET' ? '' : '?where=[]'}`, { body: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expect(response.status, route).toBe(403);
    }
  });
});
