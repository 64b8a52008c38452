import net from 'node:net';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, createThrowawayDatabase, databaseKinds, postgresAdminUrl, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { freePort, spawnBackend } from './support/process.js';
import { openStream, type OpenStream, type StreamMessage } from './support/sse.js';
import { nginxBinary, siteFromDeployDocs, startNginx, type Nginx } from '../../../bench/lib/nginx.mjs';

/**
 * Live streams (GET /realtime, src/realtime/): every change reaches exactly those who may read
 * it, in commit order, on every instance; a client that reconnects with Last-Event-ID misses
 * nothing and gets nothing twice. Real streams over HTTP, read as EventSource reads them.
 */

const email = (label: string) => `${label}-${randomUUID().slice(0, 8)}@example.com`;

/** `person`'s stream of `query`, on `baseUrl` (their own backend by default). */
const streamOf = (person: SignedUp, query: string, headers: Record<string, string> = {}, baseUrl = person.baseUrl) =>
  openStream(baseUrl, `/realtime?${query}`, { authorization: `Bearer ${person.token}`, 'x-organization-id': person.organizationId, ...headers });

async function projectOf(person: SignedUp, name = 'Apollo'): Promise<string> {
  const made = await person.api('POST', '/Projects', { body: { name } });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return made.body.data.id;
}

async function taskOf(person: SignedUp, projectId: string, body: Record<string, unknown> = {}): Promise<{ id: string }> {
  const made = await person.api('POST', '/Tasks', { body: { projectId, title: 'Write the spec', ...body } });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return made.body.data;
}

/** One statement on a connection of its own, as the database's owner. */
async function pgRows(url: string, text: string, params: unknown[]) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, params);
  } finally {
    await client.end();
  }
}

/** Lets a stream receive what is in flight, then says what it received of these types. */
async function settledEvents(stream: OpenStream, ...types: string[]) {
  await new Promise((resolve) => setTimeout(resolve, 400));
  return stream.events(...types);
}

