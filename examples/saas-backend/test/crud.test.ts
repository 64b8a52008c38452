import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertStatement, updateStatement } from '../src/db/sql.js';
import { pooledDatabaseKinds, postgresAdminUrl, signUp, startBackend, type Api, type TestBackend } from './support/backend.js';

describe.each(pooledDatabaseKinds)('generic routes on the %s database', (kind) => {
  let backend: TestBackend;
  let api: Api;
  let org: string;

  beforeAll(async () => {
    backend = await startBackend(kind);
    const owner = await signUp(backend.url, 'crud@example.com');
    api = owner.api;
    org = owner.organizationId;
  });
  afterAll(() => backend?.stop());

  it('creates with 201 and returns the record in the success envelope', async () => {
    const response = await api('POST', '/Projects', { organizationId: org, body: { name: 'Apollo', description: 'to the moon' } });
    expect(response.status).toBe(201);
    expect(response.body.success).toBe(true);
    expect(response.body.data).toMatchObject({ name: 'Apollo', description: 'to the moon', status: 'active', organizationId: org });
    expect(response.body.data.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(response.body.data.createdAt)).not.toBeNaN();
    expect(response.body.meta).toBeUndefined();
  });

  it('accepts an id supplied by the caller', async () => {
    const id = '0b6a4b1e-3c55-4d5e-9a7b-5a4f3e2d1c0b';
    const response = await api('POST', '/Projects', { organizationId: org, body: { id, name: 'Chosen id' } });
    expect(response.status).toBe(201);
    expect(response.body.data.id).toBe(id);
    expect((await api('GET', `/Projects/${id}`, { organizationId: org })).status).toBe(200);
  });

  it('reads, replaces, updates and deletes by id with 200, 200, 200 and 204', async () => {
    const created = (await api('POST', '/Projects', { organizationId: org, body: { name: 'Gemini', description: 'two', status: 'archived' } })).body.data;
    const path = `/Projects/${created.id}`;

    const read = await api('GET', path, { organizationId: org });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(created);

    // PUT replaces the whole record: fields left out go back to their defaults.
    const replaced = await api('PUT', path, { organizationId: org, body: { name: 'Gemini II' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ id: created.id, name: 'Gemini II', description: null, status: 'active' });
    expect(Date.parse(replaced.body.data.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));

    // PATCH changes only what it names.
    const patched = await api('PATCH', path, { organizationId: org, body: { status: 'archived' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ name: 'Gemini II', status: 'archived' });

    const deleted = await api('DELETE', path, { organizationId: org });
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();

    const gone = await api('GET', path, { organizationId: org });
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({
      success: false,
      error: { code: 'NOT_FOUND', message: `Project with id '${created.id}' not found` },
    });
  });

  it('answers 404 naming the resource and id for every by-id method on an unknown id', async () => {
    const id = '11111111-2222-4333-8444-555555555555';
    for (const [method, body] of [['GET'], ['PUT', { name: 'x y' }], ['PATCH', { name: 'x y' }], ['DELETE']] as const) {
      const response = await api(method, `/Projects/${id}`, { organizationId: org, body });
      expect(response.status, method).toBe(404);
      expect(response.body.error.message).toBe(`Project with id '${id}' not found`);
    }
  });

  it('treats an id that is not a uuid as an unknown id', async () => {
    const response = await api('GET', '/Projects/not-a-uuid', { organizationId: org });
    expect(response.status).toBe(404);
    expect(response.body.error).toEqual({ code: 'NOT_FOUND', message: "Project with id 'not-a-uuid' not found" });
  });

  it('serves nested children under their parent: GET and POST /Projects/:projectId/Tasks', async () => {
    const project = (await api('POST', '/Projects', { organizationId: org, body: { name: 'Nested' } })).body.data;
    const other = (await api('POST', '/Projects', { organizationId: org, body: { name: 'Other' } })).body.data;

    const created = await api('POST', `/Projects/${project.id}/Tasks`, { organizationId: org, body: { title: 'first' } });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ title: 'first', status: 'todo', projectId: project.id });
    await api('POST', `/Projects/${other.id}/Tasks`, { organizationId: org, body: { title: 'elsewhere' } });

    const list = await api('GET', `/Projects/${project.id}/Tasks`, { organizationId: org });
    expect(list.status).toBe(200);
    expect(list.body.data.map((task: { title: string }) => task.title)).toEqual(['first']);
    expect(list.body.meta).toEqual({ page: 1, limit: 20, total: 1, totalPages: 1 });

    // The child's own routes work on the same record.
    const task = created.body.data;
    expect((await api('PATCH', `/Tasks/${task.id}`, { organizationId: org, body: { status: 'done' } })).body.data.status).toBe('done');
    expect((await api('GET', '/Tasks', { organizationId: org })).body.meta.total).toBe(2);
  });

  it('refuses a nested path whose parent does not exist, and a parent id in the nested body', async () => {
    const missing = '99999999-9999-4999-8999-999999999999';
    const response = await api('POST', `/Projects/${missing}/Tasks`, { organizationId: org, body: { title: 'orphan' } });
    expect(response.status).toBe(404);
    expect(response.body.error.message).toBe(`Project with id '${missing}' not found`);

    const project = (await api('POST', '/Projects', { organizationId: org, body: { name: 'Parent' } })).body.data;
    const smuggled = await api('POST', `/Projects/${project.id}/Tasks`, { organizationId: org, body: { title: 't', projectId: missing } });
    expect(smuggled.status).toBe(422);
    expect(smuggled.body.error.details).toEqual({ projectId: 'Unknown field' });
  });

  it('deleting a parent deletes its nested children (ON DELETE CASCADE)', async () => {
    const project = (await api('POST', '/Projects', { organizationId: org, body: { name: 'Doomed' } })).body.data;
    const task = (await api('POST', `/Projects/${project.id}/Tasks`, { organizationId: org, body: { title: 'goes too' } })).body.data;
    expect((await api('DELETE', `/Projects/${project.id}`, { organizationId: org })).status).toBe(204);
    expect((await api('GET', `/Tasks/${task.id}`, { organizationId: org })).status).toBe(404);
  });

  it('matches paths case-insensitively: /projects reaches /Projects', async () => {
    const response = await api('GET', '/projects', { organizationId: org });
    expect(response.status).toBe(200);
    expect(response.body.success).toBe(true);
  });
});

