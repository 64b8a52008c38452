import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, allowedOrigin, apiClient, serviceApiKey, signUp, startBackend, type ApiResponse, type TestBackend } from './support/backend.js';
import { responseChecker, startValidatingProxy, type ValidatingProxy } from './support/validating-proxy.js';

// The checker the proxy runs: it must find each kind of answer the document does not describe,
// or a clean run of the suites below would prove nothing.
describe('the response checker', () => {
  const envelope = { type: 'object', properties: { success: { const: true }, data: { $ref: '#/components/schemas/Thing' } }, required: ['success', 'data'] };
  const checker = responseChecker({
    openapi: '3.1.0',
    paths: {
      '/things/{id}': { get: { responses: { 200: { description: 'A thing', content: { 'application/json': { schema: envelope } } }, 404: { $ref: '#/components/responses/NotFound' }, 204: { description: 'Nothing' } } } },
      '/things/count': { get: { responses: { 200: { description: 'How many', content: { 'text/plain': { schema: { type: 'string' } } } } } } },
    },
    components: {
      schemas: { Thing: { type: 'object', properties: { id: { type: 'string', format: 'uuid' } }, required: ['id'] } },
      responses: { NotFound: { description: 'No such thing', content: { 'application/json': { schema: { type: 'object', required: ['error'] } } } } },
    },
  });
  const json = 'application/json; charset=utf-8';

  it('passes an answer the document describes, through $refs to schemas and shared responses', () => {
    expect(checker.check('GET', '/things/1', 200, json, JSON.stringify({ success: true, data: { id: randomUUID() } }))).toEqual([]);
    expect(checker.check('GET', '/things/1', 404, json, JSON.stringify({ error: {} }))).toEqual([]);
    expect(checker.check('GET', '/things/count', 200, 'text/plain', '3')).toEqual([]);
  });

  it('finds an unlisted path, method, status or media type, and a body that fails its schema', () => {
    expect(checker.check('GET', '/other', 200, json, '{}')).toEqual(['no path of the document matches']);
    expect(checker.check('DELETE', '/things/1', 204, undefined, '')).toEqual(['DELETE is not an operation of /things/{id}']);
    expect(checker.check('GET', '/things/1', 401, json, '{}')[0]).toMatch(/^status 401 is not listed/);
    expect(checker.check('GET', '/things/1', 200, 'text/html', '<p>')[0]).toMatch(/^media type text\/html is not listed/);
    expect(checker.check('GET', '/things/1', 200, json, JSON.stringify({ success: true, data: { id: 'not-a-uuid' } }))).toEqual(['body/data/id must match format "uuid"']);
    expect(checker.check('GET', '/things/1', 404, json, '{}')).toEqual(["body must have required property 'error'"]);
    expect(checker.check('GET', '/things/1', 204, json, '{"success":false}')).toEqual(['a JSON body, where 204 lists none']);
  });
});

