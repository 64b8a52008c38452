import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config.js';
import { lockEmbeddedDatabase } from './embedded-lock.js';
import { createsNewDatabase, dropInitdbTemplate, initdbTemplateFile, keepInitdbTemplate, readInitdbTemplate } from './embedded-template.js';

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
  /** Runs `work` on one dedicated connection (session-level locks need that), to PostgreSQL itself (DATABASE_DIRECT_URL). */
  withConnection<T>(work: (connection: Queryable & { exec(script: string): Promise<void> }) => Promise<T>): Promise<T>;
  /** The connection pool now (PostgreSQL only; the embedded database is one connection), for the metrics. */
  poolStats?(): PoolStats;
  close(): Promise<void>;
}

export interface PoolStats {
  max: number;
  /** Connections open, and of those the ones not in use. */
  total: number;
  idle: number;
  /** Statements and transactions waiting for a connection now. */
  waiting: number;
  /** How many of them had to wait since the pool opened. */
  waits: number;
}

/**
 * The database did not answer in time, or the connection to it broke: the request can be tried
 * again shortly, so the client gets a 503, never a 500. Errors PostgreSQL itself reports (a
 * constraint, a bad value) carry a SQLSTATE and are not wrapped.
 */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
  constructor(cause: unknown) {
    super(`The database is not available: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** A PostgreSQL SQLSTATE: five digits or capitals, which Node's E-codes (`EPIPE`) are not. */
export const hasSqlState = (error: unknown): error is { code: string; detail?: string } =>
  typeof (error as { code?: unknown })?.code === 'string' && /^(?!E[A-Z]{4}$)[0-9A-Z]{5}$/.test((error as { code: string }).code);

/** Driver errors without a SQLSTATE (timeouts, "Connection terminated unexpectedly", refused connections). */
const asUnavailable = (error: unknown): unknown => {
  countTimeout(error);
  return hasSqlState(error) ? error : new DatabaseUnavailableError(error);
};

/**
 * Waits on PostgreSQL that ran out, since the process started, for the metrics: getting a
 * connection (DATABASE_CONNECT_TIMEOUT_MS), a statement the server cancelled (its
 * statement_timeout), an answer that never came (the read deadline below).
 */
export const databaseTimeouts = { connect: 0, statement: 0, read: 0 };

function countTimeout(error: unknown): void {
  if (hasSqlState(error)) {
    if (error.code === '57014') databaseTimeouts.statement++;
  } else if (/timeout exceeded when trying to connect|due to connection timeout/.test(String((error as Error)?.message))) {
    databaseTimeouts.connect++;
  }
}

export type DatabaseSettings = Pick<Config, 'databaseUrl' | 'embeddedDbDir' | 'projectDir' | 'databaseTimeouts'> &
  Partial<Pick<Config, 'databasePreparedStatements' | 'databaseDirectUrl'>>;

export async function openDatabase(config: DatabaseSettings): Promise<Database> {
  if (config.databaseUrl) {
    const statements = config.databasePreparedStatements === false ? unprepared : preparedStatementNames();
    return openPostgres(postgresTargets(config.databaseUrl, config.databaseDirectUrl), config.databaseTimeouts, statements);
  }
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

/**
 * Names for prepared statements, one per distinct SQL text. A named statement is parsed and
 * planned once per connection and afterwards only executed: on a list read that is most of what
 * PostgreSQL spends (bench/README.md). The routes' SQL differs only by which filters and sort a
 * request uses, so few texts recur; past `limit` distinct texts, the rest run unprepared, so
 * neither this map nor PostgreSQL's memory per connection grows without bound.
 * DATABASE_PREPARED_STATEMENTS=false turns it off, for a pooler that hands each statement to
 * any connection (PgBouncer in transaction mode without max_prepared_statements).
 */
export interface StatementNames {
  nameFor(text: string): string | undefined;
  /** The statement's prepared form no longer fits its tables: later runs get a new name, so a fresh plan. */
  forget(text: string): void;
}

export function preparedStatementNames(limit = 500): StatementNames {
  const names = new Map<string, string>();
  let issued = 0;
  return {
    nameFor(text) {
      let name = names.get(text);
      if (name === undefined && names.size < limit) {
        name = `authstrap_${++issued}`;
        names.set(text, name);
      }
      return name;
    },
    forget: (text) => void names.delete(text),
  };
}

const unprepared: StatementNames = { nameFor: () => undefined, forget: () => {} };

/**
 * PostgreSQL refuses to run a prepared statement whose result columns changed since it was
 * prepared ("cached plan must not change result type"): a `SELECT *` after another process
 * added a column. Nothing ran, so the statement may simply be prepared again.
 */
const isStalePlan = (error: unknown) =>
  hasSqlState(error) && error.code === '0A000' && /cached plan must not change result type/.test(String((error as { message?: unknown }).message));

/**
 * Where the connections go. `pooled` serves the requests; `direct` is the one connection that
 * holds session state (the migrations' advisory lock). They are the same server unless
 * DATABASE_URL is a pooler in transaction mode (PgBouncer), which hands each transaction to any of
 * its server connections: then DATABASE_DIRECT_URL is PostgreSQL itself, and the pooled
 * connections carry no session settings (the pooler refuses them at connect time).
 */
export interface PostgresTargets {
  pooled: string;
  direct: string;
  throughPooler: boolean;
}

export function postgresTargets(databaseUrl: string, directUrl: string | undefined): PostgresTargets {
  return { pooled: databaseUrl, direct: directUrl ?? databaseUrl, throughPooler: directUrl !== undefined };
}

/**
 * The server-side bounds each pooled connection asks for when it connects. Through a pooler they
 * are the database's or the role's own settings instead (`ALTER ROLE ... SET statement_timeout`,
 * docs/deploy.md), and the read deadline below still ends a wait that never ends.
 */
function sessionTimeouts(targets: PostgresTargets, timeouts: Config['databaseTimeouts']) {
  if (targets.throughPooler) return {};
  return { statement_timeout: timeouts.queryMs, idle_in_transaction_session_timeout: timeouts.queryMs * 2 };
}

const poolSize = 10;

function openPostgres(targets: PostgresTargets, timeouts: Config['databaseTimeouts'], statements: StatementNames): Database {
  const pool = new pg.Pool({
    connectionString: targets.pooled,
    max: poolSize,
    idleTimeoutMillis: 30_000,
    types: typeParsers,
    keepAlive: true,
    // Every wait is bounded, so a stalled or failing-over PostgreSQL gives 503s, never hung requests:
    // getting a connection (from the pool or a new one) ...
    connectionTimeoutMillis: timeouts.connectMs,
    // ... a statement PostgreSQL runs too long (it cancels it: a 503; pool.query then replaces that connection) ...
    ...sessionTimeouts(targets, timeouts),
    // ... and an answer that never arrives (the server or the network stopped): readDeadlines below.
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  // A little longer than the statement timeout, so that a merely slow statement is cancelled by the server first.
  const deadlines = readDeadlines(pool, timeouts.queryMs + 250);
  const waits = countWaits(pool);
  const toResult = <Row>(result: pg.QueryResult): QueryResult<Row> => ({
    rows: result.rows as Row[],
    rowCount: result.rowCount ?? 0,
  });
  /** A connection that timed out or broke (an error without a SQLSTATE) is not used again. */
  const isBroken = (error: unknown) => error !== undefined && !hasSqlState(error);

  return {
    kind: 'postgres',
    async query<Row>(text: string, params?: unknown[]) {
      // pool.query drops a client that failed, so a timed-out connection is not reused.
      const run = () => pool.query({ text, values: params, name: statements.nameFor(text) });
      const result = await run()
        .catch((error) => {
          if (!isStalePlan(error)) throw error;
          statements.forget(text);
          return run();
        })
        .catch((error) => Promise.reject(asUnavailable(error)));
      return toResult<Row>(result);
    },
    async transaction(work) {
      const client = await pool.connect().catch((error) => Promise.reject(asUnavailable(error)));
      let failure: unknown;
      const run = async <Row>(text: string, params?: unknown[]) => {
        try {
          deadlines.statementStarts(client);
          return toResult<Row>(await client.query({ text, values: params, name: statements.nameFor(text) }));
        } catch (error) {
          // Inside a transaction the failed statement cannot be retried; the next transaction prepares it anew.
          if (isStalePlan(error)) statements.forget(text);
          failure ??= error;
          throw asUnavailable(error);
        }
      };
      try {
        await run('BEGIN');
        const result = await work({ query: run });
        await run('COMMIT');
        return result;
      } catch (error) {
        if (!isBroken(failure)) await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        // Released with the error, the pool drops the connection instead of handing it out again.
        client.release(isBroken(failure) ? (failure as Error) : undefined);
      }
    },
    async withConnection(work) {
      // Migrations may run longer than a request's statement timeout: a connection of their own,
      // with the connect timeout but without the statement and read timeouts, to PostgreSQL
      // itself (their advisory lock is the session's, which a pooler would not keep).
      const client = new pg.Client({ connectionString: targets.direct, types: typeParsers, connectionTimeoutMillis: timeouts.connectMs, keepAlive: true });
      await client.connect().catch((error) => Promise.reject(asUnavailable(error)));
      client.on('error', () => {});
      try {
        return await work({
          query: async (text, params) => toResult(await client.query(text, params)),
          exec: async (script) => {
            await client.query(script);
          },
        });
      } finally {
        await client.end().catch(() => {});
      }
    },
    poolStats: () => ({ max: poolSize, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, waits: waits.count }),
    close: () => pool.end(),
  };
}

/**
 * Counts the requests for a connection that must wait for one to be released: the pool is at its
 * size, and the idle connections are all spoken for by requests queued before (pg's pool hands
 * them out on the next tick). pg's pool says how many wait now, not how many waited. While the
 * pool is still growing, a request that ends up waiting for a new connection is not counted.
 */
function countWaits(pool: pg.Pool) {
  const counted = { count: 0 };
  const connect = pool.connect.bind(pool) as (callback?: unknown) => unknown;
  pool.connect = ((callback?: unknown) => {
    if (pool.totalCount >= poolSize && pool.waitingCount >= pool.idleCount) counted.count++;
    return connect(callback);
  }) as typeof pool.connect;
  return counted;
}

/**
 * Ends a pooled connection whose statement has waited `limitMs` for its answer (PostgreSQL or the
 * network stopped answering): the statement fails (a 503), the pool drops the connection and makes
 * a new one for the next. What `pg`'s `query_timeout` does, but with one timer per connection,
 * armed again each time the connection is handed out or starts a statement, instead of a new timer
 * and callback per statement: those kept statements' objects alive past V8's young-generation
 * collections, which slowed every request down (bench/README.md).
 */
function readDeadlines(pool: pg.Pool, limitMs: number) {
  /** Per connection: its timer, and whether a statement of it is waiting (it is out of the pool). */
  const watches = new WeakMap<pg.PoolClient, { timer: ReturnType<typeof setTimeout>; waiting: boolean }>();
  pool.on('connect', (client) => {
    const watch = {
      waiting: false,
      // It fires `limitMs` after the last statement started. A connection back in the pool is idle,
      // not stalled; ending one with a statement in flight makes `pg` destroy its socket.
      timer: setTimeout(() => {
        if (!watch.waiting) return;
        databaseTimeouts.read++;
        client.end().catch(() => {});
      }, limitMs).unref(),
    };
    watches.set(client, watch);
    client.once('end', () => clearTimeout(watch.timer));
  });
  const statementStarts = (client: pg.PoolClient) => {
    const watch = watches.get(client);
    if (!watch) return;
    watch.waiting = true;
    watch.timer.refresh();
  };
  pool.on('acquire', statementStarts);
  pool.on('release', (_error, client) => {
    const watch = watches.get(client);
    if (watch) watch.waiting = false;
  });
  return { statementStarts };
}

/**
 * Timestamps are read by `pg`'s own parser on the embedded database too, so both databases give
 * the same Date for every value (PGlite's reads the year 0001 as 2001 and a BC date as invalid).
 */
const embeddedParsers = Object.fromEntries(
  [pg.types.builtins.TIMESTAMPTZ, pg.types.builtins.TIMESTAMP].map((oid) => [oid, (text: string) => pg.types.getTypeParser(oid, 'text')(text)]),
);

/**
 * Opens the embedded database, creating it when `dataDir` holds none. A new one is loaded from the
 * initialised copy kept in the user's cache when there is one, which skips PGlite's `initdb`, and
 * otherwise leaves that copy behind for the next (embedded-template.ts).
 */
async function createEmbedded(PGlite: typeof import('@electric-sql/pglite').PGlite, dataDir: string) {
  const options = { parsers: embeddedParsers };
  if (!createsNewDatabase(dataDir)) return PGlite.create(dataDir, options);
  const onDisk = dataDir !== 'memory://';
  if (onDisk) fs.mkdirSync(dataDir, { recursive: true });
  const templateFile = initdbTemplateFile();
  const template = readInitdbTemplate(templateFile);
  if (template) {
    try {
      return await PGlite.create(dataDir, { ...options, loadDataDir: template });
    } catch {
      // A damaged copy: drop it and what it left in the folder, and create the database the long way.
      dropInitdbTemplate(templateFile);
      if (onDisk) {
        fs.rmSync(dataDir, { recursive: true, force: true });
        fs.mkdirSync(dataDir, { recursive: true });
      }
    }
  }
  const db = await PGlite.create(dataDir, options);
  await keepInitdbTemplate(templateFile, () => db.dumpDataDir('none'));
  return db;
}

async function openEmbedded(dataDir: string): Promise<Database> {
  // Loaded only when used, so a PostgreSQL deployment never loads the WebAssembly build.
  const { PGlite } = await import('@electric-sql/pglite');
  // PGlite is one process's database: a second process on the same folder would write over the
  // first one's changes. The lock is taken before the folder is opened, and refused if held.
  const lock = dataDir === 'memory://' ? undefined : lockEmbeddedDatabase(dataDir);
  let db: InstanceType<typeof PGlite>;
  try {
    db = await createEmbedded(PGlite, dataDir);
  } catch (error) {
    lock?.release();
    throw error;
  }
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
    async close() {
      try {
        await db.close();
      } finally {
        lock?.release();
      }
    },
  };
}