describe.runIf(postgresAdminUrl)('updatedAt under concurrent updates', () => {
  it('never goes backwards: an update that waited for the row keeps the newer time', async () => {
    const backend = await startBackend('postgres');
    try {
      const owner = await signUp(backend.url, 'clock@example.com');
      const project = (await owner.api('POST', '/Projects', { body: { name: 'Clock' } })).body.data;
      const databaseUrl = backend.running.config.databaseUrl!;
      const slow = new pg.Client({ connectionString: databaseUrl });
      await slow.connect();
      try {
        // A transaction whose now() is fixed before the other update happens ...
        await slow.query('BEGIN');
        await slow.query('SELECT now()');
        await new Promise((resolve) => setTimeout(resolve, 50));
        const newer = await owner.api('PATCH', `/Projects/${project.id}`, { body: { name: 'Newer' } });
        expect(newer.status).toBe(200);
        // ... then updates the row with the statement every repository uses, and commits last.
        const update = updateStatement('Project', { name: 'Older' }, { name: 'name' }, { id: project.id, organizationId: owner.organizationId }, '"updatedAt"', 'updatedAt');
        const { rows } = await slow.query<{ updatedAt: Date }>(update.text, update.params);
        await slow.query('COMMIT');
        expect(rows[0]!.updatedAt.getTime()).toBeGreaterThanOrEqual(new Date(newer.body.data.updatedAt).getTime());
        const final = (await owner.api('GET', `/Projects/${project.id}`)).body.data;
        expect(new Date(final.updatedAt).getTime()).toBeGreaterThanOrEqual(new Date(newer.body.data.updatedAt).getTime());
      } finally {
        await slow.end();
      }
    } finally {
      await backend.stop();
    }
  });
});

describe('writes with SQL of their own (src/db/sql.ts)', () => {
  it('sets computed columns by their expression and keeps values as parameters', () => {
    const insert = insertStatement('Project', { name: 'A' }, { name: 'name' }, '"id"', { computed: { organizationId: 'authstrap.organization_id()' } });
    expect(insert).toEqual({ text: 'INSERT INTO "Project" ("name", "organizationId") VALUES ($1, authstrap.organization_id()) RETURNING "id"', params: ['A'] });
  });

  it('inserts nothing unless onlyIf holds', () => {
    const insert = insertStatement('Project', { name: 'A' }, { name: 'name' }, '"id"', { computed: { organizationId: 'o()' }, onlyIf: "authstrap.role() = 'owner'" });
    expect(insert.text).toBe(`INSERT INTO "Project" ("name", "organizationId") SELECT $1, o() WHERE authstrap.role() = 'owner' RETURNING "id"`);
  });

  it('updates only the rows onlyIf allows, after the key', () => {
    const update = updateStatement('Project', { name: 'B' }, { name: 'name' }, { id: 'i' }, '"id"', 'updatedAt', { onlyIf: '"organizationId" = authstrap.organization_id()' });
    expect(update).toEqual({
      text: 'UPDATE "Project" SET "name" = $1, "updatedAt" = GREATEST(now(), "updatedAt") WHERE "id" = $2 AND "organizationId" = authstrap.organization_id() RETURNING "id"',
      params: ['B', 'i'],
    });
    const emptyPatch = updateStatement('Project', {}, { name: 'name' }, { id: 'i' }, '"id"', null);
    expect(emptyPatch.text).toBe('UPDATE "Project" SET "id" = "id" WHERE "id" = $1 RETURNING "id"');
  });

  it('never takes SQL from the values: an object is a JSON parameter', () => {
    const insert = insertStatement('Project', { meta: { sql: 'now()' } }, { meta: 'meta' }, '"id"');
    expect(insert).toEqual({ text: 'INSERT INTO "Project" ("meta") VALUES ($1) RETURNING "id"', params: ['{"sql":"now()"}'] });
  });
});
