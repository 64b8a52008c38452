import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { pgbouncerBinary, pgbouncerVersion, startPgbouncer, type PgBouncer } from '../../../bench/lib/pgbouncer.mjs';
import { loadConfig } from '../src/config.js';
import { DatabaseUnavailableError, openDatabase } from '../src/db/database.js';
import { apiClient, createThrowawayDatabase, postgresAdminUrl, projectDir, setStatementTimeout, signUp, startBackend, type SignedUp } from './support/backend.js';
import { spawnBackend } from './support/process.js';

/**
 * The backend through PgBouncer in transaction mode (Debian's package, with docs/deploy.md's
 * settings), where consecutive transactions of one client connection run on whichever server
 * connection is free: what the backend keeps on a connection must not matter. The HTTP suites
 * run through it too (the `pgbouncer` kind of test/support/backend.ts); this file covers what they
 * cannot: concurrency on few server connections, migrations, timeouts and the start.
 */

const migrationCount = fs.readdirSync(path.join(projectDir, 'migrations')).filter((name) => name.endsWith('.sql')).length;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A throwaway database (with PostgreSQL's statement_timeout for it, if given), PgBouncer in front of it, and both URLs. */
async function pooledDatabase(settings = '', options: { statementTimeout?: string } = {}): Promise<{ directUrl: string; pooledUrl: string; pgbouncer: PgBouncer }> {
  const database = await createThrowawayDatabase();
  if (options.statementTimeout) await setStatementTimeout(database.url, options.statementTimeout);
  const pgbouncer = await startPgbouncer({ targetUrl: database.url, settings });
  cleanups.push(async () => {
    await pgbouncer.stop();
    await database.drop();
  });
  return { directUrl: database.url, pooledUrl: pgbouncer.urlFor(database.url), pgbouncer };
}

describe('DATABASE_DIRECT_URL', () => {
  const pooled = 'postgresql://app@pgbouncer:6432/app';
  const direct = 'postgresql://app@db:5432/app';

  it('turns prepared statements off unless DATABASE_PREPARED_STATEMENTS says the pooler keeps them', () => {
    expect(loadConfig({ DATABASE_URL: pooled }, projectDir).databasePreparedStatements).toBe(true);
    expect(loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct }, projectDir).databasePreparedStatements).toBe(false);
    expect(loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct, DATABASE_PREPARED_STATEMENTS: 'true' }, projectDir).databasePreparedStatements).toBe(true);
  });

  it('is refused without DATABASE_URL, and when it is not a PostgreSQL URL, naming it', () => {
    expect(() => loadConfig({ DATABASE_DIRECT_URL: direct }, projectDir)).toThrow(/DATABASE_DIRECT_URL: set it only with DATABASE_URL/);
    expect(() => loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: 'db:5432' }, projectDir)).toThrow(/DATABASE_DIRECT_URL: must look like postgresql:/);
  });
});

