import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/database.js';
import { createThrowawayDatabase, projectDir } from './support/backend.js';

/**
 * On PostgreSQL each distinct statement is prepared once per connection and then run by name
 * (src/db/database.ts). What must hold: statements really are prepared (and are not when
 * DATABASE_PREPARED_STATEMENTS=false), and a table changed by another process under a prepared
 * `SELECT *` costs nothing but a new plan.
 */

const timeouts = { connectMs: 2000, queryMs: 2000 };

describe('DATABASE_PREPARED_STATEMENTS', () => {
  it('is on by default and takes only true or false', () => {
    expect(loadConfig({}, projectDir).databasePreparedStatements).toBe(true);
    expect(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'false' }, projectDir).databasePreparedStatements).toBe(false);
    expect(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: 'off' }, projectDir)).toThrow(ConfigError);
    try {
      loadConfig({ DATABASE_PREPARED_STATEMENTS: 'off' }, projectDir);
    } catch (error) {
      expect((error as ConfigError).problems.join('\n')).toMatch(/DATABASE_PREPARED_STATEMENTS.*true or false/);
    }
  });
});

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('prepared statements on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createThrowawayDatabase>>;
  const opened: Database[] = [];
  const open = async (databasePreparedStatements: boolean) => {
    const db = await openDatabase({ databaseUrl: database.url, embeddedDbDir: '', projectDir, databaseTimeouts: timeouts, databasePreparedStatements });
    opened.push(db);
    return db;
  };
  /** Another process's connection: it changes tables behind the backend's back. */
  const otherProcess = async (sql: string) => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(sql);
    await client.end();
  };
  /** The names of the statements prepared on the connection that runs this (one at a time, the pool reuses one). */
  const preparedNames = async (db: Database) =>
    (await db.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((row) => row.name);

  beforeAll(async () => {
    database = await createThrowawayDatabase();
    await otherProcess('CREATE TABLE "Gadget" (id int PRIMARY KEY, name text NOT NULL); INSERT INTO "Gadget" VALUES (1, \'one\')');
  });
  afterAll(async () => {
    for (const db of opened) await db.close();
    await database?.drop();
  });

  it('prepares each statement once and runs it by name afterwards', async () => {
    const db = await open(true);
    for (let run = 0; run < 3; run++) {
      expect((await db.query('SELECT name FROM "Gadget" WHERE id = $1', [1])).rows).toEqual([{ name: 'one' }]);
    }
    const names = await preparedNames(db);
    // The read above and the look at pg_prepared_statements itself, each under one name.
    expect(names.filter((name) => name.startsWith('authstrap_'))).toHaveLength(2);
  });

  it('prepares nothing when DATABASE_PREPARED_STATEMENTS=false', async () => {
    const db = await open(false);
    await db.query('SELECT name FROM "Gadget" WHERE id = $1', [1]);
    expect(await preparedNames(db)).toEqual([]);
  });

  it('prepares a statement again when another process changed the columns it returns', async () => {
    const db = await open(true);
    expect((await db.query('SELECT * FROM "Gadget"')).rows).toEqual([{ id: 1, name: 'one' }]);
    await otherProcess('ALTER TABLE "Gadget" ADD COLUMN "color" text DEFAULT \'red\'');
    // PostgreSQL refuses the old prepared form ("cached plan must not change result type"); the read is prepared anew.
    expect((await db.query('SELECT * FROM "Gadget"')).rows).toEqual([{ id: 1, name: 'one', color: 'red' }]);

    // In a transaction the refused statement cannot be run again: that transaction fails, the next one works.
    const inTransaction = () => db.transaction((tx) => tx.query('SELECT * FROM "Gadget"'));
    expect((await inTransaction()).rows).toHaveLength(1);
    await otherProcess('ALTER TABLE "Gadget" DROP COLUMN "color"');
    await expect(inTransaction()).rejects.toMatchObject({ code: '0A000' });
    expect((await inTransaction()).rows).toEqual([{ id: 1, name: 'one' }]);
  });

  it('reads each statement by its own columns when another database in the process gives its name to another statement', async () => {
    // Both name their first statements authstrap_1, authstrap_2, ...: for different statements,
    // here of as many columns, of other names and types. Pipelines read the answers themselves.
    const first = await open(true);
    const second = await open(true);
    const rowsOf = async (db: Database, texts: string[]) => (await db.pipeline(texts.map((text) => ({ text, params: [] })))).results.map((result) => result.rows);
    for (let round = 0; round < 3; round++) {
      expect(await rowsOf(first, ['SELECT 1 AS "answer"', 'SELECT true AS "yes"'])).toEqual([[{ answer: 1 }], [{ yes: true }]]);
      expect(await rowsOf(second, ['SELECT \'x\' AS "letter"', 'SELECT now()::date > \'2000-01-01\' AS "later"'])).toEqual([[{ letter: 'x' }], [{ later: true }]]);
    }
  });

  it('reads a column by its new type once another process changed it', async () => {
    const db = await open(true);
    await otherProcess('CREATE TABLE "Widget" (id int PRIMARY KEY, size text NOT NULL); INSERT INTO "Widget" VALUES (1, \'7\')');
    // Through a pipeline, which reads the rows itself and keeps how, per prepared statement.
    const sizes = async () => (await db.pipeline([{ text: 'SELECT "size" FROM "Widget"', params: [] }])).results[0]?.rows;
    expect(await sizes()).toEqual([{ size: '7' }]);
    expect(await sizes()).toEqual([{ size: '7' }]);
    await otherProcess('ALTER TABLE "Widget" ALTER COLUMN "size" TYPE int USING "size"::int');
    expect(await sizes()).toEqual([{ size: 7 }]);
  });
});
