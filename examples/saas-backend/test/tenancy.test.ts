import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pooledDatabaseKinds, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

// Two tenants: Alice owns organization A, Bob owns organization B. Each acts with their own
// session; "wrong organization" is Bob naming A's id, "another organization's record" is Bob
// naming one of A's ids while acting in B.
describe.each(pooledDatabaseKinds)('tenant isolation on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  let bob: SignedUp;
  let projectA: { id: string };
  let taskA: { id: string };

  beforeAll(async () => {
    backend = await startBackend(kind);
    alice = await signUp(backend.url, 'alice@example.com');
    bob = await signUp(backend.url, 'bob@example.com');
    projectA = (await alice.api('POST', '/Projects', { body: { name: 'Secret A' } })).body.data;
    taskA = (await alice.api('POST', `/Projects/${projectA.id}/Tasks`, { body: { title: 'A only' } })).body.data;
    await bob.api('POST', '/Projects', { body: { name: 'Visible B' } });
  });
  afterAll(() => backend?.stop());

  it('lists only the rows of the organization in the header', async () => {
    const listA = await alice.api('GET', '/Projects');
    const listB = await bob.api('GET', '/Projects');
    expect(listA.body.data.map((p: { name: string }) => p.name)).toEqual(['Secret A']);
    expect(listB.body.data.map((p: { name: string }) => p.name)).toEqual(['Visible B']);
    expect(listB.body.meta.total).toBe(1);
    expect((await bob.api('GET', '/Tasks')).body.meta.total).toBe(0);
    expect((await bob.api('GET', '/Projects?search=Secret')).body.data).toEqual([]);
  });

  it("answers another organization's record as 404 for read, replace, update and delete", async () => {
    for (const [method, body] of [['GET'], ['PUT', { name: 'hijacked' }], ['PATCH', { name: 'hijacked' }], ['DELETE']] as const) {
      const response = await bob.api(method, `/Projects/${projectA.id}`, { body });
      expect(response.status, method).toBe(404);
      expect(response.body.error.message).toBe(`Project with id '${projectA.id}' not found`);
    }
    for (const [method, body] of [['GET'], ['PUT', { title: 'x', projectId: projectA.id }], ['PATCH', { title: 'x' }], ['DELETE']] as const) {
      expect((await bob.api(method, `/Tasks/${taskA.id}`, { body })).status, method).toBe(404);
    }
    const stillThere = await alice.api('GET', `/Projects/${projectA.id}`);
    expect(stillThere.body.data.name).toBe('Secret A');
    expect((await alice.api('GET', `/Tasks/${taskA.id}`)).body.data.title).toBe('A only');
  });

  it("answers another organization's parent as 404 on nested routes", async () => {
    for (const method of ['GET', 'POST']) {
      const response = await bob.api(method, `/Projects/${projectA.id}/Tasks`, { body: method === 'POST' ? { title: 'sneak' } : undefined });
      expect(response.status, method).toBe(404);
    }
    expect((await alice.api('GET', `/Projects/${projectA.id}/Tasks`)).body.meta.total).toBe(1);
  });

  it("refuses a child that points at another organization's parent through its body", async () => {
    const response = await bob.api('POST', '/Tasks', { body: { title: 'cross', projectId: projectA.id } });
    expect(response.status).toBe(422);
    expect(response.body.error.details).toEqual({ projectId: 'No such record in this organization' });
  });

  it('refuses an organizationId smuggled in a body', async () => {
    const created = await bob.api('POST', '/Projects', { body: { name: 'Smuggler', organizationId: alice.organizationId } });
    expect(created.status).toBe(422);
    expect(created.body.error.details).toEqual({ organizationId: 'Unknown field' });
    const patched = await alice.api('PATCH', `/Projects/${projectA.id}`, { body: { organizationId: bob.organizationId } });
    expect(patched.status).toBe(422);
    expect((await alice.api('GET', '/Projects')).body.meta.total).toBe(1);
    expect((await bob.api('GET', '/Projects')).body.meta.total).toBe(1);
  });

  it('answers a header naming an organization the caller is not a member of with 403, on every tenant route', async () => {
    const asBobInA = { organizationId: alice.organizationId };
    const routes: [string, string, unknown?][] = [
      ['GET', '/Projects'],
      ['POST', '/Projects', { name: 'Intruder' }],
      ['GET', `/Projects/${projectA.id}`],
      ['PATCH', `/Projects/${projectA.id}`, { name: 'Intruder' }],
      ['DELETE', `/Projects/${projectA.id}`],
      ['GET', `/Projects/${projectA.id}/Tasks`],
      ['POST', `/Projects/${projectA.id}/Tasks`, { title: 'Intruder' }],
      ['GET', '/Tasks'],
      ['GET', '/members'],
      ['GET', '/Users'],
    ];
    for (const [method, path, body] of routes) {
      const response = await bob.api(method, path, { ...asBobInA, body });
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(response.body.error.code).toBe('FORBIDDEN');
    }
    expect((await alice.api('GET', `/Projects/${projectA.id}`)).body.data.name).toBe('Secret A');
  });

  it('answers a malformed x-organization-id, or none without an active organization, with 400', async () => {
    // Sent by hand: the test client always adds the default organization.
    const bare = () => fetch(`${backend.url}/Projects`, { headers: { authorization: `Bearer ${bob.token}` } });
    // No header: the session's active organization (Bob's own; active-organization.test.ts).
    expect((await bare()).status).toBe(200);
    expect((await bob.api('POST', '/api/auth/organization/set-active', { body: { organizationId: null } })).status).toBe(200);
    try {
      const none = await bare();
      expect(none.status).toBe(400);
      const body = await none.json();
      expect(body.error.code).toBe('BAD_REQUEST');
      expect(body.error.details).toHaveProperty('x-organization-id');
    } finally {
      await bob.api('POST', '/api/auth/organization/set-active', { body: { organizationId: bob.organizationId } });
    }
    for (const header of ['not-a-uuid', "' OR 1=1 --", '1']) {
      const malformed = await bob.api('GET', '/Projects', { organizationId: header });
      expect(malformed.status, header).toBe(400);
    }
  });

  it('answers an organization that does not exist with 403', async () => {
    const response = await bob.api('GET', '/Projects', { organizationId: '00000000-0000-4000-8000-000000000000' });
    expect(response.status).toBe(403);
  });

  it('answers a request without credentials with 401 in the error envelope', async () => {
    const response = await fetch(`${backend.url}/Projects`, { headers: { 'x-organization-id': alice.organizationId } });
    expect(response.status).toBe(401);
    expect((await response.json()).error.code).toBe('UNAUTHORIZED');
  });
});
