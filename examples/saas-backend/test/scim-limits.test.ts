import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../src/db/database.js';
import { directoryShare } from '../src/scim/scim.router.js';
import { postgresAdminUrl, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { scimClient } from './support/scim.js';

/**
 * A directory's share of an instance (scim.router.ts, `directorySlot`; docs/scim.md, "Limits"):
 * SCIM_MAX_CONCURRENT_PER_DIRECTORY requests in flight while no other caller waits for an answer;
 * while one does (http/waiting-callers.ts), SCIM_MAX_CONCURRENT_WHILE_BUSY (1) in flight and
 * SCIM_RATE_WHILE_BUSY a second; 429 with Retry-After beyond. Requests are kept in flight for
 * real: a statement waits for a table lock held by a connection of the test's own, outside the
 * pool, holding its pool connection meanwhile.
 */
const coreUser = 'urn:ietf:params:scim:schemas:core:2.0:User';
const patchOp = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

describe('the share a directory gets', () => {
  const limits = { maxConcurrentPerDirectory: 4, maxConcurrentWhileBusy: 1, rateWhileBusy: 20 };

  it('is the whole share, unpaced, while no other caller waits', () => {
    expect(directoryShare(limits, false)).toEqual({ inFlight: 4, gapMs: 0 });
  });

  it('is SCIM_MAX_CONCURRENT_WHILE_BUSY in flight and SCIM_RATE_WHILE_BUSY a second while another caller waits', () => {
    expect(directoryShare(limits, true)).toEqual({ inFlight: 1, gapMs: 50 });
    expect(directoryShare({ maxConcurrentPerDirectory: 1, maxConcurrentWhileBusy: 3, rateWhileBusy: 4 }, true)).toEqual({ inFlight: 1, gapMs: 250 });
  });

  it('is unpaced while another caller waits when SCIM_RATE_WHILE_BUSY is 0', () => {
    expect(directoryShare({ ...limits, rateWhileBusy: 0 }, true)).toEqual({ inFlight: 1, gapMs: 0 });
  });
});

describe.runIf(postgresAdminUrl)('a directory in flight on PostgreSQL', () => {
  let backend: TestBackend;
  let owner: SignedUp;
  /** Someone of another organization, using the REST API while the directory syncs. */
  let person: SignedUp;
  let project: string;
  let directory: { path: string; scim: ReturnType<typeof scimClient> };
  const address = 'held@limits-scim.example';

  beforeAll(async () => {
    // Paced to one request a second while another caller waits: a request right after one let in
    // is refused however slow the machine (the default, 20 a second, is a 50 ms gap).
    backend = await startBackend('postgres', { SCIM_MAX_CONCURRENT_PER_DIRECTORY: '2', SCIM_RATE_WHILE_BUSY: '1', OUTBOX_POLL_MS: '60000', DATABASE_QUERY_TIMEOUT_MS: '60000' });
    owner = await signUp(backend.url, 'owner@limits-scim.example');
    person = await signUp(backend.url, 'person@other-limits.example');
    const made = await owner.api('POST', '/scim-directories', { body: { name: 'Okta', preset: 'okta' } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    directory = { path: new URL(made.body.data.baseUrl).pathname, scim: scimClient(backend.url, made.body.data.token) };
    const created = await person.api('POST', '/Projects', { body: { name: 'Waiting' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    project = created.body.data.id;
  }, 60_000);
  afterAll(() => backend?.stop());

  /**
   * Holds `table` against writes (EXCLUSIVE: reads go on, an UPDATE waits) on a connection outside
   * the pool until `release` is called; resolves once the lock is held.
   */
  async function hold(table: string) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: (connection: Queryable) => void;
    const held = new Promise<Queryable>((resolve) => (locked = resolve));
    const done = backend.running.db.withConnection(async (connection) => {
      await connection.query('BEGIN');
      await connection.query(`LOCK TABLE "${table}" IN EXCLUSIVE MODE`);
      locked(connection);
      await released;
      await connection.query('ROLLBACK');
    });
    const connection = await held;
    return {
      /** Resolves once `count` statements wait for the lock (their requests are in flight, each holding a pool connection). */
      async waitForWaiters(count: number) {
        for (let attempt = 0; attempt < 600; attempt += 1) {
          const { rows } = await connection.query<{ waiting: number }>(`SELECT count(*)::int AS waiting FROM pg_locks WHERE NOT "granted" AND "relation" = '"${table}"'::regclass`);
          if (rows[0]!.waiting >= count) return;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        const { rows } = await connection.query(`SELECT state, wait_event_type, wait_event, left(query, 120) AS query FROM pg_stat_activity WHERE "datname" = current_database()`);
        throw new Error(`${count} statements never waited for the lock on ${table}; ${JSON.stringify(rows)}`);
      },
      async release() {
        release();
        await done;
      },
    };
  }

  /** A list of the directory's users. */
  const list = () => directory.scim('GET', `${directory.path}/Users?count=1`);

  /**
   * Whether a list goes through within ten seconds, a 429 waited out 50 ms at a time (an identity
   * provider waits out Retry-After): the pace of one a second while another caller waits lets the
   * next one in a second after the last.
   */
  async function goesThrough() {
    for (let attempt = 0; attempt < 200; attempt += 1) {
      const { status } = await list();
      if (status === 200) return true;
      expect(status).toBe(429);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }

  /** A PATCH of the user's given name, sent again after a moment's 429 as identity providers do. */
  async function rename(id: string, givenName: string) {
    for (let attempt = 0; ; attempt += 1) {
      const answer = await directory.scim('PATCH', `${directory.path}/Users/${id}`, { schemas: [patchOp], Operations: [{ op: 'replace', path: 'name.givenName', value: givenName }] });
      if (answer.status !== 429 || attempt === 200) return answer;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** The person's rename of their project: waits while "Project" is held. */
  const personWrites = (name: string) => person.api('PATCH', `/Projects/${project}`, { body: { name } });

  function expectRefused(answer: Awaited<ReturnType<typeof list>>) {
    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '429', scimType: 'tooMany' });
  }

  let user: string;
  it('gets SCIM_MAX_CONCURRENT_PER_DIRECTORY in flight, unpaced, while only its own side work holds connections; 429 with Retry-After beyond', async () => {
    const created = await directory.scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: address, emails: [{ value: address, primary: true }], active: true });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    user = created.body.id;
    const lock = await hold('authstrap_scim_user');
    // What the sync's side work does (its request log, its events' fan-out, the outbox): pool
    // connections held with no request behind them. Until 2026-12-07 they counted as someone else.
    const sideWork = [await backend.running.db.begin(), await backend.running.db.begin()];
    const first = rename(user, 'First');
    try {
      await Promise.all(sideWork.map((tx) => tx.query('SELECT 1')));
      await lock.waitForWaiters(1);
      // One in flight of two and nobody waiting: the second goes through at once, and so does the
      // one right after it (no pace), each on its first try.
      expect((await list()).status).toBe(200);
      expect((await list()).status).toBe(200);

      // Two in flight (both wait on the row): the third is refused with nobody else there.
      const second = rename(user, 'Second');
      await lock.waitForWaiters(2);
      expectRefused(await list());
      await lock.release();
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
    } finally {
      await lock.release();
      await Promise.all(sideWork.map((tx) => tx.rollback()));
    }
    // Nothing was lost on the way: the last rename is the user's name, and the slots are free again.
    const read = await directory.scim('GET', `${directory.path}/Users/${user}`);
    expect(['First', 'Second']).toContain(read.body.name.givenName);
    expect((await list()).status).toBe(200);
  });

  it('yields while another organization’s caller waits for an answer: one in flight, one a second; the whole share once they are answered', async () => {
    const scimLock = await hold('authstrap_scim_user');
    const projectLock = await hold('Project');
    let renamed: ReturnType<typeof rename> | undefined;
    let written: ReturnType<typeof personWrites> | undefined;
    try {
      // The directory has one in flight; then the person's write waits too.
      renamed = rename(user, 'Third');
      await scimLock.waitForWaiters(1);
      written = personWrites('Still waiting');
      await projectLock.waitForWaiters(1);
      // Down to one in flight, which it has: refused, however long it waits.
      expectRefused(await list());
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expectRefused(await list());

      // Its own answered: let in again, at one a second.
      await scimLock.release();
      expect((await renamed).status).toBe(200);
      expect(await goesThrough()).toBe(true);
      expectRefused(await list());

      // The person is answered: the whole share, unpaced, again.
      await projectLock.release();
      expect((await written).status).toBe(200);
    } finally {
      await scimLock.release();
      await projectLock.release();
      await renamed;
      await written;
    }
    expect(await goesThrough()).toBe(true);
    expect((await list()).status).toBe(200);
  });

  it('does not count a live stream, whose answer has begun, as someone waiting', async () => {
    const controller = new AbortController();
    const stream = await fetch(`${backend.url}/realtime?entity=Project`, { headers: { authorization: `Bearer ${person.token}`, 'x-organization-id': person.organizationId, accept: 'text/event-stream' }, signal: controller.signal });
    try {
      expect(stream.status).toBe(200);
      // Two in a row: no pace.
      expect((await list()).status).toBe(200);
      expect((await list()).status).toBe(200);
    } finally {
      controller.abort();
      await stream.body?.cancel().catch(() => undefined);
    }
  });
});
