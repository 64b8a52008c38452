import fs from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresAdminUrl, signUp, startBackend, type SignedUp } from './support/backend.js';
import { createDatabase, postgresBin, startSecondPostgres, withDatabase } from './support/second-postgres.js';

/**
 * A commit whose wait for the synchronous standby was cancelled (src/db/database.ts,
 * UnconfirmedCommitError; docs/deploy.md, "High availability"). PostgreSQL then commits on the
 * primary alone and says so only in a WARNING before answering success: acknowledged, such a write
 * is lost by the next failover. Played on a server of the test's own whose
 * synchronous_standby_names names a standby that never comes, so every commit waits; the test
 * cancels the wait as a DBA's pg_cancel_backend (or a pooler's cancel) would.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

const metricsToken = 'test-metrics-token-0123456789abcdef0123';

describe.runIf(postgresAdminUrl && fs.existsSync(`${postgresBin}/initdb`))('a commit the synchronous standby did not confirm', () => {
  it('is answered 503 with Retry-After, logged and counted, and a repeat with its Idempotency-Key finds it applied once', async () => {
    const server = await startSecondPostgres(1);
    cleanups.push(() => server.stop());
    const name = `authstrap_unconfirmed_${randomBytes(4).toString('hex')}`;
    cleanups.push(await createDatabase(server.url, name));
    const admin = new pg.Client({ connectionString: withDatabase(server.url, name) });
    await admin.connect();
    cleanups.push(() => admin.end());
    // A statement timeout far away: what ends the wait here is the cancel, not the backend's deadline.
    const backend = await startBackend('embedded', { DATABASE_URL: withDatabase(server.url, name), METRICS_TOKEN: metricsToken, DATABASE_QUERY_TIMEOUT_MS: '60000' });
    cleanups.push(() => backend.stop());
    const metric = async (metricName: string) => {
      const text = await (await fetch(`${backend.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
      return Number(new RegExp(`^${metricName} (\\d+)$`, 'm').exec(text)?.[1]);
    };
    const owner: SignedUp = await signUp(backend.url, 'unconfirmed@example.com');
    const projectsNamed = async (projectName: string) =>
      (await admin.query<{ id: string }>(`SELECT "id" FROM "Project" WHERE "name" = $1`, [projectName])).rows.map((row) => row.id);
    const waitForStandby = async (on: boolean) => {
      await admin.query(on ? `ALTER SYSTEM SET synchronous_standby_names = 'standby_that_never_comes'` : 'ALTER SYSTEM RESET synchronous_standby_names');
      await admin.query('SELECT pg_reload_conf()');
    };
    /** Cancels the first commit seen waiting for the standby; resolves its pid. */
    const cancelWaitingCommit = async () => {
      for (let attempt = 0; attempt < 400; attempt += 1) {
        const { rows } = await admin.query<{ pid: number }>(`SELECT "pid" FROM pg_stat_activity WHERE "wait_event" = 'SyncRep' AND "datname" = current_database()`);
        if (rows[0]) {
          await admin.query('SELECT pg_cancel_backend($1)', [rows[0].pid]);
          return rows[0].pid;
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('no commit waited for the synchronous standby');
    };

    expect((await owner.api('POST', '/Projects', { body: { name: 'Before' } })).status).toBe(201);
    expect(await metric('authstrap_db_unconfirmed_commits_total')).toBe(0);

    const key = randomUUID();
    await waitForStandby(true);
    try {
      // A write with its key: the key's answer and the row commit together, and that commit is unconfirmed.
      const sent = owner.api('POST', '/Projects', { body: { name: 'Keyed' }, headers: { 'Idempotency-Key': key } });
      await cancelWaitingCommit();
      const unconfirmed = await sent;
      expect(unconfirmed.status, JSON.stringify(unconfirmed.body)).toBe(503);
      expect(unconfirmed.headers.get('retry-after')).toMatch(/^\d+$/);
      // It is on the primary (the standby would not have it): not a write lost, a write unconfirmed.
      expect(await projectsNamed('Keyed')).toHaveLength(1);

      // A write without a key, in one round trip (its commit is the pipeline's): the same answer.
      const unkeyed = owner.api('POST', '/Projects', { body: { name: 'Unkeyed' } });
      await cancelWaitingCommit();
      expect((await unkeyed).status).toBe(503);
      expect(await metric('authstrap_db_unconfirmed_commits_total')).toBe(2);
    } finally {
      await waitForStandby(false);
    }

    // Sent again with its key once commits are confirmed: the first answer, the row still once.
    const [stored] = await projectsNamed('Keyed');
    const repeat = await owner.api('POST', '/Projects', { body: { name: 'Keyed' }, headers: { 'Idempotency-Key': key } });
    expect(repeat.status, JSON.stringify(repeat.body)).toBe(201);
    expect(repeat.body.data.id).toBe(stored);
    expect(await projectsNamed('Keyed')).toEqual([stored]);
  });
});

