import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectListSpec, projectRepository } from '../src/generated/Project/project.repository.js';
import { taskListSpec, taskRepository } from '../src/generated/Task/task.repository.js';
import { withScope } from '../src/db/scope.js';
import { parseListQuery } from '../src/http/list-query.js';
import { pooledDatabaseKinds, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * The routes send the JSON PostgreSQL writes for Project and Task reads (listJson, findJsonById).
 * It must be, byte for byte, what the objects `pg` reads would give through JSON.stringify (the
 * path every other read takes): awkward strings, nulls, integers at their limits, and timestamps
 * with microseconds, far in the past and future, and at infinity.
 */

/** Strings JSON escapes differently in many implementations. */
const awkwardTitles = [
  'quote " and backslash \\ and slash /',
  'controls \b \f \n \r \t \u0001 \u001f \u007f',
  'line separators \u2028 \u2029',
  'emoji 🚀 and accents éß 漢字',
  '</script><script>alert(1)</script>',
  '   spaces around   ',
];

/**
 * dueAt values written with SQL, as another program might (the API only takes ISO 8601), and what
 * the API must answer for each: JavaScript's ISO 8601 (1 BC is year 0, a sign and six digits
 * outside 0-9999, milliseconds cut), null where a JavaScript Date cannot hold the value.
 */
const awkwardTimestamps: [stored: string, answered: string | null][] = [
  ['2026-11-24 15:30:43.123456+00', '2026-11-24T15:30:43.123Z'],
  ['2026-11-24 15:30:43.999999+00', '2026-11-24T15:30:43.999Z'],
  ['2026-11-24 15:30:43+05:30', '2026-11-24T10:00:43.000Z'],
  ['1969-12-31 23:59:59.9995+00', '1969-12-31T23:59:59.999Z'],
  ['0001-01-01 00:00:00+00', '0001-01-01T00:00:00.000Z'],
  ['0001-01-01 00:00:00+00 BC', '0000-01-01T00:00:00.000Z'],
  ['0044-03-15 12:00:00+00 BC', '-000043-03-15T12:00:00.000Z'],
  ['9999-12-31 23:59:59.999999+00', '9999-12-31T23:59:59.999Z'],
  ['10000-01-01 00:00:00+00', '+010000-01-01T00:00:00.000Z'],
  ['275760-09-13 00:00:00+00', '+275760-09-13T00:00:00.000Z'],
  ['275760-09-13 00:00:00.001+00', null],
  ['infinity', null],
  ['-infinity', null],
];

describe.each(pooledDatabaseKinds)('JSON written by PostgreSQL, %s database', (kind) => {
  let backend: TestBackend;
  let ada: SignedUp;
  let projectId: string;
  const taskIds: string[] = [];

  beforeAll(async () => {
    backend = await startBackend(kind);
    ada = await signUp(backend.url, 'ada@example.com');
    projectId = (await ada.api('POST', '/Projects', { body: { name: 'Edges', description: null } })).body.data.id;
    const points = [0, 1, 2_147_483_647, null];
    for (const [index, title] of awkwardTitles.entries()) {
      const created = await ada.api('POST', `/Projects/${projectId}/Tasks`, { body: { title, points: points[index % points.length] } });
      expect(created.status).toBe(201);
      taskIds.push(created.body.data.id);
    }
    for (const [dueAt] of awkwardTimestamps) {
      const created = await ada.api('POST', `/Projects/${projectId}/Tasks`, { body: { title: `due ${dueAt}` } });
      await backend.running.db.asOwner((tx) => tx.query('UPDATE "Task" SET "dueAt" = $1::timestamptz, "createdAt" = $1::timestamptz WHERE "id" = $2', [dueAt, created.body.data.id]));
      taskIds.push(created.body.data.id);
    }
  });
  afterAll(() => backend?.stop());
  /** The repositories as Ada's requests use them: under her organization's scope. */
  const asAda = () => withScope(backend.running.db, { organizationId: ada.organizationId, userId: ada.user.id, role: 'owner' });

  it('writes every record of a page exactly as JSON.stringify writes the rows pg reads', async () => {
    const db = asAda();
    for (const sort of ['title', 'dueAt', 'createdAt', 'points', 'status']) {
      for (const order of ['asc', 'desc']) {
        const query = parseListQuery({ sort, order, limit: '100' }, taskListSpec);
        const viaObjects = await taskRepository.list(db, query);
        const viaPostgres = await taskRepository.listJson(db, query);
        expect(viaObjects.rows).toHaveLength(taskIds.length);
        expect(viaPostgres.json, `${sort} ${order}`).toBe(JSON.stringify(viaObjects.rows));
        expect(viaPostgres.meta).toEqual(viaObjects.meta);
      }
    }
    const projects = parseListQuery({}, projectListSpec);
    expect((await projectRepository.listJson(db, projects)).json).toBe(
      JSON.stringify((await projectRepository.list(db, projects)).rows),
    );
  });

  it('writes one record exactly as JSON.stringify writes it', async () => {
    const db = asAda();
    for (const id of taskIds) {
      const json = await taskRepository.findJsonById(db, id);
      expect(json).toBe(JSON.stringify(await taskRepository.findById(db, id)));
    }
    expect(await projectRepository.findJsonById(db, projectId)).toBe(
      JSON.stringify(await projectRepository.findById(db, projectId)),
    );
    for (const [stored, answered] of awkwardTimestamps) {
      const id = taskIds[awkwardTitles.length + awkwardTimestamps.findIndex(([candidate]) => candidate === stored)]!;
      expect(JSON.parse((await taskRepository.findJsonById(db, id))!).dueAt, stored).toBe(answered);
    }
    // Another organization's record is not there.
    const bob = await signUp(backend.url, 'bob@example.com');
    expect(await taskRepository.findJsonById(withScope(backend.running.db, { organizationId: bob.organizationId, userId: bob.user.id, role: 'owner' }), taskIds[0]!)).toBeNull();
  });

  it('answers a create, replace and update with the JSON JSON.stringify writes for the record they return', async () => {
    const db = asAda();
    for (const [index, title] of awkwardTitles.entries()) {
      const input = { title, projectId, points: index % 2 === 0 ? 2_147_483_647 : null, dueAt: index % 3 === 0 ? null : '1969-12-31T23:59:59.999Z' };
      const created = await taskRepository.createJson(db, input);
      const id = JSON.parse(created).id as string;
      expect(created, title).toBe(JSON.stringify(await taskRepository.findById(db, id)));
      const updated = await taskRepository.updateJson(db, id, { title: `${title} again`, dueAt: '2026-11-24T15:30:43.123Z' });
      expect(updated, title).toBe(JSON.stringify(await taskRepository.findById(db, id)));
      const replaced = await taskRepository.replaceJson(db, id, { title, projectId });
      expect(replaced, title).toBe(JSON.stringify(await taskRepository.findById(db, id)));
      // What the object path gives for the same write, once more.
      expect(JSON.stringify(await taskRepository.update(db, id, {}))).toBe(JSON.stringify(await taskRepository.findById(db, id)));
      await taskRepository.remove(db, id);
    }
    const project = await projectRepository.createJson(db, { name: 'Edges again', description: awkwardTitles[1]! });
    const projectRecord = await projectRepository.findById(db, JSON.parse(project).id);
    expect(project).toBe(JSON.stringify(projectRecord));
    expect(await projectRepository.updateJson(db, projectRecord!.id, { status: 'archived' })).toBe(JSON.stringify(await projectRepository.findById(db, projectRecord!.id)));
    await projectRepository.remove(db, projectRecord!.id);
    // Another organization's record cannot be changed through them.
    const carol = await signUp(backend.url, 'carol@example.com');
    const asCarol = withScope(backend.running.db, { organizationId: carol.organizationId, userId: carol.user.id, role: 'owner' });
    expect(await taskRepository.updateJson(asCarol, taskIds[0]!, { title: 'taken' })).toBeNull();
    expect(await projectRepository.replaceJson(asCarol, projectId, { name: 'taken' })).toBeNull();

    // Over HTTP: the same envelope as before, status 201 for the create.
    const posted = await ada.api('POST', '/Projects', { body: { name: awkwardTitles[0], description: awkwardTitles[2] } });
    expect(posted.status).toBe(201);
    expect(posted.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(posted.body).toEqual({ success: true, data: JSON.parse(JSON.stringify(await projectRepository.findById(db, posted.body.data.id))) });
    const patched = await ada.api('PATCH', `/Projects/${posted.body.data.id}`, { body: { status: 'archived' } });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ success: true, data: JSON.parse(JSON.stringify(await projectRepository.findById(db, posted.body.data.id))) });
    expect((await ada.api('PUT', '/Projects/00000000-0000-4000-8000-000000000000', { body: { name: 'nobody' } })).status).toBe(404);
  });

  it('sends them in the same envelope over HTTP, filtered, paged and past the end', async () => {
    const read = await ada.api('GET', `/Tasks/${taskIds[1]}`);
    expect(read.status).toBe(200);
    expect(read.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(read.body).toEqual({ success: true, data: JSON.parse(JSON.stringify(await taskRepository.findById(asAda(), taskIds[1]!))) });

    const page = await ada.api('GET', `/Projects/${projectId}/Tasks?limit=5&page=2&sort=title&order=asc`);
    expect(page.status).toBe(200);
    const expected = await taskRepository.list(asAda(), parseListQuery({ limit: '5', page: '2', sort: 'title', order: 'asc' }, taskListSpec), { projectId });
    expect(page.body).toEqual({ success: true, data: JSON.parse(JSON.stringify(expected.rows)), meta: expected.meta });
    expect(Object.keys(page.body)).toEqual(['success', 'data', 'meta']);

    const searched = await ada.api('GET', '/Tasks?search=emoji');
    expect(searched.body.data.map((task: { title: string }) => task.title)).toEqual([awkwardTitles[3]]);
    expect(searched.body.meta).toEqual({ page: 1, limit: 20, total: 1, totalPages: 1 });

    const pastTheEnd = await ada.api('GET', '/Tasks?limit=10&page=50');
    expect(pastTheEnd.body).toEqual({ success: true, data: [], meta: { page: 50, limit: 10, total: taskIds.length, totalPages: Math.ceil(taskIds.length / 10) } });

    const nothing = await ada.api('GET', '/Tasks?title=nothing%20like%20this');
    expect(nothing.body).toEqual({ success: true, data: [], meta: { page: 1, limit: 20, total: 0, totalPages: 0 } });
  });
});