// An HTTP suite that reaches every family of routes (probes and docs, /api/auth, machine keys,
// the generated data routes and their nested form, the auth entities, the service API and its
// transactions, the audit log and the webhook endpoints) and every error status a client meets,
// all through a proxy that checks each answer against the backend's own OpenAPI document. The
// suite asserts the statuses it provokes, so that it cannot pass by provoking none.
describe('the OpenAPI document against real answers', () => {
  let backend: TestBackend;
  let proxy: ValidatingProxy;

  beforeAll(async () => {
    // A small /api/auth budget, so that the suite ends by running into it.
    backend = await startBackend('embedded', { RATE_LIMIT_AUTH_MAX: '60' });
    const document = (await apiClient(backend.url)('GET', '/api/docs/openapi.json')).body;
    proxy = await startValidatingProxy(backend.url, document);
  });
  afterAll(async () => {
    await proxy?.close();
    await backend?.stop();
  });

  it('describes every answer of a suite that provokes 400, 401, 403, 404, 409, 422 and 429', async () => {
    const expectStatus = async (answer: Promise<ApiResponse>, status: number) => {
      const response = await answer;
      expect(response.status, JSON.stringify(response.body)).toBe(status);
      return response;
    };
    const anonymous = apiClient(proxy.url);
    const owner = await signUp(proxy.url, 'conformance-owner@example.com');
    const outsider = await signUp(proxy.url, 'conformance-outsider@example.com');
    // Invitations are read from the test mailbox, which knows the backend by its own address.
    const member = await addMember(backend.url, { ...owner, baseUrl: backend.url, api: apiClient(backend.url, { token: owner.token, organizationId: owner.organizationId }) }, 'conformance-member@example.com', 'member');
    const asMember = apiClient(proxy.url, { token: member.token, organizationId: owner.organizationId });
    const service = apiClient(proxy.url, { token: serviceApiKey, organizationId: owner.organizationId });
    const api = owner.api;

    // Probes and docs.
    await expectStatus(anonymous('GET', '/health'), 200);
    await expectStatus(anonymous('GET', '/ready'), 200);
    await expectStatus(anonymous('GET', '/api/docs/openapi.json'), 200);
    await expectStatus(anonymous('GET', '/api/docs'), 200); // after the 301 to /api/docs/
    await expectStatus(anonymous('GET', '/api/docs/swagger-ui.css'), 200);
    await expectStatus(anonymous('GET', '/api/docs/no-such-file.css'), 404);

    // /api/auth.
    await expectStatus(anonymous('POST', '/api/auth/sign-up/email', { body: { email: 'conformance-owner@example.com', name: 'Again', password: 'correct horse battery' } }), 409);
    await expectStatus(anonymous('POST', '/api/auth/sign-up/email', { body: { email: 'not an address' } }), 422);
    await expectStatus(anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'conformance-owner@example.com', password: 'wrong password' } }), 401);
    await expectStatus(anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'conformance-owner@example.com', password: 'correct horse battery' } }), 200);
    await expectStatus(api('GET', '/api/auth/get-session'), 200);
    await expectStatus(anonymous('GET', '/api/auth/get-session'), 401);
    await expectStatus(api('POST', '/api/auth/organization/set-active', { body: { organizationId: owner.organizationId } }), 200);
    await expectStatus(outsider.api('POST', '/api/auth/organization/set-active', { body: { organizationId: owner.organizationId } }), 403);
    await expectStatus(api('GET', '/api/auth/sessions'), 200);
    await expectStatus(api('DELETE', `/api/auth/sessions/${randomUUID()}`), 404);
    await expectStatus(anonymous('POST', '/api/auth/forgot-password', { body: { email: 'nobody@example.com' } }), 200);
    await expectStatus(anonymous('POST', '/api/auth/reset-password', { body: { token: 'not-a-real-token', newPassword: 'another long password' } }), 400);
    await expectStatus(api('POST', '/api/auth/change-password', { body: { currentPassword: 'wrong password', newPassword: 'another long password' } }), 400);
    await expectStatus(api('GET', '/api/auth/invitations'), 200);
    await expectStatus(api('GET', '/api/auth/organization/invitations'), 200);
    await expectStatus(asMember('GET', '/api/auth/organization/invitations'), 403);
    await expectStatus(api('GET', '/api/auth/security-events'), 200);
    // A state-changing request with the session cookie from a page of another origin: the CSRF guard.
    await expectStatus(anonymous('POST', '/api/auth/sign-out', { headers: { cookie: `session=${owner.token}`, origin: 'https://evil.example' } }), 403);
    expect(allowedOrigin).not.toBe('https://evil.example');

    // Machine keys.
    const key = (await expectStatus(api('POST', '/api/auth/api-keys', { body: { name: 'conformance', permissions: { Project: ['list', 'read'] } } }), 201)).body.data;
    await expectStatus(api('POST', '/api/auth/api-keys', { body: { name: 'users', permissions: { User: ['list'] } } }), 422);
    await expectStatus(api('GET', '/api/auth/api-keys'), 200);
    await expectStatus(asMember('GET', '/api/auth/api-keys'), 403);
    const asKey = apiClient(proxy.url, { organizationId: owner.organizationId });
    await expectStatus(asKey('GET', '/Projects', { headers: { 'x-api-key': key.key } }), 200);
    await expectStatus(asKey('POST', '/Projects', { headers: { 'x-api-key': key.key }, body: { name: 'Not allowed' } }), 403);
    await expectStatus(api('DELETE', `/api/auth/api-keys/${key.id}`), 204);
    await expectStatus(asKey('GET', '/Projects', { headers: { 'x-api-key': key.key } }), 401);

    // The generated data routes.
    const project = (await expectStatus(api('POST', '/Projects', { body: { name: 'Conformance' } }), 201)).body.data;
    await expectStatus(api('POST', '/Projects', { rawBody: '{"name": ' }), 400);
    await expectStatus(api('POST', '/Projects', { body: { name: 42 } }), 422);
    await expectStatus(api('GET', '/Projects'), 200);
    await expectStatus(api('GET', '/Projects?no_such_parameter=1'), 400);
    await expectStatus(api('GET', `/Projects/${project.id}`), 200);
    await expectStatus(api('GET', `/Projects/${randomUUID()}`), 404);
    await expectStatus(api('PUT', `/Projects/${project.id}`, { body: { name: 'Replaced' } }), 200);
    await expectStatus(api('PATCH', `/Projects/${project.id}`, { body: { name: 'Updated' } }), 200);
    await expectStatus(api('GET', '/Projects', { organizationId: 'not-a-uuid' }), 400);
    await expectStatus(outsider.api('GET', '/Projects', { organizationId: owner.organizationId }), 403);
    await expectStatus(anonymous('GET', '/Projects'), 401);
    const task = (await expectStatus(api('POST', `/Projects/${project.id}/Tasks`, { body: { title: 'Nested' } }), 201)).body.data;
    await expectStatus(api('GET', `/Projects/${project.id}/Tasks`), 200);
    await expectStatus(api('GET', `/Projects/${randomUUID()}/Tasks`), 404);
    await expectStatus(api('GET', '/Tasks'), 200);
    await expectStatus(api('DELETE', `/Tasks/${task.id}`), 204);
    await expectStatus(api('DELETE', `/Projects/${project.id}`), 204);

    // The auth entities.
    await expectStatus(api('GET', '/Users'), 200);
    await expectStatus(anonymous('GET', '/Users'), 401);
    await expectStatus(outsider.api('GET', '/Users', { organizationId: owner.organizationId }), 403);
    await expectStatus(asMember('POST', '/Users', { body: { email: 'someone@example.com', name: 'Someone' } }), 403);
    await expectStatus(api('POST', '/Users', { body: { email: 'invited@example.com', name: 'Invited' } }), 202);
    await expectStatus(service('POST', '/Users', { body: { email: 'made@example.com', name: 'Made' } }), 201);
    await expectStatus(service('POST', '/Users', { body: { email: 'made@example.com', name: 'Made again' } }), 409);
    await expectStatus(api('GET', '/accounts'), 200);
    await expectStatus(api('GET', '/sessions'), 200);
    await expectStatus(api('GET', '/members'), 200);
    await expectStatus(api('GET', `/Organizations/${owner.organizationId}`), 200);
    await expectStatus(api('GET', '/verifications'), 403);

    // The service API and its transactions.
    await expectStatus(service('PATCH', `/Users?where=${encodeURIComponent(JSON.stringify([{ field: 'email', value: 'made@example.com' }]))}`, { body: { name: 'Renamed' } }), 200);
    await expectStatus(service('PATCH', '/Users', { body: { name: 'Everyone' } }), 400);
    const verification = (await expectStatus(service('POST', '/verifications', { body: { identifier: 'conformance', value: 'v', expiresAt: new Date(Date.now() + 60_000).toISOString() } }), 201)).body.data;
    await expectStatus(service('POST', `/verifications/consume-one?where=${encodeURIComponent(JSON.stringify([{ field: 'id', value: verification.id }]))}`), 200);
    const transaction = randomUUID();
    await expectStatus(service('POST', '/api/service/transactions', { headers: { 'x-authstrap-transaction': transaction } }), 201);
    await expectStatus(service('POST', '/api/service/transactions/commit', { headers: { 'x-authstrap-transaction': transaction } }), 200);
    // A commit sent again is answered as the first; a rollback of a committed transaction is a 409.
    await expectStatus(service('POST', '/api/service/transactions/commit', { headers: { 'x-authstrap-transaction': transaction } }), 200);
    await expectStatus(service('POST', '/api/service/transactions/rollback', { headers: { 'x-authstrap-transaction': transaction } }), 409);

    // The audit log and the webhook endpoints.
    await expectStatus(api('GET', '/audit-events'), 200);
    await expectStatus(asMember('GET', '/audit-events'), 403);
    await expectStatus(api('GET', '/webhook-endpoints'), 200);
    await expectStatus(api('POST', '/webhook-endpoints', { body: { url: 'http://127.0.0.1/hook' } }), 422);
    await expectStatus(api('PATCH', `/webhook-endpoints/${randomUUID()}`, { body: { enabled: false } }), 404);

    // The /api/auth budget, spent.
    let limited: ApiResponse | undefined;
    for (let attempt = 0; attempt < 80 && !limited; attempt++) {
      const response = await anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'conformance-owner@example.com', password: 'wrong password' } });
      if (response.status === 429) limited = response;
    }
    expect(limited?.body.error.code).toBe('RATE_LIMITED');

    const statuses = new Set(proxy.exchanges.map((exchange) => exchange.status));
    for (const status of [400, 401, 403, 404, 409, 422, 429]) expect(statuses, `no ${status} provoked`).toContain(status);
    expect(proxy.violations).toEqual([]);
  });
});

