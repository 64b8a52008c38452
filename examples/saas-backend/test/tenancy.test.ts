import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, createOrganization, databaseKinds, startBackend, type Api, type TestBackend } from './support/backend.js';

describe.each(databaseKinds)('tenant isolation on the %s database', (kind) => {
  let backend: TestBackend;
  let api: Api;
  let orgA: string;
  let orgB: string;
  let projectA: { id: string };
  let taskA: { id: string };

  beforeAll(async () => {
    backend = await startBackend(kind);
    api = apiClient(backend.url);
    orgA = await createOrganization(api, 'tenant-a');
    orgB = await createOrganization(api, 'tenant-b');
    projectA = (await api('POST', '/Projects', { organizationId: orgA, body: { name: 'Secret A' } })).body.data;
    taskA = (await api('POST', `/Projects/${projectA.id}/Tasks`, { organizationId: orgA, body: { title: 'A only' } })).body.data;
    await api('POST', '/Projects', { organizationId: orgB, body: { name: 'Visible B' } });
  });
  afterAll(() => backend?.stop());

  it('lists only the rows of the organization in the header', async () => {
    const listA = await api('GET', '/Projects', { organizationId: orgA });
    const listB = await api('GET', '/Projects', { organizationId: orgB });
    expect(listA.body.data.map((p: { name: string }) => p.name)).toEqual(['Secret A']);
    expect(listB.body.data.map((p: { name: string }) => p.name)).toEqual(['Visible B']);
    expect(listB.body.meta.total).toBe(1);
    expect((await api('GET', '/Tasks', { organizationId: orgB })).body.meta.total).toBe(0);
    expect((await api('GET', '/Projects?search=Secret', { organizationId: orgB })).body.data).toEqual([]);
  });

  it("answers another organization's record as 404 for read, replace, update and delete", async () => {
    for (const [method, body] of [['GET'], ['PUT', { name: 'hijacked' }], ['PATCH', { name: 'hijacked' }], ['DELETE']] as const) {
      const response = await api(method, `/Projects/${projectA.id}`, { organizationId: orgB, body });
      expect(response.status, method).toBe(404);
      expect(response.body.error.message).toBe(`Project with id '${projectA.id}' not found`);
    }
    for (const method of ['GET', 'DELETE']) {
      expect((await api(method, `/Tasks/${taskA.id}`, { organizationId: orgB })).status, method).toBe(404);
    }
    const stillThere = await api('GET', `/Projects/${projectA.id}`, { organizationId: orgA });
    expect(stillThere.body.data.name).toBe('Secret A');
  });

  it("answers another organization's parent as 404 on nested routes", async () => {
    for (const method of ['GET', 'POST']) {
      const response = await api(method, `/Projects/${projectA.id}/Tasks`, { organizationId: orgB, body: method === 'POST' ? { title: 'sneak' } : undefined });
      expect(response.status, method).toBe(404);
    }
    expect((await api('GET', `/Projects/${projectA.id}/Tasks`, { organizationId: orgA })).body.meta.total).toBe(1);
  });

  it("refuses a child that points at another organization's parent through its body", async () => {
    const response = await api('POST', '/Tasks', { organizationId: orgB, body: { title: 'cross', projectId: projectA.id } });
    expect(response.status).toBe(422);
    expect(response.body.error.details).toEqual({ projectId: 'No such record in this organization' });
    const moved = await api('PATCH', `/Tasks/${taskA.id}`, { organizationId: orgB, body: { title: 'moved' } });
    expect(moved.status).toBe(404);
  });

  it('refuses an organizationId smuggled in a body', async () => {
    const created = await api('POST', '/Projects', { organizationId: orgB, body: { name: 'Smuggler', organizationId: orgA } });
    expect(created.status).toBe(422);
    expect(created.body.error.details).toEqual({ organizationId: 'Unknown field' });
    const patched = await api('PATCH', `/Projects/${projectA.id}`, { organizationId: orgA, body: { organizationId: orgB } });
    expect(patched.status).toBe(422);
    expect((await api('GET', '/Projects', { organizationId: orgA })).body.meta.total).toBe(1);
  });

  it('answers a missing x-organization-id with 400 and a malformed one with 400', async () => {
    const missing = await api('GET', '/Projects');
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('BAD_REQUEST');
    expect(missing.body.error.details).toHaveProperty('x-organization-id');
    for (const header of ['not-a-uuid', "' OR 1=1 --", '1']) {
      const malformed = await api('GET', '/Projects', { headers: { 'x-organization-id': header } });
      expect(malformed.status, header).toBe(400);
    }
  });

  it('answers an organization that does not exist with 403', async () => {
    const response = await api('GET', '/Projects', { organizationId: '00000000-0000-4000-8000-000000000000' });
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('FORBIDDEN');
  });
});
