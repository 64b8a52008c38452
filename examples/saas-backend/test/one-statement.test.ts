import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perRequest, type WireCounter } from '../../../bench/lib/pg-wire-counter.mjs';
import { addMember, apiClient, databaseKinds, pooledDatabaseKinds, serviceApiKey, signUp, startBackend, startCountedBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * A read of your own tenant-scoped entities checks its caller in its own statement
 * (guards/tenant.guard.ts): the session and the membership are looked up in a CTE in front of the
 * page. These are the answers that must not change for it, whatever the timing: an expired or
 * signed-out session, a revoked membership, another organization, an empty page, a page past the
 * end, and the guards' order (401 before 403 before 400 before 404).
 */

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

describe.each(pooledDatabaseKinds)('reads that check their caller in their own statement, %s database', (kind) => {
  let backend: TestBackend;
  let ada: SignedUp;
  let bob: SignedUp;
  let projectId: string;

  beforeAll(async () => {
    backend = await startBackend(kind);
    ada = await signUp(backend.url, 'ada@example.com');
    bob = await signUp(backend.url, 'bob@example.com');
    for (const name of ['Apollo', 'Gemini', 'Mercury']) {
      const created = await ada.api('POST', '/Projects', { body: { name } });
      projectId = created.body.data.id;
    }
    await ada.api('POST', `/Projects/${projectId}/Tasks`, { body: { title: 'Launch' } });
  });
  afterAll(() => backend?.stop());

  it('gives a member the page and its total, an empty page, and a page past the end', async () => {
    const page = await ada.api('GET', '/Projects?limit=2&sort=name&order=asc');
    expect(page.status).toBe(200);
    expect(page.body.data.map((project: { name: string }) => project.name)).toEqual(['Apollo', 'Gemini']);
    expect(page.body.meta).toEqual({ page: 1, limit: 2, total: 3, totalPages: 2 });

    const last = await ada.api('GET', '/Projects?limit=2&page=2&sort=name&order=asc');
    expect(last.body.data.map((project: { name: string }) => project.name)).toEqual(['Mercury']);

    const pastTheEnd = await ada.api('GET', '/Projects?limit=2&page=9');
    expect(pastTheEnd.status).toBe(200);
    expect(pastTheEnd.body).toEqual({ success: true, data: [], meta: { page: 9, limit: 2, total: 3, totalPages: 2 } });

    const empty = await bob.api('GET', '/Projects');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ success: true, data: [], meta: { page: 1, limit: 20, total: 0, totalPages: 0 } });

    const filteredToNothing = await ada.api('GET', '/Projects?name=Nothing');
    expect(filteredToNothing.body.meta.total).toBe(0);
  });

  it('reads one record, a nested list, and answers 404 for what is not there', async () => {
    expect((await ada.api('GET', `/Projects/${projectId}`)).body.data.name).toBe('Mercury');
    expect((await ada.api('GET', `/Projects/${projectId}/Tasks`)).body.data.map((task: { title: string }) => task.title)).toEqual(['Launch']);
    const missing = '00000000-0000-4000-8000-000000000000';
    expect((await ada.api('GET', `/Projects/${missing}`)).status).toBe(404);
    expect((await ada.api('GET', `/Projects/${missing}/Tasks`)).status).toBe(404);
    // Another organization's record is not there either, for a member of that other one.
    expect((await bob.api('GET', `/Projects/${projectId}`)).status).toBe(404);
  });

  it('refuses another organization with 403 and reads none of its rows', async () => {
    for (const path of ['/Projects', `/Projects/${projectId}`, `/Projects/${projectId}/Tasks`, '/Tasks']) {
      const answer = await bob.api('GET', path, { organizationId: ada.organizationId });
      expect(answer.status, path).toBe(403);
      expect(answer.body).toEqual({ success: false, error: { code: 'FORBIDDEN', message: 'You are not a member of this organization' } });
    }
    // An organization that does not exist is the same answer.
    expect((await ada.api('GET', '/Projects', { organizationId: '00000000-0000-4000-8000-000000000001' })).status).toBe(403);
  });

  it('refuses a member whose membership was revoked, from the next read on', async () => {
    const cy = await addMember(backend.url, ada, 'cy@example.com', 'member');
    const asCy = apiClient(backend.url, { token: cy.token, organizationId: ada.organizationId });
    expect((await asCy('GET', '/Projects')).body.meta.total).toBe(3);
    const members = await ada.api('GET', '/members');
    const cyRow = members.body.data.find((row: { userId: string }) => row.userId === cy.user.id);
    expect((await ada.api('DELETE', `/members/${cyRow.id}`)).status).toBe(204);
    expect((await asCy('GET', '/Projects')).status).toBe(403);
    expect((await asCy('GET', `/Projects/${projectId}`)).status).toBe(403);
  });

  it('refuses expired, signed-out and unknown sessions with 401', async () => {
    const dee = await signUp(backend.url, 'dee@example.com');
    await backend.running.db.query(`UPDATE "session" SET "expiresAt" = now() - interval '1 second' WHERE "token" = $1`, [sha256(dee.token)]);
    for (const path of ['/Projects', `/Projects/${projectId}`, `/Projects/${projectId}/Tasks`]) {
      const answer = await dee.api('GET', path);
      expect(answer.status, path).toBe(401);
      expect(answer.body.error.code).toBe('UNAUTHORIZED');
    }
    const eve = await signUp(backend.url, 'eve@example.com');
    expect((await eve.api('POST', '/api/auth/sign-out')).status).toBe(200);
    expect((await eve.api('GET', '/Projects')).status).toBe(401);
    expect((await apiClient(backend.url, { token: 'not-a-session', organizationId: ada.organizationId })('GET', '/Projects')).status).toBe(401);
    // A stored hash is never a token, on this path too.
    const stored = await backend.running.db.query<{ token: string }>(`SELECT "token" FROM "session" WHERE "userId" = $1`, [ada.user.id]);
    expect((await apiClient(backend.url, { token: stored.rows[0]!.token, organizationId: ada.organizationId })('GET', '/Projects')).status).toBe(401);
  });

  it('keeps the guards order: 401, then 403, then 400, then 404', async () => {
    const nobody = apiClient(backend.url, { token: 'not-a-session', organizationId: ada.organizationId });
    const outsider = apiClient(backend.url, { token: bob.token, organizationId: ada.organizationId });
    const badQuery = '/Projects?sort=nonexistent';
    expect((await nobody('GET', badQuery)).status).toBe(401);
    expect((await outsider('GET', badQuery)).status).toBe(403);
    expect((await ada.api('GET', badQuery)).status).toBe(400);
    expect((await nobody('GET', '/Projects/not-a-uuid')).status).toBe(401);
    expect((await outsider('GET', '/Projects/not-a-uuid')).status).toBe(403);
    // A malformed id is a record that is not there (validate.ts), found before any statement.
    expect((await ada.api('GET', '/Projects/not-a-uuid')).status).toBe(404);
    expect((await nobody('GET', '/Projects/x/y/z')).status).toBe(401);
    expect((await outsider('GET', '/Projects/x/y/z')).status).toBe(403);
    expect((await ada.api('GET', '/Projects/x/y/z')).status).toBe(404);
    // Without a header, the session's active organization (active-organization.test.ts); a malformed
    // one: the guards' own order, 401 for no session, 400 for a member.
    expect((await apiClient(backend.url, { token: 'not-a-session' })('GET', '/Projects')).status).toBe(401);
    expect((await apiClient(backend.url, { token: 'not-a-session' })('GET', '/Projects', { headers: { 'x-organization-id': 'nope' } })).status).toBe(401);
    expect((await apiClient(backend.url, { token: ada.token })('GET', '/Projects', { headers: { 'x-organization-id': 'nope' } })).status).toBe(400);
    // The service key acts in no organization.
    expect((await apiClient(backend.url, { token: serviceApiKey, organizationId: ada.organizationId })('GET', '/Projects')).status).toBe(403);
  });

  it('lets a member write in one statement, and a write by anyone else changes nothing', async () => {
    const projects = async () => (await backend.running.db.asOwner((tx) => tx.query<{ name: string }>('SELECT "name" FROM "Project" WHERE "organizationId" = $1 ORDER BY "name"', [ada.organizationId]))).rows.map((row) => row.name);
    const before = await projects();
    const dee = await signUp(backend.url, 'dee-writes@example.com');
    await backend.running.db.query(`UPDATE "session" SET "expiresAt" = now() - interval '1 second' WHERE "token" = $1`, [sha256(dee.token)]);
    const expired = apiClient(backend.url, { token: dee.token, organizationId: ada.organizationId });
    const outsider = apiClient(backend.url, { token: bob.token, organizationId: ada.organizationId });
    for (const [caller, status] of [[expired, 401], [outsider, 403]] as const) {
      expect((await caller('POST', '/Projects', { body: { name: 'Intruder' } })).status).toBe(status);
      expect((await caller('PUT', `/Projects/${projectId}`, { body: { name: 'Intruder' } })).status).toBe(status);
      expect((await caller('PATCH', `/Projects/${projectId}`, { body: { name: 'Intruder' } })).status).toBe(status);
      expect((await caller('DELETE', `/Projects/${projectId}`)).status).toBe(status);
      expect((await caller('POST', `/Projects/${projectId}/Tasks`, { body: { title: 'Intruder' } })).status).toBe(status);
      // A body that would not pass validation: still 401 or 403 first.
      expect((await caller('POST', '/Projects', { body: { name: '' } })).status).toBe(status);
      // A reference to another organization's record, which the statement would refuse: the caller's answer first.
      expect((await caller('POST', '/Tasks', { body: { title: 'Intruder', projectId: '00000000-0000-4000-8000-000000000000' } })).status).toBe(status);
    }
    expect(await projects()).toEqual(before);
    const tasks = await backend.running.db.asOwner((tx) => tx.query('SELECT 1 FROM "Task" WHERE "title" = $1', ['Intruder']));
    expect(tasks.rowCount).toBe(0);

    const created = await ada.api('POST', '/Projects', { body: { name: 'Voyager' } });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    expect((await ada.api('PATCH', `/Projects/${id}`, { body: { description: 'far' } })).body.data).toMatchObject({ name: 'Voyager', description: 'far' });
    expect((await ada.api('PUT', `/Projects/${id}`, { body: { name: 'Voyager 2' } })).body.data).toMatchObject({ name: 'Voyager 2', description: null });
    expect((await ada.api('PATCH', '/Projects/00000000-0000-4000-8000-000000000000', { body: { name: 'Nothing' } })).status).toBe(404);
    expect((await ada.api('POST', '/Tasks', { body: { title: 'Orphan', projectId: '00000000-0000-4000-8000-000000000000' } })).status).toBeGreaterThanOrEqual(400);
    expect((await ada.api('DELETE', `/Projects/${id}`)).status).toBe(204);
    expect((await ada.api('DELETE', `/Projects/${id}`)).status).toBe(404);
    // Another organization's record is not there for a write either.
    expect((await bob.api('DELETE', `/Projects/${projectId}`)).status).toBe(404);
    expect(await projects()).toEqual(before);
  });

  it('checks a nested route\'s parent with the caller: 401, 403, then 404, then 400 or 422, and writes nothing under a missing parent', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const bobsProject = (await bob.api('POST', '/Projects', { body: { name: 'Bob\'s' } })).body.data.id;
    const gus = await signUp(backend.url, 'gus-nested@example.com');
    await backend.running.db.query(`UPDATE "session" SET "expiresAt" = now() - interval '1 second' WHERE "token" = $1`, [sha256(gus.token)]);
    const expired = apiClient(backend.url, { token: gus.token, organizationId: ada.organizationId });
    const outsider = apiClient(backend.url, { token: bob.token, organizationId: ada.organizationId });
    const tasks = async () => (await backend.running.db.asOwner((tx) => tx.query('SELECT "title" FROM "Task" ORDER BY "title"'))).rows;
    const before = await tasks();

    for (const parent of [projectId, missing, bobsProject, 'not-a-uuid']) {
      for (const [caller, status] of [[expired, 401], [outsider, 403]] as const) {
        expect((await caller('GET', `/Projects/${parent}/Tasks`)).status, parent).toBe(status);
        expect((await caller('GET', `/Projects/${parent}/Tasks?sort=nonexistent`)).status, parent).toBe(status);
        expect((await caller('POST', `/Projects/${parent}/Tasks`, { body: { title: 'Intruder' } })).status, parent).toBe(status);
        expect((await caller('POST', `/Projects/${parent}/Tasks`, { body: {} })).status, parent).toBe(status);
      }
    }
    // A member: another organization's project, or none, is not there, whatever the query or body.
    for (const parent of [missing, bobsProject, 'not-a-uuid']) {
      expect((await ada.api('GET', `/Projects/${parent}/Tasks`)).status, parent).toBe(404);
      expect((await ada.api('GET', `/Projects/${parent}/Tasks?sort=nonexistent`)).status, parent).toBe(404);
      expect((await ada.api('POST', `/Projects/${parent}/Tasks`, { body: { title: 'Misplaced' } })).status, parent).toBe(404);
      expect((await ada.api('POST', `/Projects/${parent}/Tasks`, { body: {} })).status, parent).toBe(404);
    }
    expect(await tasks()).toEqual(before);

    // Under a project that is there: the route's own answers.
    expect((await ada.api('GET', `/Projects/${projectId}/Tasks?sort=nonexistent`)).status).toBe(400);
    expect((await ada.api('POST', `/Projects/${projectId}/Tasks`, { body: {} })).status).toBe(422);
    const created = await ada.api('POST', `/Projects/${projectId}/Tasks`, { body: { title: 'Countdown' } });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ title: 'Countdown', projectId, organizationId: ada.organizationId });
    const listed = await ada.api('GET', `/Projects/${projectId}/Tasks?sort=title&order=asc`);
    expect(listed.body.data.map((task: { title: string }) => task.title)).toEqual(['Countdown', 'Launch']);
    expect(listed.body.meta.total).toBe(2);
    // Bob's own project, for Bob: there, and empty.
    expect((await bob.api('GET', `/Projects/${bobsProject}/Tasks`)).body).toEqual({ success: true, data: [], meta: { page: 1, limit: 20, total: 0, totalPages: 0 } });
  });

  it('renews a session that is due on a read, and sends a cookie session its cookie again', async () => {
    const fay = await signUp(backend.url, 'fay@example.com');
    await backend.running.db.query(`UPDATE "session" SET "expiresAt" = now() + interval '1 day' WHERE "token" = $1`, [sha256(fay.token)]);
    const read = await apiClient(backend.url)('GET', '/Projects', { organizationId: fay.organizationId, headers: { cookie: `session=${fay.token}` } });
    expect(read.status).toBe(200);
    expect(read.headers.get('set-cookie')).toContain(`session=${fay.token}`);
    const { rows } = await backend.running.db.query<{ expiresAt: Date }>(`SELECT "expiresAt" FROM "session" WHERE "token" = $1`, [sha256(fay.token)]);
    expect(new Date(rows[0]!.expiresAt).getTime()).toBeGreaterThan(Date.now() + 6 * 24 * 60 * 60 * 1000);
    // Not due: no cookie.
    expect((await apiClient(backend.url)('GET', '/Projects', { organizationId: fay.organizationId, headers: { cookie: `session=${fay.token}` } })).headers.get('set-cookie')).toBeNull();
  });
});

