import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../src/db/database.js';
import { directoryAllowance } from '../src/scim/scim.router.js';
import { postgresAdminUrl, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { scimClient } from './support/scim.js';

/**
 * A directory's share of an instance (scim.router.ts, `directorySlot`; docs/scim.md, "Limits"):
 * SCIM_MAX_CONCURRENT_PER_DIRECTORY requests in flight while the pool serves nobody else,
 * SCIM_MAX_CONCURRENT_WHILE_BUSY (1) while anyone else holds a connection, 429 with Retry-After
 * beyond. Requests are kept in flight for real: a SCIM PATCH waits for a table lock held by a
 * connection of the test's own, outside the pool, holding its pool connection meanwhile.
 */
const coreUser = 'urn:ietf:params:scim:schemas:core:2.0:User';
const patchOp = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

describe('the share a directory gets', () => {
  const limits = { maxConcurrentPerDirectory: 4, maxConcurrentWhileBusy: 1 };
  const pool = (inUse: number, waiting = 0) => ({ max: 10, total: Math.max(inUse, 2), idle: Math.max(inUse, 2) - inUse, waiting, waits: 0 });

  it('is the whole share when the connections in use are the directories’ own', () => {
    expect(directoryAllowance(limits, pool(0), 0)).toBe(4);
    expect(directoryAllowance(limits, pool(3), 3)).toBe(4);
    // A directory's request that has not reached the database yet: nobody else is counted.
    expect(directoryAllowance(limits, pool(1), 3)).toBe(4);
  });

  it('is SCIM_MAX_CONCURRENT_WHILE_BUSY while anyone else holds or waits for a connection', () => {
    expect(directoryAllowance(limits, pool(4), 3)).toBe(1);
    expect(directoryAllowance(limits, pool(10, 2), 10)).toBe(1);
    expect(directoryAllowance({ maxConcurrentPerDirectory: 1, maxConcurrentWhileBusy: 3 }, pool(5), 0)).toBe(1);
  });

  it('is the whole share on the embedded database, which has no pool to share', () => {
    expect(directoryAllowance(limits, undefined, 7)).toBe(4);
  });
});

describe.runIf(postgresAdminUrl)('a directory in flight on PostgreSQL', () => {
  let backend: TestBackend;
  let owner: SignedUp;
  let directory: { path: string; scim: ReturnType<typeof scimClient> };
  const address = 'held@limits-scim.example';

  beforeAll(async () => {
    backend = await startBackend('postgres', { SCIM_MAX_CONCURRENT_PER_DIRECTORY: '2', OUTBOX_POLL_MS: '60000', DATABASE_QUERY_TIMEOUT_MS: '60000' });
    owner = await signUp(backend.url, 'owner@limits-scim.example');
    const made = await owner.api('POST', '/scim-directories', { body: { name: 'Okta', preset: 'okta' } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    directory = { path: new URL(made.body.data.baseUrl).pathname, scim: scimClient(backend.url, made.body.data.token) };
  }, 60_000);
  afterAll(() => backend?.stop());

  /**
   * Holds the directory's users table against writes (EXCLUSIVE: reads go on, a PATCH's
   * `FOR UPDATE` waits) on a connection outside the pool until `release` is called; resolves once
   * the lock is held.
   */
  async function holdScimUsers() {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: (connection: Queryable) => void;
    const held = new Promise<Queryable>((resolve) => (locked = resolve));
    const done = backend.running.db.withConnection(async (connection) => {
      await connection.query('BEGIN');
      await connection.query('LOCK TABLE "authstrap_scim_user" IN EXCLUSIVE MODE');
      locked(connection);
      await released;
      await connection.query('ROLLBACK');
    });
    const connection = await held;
    return {
      /** Resolves once `count` statements wait for the lock (the PATCHes are in flight, each holding a pool connection). */
      async waitForWaiters(count: number) {
        for (let attempt = 0; attempt < 600; attempt += 1) {
          const { rows } = await connection.query<{ waiting: number }>(`SELECT count(*)::int AS waiting FROM pg_locks WHERE NOT "granted" AND "relation" = '"authstrap_scim_user"'::regclass`);
          if (rows[0]!.waiting >= count) return;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        const { rows } = await connection.query(`SELECT state, wait_event_type, wait_event, left(query, 120) AS query FROM pg_stat_activity WHERE "datname" = current_database()`);
        throw new Error(`${count} statements never waited for the lock; pool ${JSON.stringify(backend.running.db.poolStats?.())} ${JSON.stringify(rows)}`);
      },
      async release() {
        release();
        await done;
      },
    };
  }

  /**
   * Whether a list goes through within ten seconds. The backend's own background work (the
   * directory's request log, written about once a second; the outbox; a connection being opened)
   * holds a connection for a moment now and then, and while it does, the directory is down to one
   * in flight: such a moment is waited out, a refusal that lasts is not.
   */
  async function goesThrough() {
    for (let attempt = 0; attempt < 200; attempt += 1) {
      const { status } = await directory.scim('GET', `${directory.path}/Users?count=1`);
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

  it('gets SCIM_MAX_CONCURRENT_PER_DIRECTORY in flight alone, 1 while someone else holds a connection, and 429 with Retry-After beyond', async () => {
    const created = await directory.scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: address, emails: [{ value: address, primary: true }], active: true });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const lock = await holdScimUsers();
    const first = rename(created.body.id, 'First');
    try {
      await lock.waitForWaiters(1);
      // One in flight of two, nobody else in the pool: a second request goes through.
      expect(await goesThrough()).toBe(true);

      // Someone else holds a connection: the directory is down to one in flight, which it has.
      const someoneElse = await backend.running.db.begin();
      try {
        await someoneElse.query('SELECT 1');
        const refused = await directory.scim('GET', `${directory.path}/Users?count=1`);
        expect(refused.status).toBe(429);
        expect(refused.headers.get('retry-after')).toBe('1');
        expect(refused.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '429', scimType: 'tooMany' });
      } finally {
        await someoneElse.rollback();
      }
      // They are gone: the whole share again.
      expect(await goesThrough()).toBe(true);

      // Two in flight (both wait on the row): the third is refused with nobody else there.
      const second = rename(created.body.id, 'Second');
      await lock.waitForWaiters(2);
      const third = await directory.scim('GET', `${directory.path}/Users?count=1`);
      expect(third.status).toBe(429);
      await lock.release();
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
    } finally {
      await lock.release();
    }
    // Nothing was lost on the way: the last rename is the user's name, and the slots are free again.
    const read = await directory.scim('GET', `${directory.path}/Users/${created.body.id}`);
    expect(['First', 'Second']).toContain(read.body.name.givenName);
    expect((await directory.scim('GET', `${directory.path}/Users?count=1`)).status).toBe(200);
  });
});
