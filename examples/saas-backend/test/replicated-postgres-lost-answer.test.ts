import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterSettings, missingPackages, startReplicatedPostgres, type ReplicatedPostgres } from '../../../scripts/replicated-postgres.mjs';
import { signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { lostAnswerProxy, type LostAnswerProxy } from './support/lost-answer-proxy.js';

/**
 * The write whose answer is lost between its commit and the client (issue 51, item 4): the
 * primary commits it, the synchronous standby has it, and then the primary's whole node is lost
 * before the answer leaves the database. The client cannot know whether the write happened; it
 * sends it again with its `Idempotency-Key` once the standby has been promoted, and the write must
 * be there once, the repeat answered with the first answer.
 *
 * Why this is exactly-once: the backend keeps a keyed write's answer with its key in the write's
 * own transaction and commits both in one round trip (src/idempotency/keyed-write.ts). Whatever
 * survives the failover survives as a whole: either the row and the key with its answer (the
 * repeat finds the key, writes nothing and gets the kept answer), or neither (the repeat takes the
 * key afresh and is the write). There is no moment where the row exists and the key does not, so
 * no repeat can write it a second time; and the synchronous standby acknowledged the commit before
 * PostgreSQL reported it done, so once it is done the promoted standby has both.
 *
 * Deterministic: a loopback proxy between the backend and HAProxy (support/lost-answer-proxy.ts)
 * holds PostgreSQL's answer to that COMMIT, the test reads the row and its key on the standby,
 * kills the primary's node (Patroni and PostgreSQL), then resets the held connection.
 */

const missing = missingPackages();
if (process.env.CI && missing.length) throw new Error(`CI is set but Debian's ${missing.join(', ')} is not installed: .ci/run installs them`);

/** The lost node's failover, on a loaded machine: three ttls (as replicated-postgres.test.ts), and the pauses between tries. */
const failoverBoundMs = 3 * clusterSettings.ttl * 1000 + 10_000;
const pollMs = 100;

async function poll<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** One statement on a node's PostgreSQL, as the superuser (row-level security does not apply). */
async function queryNode<Row extends pg.QueryResultRow>(url: string, text: string, params: unknown[]): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    return (await client.query<Row>(text, params)).rows;
  } finally {
    await client.end();
  }
}

describe.skipIf(missing.length)(`a keyed write whose answer is lost between its commit and the client${missing.length ? ` (skipped: Debian's ${missing.join(', ')} not installed)` : ''}`, () => {
  const database = 'authstrap_lost_answer';
  let cluster: ReplicatedPostgres;
  let proxy: LostAnswerProxy;
  let backend: TestBackend;
  let owner: SignedUp;

  /** The cluster's URL for `database` on `port` (HAProxy's, or one node's own). */
  function urlOf(port?: number): string {
    const url = new URL(cluster.url);
    url.pathname = `/${database}`;
    if (port) url.port = String(port);
    return url.toString();
  }

  beforeAll(async () => {
    cluster = await startReplicatedPostgres({ nodes: 3 });
    await queryNode(cluster.url, `CREATE DATABASE ${database}`, []);
    proxy = await lostAnswerProxy(urlOf());
    // No timer's transaction in the way: only the test's write commits while the proxy is armed.
    backend = await startBackend('embedded', { DATABASE_URL: proxy.url, OUTBOX_POLL_MS: '600000', MACHINE_KEY_USAGE_FLUSH_MS: '600000' });
    owner = await signUp(backend.url, 'lost-answer@example.com');
  }, 240_000);

  afterAll(async () => {
    try {
      await backend?.stop();
    } finally {
      await proxy?.close();
      await cluster?.stop();
    }
  }, 120_000);

  it('is applied once when sent again with its Idempotency-Key after the failover, and the repeat gets the first answer', async () => {
    const primary = await cluster.waitForLeader();
    const standby = await cluster.waitForSyncStandby();
    const standbyPort = cluster.nodes.find((node) => node.name === standby)!.pgPort;
    const name = `lost-answer-${randomUUID()}`;
    const key = randomUUID();
    const send = () => owner.api('POST', '/Projects', { body: { name }, headers: { 'Idempotency-Key': key } });

    const held = proxy.holdNextKeptAnswer();
    const first = send();
    // Bounded: a write answered before its commit was caught means the proxy caught something else.
    await Promise.race([
      held,
      first.then((response) => {
        throw new Error(`the write was answered (${response.status}) before its commit was held`);
      }),
    ]);

    // The commit is done on the primary, so the synchronous standby had it first: the row and its
    // key's kept answer are there (visible once the standby has replayed them, within moments).
    const onStandby = await poll('the write on the synchronous standby', 10_000, async () => {
      const [row] = await queryNode<{ id: string }>(urlOf(standbyPort), 'SELECT id FROM "Project" WHERE name = $1', [name]);
      const [kept] = await queryNode<{ status: number | null }>(urlOf(standbyPort), 'SELECT status FROM authstrap_idempotency_key WHERE key = $1', [key]);
      return row && kept?.status ? { id: row.id, status: kept.status } : undefined;
    });
    expect(onStandby.status).toBe(201);

    const lostAt = Date.now();
    try {
      await cluster.killNode(primary);
      proxy.cut();
      // The backend never heard the commit: the client gets a 503 that says when to come back.
      const answer = await first;
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(answer.body.error.code).toBe('SERVICE_UNAVAILABLE');

      // Sent again with the same key until the standby, promoted, answers.
      const retried: number[] = [];
      const repeat = await poll('the repeat to be answered after the failover', failoverBoundMs, async () => {
        const response = await send().catch(() => undefined);
        if (response?.status === 201) return response;
        retried.push(response?.status ?? 0);
        // Only retryable answers on the way, each saying when to come back.
        if (response) expect([503, 409], `a repeat answered ${response.status}: ${JSON.stringify(response.body)}`).toContain(response.status);
        if (response) expect(response.headers.get('retry-after')).toBeTruthy();
        return undefined;
      });
      const after = await cluster.waitForLeader();
      console.log(
        `[measured] answer lost between commit and client: ${primary} lost, ${after} leads; the repeat answered ${Date.now() - lostAt} ms later, ` +
          `after ${retried.length} tries (${[...new Set(retried)].join(', ') || 'none'})`,
      );

      expect(after).toBe(standby);
      // The first answer, kept with the key: the project as it was written, not a second one.
      expect(repeat.headers.get('idempotent-replayed')).toBe('true');
      expect(repeat.body.data).toMatchObject({ id: onStandby.id, name });
      const stored = await queryNode<{ id: string }>(urlOf(), 'SELECT id FROM "Project" WHERE name = $1', [name]);
      expect(stored).toEqual([{ id: onStandby.id }]);

      // And once more, on the new primary: the same answer again, still one row.
      const again = await send();
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(repeat.body);
      expect(await queryNode(urlOf(), 'SELECT count(*)::int AS rows FROM "Project" WHERE name = $1', [name])).toEqual([{ rows: 1 }]);
    } finally {
      // The lost node comes back as a replica, so the cluster stops as it started.
      cluster.startNode(primary);
      await cluster.waitForSyncStandby(90_000).catch(() => {});
    }
  }, 240_000);
});