describe('the OpenAPI document against every operation it lists', () => {
  let backend: TestBackend;
  let proxy: ValidatingProxy;

  beforeAll(async () => {
    backend = await startBackend('embedded');
    proxy = await startValidatingProxy(backend.url, (await apiClient(backend.url)('GET', '/api/docs/openapi.json')).body);
  });
  afterAll(async () => {
    await proxy?.close();
    await backend?.stop();
  });

  // Every operation the document lists, called as a member of an organization and as the trusted
  // server, with ids that exist and with empty bodies: the answers nobody planned for (a 403 for
  // a role, a 422 for a missing field, a 404 for another organization's id) must be listed too.
  it('describes every answer of every operation it lists, called by a member and by the service key', async () => {
    const document = (await apiClient(proxy.url)('GET', '/api/docs/openapi.json')).body;
    const owner = await signUp(proxy.url, 'walk-owner@example.com');
    const member = await addMember(backend.url, { ...owner, baseUrl: backend.url, api: apiClient(backend.url, { token: owner.token, organizationId: owner.organizationId }) }, 'walk-member@example.com', 'member');
    const callers = {
      member: apiClient(proxy.url, { token: member.token, organizationId: owner.organizationId }),
      service: apiClient(proxy.url, { token: serviceApiKey, organizationId: owner.organizationId }),
    };
    const project = (await owner.api('POST', '/Projects', { body: { name: 'Walked' } })).body.data;
    const order = ['get', 'post', 'put', 'patch', 'delete'];
    const operations = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([route, item]) => Object.keys(item).map((method) => ({ route, method })))
      // Signing out would end the member's session for the rest of the walk.
      .filter(({ route }) => route !== '/api/auth/sign-out' && route !== '/api/auth/delete-account')
      .sort((a, b) => order.indexOf(a.method) - order.indexOf(b.method));
    for (const { route, method } of operations) {
      const concrete = route.replace('{projectId}', project.id).replace('{file}', 'swagger-ui.css').replace(/\{[^}]+\}/g, project.id);
      const body = ['post', 'put', 'patch'].includes(method) ? {} : undefined;
      for (const api of Object.values(callers)) await api(method.toUpperCase(), concrete, { body });
    }
    expect(proxy.exchanges.length).toBeGreaterThan(2 * 100);
    expect(proxy.violations).toEqual([]);
  });
});