/** Counted on the wire (bench/lib/pg-wire-counter.mjs between the backend and PostgreSQL). */
describe.runIf(databaseKinds.includes('postgres' as never))('round trips per request, PostgreSQL', () => {
  let counted: Awaited<ReturnType<typeof startCountedBackend>>;
  let counter: WireCounter;
  let backend: TestBackend;
  let ada: SignedUp;
  let projectId: string;

  beforeAll(async () => {
    counted = await startCountedBackend();
    ({ backend, counter } = counted);
    ada = await counted.signUpQuietly('ada@example.com');
    projectId = (await ada.api('POST', '/Projects', { body: { name: 'Apollo' } })).body.data.id;
  });
  afterAll(() => counted?.stop());

  async function roundTrips(method: string, path: string, body?: unknown, status?: number, headers?: Record<string, string>) {
    const before = counter.snapshot();
    const answer = await ada.api(method, path, { ...(body === undefined ? {} : { body }), ...(headers ? { headers } : {}) });
    if (status === undefined) expect(answer.status, path).toBeLessThan(300);
    else expect(answer.status, path).toBe(status);
    return perRequest(before, counter.snapshot(), 1).roundTrips;
  }

  it("reads the audit log's names for a whole page in one more round trip, however many people, keys and directories it names", async () => {
    // A page that names nobody (the system acting, about no one) is the page alone; one that names Ada, one more.
    await backend.running.db.asOwner((tx) => tx.query(`INSERT INTO "authstrap_event" ("type", "organizationId", "actorType") VALUES ('report.exported', $1, 'system')`, [ada.organizationId]));
    const pageAlone = await roundTrips('GET', '/audit-events?limit=1&type=report.exported');
    expect(await roundTrips('GET', '/audit-events?limit=1&type=project.created')).toBe(pageAlone + 1);
    // 40 events by 40 actors about 40 users, keys and directories: still the page, then the names.
    await backend.running.db.asOwner((tx) =>
      tx.query(
        `INSERT INTO "authstrap_event" ("type", "organizationId", "actorType", "actorId", "userId", "entity", "entityId", "data")
         SELECT 'member.updated', $1, CASE n % 3 WHEN 0 THEN 'user' WHEN 1 THEN 'machine_key' ELSE 'directory' END, gen_random_uuid()::text, gen_random_uuid(), 'member', gen_random_uuid()::text,
                jsonb_build_object('changedFields', jsonb_build_array('role'), 'previous', jsonb_build_object('role', 'member'), 'record', jsonb_build_object('role', 'admin'))
           FROM generate_series(1, 40) n`,
        [ada.organizationId],
      ),
    );
    expect(await roundTrips('GET', '/audit-events?limit=40&type=member.updated')).toBe(pageAlone + 1);
    const page = await ada.api('GET', '/audit-events?limit=40&type=member.updated');
    expect(new Set(page.body.data.map((event: { summary: string }) => event.summary))).toEqual(
      new Set(['A deleted user changed a deleted user\'s role from member to admin', 'A revoked machine key changed a deleted user\'s role from member to admin', 'A removed directory changed a deleted user\'s role from member to admin']),
    );
  });

  it('is 1 for a list with its total (also past the end), a read by id and a write, also under a parent', async () => {
    expect(await roundTrips('GET', '/Projects?limit=20')).toBe(1);
    // PostgreSQL writes the page's JSON with the total beside it: a page with no rows needs no second count.
    expect(await roundTrips('GET', '/Projects?limit=20&page=50')).toBe(1);
    expect(await roundTrips('GET', `/Projects/${projectId}`)).toBe(1);
    expect(await roundTrips('POST', '/Projects', { name: 'Gemini' })).toBe(1);
    expect(await roundTrips('PATCH', `/Projects/${projectId}`, { description: 'Moon' })).toBe(1);
    expect(await roundTrips('PUT', `/Projects/${projectId}`, { name: 'Apollo' })).toBe(1);
    // The parent is checked in the same statement as the caller and the list or the insert.
    expect(await roundTrips('GET', `/Projects/${projectId}/Tasks`)).toBe(1);
    expect(await roundTrips('POST', `/Projects/${projectId}/Tasks`, { title: 'Launch' })).toBe(1);
    // A parent that is not there is found out in that statement too: the insert is not even tried.
    const missing = '00000000-0000-4000-8000-000000000000';
    expect(await roundTrips('GET', `/Projects/${missing}/Tasks`, undefined, 404)).toBe(1);
    expect(await roundTrips('POST', `/Projects/${missing}/Tasks`, { title: 'Lost' }, 404)).toBe(1);
    const doomed = (await ada.api('POST', '/Projects', { body: { name: 'Doomed' } })).body.data.id;
    expect(await roundTrips('DELETE', `/Projects/${doomed}`)).toBe(1);
  });

  it('is 1 for a write with an Idempotency-Key too: the claim, the write and its kept answer go together; a repeat is 2', async () => {
    const keyed = () => ({ 'Idempotency-Key': randomUUID() });
    expect(await roundTrips('POST', '/Projects', { name: 'Keyed' }, undefined, keyed())).toBe(1);
    const id = (await ada.api('POST', '/Projects', { body: { name: 'Keyed too' } })).body.data.id;
    expect(await roundTrips('PATCH', `/Projects/${id}`, { description: 'Keyed' }, undefined, keyed())).toBe(1);
    expect(await roundTrips('PUT', `/Projects/${id}`, { name: 'Keyed' }, undefined, keyed())).toBe(1);
    const deleteKey = keyed();
    expect(await roundTrips('DELETE', `/Projects/${id}`, undefined, undefined, deleteKey)).toBe(1);
    // A repeat: the claim finds the key used, then the kept answer is read.
    expect(await roundTrips('DELETE', `/Projects/${id}`, undefined, 204, deleteKey)).toBe(2);
    // A write that is not one generated statement (a nested create) keeps its answer in a transaction held across the route: 2.
    expect(await roundTrips('POST', `/Projects/${projectId}/Tasks`, { title: 'Keyed' }, undefined, keyed())).toBe(2);
  });

  it("changes a user's picture through the service key (Better Auth's updateUser) as any write; a name, which a directory may own, is checked first, in the same transaction", async () => {
    const service = apiClient(backend.url, { token: serviceApiKey });
    const serviceRoundTrips = async (body: unknown) => {
      const before = counter.snapshot();
      const answer = await service('PATCH', `/Users/${ada.user.id}`, { body });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return perRequest(before, counter.snapshot(), 1).roundTrips;
    };
    const picture = await serviceRoundTrips({ image: 'https://example.com/ada.png' });
    // The check is one more statement, inside the transaction the write's events already open.
    expect(await serviceRoundTrips({ name: 'Ada Lovelace' })).toBe(picture + 1);
    expect(await serviceRoundTrips({ image: 'https://example.com/ada-2.png' })).toBe(picture);
  });
});
