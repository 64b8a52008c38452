import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perRequest, type WireCounter } from '../../../bench/lib/pg-wire-counter.mjs';
import { addMember, apiClient, databaseKinds, pooledDatabaseKinds, serviceApiKey, signUp, startBackend, startCountedBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * Machine keys (src/auth/machine-keys.ts): made by an organization's owners and admins,
 * sent as `x-api-key`, they reach that organization's tenant-scoped routes as far as their
 * permissions say, each request checked in the round trip of the route's own statement.
 */
describe.each(pooledDatabaseKinds)('machine keys on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  let bob: SignedUp;
  const service = () => apiClient(backend.url, { token: serviceApiKey });
  /** A client that sends only the key (and, if given, an organization header). */
  const withKey = (key: string, organizationId?: string) => (method: string, path: string, body?: unknown) =>
    apiClient(backend.url)(method, path, { body, organizationId, headers: { 'x-api-key': key } });
  /** Alice makes a key of her organization. */
  const makeKey = async (input: Record<string, unknown>) => {
    const made = await alice.api('POST', '/api/auth/api-keys', { body: { name: 'ci', permissions: { Project: ['list', 'read', 'create'] }, ...input } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body.data as { id: string; key: string; start: string };
  };
  const projectCount = async () => (await alice.api('GET', '/Projects')).body.meta.total as number;

  beforeAll(async () => {
    backend = await startBackend(kind);
    alice = await signUp(backend.url, 'alice@example.com');
    bob = await signUp(backend.url, 'bob@example.com');
    await alice.api('POST', '/Projects', { body: { name: 'Alpha' } });
    await bob.api('POST', '/Projects', { body: { name: 'Bravo' } });
  });
  afterAll(() => backend?.stop());

  it("reads and writes the organization's own entities as its permissions say, with or without the header", async () => {
    const { key } = await makeKey({});
    expect(key).toMatch(/^ask_[\w-]{40,}$/);
    const listed = await withKey(key)('GET', '/Projects');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((project: { name: string }) => project.name)).toEqual(['Alpha']);
    const created = await withKey(key, alice.organizationId)('POST', '/Projects', { name: 'Made by a machine' });
    expect(created.status).toBe(201);
    expect((await withKey(key)('GET', `/Projects/${created.body.data.id}`)).body.data.name).toBe('Made by a machine');
    expect(await projectCount()).toBe(2);
  });

  it('reaches nested routes as the child entity: a Task key lists and creates the Tasks of a Project, replaces and deletes them', async () => {
    const project = (await alice.api('POST', '/Projects', { body: { name: 'Parent' } })).body.data;
    const { key } = await makeKey({ permissions: { Task: ['list', 'create', 'update', 'delete'] } });
    const task = await withKey(key)('POST', `/Projects/${project.id}/Tasks`, { title: 'Nightly' });
    expect(task.status, JSON.stringify(task.body)).toBe(201);
    expect((await withKey(key)('GET', `/Projects/${project.id}/Tasks`)).body.data.map((row: { title: string }) => row.title)).toEqual(['Nightly']);
    expect((await withKey(key)('PUT', `/Tasks/${task.body.data.id}`, { title: 'Weekly', projectId: project.id })).status).toBe(200);
    // Reading one record is an operation of its own, not granted here.
    expect((await withKey(key)('GET', `/Tasks/${task.body.data.id}`)).status).toBe(403);
    expect((await withKey(key)('GET', `/Projects/${project.id}`)).status).toBe(403);
    expect((await withKey(key)('DELETE', `/Tasks/${task.body.data.id}`)).status).toBe(204);
    expect((await alice.api('GET', `/Projects/${project.id}/Tasks`)).body.meta.total).toBe(0);
    await alice.api('DELETE', `/Projects/${project.id}`);
  });

  it('shows the key once: the list has no key and no hash, and the table keeps only its SHA-256', async () => {
    const made = await makeKey({ name: 'shown once' });
    const hash = createHash('sha256').update(made.key).digest('base64url');
    const listed = await alice.api('GET', '/api/auth/api-keys');
    expect(listed.status).toBe(200);
    const entry = listed.body.data.find((candidate: { id: string }) => candidate.id === made.id);
    expect(entry).toMatchObject({ name: 'shown once', start: made.key.slice(0, 10), role: 'member', permissions: { Project: ['list', 'read', 'create'] } });
    expect(JSON.stringify(listed.body)).not.toContain(made.key);
    expect(JSON.stringify(listed.body)).not.toContain(hash);
    const stored = (await service()('GET', `/apikeys/${made.id}`)).body.data;
    expect(stored.key).toBe(hash);
    expect(JSON.stringify(stored)).not.toContain(made.key);
  });

  it("answers 403 to a key sent with another organization's header, and reads nothing there", async () => {
    const { key } = await makeKey({});
    const response = await withKey(key, bob.organizationId)('GET', '/Projects');
    expect(response.status).toBe(403);
    expect(response.body.error.message).toMatch(/another organization/);
    expect((await withKey(key, bob.organizationId)('POST', '/Projects', { name: 'Into B' })).status).toBe(403);
    expect((await bob.api('GET', '/Projects')).body.meta.total).toBe(1);
  });

  it('answers 403 beyond its permissions, naming the entity and the operation, and writes nothing', async () => {
    const { key } = await makeKey({ permissions: { Project: ['list', 'read'] } });
    const before = await projectCount();
    const created = await withKey(key)('POST', '/Projects', { name: 'Not allowed' });
    expect(created.status).toBe(403);
    expect(created.body.error.message).toBe('This machine key may not create Project: its permissions do not include it');
    const project = (await alice.api('GET', '/Projects')).body.data[0];
    expect((await withKey(key)('PATCH', `/Projects/${project.id}`, { name: 'Renamed' })).status).toBe(403);
    expect((await withKey(key)('DELETE', `/Projects/${project.id}`)).status).toBe(403);
    expect((await withKey(key)('GET', '/Tasks')).status).toBe(403);
    expect(await projectCount()).toBe(before);
    expect((await alice.api('GET', `/Projects/${project.id}`)).body.data.name).toBe(project.name);
  });

  it('is made by owners and admins only, never with a role above their own, and for known entities only', async () => {
    const admin = await addMember(backend.url, alice, `admin-${kind}@example.com`, 'admin');
    const member = await addMember(backend.url, alice, `member-${kind}@example.com`, 'member');
    const permissions = { Project: ['read'] };
    expect((await member.api('POST', '/api/auth/api-keys', { body: { name: 'mine', permissions } })).status).toBe(403);
    expect((await member.api('GET', '/api/auth/api-keys')).status).toBe(403);
    expect((await admin.api('POST', '/api/auth/api-keys', { body: { name: 'too high', role: 'owner', permissions } })).status).toBe(403);
    expect((await admin.api('POST', '/api/auth/api-keys', { body: { name: 'admin key', role: 'admin', permissions } })).status).toBe(201);
    const unknown = await alice.api('POST', '/api/auth/api-keys', { body: { name: 'users', permissions: { User: ['list'] } } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.details.permissions).toMatch(/Unknown entity User/);
    expect((await apiClient(backend.url)('POST', '/api/auth/api-keys', { body: { name: 'anonymous', permissions } })).status).toBe(401);
  });

  it('is refused with 401 on the next request once revoked, expired or disabled', async () => {
    const revoked = await makeKey({});
    expect((await withKey(revoked.key)('GET', '/Projects')).status).toBe(200);
    expect((await alice.api('DELETE', `/api/auth/api-keys/${revoked.id}`)).status).toBe(204);
    const afterRevoking = await withKey(revoked.key)('GET', '/Projects');
    expect(afterRevoking.status).toBe(401);
    expect(afterRevoking.body.error.message).toMatch(/unknown, or revoked/);
    expect((await alice.api('DELETE', `/api/auth/api-keys/${revoked.id}`)).status).toBe(404);

    const expiring = await makeKey({ expiresIn: 60 });
    expect((await withKey(expiring.key)('GET', '/Projects')).status).toBe(200);
    expect((await service()('PATCH', `/apikeys/${expiring.id}`, { body: { expiresAt: new Date(Date.now() - 1000).toISOString() } })).status).toBe(200);
    const afterExpiry = await withKey(expiring.key)('GET', '/Projects');
    expect(afterExpiry.status).toBe(401);
    expect(afterExpiry.body.error.message).toMatch(/expired/);

    const disabled = await makeKey({});
    expect((await service()('PATCH', `/apikeys/${disabled.id}`, { body: { enabled: false } })).status).toBe(200);
    expect((await withKey(disabled.key)('POST', '/Projects', { name: 'Disabled' })).status).toBe(401);
    expect((await withKey('ask_not-a-key-at-all')('GET', '/Projects')).status).toBe(401);
  });

  it("goes with its organization, whoever deletes it: after the service key's DELETE (Better Auth's organization plugin) and an account deletion, no key and no invitation of it is left", async () => {
    const pendingFor = async (invitee: SignedUp) => (await invitee.api('GET', '/api/auth/invitations', { organizationId: '' })).body.data as unknown[];
    for (const deletion of ['service key', 'account'] as const) {
      const tag = deletion === 'service key' ? 'by-service' : 'by-account';
      const owner = await signUp(backend.url, `leaving-${tag}@example.com`);
      const invitee = await signUp(backend.url, `invited-${tag}@example.com`);
      const made = await owner.api('POST', '/api/auth/api-keys', { body: { name: 'ci', permissions: { Project: ['list'] } } });
      expect(made.status).toBe(201);
      expect((await withKey(made.body.data.key)('GET', '/Projects')).status).toBe(200);
      expect((await owner.api('POST', '/members', { body: { email: invitee.user.email, role: 'member' } })).status).toBe(202);
      expect(await pendingFor(invitee)).toHaveLength(1);

      const deleted =
        deletion === 'service key'
          ? await service()('DELETE', `/Organizations/${owner.organizationId}`)
          : await service()('DELETE', `/Users/${owner.user.id}`);
      expect(deleted.status, JSON.stringify(deleted.body)).toBeLessThan(300);
      expect((await service()('GET', `/Organizations/${owner.organizationId}`)).status).toBe(404);

      expect((await service()('GET', `/apikeys/${made.body.data.id}`)).status).toBe(404);
      expect((await withKey(made.body.data.key)('GET', '/Projects')).status).toBe(401);
      expect(await pendingFor(invitee)).toEqual([]);
    }
    // Nobody else's went with them.
    expect((await alice.api('GET', '/api/auth/api-keys')).body.data.length).toBeGreaterThan(0);
  });

  it("answers 429 with Retry-After past its own limit, and only past it; Alice's session is not counted", async () => {
    const { key } = await makeKey({ rateLimitMax: 3, rateLimitTimeWindow: 60_000 });
    for (let i = 0; i < 3; i++) expect((await withKey(key)('GET', '/Projects')).status).toBe(200);
    const refused = await withKey(key)('GET', '/Projects');
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect((await alice.api('GET', '/Projects')).status).toBe(200);
  });

  it('does not count a request its permissions refuse against its limit (as Better Auth counts)', async () => {
    const { key } = await makeKey({ permissions: { Project: ['list'] }, rateLimitMax: 3, rateLimitTimeWindow: 60_000 });
    for (let i = 0; i < 4; i++) expect((await withKey(key)('POST', '/Projects', { name: 'Refused' })).status).toBe(403);
    for (let i = 0; i < 3; i++) expect((await withKey(key)('GET', '/Projects')).status).toBe(200);
    expect((await withKey(key)('GET', '/Projects')).status).toBe(429);
    // Past its limit, a request it may not make at all still hears why first.
    expect((await withKey(key)('POST', '/Projects', { name: 'Refused' })).status).toBe(403);
  });

  it("answers 429 once a quota (Better Auth's `remaining`) is used up", async () => {
    const made = await makeKey({});
    expect((await service()('PATCH', `/apikeys/${made.id}`, { body: { remaining: 2 } })).status).toBe(200);
    expect((await withKey(made.key)('GET', '/Projects')).status).toBe(200);
    expect((await withKey(made.key)('GET', '/Projects')).status).toBe(200);
    const refused = await withKey(made.key)('GET', '/Projects');
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/used all of its requests/);
    expect((await service()('GET', `/apikeys/${made.id}`)).body.data.remaining).toBe(0);
  });

  it('grants nothing when its permissions are not JSON (written by another tool)', async () => {
    const made = await makeKey({});
    expect((await service()('PATCH', `/apikeys/${made.id}`, { body: { permissions: '{"Project": ["list"' } })).status).toBe(200);
    expect((await withKey(made.key)('GET', '/Projects')).status).toBe(403);
    expect((await alice.api('GET', '/api/auth/api-keys')).body.data.find((key: { id: string }) => key.id === made.id).permissions).toEqual({});
  });

  it('lets exactly rateLimitMax of 20 concurrent requests through', async () => {
    const { key } = await makeKey({ rateLimitMax: 10, rateLimitTimeWindow: 60_000 });
    const statuses = await Promise.all(Array.from({ length: 20 }, () => withKey(key)('GET', '/Projects').then((response) => response.status)));
    expect(statuses.filter((status) => status === 200)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(10);
  });

  it('records its last request and its count in the window within MACHINE_KEY_USAGE_FLUSH_MS (1 s) of the request', async () => {
    const made = await makeKey({});
    const startedAt = Date.now();
    for (let i = 0; i < 2; i++) await withKey(made.key)('GET', '/Projects');
    const answeredAt = Date.now();
    const listedKey = async () => (await alice.api('GET', '/api/auth/api-keys')).body.data.find((candidate: { id: string }) => candidate.id === made.id);
    // Not written by the request itself (a read writes nothing): by the instance's next flush.
    let listed = await listedKey();
    while (listed.requestCount !== 2 && Date.now() - answeredAt < 5000) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      listed = await listedKey();
    }
    const arrivedAfterMs = Date.now() - answeredAt;
    expect(listed.requestCount).toBe(2);
    // The documented delay (one flush interval) and the time a flush and a list take.
    expect(arrivedAfterMs).toBeLessThan(1000 + 500);
    expect(new Date(listed.lastRequest).getTime()).toBeGreaterThanOrEqual(startedAt - 1000);
    expect(new Date(listed.lastRequest).getTime()).toBeLessThanOrEqual(answeredAt + 1000);
  });

  it('is in the OpenAPI document: the machineKey scheme on the routes it reaches, and /api/auth/api-keys', async () => {
    const document = (await apiClient(backend.url)('GET', '/api/docs/openapi.json')).body;
    expect(document.components.securitySchemes.machineKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-api-key' });
    for (const [path, method] of [['/Projects', 'get'], ['/Projects/{id}', 'patch'], ['/Projects/{projectId}/Tasks', 'post']] as const) {
      expect(document.paths[path][method].security, `${method} ${path}`).toContainEqual({ machineKey: [] });
    }
    expect(document.paths['/Users'].get.security ?? document.security).not.toContainEqual({ machineKey: [] });
    expect(Object.keys(document.paths['/api/auth/api-keys'])).toEqual(expect.arrayContaining(['get', 'post']));
    expect(document.paths['/api/auth/api-keys/{id}'].delete).toBeDefined();
  });

  it("is refused with 403 everywhere but the organization's own entities", async () => {
    const { key } = await makeKey({});
    for (const [method, path] of [
      ['GET', '/Users'],
      ['GET', '/sessions'],
      ['GET', '/members'],
      ['GET', '/Organizations'],
      ['GET', '/verifications'],
      ['GET', '/apikeys'],
      ['GET', '/api/auth/get-session'],
      ['GET', '/api/auth/api-keys'],
      ['POST', '/api/auth/sign-out'],
    ] as const) {
      const response = await withKey(key)(method, path);
      expect(response.status, path).toBe(403);
      expect(response.body.error.message, path).toMatch(/Machine keys reach only the organization's own entities/);
    }
    // Not even beside the service key or a session.
    const both = await apiClient(backend.url)('GET', '/Users', { token: serviceApiKey, headers: { 'x-api-key': key } });
    expect(both.status).toBe(403);
  });
});

/** Counted on the wire (bench/lib/pg-wire-counter.mjs between the backend and PostgreSQL). */
describe.runIf(databaseKinds.includes('postgres' as never))('a machine key costs no round trip of its own, PostgreSQL', () => {
  let counted: Awaited<ReturnType<typeof startCountedBackend>>;
  let counter: WireCounter;
  let key: string;
  let projectId: string;

  beforeAll(async () => {
    counted = await startCountedBackend();
    counter = counted.counter;
    const ada = await counted.signUpQuietly('ada@example.com');
    projectId = (await ada.api('POST', '/Projects', { body: { name: 'Apollo' } })).body.data.id;
    key = (await ada.api('POST', '/api/auth/api-keys', { body: { name: 'counted', permissions: { Project: ['list', 'read', 'update'] } } })).body.data.key;
  });
  afterAll(() => counted?.stop());

  async function roundTrips(method: string, path: string, body?: unknown) {
    const before = counter.snapshot();
    const answer = await apiClient(counted.backend.url)(method, path, { body, headers: { 'x-api-key': key } });
    return { status: answer.status, roundTrips: perRequest(before, counter.snapshot(), 1).roundTrips };
  }

  it('is 1 for a list, a read and a write, and for a refusal', async () => {
    expect(await roundTrips('GET', '/Projects')).toEqual({ status: 200, roundTrips: 1 });
    expect(await roundTrips('GET', `/Projects/${projectId}`)).toEqual({ status: 200, roundTrips: 1 });
    expect(await roundTrips('PATCH', `/Projects/${projectId}`, { name: 'Gemini' })).toEqual({ status: 200, roundTrips: 1 });
    expect(await roundTrips('POST', '/Projects', { name: 'Not allowed' })).toEqual({ status: 403, roundTrips: 1 });
  });
});