describe.each(databaseKinds)('live streams on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  let bob: SignedUp;
  const open: OpenStream[] = [];
  const track = async (stream: Promise<OpenStream>) => {
    const opened = await stream;
    open.push(opened);
    return opened;
  };

  beforeAll(async () => {
    backend = await startBackend(kind, { REALTIME_RECHECK_MS: '500', REALTIME_STREAMS_PER_USER: '8' });
    alice = await signUp(backend.url, email('alice'));
    bob = await signUp(backend.url, email('bob'));
  });
  afterAll(async () => {
    for (const stream of open) stream.close();
    await backend?.stop();
  });

  it('refuses before the stream starts, with the error envelope: 401, 400 naming the parameter, 403', async () => {
    const anonymous = await openStream(backend.url, '/realtime?entity=Task');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('UNAUTHORIZED');
    const cases: [string, string][] = [
      ['', 'entity'],
      ['entity=Invoice', 'entity'],
      ['entity=Task&sort=title', 'sort'],
      ['entity=Task&page=2', 'page'],
      ['entity=Task&status=someday', 'status'],
      ['entity=Task&color=red', 'color'],
      ['entity=Task,Project&status=todo', 'entity'],
      ['entity=Task&id=not-an-id', 'id'],
    ];
    for (const [query, parameter] of cases) {
      const refused = await streamOf(alice, query);
      expect(refused.status, query).toBe(400);
      expect(Object.keys(refused.body.error.details ?? {}), query).toContain(parameter);
    }
    const cursor = await streamOf(alice, 'entity=Task', { 'last-event-id': 'yesterday' });
    expect(cursor.status).toBe(400);
    const elsewhere = await streamOf(alice, 'entity=Task', { 'x-organization-id': bob.organizationId });
    expect(elsewhere.status).toBe(403);
    const withServiceKey = await openStream(backend.url, '/realtime?entity=Task', { authorization: 'Bearer test-service-key-0123456789abcdef0123456789' });
    expect(withServiceKey.status).toBe(403);
  });

  it("delivers every change of the organization's records to its members, in order, as the list route shows them, and nothing of another organization", async () => {
    const alices = await track(streamOf(alice, 'entity=Task,Project'));
    const bobs = await track(streamOf(bob, 'entity=Task,Project'));
    const projectId = await projectOf(alice);
    const task = await taskOf(alice, projectId, { points: 3 });
    expect((await alice.api('PATCH', `/Tasks/${task.id}`, { body: { status: 'doing' } })).status).toBe(200);
    expect((await alice.api('DELETE', `/Tasks/${task.id}`)).status).toBe(204);
    const deleted = await alices.next((message) => message.event === 'task.deleted');
    const received = alices.events('project.created', 'task.created', 'task.updated', 'task.deleted');
    expect(received.map((event) => event.type)).toEqual(['project.created', 'task.created', 'task.updated', 'task.deleted']);
    // The record as GET /Tasks/:id answers it (field names, times in ISO 8601).
    const shown = (await alice.api('GET', `/Projects/${projectId}`)).body.data;
    expect(received[0].data.record).toEqual(shown);
    expect(received[1].data.record).toMatchObject({ id: task.id, projectId, status: 'todo', points: 3, organizationId: alice.organizationId });
    expect(received[2].data.changedFields).toEqual(['status']);
    expect(received[2].data.previous).toEqual({ status: 'todo' });
    expect(received[3].data.record.id).toBe(task.id);
    expect(received.every((event) => event.actorType === 'user' && event.actorId === alice.user.id)).toBe(true);
    expect(received[0].ipAddress).toBeUndefined();
    // Ids increase: the cursor.
    const ids = alices.messages.filter((message) => message.event !== 'end').map((message) => Number(message.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(deleted.id).toBe(String(ids.at(-1)));
    // Bob's stream works (his own change arrives) and never carried Alice's.
    await projectOf(bob, 'Bob only');
    await bobs.next((message) => message.event === 'project.created');
    expect(bobs.events().every((event) => event.organizationId === bob.organizationId)).toBe(true);
    expect(bobs.events()).toHaveLength(1);
    expect(alices.events().every((event) => event.organizationId === alice.organizationId)).toBe(true);
  });

  it('carries only what the filters match, or one record', async () => {
    const projectId = await projectOf(alice, 'Filters');
    const other = await projectOf(alice, 'Other');
    const done = await track(streamOf(alice, `entity=Task&projectId=${projectId}&status=done`));
    const points = await track(streamOf(alice, `entity=Task&points[gte]=5&projectId=${projectId}`));
    const first = await taskOf(alice, projectId, { status: 'done', points: 1 });
    await taskOf(alice, projectId, { status: 'todo', points: 8 });
    await taskOf(alice, other, { status: 'done', points: 9 });
    const one = await track(streamOf(alice, `entity=Task&id=${first.id}`));
    await alice.api('PATCH', `/Tasks/${first.id}`, { body: { title: 'Renamed' } });
    // Matched by both filters and committed last: once it has arrived, so has everything before it
    // (commit order), so what the streams hold then is all they will get of the earlier changes.
    const last = await taskOf(alice, projectId, { status: 'done', points: 5 });
    const arrived = (message: StreamMessage) => message.event === 'task.created' && JSON.parse(message.data).entityId === last.id;
    await Promise.all([done.next(arrived, 15_000), points.next(arrived, 15_000), one.next((message) => message.event === 'task.updated', 15_000)]);
    expect(done.events('task.created').map((event) => event.data.record.id)).toEqual([first.id, last.id]);
    expect(points.events('task.created').map((event) => event.data.record.points)).toEqual([8, 5]);
    // Only that record's events. Its create, committed just before the stream opened, may or may
    // not be "now" yet for this instance's reader (as for a cursor that expired, below): at most once.
    expect(one.events('task.updated').map((event) => event.entityId)).toEqual([first.id]);
    expect(new Set(one.events('task.created', 'task.updated').map((event) => event.entityId))).toEqual(new Set([first.id]));
    expect(one.events('task.created').length).toBeLessThanOrEqual(1);
  });

  it('resumes after Last-Event-ID with every event since, exactly once', async () => {
    const projectId = await projectOf(alice, 'Resume');
    const first = await track(streamOf(alice, `entity=Task&projectId=${projectId}`));
    const a = await taskOf(alice, projectId, { title: 'one' });
    const received = await first.next((message) => message.event === 'task.created');
    first.close();
    const b = await taskOf(alice, projectId, { title: 'two' });
    const c = await taskOf(alice, projectId, { title: 'three' });
    const resumed = await track(streamOf(alice, `entity=Task&projectId=${projectId}`, { 'last-event-id': received.id! }));
    const d = await taskOf(alice, projectId, { title: 'four' });
    await resumed.next((message) => message.event === 'task.created' && JSON.parse(message.data).entityId === d.id);
    expect((await settledEvents(resumed, 'task.created')).map((event) => event.entityId)).toEqual([b.id, c.id, d.id]);
    expect(JSON.parse(received.data).entityId).toBe(a.id);
    // The same cursor through the query string (a client that cannot send headers).
    const again = await track(streamOf(alice, `entity=Task&projectId=${projectId}&lastEventId=${received.id}`));
    await again.next((message) => JSON.parse(message.data).entityId === d.id);
    expect(again.events('task.created').map((event) => event.entityId)).toEqual([b.id, c.id, d.id]);
  });

  it('tells a client whose cursor is older than the events kept to reload, and goes on from now', async () => {
    const projectId = await projectOf(alice, 'Expired');
    const earlier = await taskOf(alice, projectId);
    // Retention took everything so far (as EVENTS_RETENTION_DAYS would, in time).
    await backend.running.db.asOwner((tx) => tx.query(`DELETE FROM "authstrap_event" WHERE "position" IS NOT NULL AND "position" < (SELECT max("position") FROM "authstrap_event")`));
    const stale = await track(streamOf(alice, `entity=Task&projectId=${projectId}`, { 'last-event-id': '1' }));
    const reset = await stale.next((message) => message.event === 'reset');
    expect(JSON.parse(reset.data).code).toBe('CURSOR_EXPIRED');
    const later = await taskOf(alice, projectId);
    await stale.next((message) => message.event === 'task.created' && JSON.parse(message.data).entityId === later.id);
    // From now: the task made just before it subscribed may or may not be "now" yet; nothing older is sent.
    expect(stale.events('task.created').map((event) => event.entityId).filter((id) => id !== earlier.id)).toEqual([later.id]);
  });

  it("lets members hear of what they may read, ends a removed member's stream, and ends a stream whose session was signed out", async () => {
    const member = await addMember(backend.url, alice, email('member'), 'member');
    const signedOut = await addMember(backend.url, alice, email('leaver'), 'member');
    const members = await track(streamOf(member, 'entity=Project'));
    const leavers = await track(streamOf(signedOut, 'entity=Project'));
    const projectId = await projectOf(alice, 'Shared');
    expect(JSON.parse((await members.next((message) => message.event === 'project.created')).data).entityId).toBe(projectId);
    // Removed: the member's own membership event ends the stream, before any later change.
    const memberships = (await alice.api('GET', '/members?limit=100')).body.data as { id: string; userId: string }[];
    const removedAt = Date.now();
    expect((await alice.api('DELETE', `/members/${memberships.find((row) => row.userId === member.user.id)!.id}`)).status).toBe(204);
    const ended = await members.next((message) => message.event === 'end');
    expect(JSON.parse(ended.data).code).toBe('NOT_A_MEMBER');
    expect(Date.now() - removedAt).toBeLessThan(5000);
    await projectOf(alice, 'After the removal');
    await members.ended;
    expect(members.events('project.created')).toHaveLength(1);
    // Signed out: the next check of the streams' sessions ends it.
    const outAt = Date.now();
    expect((await apiClient(backend.url)('POST', '/api/auth/sign-out', { token: signedOut.token })).status).toBe(200);
    const out = await leavers.next((message) => message.event === 'end', 5000);
    expect(JSON.parse(out.data).code).toBe('SESSION_ENDED');
    expect(Date.now() - outAt).toBeLessThan(5000);
  });

  it('takes machine keys with list permission on what they stream, and no others; a revoked key stream ends', async () => {
    const made = await alice.api('POST', '/api/auth/api-keys', { body: { name: 'listener', permissions: { Task: ['list', 'read'] } } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const { id, key } = made.body.data as { id: string; key: string };
    const refused = await openStream(backend.url, '/realtime?entity=Task,Project', { 'x-api-key': key });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('Project');
    const keys = await track(openStream(backend.url, '/realtime?entity=Task', { 'x-api-key': key }));
    expect(keys.status).toBe(200);
    const projectId = await projectOf(alice, 'Keyed');
    const task = await taskOf(alice, projectId);
    expect(JSON.parse((await keys.next((message) => message.event === 'task.created')).data).entityId).toBe(task.id);
    expect((await alice.api('DELETE', `/api/auth/api-keys/${id}`)).status).toBe(204);
    const ended = await keys.next((message) => message.event === 'end', 5000);
    expect(JSON.parse(ended.data).code).toBe('KEY_REVOKED');
  });

  it('ends the streams of a deleted organization, and of a machine key that expired', async () => {
    const doomed = await signUp(backend.url, email('doomed'));
    const stream = await track(streamOf(doomed, 'entity=Project'));
    const made = await doomed.api('POST', '/api/auth/api-keys', { body: { name: 'expiring', permissions: { Project: ['list'] } } });
    expect(made.status).toBe(201);
    const keyed = await track(openStream(backend.url, '/realtime?entity=Project', { 'x-api-key': made.body.data.key }));
    expect(keyed.status).toBe(200);
    // Its expiry set in the past by the trusted server: the next check ends the key's stream.
    const service = apiClient(backend.url, { token: 'test-service-key-0123456789abcdef0123456789' });
    expect((await service('PATCH', `/apikeys/${made.body.data.id}`, { body: { expiresAt: new Date(Date.now() - 1000).toISOString() } })).status).toBe(200);
    expect(JSON.parse((await keyed.next((message) => message.event === 'end', 5000)).data).code).toBe('KEY_REVOKED');
    expect((await doomed.api('DELETE', `/organizations/${doomed.organizationId}`)).status).toBe(204);
    const ended = await stream.next((message) => message.event === 'end', 5000);
    expect(['ORGANIZATION_DELETED', 'NOT_A_MEMBER']).toContain(JSON.parse(ended.data).code);
  });

  it('holds at most REALTIME_STREAMS_PER_USER streams per user (429), and frees a place when one closes', async () => {
    const carol = await signUp(backend.url, email('carol'));
    const streams = [];
    for (let i = 0; i < 8; i++) streams.push(await track(streamOf(carol, 'entity=Task')));
    expect(streams.every((stream) => stream.status === 200)).toBe(true);
    const ninth = await streamOf(carol, 'entity=Task');
    expect(ninth.status).toBe(429);
    streams[0]!.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const again = await track(streamOf(carol, 'entity=Task'));
    expect(again.status).toBe(200);
  });
});

describe.each(databaseKinds)('a stream that is not read, on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  beforeAll(async () => {
    backend = await startBackend(kind, { REALTIME_BUFFER_BYTES: '65536', REALTIME_DRAIN_MS: '4000' });
    alice = await signUp(backend.url, email('slow'));
  });
  afterAll(() => backend?.stop());

  it('is ended with a reason once its buffer stays full, while a reader that only falls behind in a burst catches up and misses nothing', async () => {
    const reader = await streamOf(alice, 'entity=Project');
    // A client that opens a stream and never reads it.
    const url = new URL(backend.url);
    const socket = net.connect(Number(url.port), url.hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.pause();
    socket.write(`GET /realtime?entity=Project HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${alice.token}\r\nx-organization-id: ${alice.organizationId}\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // At once, about 12 MB of events (5 KB each): more than the sockets' buffers hold, and 64 KiB more.
    const count = 2400;
    await backend.running.db.asOwner((tx) =>
      tx.query(`INSERT INTO "Project" ("organizationId", "name", "description") SELECT $1, 'Burst ' || n, repeat('d', 4990) FROM generate_series(1, $2) AS n`, [alice.organizationId, count]),
    );
    // The slow one, read at last: once the backend has ended it (REALTIME_DRAIN_MS after its
    // buffer filled), before its connection is cut (5 s later). What it gets ends with the reason,
    // and then the connection closes. (Waiting a fixed time instead raced a loaded machine, where
    // filling the buffers took longer than the wait.)
    await expect.poll(() => backend.running.streams.size, { timeout: 60_000, interval: 20 }).toBe(1);
    const received: Buffer[] = [];
    socket.on('data', (chunk) => received.push(chunk));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.resume();
    await reader.next((message) => message.event === 'project.created' && JSON.parse(message.data).data.record.name === `Burst ${count}`, 30_000);
    // The reader fell behind too, in the burst, and caught up from the table: each event once, in order.
    expect(reader.events('project.created').map((event) => event.data.record.name)).toEqual(Array.from({ length: count }, (_, i) => `Burst ${i + 1}`));
    await closed;
    const text = Buffer.concat(received).toString();
    expect(text).toContain('"code":"TOO_SLOW"');
    expect((text.match(/event: project.created/g) ?? []).length).toBeLessThan(count);
    reader.close();
  }, 120_000);
});

/**
 * On PostgreSQL itself: transactions that commit in another order than they wrote, across
 * instances, and a stream resumed on another instance after its own stopped.
 */
describe.runIf(postgresAdminUrl)('live streams across instances on one PostgreSQL database', () => {
  let database: Awaited<ReturnType<typeof createThrowawayDatabase>>;
  let instances: TestBackend[];
  let alice: SignedUp;
  let bob: SignedUp;
  const open: OpenStream[] = [];

  beforeAll(async () => {
    database = await createThrowawayDatabase();
    const env = { DATABASE_URL: database.url, SHUTDOWN_DRAIN_MS: '0' };
    instances = [await startBackend('embedded', env)];
    instances.push(await startBackend('embedded', env), await startBackend('embedded', env));
    alice = await signUp(instances[0]!.url, email('alice'));
    bob = await signUp(instances[1]!.url, email('bob'));
  }, 120_000);
  afterAll(async () => {
    for (const stream of open) stream.close();
    for (const instance of instances ?? []) await instance.stop();
    await database?.drop();
  });

  it("delivers a change made through one instance to the organization's streams on every instance, and to no other organization's", async () => {
    const alices = await Promise.all(instances.map((instance) => streamOf(alice, 'entity=Project', {}, instance.url)));
    const bobs = await Promise.all(instances.map((instance) => streamOf(bob, 'entity=Project', {}, instance.url)));
    open.push(...alices, ...bobs);
    const started = Date.now();
    const projectId = await projectOf(alice, 'Everywhere');
    for (const stream of alices) expect(JSON.parse((await stream.next((message) => message.event === 'project.created')).data).entityId).toBe(projectId);
    expect(Date.now() - started).toBeLessThan(1000);
    await projectOf(bob, 'Bob');
    for (const stream of bobs) await stream.next((message) => message.event === 'project.created');
    for (const stream of bobs) expect(stream.events().map((event) => event.organizationId)).toEqual([bob.organizationId]);
  });

  it('delivers in the order transactions committed, not the order they wrote, and never a rolled-back change', async () => {
    const projectId = await projectOf(alice, 'Order');
    const stream = await streamOf(alice, `entity=Task&projectId=${projectId}`, {}, instances[2]!.url);
    open.push(stream);
    const writers = await Promise.all(Array.from({ length: 4 }, async () => {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      return client;
    }));
    const insert = (client: pg.Client, title: string) =>
      client.query(`INSERT INTO "Task" ("organizationId", "projectId", "title") VALUES ($1, $2, $3)`, [alice.organizationId, projectId, title]);
    for (const client of writers) await client.query(`BEGIN; SET LOCAL authstrap.maintenance = 'on'`);
    // They write in the order 0, 1, 2, 3 ...
    for (const [i, client] of writers.entries()) await insert(client, `written ${i}`);
    // ... and end in the order 3, 1 (rolled back), 0, 2.
    await writers[3]!.query('COMMIT');
    await writers[1]!.query('ROLLBACK');
    await writers[0]!.query('COMMIT');
    await writers[2]!.query('COMMIT');
    for (const client of writers) await client.end();
    await stream.next((message) => message.event === 'task.created' && JSON.parse(message.data).data.record.title === 'written 2');
    expect((await settledEvents(stream, 'task.created')).map((event) => event.data.record.title)).toEqual(['written 3', 'written 0', 'written 2']);
  });

  it.runIf(nginxBinary)("is served through docs/deploy.md's nginx site: each change arrives as it commits, not when a buffer fills", async () => {
    const nginxPort = await freePort();
    const nginx: Nginx = await startNginx(siteFromDeployDocs(instances.map((instance) => Number(new URL(instance.url).port)), nginxPort), nginxPort);
    try {
      const proxied = `http://127.0.0.1:${nginxPort}`;
      const projectId = await projectOf(alice, 'Proxied');
      const streams = await Promise.all([0, 1, 2].map(() => streamOf(alice, `entity=Task&projectId=${projectId}`, {}, proxied)));
      open.push(...streams);
      for (const title of ['first', 'second']) {
        const started = Date.now();
        const task = await taskOf(alice, projectId, { title });
        for (const stream of streams) await stream.next((message) => JSON.parse(message.data).entityId === task.id, 2000);
        expect(Date.now() - started).toBeLessThan(1000);
      }
    } finally {
      await nginx.stop();
    }
  });

  it('resumes on another instance after its own is killed (kill -9) while 20 writers commit out of order: every committed event once, in commit order, none rolled back', async () => {
    const projectId = await projectOf(alice, 'Killed');
    const doomed = spawnBackend({ DATABASE_URL: database.url, RATE_LIMIT_DATA_MAX: '100000' });
    try {
      const doomedUrl = await doomed.listening;
      const stream = await streamOf(alice, `entity=Task&projectId=${projectId}`, {}, doomedUrl);
      open.push(stream);
      while (stream.lastEventId === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
      const from = Number(stream.lastEventId);
      // All write, in the order 0..19; once every one has written, writer i commits (or, each
      // fifth, rolls back) after (19 - i) x 40 ms: the commits come in the reverse order, while
      // the instance is killed.
      let written = 0;
      let allWritten!: () => void;
      const barrier = new Promise<void>((resolve) => (allWritten = resolve));
      const writers = Array.from({ length: 20 }, async (_, i) => {
        const client = new pg.Client({ connectionString: database.url });
        await client.connect();
        await client.query(`BEGIN; SET LOCAL authstrap.maintenance = 'on'`);
        await client.query(`INSERT INTO "Task" ("organizationId", "projectId", "title") VALUES ($1, $2, $3)`, [alice.organizationId, projectId, `writer ${i}`]);
        if (++written === 20) allWritten();
        await barrier;
        await new Promise((resolve) => setTimeout(resolve, (19 - i) * 40));
        await client.query(i % 5 === 4 ? 'ROLLBACK' : 'COMMIT');
        await client.end();
      });
      await barrier;
      await new Promise((resolve) => setTimeout(resolve, 300));
      doomed.child.kill('SIGKILL');
      await doomed.exited;
      await Promise.all(writers);
      const resumed = await streamOf(alice, `entity=Task&projectId=${projectId}`, { 'last-event-id': stream.lastEventId! }, instances[0]!.url);
      open.push(resumed);
      const { rows: committed } = await pgRows(database.url, `SELECT "id", "data"->'record'->>'title' AS "title" FROM "authstrap_event" WHERE "entity" = 'Task' AND "data"->'record'->>'projectId' = $1 AND "position" > $2 ORDER BY "position"`, [projectId, from]);
      // In commit order (19 first), without the rolled-back 19, 14, 9 and 4.
      const inCommitOrder = Array.from({ length: 20 }, (_, i) => 19 - i).filter((i) => i % 5 !== 4);
      expect(committed.map((row) => row.title)).toEqual(inCommitOrder.map((i) => `writer ${i}`));
      await resumed.next((message) => JSON.parse(message.data).id === committed.at(-1)!.id, 10_000);
      const received = [...stream.events('task.created'), ...resumed.events('task.created')].map((event) => event.id);
      expect(received).toEqual(committed.map((row) => row.id));
      expect(stream.events('task.created').length).toBeLessThan(committed.length);
    } finally {
      doomed.child.kill('SIGKILL');
    }
  }, 90_000);

  it('ends its streams with retry: when an instance stops, and a client resuming on another has every event since exactly once', async () => {
    const projectId = await projectOf(alice, 'Failover');
    const doomed = await startBackend('embedded', { DATABASE_URL: database.url, SHUTDOWN_DRAIN_MS: '0' });
    const stream = await streamOf(alice, `entity=Task&projectId=${projectId}`, {}, doomed.url);
    const first = await taskOf(alice, projectId, { title: 'before' });
    await stream.next((message) => message.event === 'task.created');
    const stopping = doomed.stop();
    const ended = await stream.next((message) => message.event === 'end');
    expect(ended.retry).toBeGreaterThan(0);
    expect(JSON.parse(ended.data).code).toBe('SHUTTING_DOWN');
    await stopping;
    const during = await taskOf(alice, projectId, { title: 'while away' });
    const resumed = await streamOf(alice, `entity=Task&projectId=${projectId}`, { 'last-event-id': stream.lastEventId! }, instances[1]!.url);
    open.push(resumed);
    const after = await taskOf(alice, projectId, { title: 'after' });
    await resumed.next((message) => message.event === 'task.created' && JSON.parse(message.data).entityId === after.id);
    expect((await settledEvents(resumed, 'task.created')).map((event) => event.entityId)).toEqual([during.id, after.id]);
    expect(stream.events('task.created').map((event) => event.entityId)).toEqual([first.id]);
  }, 60_000);
});