describe.runIf(postgresAdminUrl && pgbouncerBinary)('through PgBouncer in transaction mode', () => {
  it('three instances starting at once migrate once, on DATABASE_DIRECT_URL, and then serve through PgBouncer', async () => {
    const { directUrl, pooledUrl } = await pooledDatabase();
    const instances = Array.from({ length: 3 }, () => spawnBackend({ DATABASE_URL: pooledUrl, DATABASE_DIRECT_URL: directUrl }));
    cleanups.push(async () => {
      for (const instance of instances) instance.child.kill('SIGTERM');
      await Promise.all(instances.map((instance) => instance.exited));
    });
    const urls = await Promise.all(instances.map((instance) => instance.listening));
    expect(instances.filter((instance) => instance.output().includes('migrations applied'))).toHaveLength(1);

    const direct = new pg.Client({ connectionString: directUrl });
    await direct.connect();
    const { rows } = await direct.query('SELECT name, count(*)::int AS times FROM authstrap_migrations GROUP BY name');
    await direct.end();
    expect(rows).toHaveLength(migrationCount);
    expect(rows.every((row) => row.times === 1)).toBe(true);

    // A user made on one instance works on the others: they share the database through PgBouncer.
    const owner = await signUp(urls[0]!, 'pooled@example.com');
    expect((await owner.api('POST', '/Projects', { body: { name: 'Through PgBouncer' } })).status).toBe(201);
    for (const url of urls.slice(1)) {
      const list = await (await fetch(`${url}/Projects`, { headers: { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId } })).json();
      expect(list.data.map((project: { name: string }) => project.name)).toEqual(['Through PgBouncer']);
    }
  });

  it('stops at start with a message naming DATABASE_DIRECT_URL when DATABASE_URL is PgBouncer and it is missing', async () => {
    const { pooledUrl } = await pooledDatabase();
    const backend = spawnBackend({ DATABASE_URL: pooledUrl });
    expect(await backend.exited).toBe(1);
    expect(backend.output()).toContain('unsupported startup parameter');
    expect(backend.output()).toContain('set DATABASE_DIRECT_URL to PostgreSQL itself');
    expect(backend.output()).not.toMatch(/\n\s+at /);
  });

  it('warns at start when PostgreSQL has no statement timeout for what comes through PgBouncer, and not when it has one', async () => {
    const without = await pooledDatabase();
    const warned = spawnBackend({ DATABASE_URL: without.pooledUrl, DATABASE_DIRECT_URL: without.directUrl });
    await warned.listening;
    warned.child.kill('SIGTERM');
    await warned.exited;
    expect(warned.output()).toMatch(/"level":40,.*PostgreSQL has no statement_timeout/);

    // Set before PgBouncer opens its server connections: a setting applies to new sessions.
    const withTimeout = await pooledDatabase('', { statementTimeout: '5s' });
    const quiet = spawnBackend({ DATABASE_URL: withTimeout.pooledUrl, DATABASE_DIRECT_URL: withTimeout.directUrl });
    await quiet.listening;
    quiet.child.kill('SIGTERM');
    await quiet.exited;
    expect(quiet.output()).not.toContain('statement_timeout');
  });

  it("bounds a slow statement by the database's own statement_timeout, since none is asked for through PgBouncer", async () => {
    const { directUrl, pooledUrl } = await pooledDatabase('', { statementTimeout: '300ms' });
    const db = await openDatabase({ databaseUrl: pooledUrl, databaseDirectUrl: directUrl, embeddedDbDir: '', projectDir, databaseTimeouts: { connectMs: 2000, queryMs: 5000 } });
    try {
      const started = performance.now();
      await expect(db.query('SELECT pg_sleep(2)')).rejects.toMatchObject({ code: '57014' });
      expect(performance.now() - started).toBeLessThan(1500);
      // The connection is fine afterwards.
      expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
    }
  });

  /** 240 reads and writes, 40 at a time, from one user, through a backend whose PgBouncer has only 3 server connections. */
  async function concurrentLoad(env: Record<string, string>, settings = ''): Promise<{ statuses: number[]; errors: string[] }> {
    const { directUrl, pooledUrl } = await pooledDatabase(`default_pool_size = 3\n${settings}`);
    // The user signs up on a backend as it runs by default, so that what `env` breaks shows in the
    // load below and never in its setup; the session is in the database, good on the next one.
    const first = await startBackend('embedded', { DATABASE_URL: pooledUrl, DATABASE_DIRECT_URL: directUrl });
    const signedUp: SignedUp = await signUp(first.url, 'concurrent@example.com').finally(() => first.stop());
    const backend = await startBackend('embedded', { DATABASE_URL: pooledUrl, DATABASE_DIRECT_URL: directUrl, ...env });
    cleanups.push(() => backend.stop());
    const owner = { api: apiClient(backend.url, { token: signedUp.token, organizationId: signedUp.organizationId }) };
    const statuses: number[] = [];
    const errors: string[] = [];
    for (let round = 0; round < 6; round++) {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, n) =>
          n % 3 === 0
            ? owner.api('POST', '/Projects', { body: { name: `Round ${round} project ${n}` } })
            : n % 3 === 1
              ? owner.api('GET', `/Projects?limit=5&sort=name&order=${n % 2 ? 'asc' : 'desc'}`)
              : owner.api('GET', '/api/auth/get-session'),
        ),
      );
      for (const answer of answers) {
        statuses.push(answer.status);
        if (answer.status >= 500) errors.push(JSON.stringify(answer.body));
      }
    }
    return { statuses, errors };
  }

  it('serves concurrent reads and writes with every answer right, on 3 server connections shared by all of them', async () => {
    const { statuses, errors } = await concurrentLoad({});
    expect(errors).toEqual([]);
    expect(statuses.every((status) => status === 200 || status === 201)).toBe(true);
  });

  it('fails that load with prepared statements forced on where PgBouncer does not keep them: the load sees state left on a connection', async () => {
    // Before 1.21, or with max_prepared_statements = 0, PgBouncer does not keep named statements,
    // which is why the backend turns them off by default behind a pooler (DATABASE_DIRECT_URL).
    const keepsNone = pgbouncerVersion && (pgbouncerVersion[0] > 1 || pgbouncerVersion[1] >= 21) ? 'max_prepared_statements = 0\n' : '';
    const { errors } = await concurrentLoad({ DATABASE_PREPARED_STATEMENTS: 'true' }, keepsNone);
    expect(errors.length).toBeGreaterThan(0);
  });

  it('reports a PgBouncer that does not answer as the database not being available (a 503), within the bound', async () => {
    const { directUrl, pooledUrl, pgbouncer } = await pooledDatabase();
    const db = await openDatabase({ databaseUrl: pooledUrl, databaseDirectUrl: directUrl, embeddedDbDir: '', projectDir, databaseTimeouts: { connectMs: 1000, queryMs: 1000 } });
    try {
      expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await pgbouncer.stop();
      const started = performance.now();
      await expect(db.query('SELECT 1')).rejects.toBeInstanceOf(DatabaseUnavailableError);
      expect(performance.now() - started).toBeLessThan(2500);
    } finally {
      await db.close();
    }
  });
});
