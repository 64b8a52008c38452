import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresAdminUrl, signUp, startBackend } from './support/backend.js';
import { faultProxy } from './support/fault-proxy.js';
import { createDatabase, postgresBin, startSecondPostgres, withDatabase } from './support/second-postgres.js';

/**
 * A primary on an older timeline than the instance has written on (src/db/timelines.ts): what a
 * failover manager that lets an old primary take the lead back gives. Played by two servers
 * behind one address (a loopback proxy, as HAProxy is): a server of the test's own on timeline 2
 * (the promoted standby) and the machine's own on timeline 1 (the old primary coming back).
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

const metricsToken = 'test-metrics-token-0123456789abcdef0123';

describe.runIf(postgresAdminUrl && fs.existsSync(`${postgresBin}/initdb`))('a primary on an older timeline', () => {
  it('has its connections ended before their first statement: 503s with Retry-After, counted, while the newer one serves', async () => {
    const newer = await startSecondPostgres(2);
    cleanups.push(() => newer.stop());
    const name = `authstrap_timeline_${randomBytes(4).toString('hex')}`;
    cleanups.push(await createDatabase(newer.url, name));
    cleanups.push(await createDatabase(postgresAdminUrl!, name));
    const proxy = await faultProxy(withDatabase(newer.url, name));
    cleanups.push(() => proxy.close());
    const backend = await startBackend('embedded', { DATABASE_URL: proxy.url, METRICS_TOKEN: metricsToken });
    cleanups.push(() => backend.stop());
    const metric = async (name: string) => {
      const text = await (await fetch(`${backend.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
      return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
    };

    const owner = await signUp(backend.url, 'timeline@example.com');
    expect((await owner.api('POST', '/Projects', { body: { name: 'On timeline 2' } })).status).toBe(201);
    expect(await metric('authstrap_db_timeline')).toBe(2);
    expect(await metric('authstrap_db_older_timeline_refusals_total')).toBe(0);

    // The old primary takes the address back: new connections reach timeline 1.
    proxy.retarget(withDatabase(postgresAdminUrl!, name));
    proxy.cut();
    for (let attempt = 0; attempt < 3; attempt++) {
      const refused = await owner.api('POST', '/Projects', { body: { name: 'On timeline 1' } });
      // Not a 401 (the session is not in that database) nor a 500 (no such table): no statement reached it.
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
    }
    expect(await metric('authstrap_db_older_timeline_refusals_total')).toBeGreaterThanOrEqual(3);
    expect((await fetch(`${backend.url}/ready`)).status).toBe(503);

    // The newer primary is back behind the address: writes go on, and nothing went to the old one.
    proxy.retarget(withDatabase(newer.url, name));
    proxy.cut();
    let written = 0;
    for (let attempt = 0; attempt < 5 && written !== 201; attempt++) written = (await owner.api('POST', '/Projects', { body: { name: 'Back on 2' } })).status;
    expect(written).toBe(201);
    const older = new pg.Client({ connectionString: withDatabase(postgresAdminUrl!, name) });
    await older.connect();
    const tables = await older.query(`SELECT count(*)::int AS "count" FROM pg_tables WHERE schemaname = 'public'`);
    await older.end();
    expect(tables.rows[0].count).toBe(0);
  });
});
