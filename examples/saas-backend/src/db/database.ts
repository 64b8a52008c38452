import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config.js';

/** The result of one statement: the rows it returned and how many rows it touched. */
export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

/** Anything that runs parameterised SQL: the database itself, or one transaction. */
export interface Queryable {
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<QueryResult<Row>>;
}

/**
 * The database the backend talks to: PostgreSQL through a `pg` pool, or the embedded PGlite
 * (real PostgreSQL compiled to WebAssembly) when no DATABASE_URL is set. Both run the same SQL.
 */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'embedded';
  /** Runs `work` in one transaction on one connection: committed if it resolves, rolled back if it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs `work` on one dedicated connection (session-level locks need that). */
  withConnection<T>(work: (connection: Queryable & { exec(script: string): Promise<void> }) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openDatabase(config: Pick<Config, 'databaseUrl' | 'embeddedDbDir' | 'projectDir'>): Promise<Database> {
  if (config.databaseUrl) return openPostgres(config.databaseUrl);
  const dataDir =
    config.embeddedDbDir === 'memory://' ? 'memory://' : path.resolve(config.projectDir, config.embeddedDbDir);
  return openEmbedded(dataDir);
}

/**
 * int8 values (bigserial keys of existing tables, bigint columns) become numbers, as the embedded
 * database returns them, while they are exact; a larger one stays a string rather than lose digits.
 */
const int8Oid = 20;
const int8AsNumber = (value: string): number | string => (Number.isSafeInteger(Number(value)) ? Number(value) : value);
const typeParsers = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === int8Oid && format !== 'binary' ? int8AsNumber : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

function openPostgres(connectionString: string): Database {
  const pool = new pg.Pool({ connectionString, max: 10, idleTimeoutMillis: 30_000, types: typeParsers });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  const toResult = <Row>(result: pg.QueryResult): QueryResult<Row> => ({
    rows: result.rows as Row[],
    rowCount: result.rowCount ?? 0,
  });

  return {
    kind: 'postgres',
    async query<Row>(text: string, params?: unknown[]) {
      return toResult<Row>(await pool.query(text, params));
    },
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work({ query: async (text, params) => toResult(await client.query(text, params)) });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async withConnection(work) {
      const client = await pool.connect();
      try {
        return await work({
          query: async (text, params) => toResult(await client.query(text, params)),
          exec: async (script) => {
            await client.query(script);
          },
        });
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

async function openEmbedded(dataDir: string): Promise<Database> {
  // Loaded only when used, so a PostgreSQL deployment never loads the WebAssembly build.
  const { PGlite } = await import('@electric-sql/pglite');
  if (dataDir !== 'memory://') fs.mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create(dataDir);
  const toResult = <Row>(result: { rows: unknown[]; affectedRows?: number }): QueryResult<Row> => ({
    rows: result.rows as Row[],
    rowCount: result.affectedRows ?? result.rows.length,
  });
  const exec = async (script: string) => {
    await db.exec(script);
  };

  return {
    kind: 'embedded',
    async query<Row>(text: string, params?: unknown[]) {
      return toResult<Row>(await db.query(text, params));
    },
    transaction(work) {
      return db.transaction((tx) => work({ query: async (text, params) => toResult(await tx.query(text, params)) }));
    },
    // PGlite is a single connection already.
    withConnection: (work) => work({ query: async (text, params) => toResult(await db.query(text, params)), exec }),
    close: () => db.close(),
  };
}
