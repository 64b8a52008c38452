import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { apiClient, postgresAdminUrl, serviceApiKey, startBackend } from './support/backend.js';

/**
 * A service transaction's commit sent again while the first commit is still running: the client's
 * wait for the answer ran out (a failover's slow synchronous standby does this), so it sends the
 * commit again, as the adapter does. It must get the first commit's outcome, not a 409 that says
 * the transaction "has ended (being committed)", which a client can neither retry nor trust.
 *
 * The commit is made slow for real: a deferred constraint trigger, which PostgreSQL runs at
 * COMMIT, sleeps for the rows this test marks. PostgreSQL only: the trigger is DDL on the test's
 * own database, made with its owner's connection.
 */
describe.runIf(postgresAdminUrl)('a commit sent again while the first commit runs (PostgreSQL)', () => {
  it('waits for the first commit and answers its outcome; the transaction is applied once', async () => {
    const backend = await startBackend('postgres');
    const owner = new pg.Client({ connectionString: backend.running.config.databaseUrl });
    try {
      await owner.connect();
      await owner.query(`CREATE FUNCTION "test_slow_commit"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NULL; END $$`);
      await owner.query(
        `CREATE CONSTRAINT TRIGGER "test_slow_commit" AFTER INSERT ON "verification" DEFERRABLE INITIALLY DEFERRED
           FOR EACH ROW WHEN (NEW."identifier" LIKE 'slow-commit:%') EXECUTE FUNCTION "test_slow_commit"()`,
      );
      const service = apiClient(backend.url, { token: serviceApiKey });
      const transaction = { 'x-authstrap-transaction': randomUUID() };
      const identifier = `slow-commit:${randomUUID()}`;
      expect((await service('POST', '/api/service/transactions', { headers: transaction })).status).toBe(201);
      const inside = await service('POST', '/verifications', {
        body: { identifier, value: 'kept once', expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
        headers: transaction,
      });
      expect(inside.status).toBe(201);

      const first = service('POST', '/api/service/transactions/commit', { headers: transaction });
      // The first commit is inside PostgreSQL's COMMIT (the trigger's 1.5 s) when the second comes.
      await new Promise((resolve) => setTimeout(resolve, 400));
      const sentAgain = await service('POST', '/api/service/transactions/commit', { headers: transaction });
      const answers = [await first, sentAgain];
      for (const answer of answers) {
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(answer.body.data).toEqual({ id: transaction['x-authstrap-transaction'], outcome: 'committed' });
      }
      const kept = await owner.query(`SELECT count(*)::int AS "count" FROM "verification" WHERE "identifier" = $1`, [identifier]);
      expect(kept.rows[0].count).toBe(1);
    } finally {
      await owner.end().catch(() => {});
      await backend.stop();
    }
  });
});
