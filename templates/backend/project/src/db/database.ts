import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config.js';
import { lockEmbeddedDatabase } from './embedded-lock.js';
import { createsNewDatabase, dropInitdbTemplate, initdbTemplateFile, keepInitdbTemplate, readInitdbTemplate } from './embedded-template.js';
import { runPipeline } from './pipeline.js';
import type { Statement } from './sql.js';
import { guardTimelines, type TimelineStats } from './timelines.js';

/** The result of one statement: the rows it returned and how many rows it touched. */
export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

/** Anything that runs parameterised SQL: the database itself, or one transaction. */
export interface Queryable {
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<QueryResult<Row>>;
}

/** What statements run in one round trip gave: the results of those that completed, and the error that stopped the rest. */
export interface PipelineOutcome {
  results: QueryResult<Record<string, unknown>>[];
  /** PostgreSQL's refusal of statement number `results.length` (nothing of the transaction is kept). */
  error?: unknown;
}

/**
 * The database the backend talks to: PostgreSQL through a `pg` pool, or the embedded PGlite
 * (real PostgreSQL compiled to WebAssembly) when no DATABASE_URL is set. Both run the same SQL.
 */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'embedded';
  /** Runs `work` in one transaction on one connection: committed if it resolves, rolled back if it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs `statements` in one transaction and, on PostgreSQL, one round trip (db/pipeline.ts): how
   * a request's scope is set in the round trip of its statement (db/scope.ts).
   */
  pipeline(statements: Statement[]): Promise<PipelineOutcome>;
  /**
   * Opens a transaction that stays open across several calls until `commit` or `rollback` (see
   * `OpenTransaction`). With `first`, those statements run in the round trip of its BEGIN, and
   * their outcome comes with it (a statement that fails leaves a transaction to roll back).
   */
  begin(): Promise<OpenTransaction>;
  begin(first: Statement[]): Promise<OpenTransaction & { started: PipelineOutcome }>;
  /**
   * Runs `work` on one dedicated connection, to PostgreSQL itself (DATABASE_DIRECT_URL), as its user:
   * migrations, session-level locks.
   */
  withConnection<T>(work: (connection: Queryable & { exec(script: string): Promise<void> }) => Promise<T>): Promise<T>;
  /**
   * From now on every statement of the pool acts as `role` (row-level security applies to it).
   * Called once at startup, after the migrations, before the pool is first used.
   */
  actAs(role: string): Promise<void>;
  /**
   * `work` in one transaction as the user of DATABASE_URL with `authstrap.maintenance` on: past
   * row-level security, for maintenance and tests, never for a request. A backend that logs in as
   * `authstrap_app` itself (production, db/scope.ts) has no such user, and sees no tenant rows here.
   */
  asOwner<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** The connection pool now (PostgreSQL only; the embedded database is one connection), for the metrics. */
  poolStats?(): PoolStats;
  /** The newest timeline reached, and the connections refused for an older one (PostgreSQL, not through a pooler: db/timelines.ts). */
  timelineStats?(): TimelineStats;
  /**
   * Calls `onNotification` for every NOTIFY on `channel` from now until the function it resolves
   * is called. The embedded database only: it is this process's alone, so its notifications are
   * heard here. On PostgreSQL, LISTEN needs a session of its own (src/outbox/wake-ups.ts).
   */
  listen?(channel: string, onNotification: () => void): Promise<() => Promise<void>>;
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

/** What asOwner runs first: back to the login user, with the maintenance policies' setting on. */
const ownerSettings = `SELECT set_config('role', session_user, true), set_config('authstrap.maintenance', 'on', true)`;

/**
 * A transaction held open between calls, on a connection of its own until `commit` or
 * `rollback` (the trusted server's transactions over HTTP: src/http/service-transactions.ts,
 * which bounds how long and how many). On the embedded database, which is one connection, every
 * other statement waits until it ends.
 */
export interface OpenTransaction extends Queryable {
  /**
   * Runs `statements` in this transaction, on PostgreSQL in one round trip, stopping at the first
   * that fails (its error is the outcome's; the transaction can then only be rolled back).
   */
  pipeline(statements: Statement[]): Promise<PipelineOutcome>;
  /**
   * Commits; `last`, when given, runs first in the same round trip. When one of them fails,
   * nothing is committed: the transaction is rolled back and the statement's error thrown.
   */
  commit(last?: Statement[]): Promise<void>;
  /** Never throws: a connection that broke has rolled back already. */
  rollback(): Promise<void>;
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

/**
 * A commit PostgreSQL made on the primary but stopped waiting for the synchronous standby to
 * confirm: its statement_timeout (or a cancel) ran out while the standby was silent, and the server
 * said so only in a WARNING ("canceling wait for synchronous replication ... The transaction has
 * already committed locally, but might not have been replicated to the standby") before answering
 * success. Were it acknowledged, a failover now would lose it (docs/deploy.md, "High availability").
 * So it is a 503 instead: a client sending it again with its Idempotency-Key gets the first answer
 * if the primary kept it, and a write applied once if it did not.
 */
export class UnconfirmedCommitError extends DatabaseUnavailableError {
  constructor() {
    super(new Error('the commit was not confirmed by the synchronous standby in time (it may be on the primary only)'));
  }
}

/** Commits the synchronous standby did not confirm, since the process started (UnconfirmedCommitError), for the metrics. */
export const unconfirmedCommits = { count: 0 };

/** PostgreSQL's warning for a commit whose wait for the synchronous standby was cancelled (src/backend/replication/syncrep.c). */
const isCancelledSyncWait = (notice: { message?: string }) => notice.message?.startsWith('canceling wait for synchronous replication') === true;

/** A PostgreSQL SQLSTATE: five digits or capitals, which Node's E-codes (`EPIPE`) are not. */
export const hasSqlState = (error: unknown): error is { code: string; detail?: string } =>
  typeof (error as { code?: unknown })?.code === 'string' && /^(?!E[A-Z]{4}$)[0-9A-Z]{5}$/.test((error as { code: string }).code);

/** Driver errors without a SQLSTATE (timeouts, "Connection terminated unexpectedly", refused connections). */
const asUnavailable = (error: unknown): unknown => {
  countTimeout(error);
  return hasSqlState(error) || error instanceof DatabaseUnavailableError ? error : new DatabaseUnavailableError(error);
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

/** What the database tells its owner as it happens. */
export interface DatabaseHooks {
  /** A connection reached a primary on an older timeline than this instance has written on (db/timelines.ts): it was ended. */
  onOlderTimeline?(seen: number, newest: number): void;
  /** A commit was not confirmed by the synchronous standby (UnconfirmedCommitError): its request is answered 503. */
  onUnconfirmedCommit?(): void;
}

export async function openDatabase(config: DatabaseSettings, hooks: DatabaseHooks = {}): Promise<Database> {
  if (config.databaseUrl) {
    const statements = config.databasePreparedStatements === false ? unprepared : preparedStatementNames();
    return openPostgres(postgresTargets(config.databaseUrl, config.databaseDirectUrl), config.databaseTimeouts, statements, hooks);
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

/**
 * How a pooled connection comes to act as the app role (actAs). Directly to PostgreSQL, as it is
 * made: a startup parameter rather than a SET ROLE after connecting, so that no connection is
 * ever handed out before it acts as the role, and one that cannot is an error, not a connection
 * that silently acts as its login user. Through a pooler, which refuses startup parameters and
 * hands each transaction to any server connection, in every transaction: each statement runs
 * behind this one, in the same round trip (db/pipeline.ts).
 */
const roleStatement = (role: string): Statement => ({ text: `SELECT set_config('role', $1, true)`, params: [role] });

function openPostgres(targets: PostgresTargets, timeouts: Config['databaseTimeouts'], statements: StatementNames, hooks: DatabaseHooks): Database {
  /** The role every pooled connection acts as, from its first statement on (actAs). */
  let role: string | undefined;
  /** Through a pooler: the statement in front of every transaction that switches to `role`. */
  let switchRole: Statement | undefined;
  let pool: pg.Pool | undefined;
  // Through a pooler a connection is no one server's: a rewind cannot be seen there (db/timelines.ts).
  const timelines = targets.throughPooler ? undefined : guardTimelines((seen, newest) => hooks.onOlderTimeline?.(seen, newest));
  let deadlines: ReturnType<typeof readDeadlines>;
  let waits: ReturnType<typeof countWaits>;
  /** Connections whose last commit the synchronous standby did not confirm: the WARNING comes before the commit's answer. */
  const unconfirmed = new WeakSet<pg.ClientBase>();
  /** Whether `client`'s commit just now went unconfirmed (forgotten as it is asked), counted and told. */
  const commitUnconfirmed = (client: pg.ClientBase): boolean => {
    if (!unconfirmed.delete(client)) return false;
    unconfirmedCommits.count++;
    hooks.onUnconfirmedCommit?.();
    return true;
  };
  // Made at the first statement, so that actAs (at startup, after the migrations) comes first.
  const poolOf = (): pg.Pool => {
    if (pool) return pool;
    pool = new pg.Pool({
      connectionString: targets.pooled,
      max: poolSize,
      idleTimeoutMillis: 30_000,
      types: typeParsers,
      keepAlive: true,
      ...(role && !targets.throughPooler ? { options: `-c role=${role}` } : {}),
      // Every wait is bounded, so a stalled or failing-over PostgreSQL gives 503s, never hung requests:
      // getting a connection (from the pool or a new one) ...
      connectionTimeoutMillis: timeouts.connectMs,
      // ... a statement PostgreSQL runs too long (it cancels it: a 503; pool.query then replaces that connection) ...
      ...sessionTimeouts(targets, timeouts),
      // ... and an answer that never arrives (the server or the network stopped): readDeadlines below.
      ...(timelines ? { onConnect: timelines.onConnect } : {}),
    });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('notice', (notice) => isCancelledSyncWait(notice) && unconfirmed.add(client)));
    // A little longer than the statement timeout, so that a merely slow statement is cancelled by the server first.
    deadlines = readDeadlines(pool, timeouts.queryMs + 250);
    waits = countWaits(pool);
    if (timelines) pool.on('acquire', timelines.onAcquire);
    return pool;
  };
  const toResult = <Row>(result: pg.QueryResult): QueryResult<Row> => ({
    rows: result.rows as Row[],
    rowCount: result.rowCount ?? 0,
  });
  /** A connection that timed out or broke (an error without a SQLSTATE) is not used again. */
  const isBroken = (error: unknown) => error !== undefined && !hasSqlState(error);

  /**
   * A pooled connection for several statements, and its release. A connection that breaks while
   * checked out emits an error, which pg-pool listens for only while the connection is idle: this
   * listener takes it (the statement in flight fails with it too), and the connection is then
   * released as broken, so the pool drops it.
   */
  async function checkOut() {
    const client = await poolOf().connect().catch((error) => Promise.reject(asUnavailable(error)));
    let broken: unknown;
    const onError = (error: unknown) => void (broken ??= error);
    client.on('error', onError);
    return {
      client,
      breaks: (error: unknown) => void (broken ??= error),
      release() {
        client.removeListener('error', onError);
        client.release(broken === undefined ? undefined : (broken as Error));
      },
    };
  }

  /** `work` on one pooled connection, in one transaction (BEGIN .. COMMIT, or ROLLBACK when it throws). */
  async function inTransaction<T>(work: (tx: Queryable) => Promise<T>, first?: string): Promise<T> {
    const { client, breaks, release } = await checkOut();
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
      if (switchRole) await run(switchRole.text, switchRole.params);
      if (first) await run(first);
      const result = await work({ query: run });
      await run('COMMIT');
      if (commitUnconfirmed(client)) throw new UnconfirmedCommitError();
      return result;
    } catch (error) {
      if (!isBroken(failure)) await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      // Released as broken, the pool drops the connection instead of handing it out again.
      if (isBroken(failure)) breaks(failure);
      release();
    }
  }

  /** Statements in one round trip and one transaction (db/pipeline.ts), behind the role switch when there is one. */
  async function pipelined(sent: Statement[]): Promise<PipelineOutcome> {
    const all = switchRole ? [switchRole, ...sent] : sent;
    const { client, breaks, release } = await checkOut();
    try {
      const run = () => {
        deadlines.statementStarts(client);
        return runPipeline(client, all.map(({ text, params }) => ({ text, values: params, name: statements.nameFor(text) })), typeParsers);
      };
      let outcome = await run();
      // Nothing was kept (the transaction failed), so a statement whose plan went stale may run again.
      if (isStalePlan(outcome.error)) {
        for (const { text } of all) statements.forget(text);
        outcome = await run();
      }
      if (outcome.error !== undefined && !hasSqlState(outcome.error)) throw outcome.error;
      // The pipeline's closing Sync committed it: confirmed by the standby, or a 503.
      if (commitUnconfirmed(client)) throw new UnconfirmedCommitError();
      const results = switchRole ? outcome.results.slice(1) : outcome.results;
      return outcome.error !== undefined ? { results, error: outcome.error } : { results };
    } catch (error) {
      if (!(error instanceof UnconfirmedCommitError)) breaks(error);
      throw asUnavailable(error);
    } finally {
      release();
    }
  }

  return {
    kind: 'postgres',
    async query<Row>(text: string, params: unknown[] = []) {
      if (switchRole) {
        const outcome = await pipelined([{ text, params }]);
        if (outcome.error !== undefined) throw outcome.error;
        return outcome.results[0] as QueryResult<Row>;
      }
      // A statement on its own commits as it ends: confirmed by the standby, or a 503. A connection
      // that failed without a SQLSTATE (a timeout, a break) is dropped, not reused.
      const { client, breaks, release } = await checkOut();
      const run = () => client.query({ text, values: params, name: statements.nameFor(text) });
      try {
        const result = await run().catch((error) => {
          if (!isStalePlan(error)) throw error;
          statements.forget(text);
          return run();
        });
        if (commitUnconfirmed(client)) throw new UnconfirmedCommitError();
        return toResult<Row>(result);
      } catch (error) {
        if (isBroken(error) && !(error instanceof UnconfirmedCommitError)) breaks(error);
        throw asUnavailable(error);
      } finally {
        release();
      }
    },
    transaction: (work) => inTransaction(work),
    pipeline: pipelined,
    begin: ((first?: Statement[]) => beginHeldTransaction(poolOf(), deadlines, statements, switchRole, commitUnconfirmed, first)) as Database['begin'],
    async withConnection(work) {
      // Migrations may run longer than a request's statement timeout: a connection of their own,
      // with the connect timeout but without the statement and read timeouts, to PostgreSQL
      // itself (their advisory lock is the session's, which a pooler would not keep).
      // No statement timeout, said as a startup parameter: a pooler (PgBouncer) given as the only URL
      // refuses it, so the backend stops at start naming DATABASE_DIRECT_URL (server.ts) instead of
      // running migrations through it, where their session lock would not hold.
      const client = new pg.Client({ connectionString: targets.direct, types: typeParsers, connectionTimeoutMillis: timeouts.connectMs, keepAlive: true, options: '-c statement_timeout=0' });
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
    async actAs(appRole) {
      if (pool) throw new Error('actAs must come before the first pooled statement');
      role = appRole;
      if (targets.throughPooler) switchRole = roleStatement(appRole);
    },
    asOwner: (work) => inTransaction(work, ownerSettings),
    timelineStats: () => timelines?.stats() ?? { newest: 0, refused: 0 },
    poolStats: () => ({ max: poolSize, total: pool?.totalCount ?? 0, idle: pool?.idleCount ?? 0, waiting: pool?.waitingCount ?? 0, waits: waits?.count ?? 0 }),
    close: async () => {
      await pool?.end();
    },
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
  /** A connection kept between statements (a held transaction) is idle, not stalled, once its answer came. */
  const statementEnds = (client: pg.PoolClient) => {
    const watch = watches.get(client);
    if (watch) watch.waiting = false;
  };
  pool.on('acquire', statementStarts);
  pool.on('release', (_error, client) => statementEnds(client));
  return { statementStarts, statementEnds };
}

/*
 * Transactions held open across calls (Database.begin). Kept together here, apart from the rest,
 * because only the trusted server's transaction API uses them.
 */

/**
 * A pooled connection checked out and kept, in a transaction, until commit or rollback. `first`
 * runs in the round trip of the BEGIN (a keyed write's claim and statement: src/idempotency/).
 */
async function beginHeldTransaction(
  pool: pg.Pool,
  deadlines: ReturnType<typeof readDeadlines>,
  statements: StatementNames,
  switchRole: Statement | undefined,
  commitUnconfirmed: (client: pg.ClientBase) => boolean,
  first?: Statement[],
): Promise<OpenTransaction & { started?: PipelineOutcome }> {
  const client = await pool.connect().catch((error) => Promise.reject(asUnavailable(error)));
  let broken: Error | undefined;
  let released = false;
  // pg-pool listens for a connection's errors only while it is idle: a break while held is ours.
  const onError = (error: Error) => void (broken ??= error);
  client.on('error', onError);
  const release = () => {
    if (released) return;
    released = true;
    client.removeListener('error', onError);
    // Released with the error, the pool drops the connection instead of handing it out again.
    client.release(broken);
  };
  const run = async <Row>(text: string, params?: unknown[], name?: string): Promise<QueryResult<Row>> => {
    if (released) throw new Error('This transaction has ended');
    try {
      deadlines.statementStarts(client);
      const result = await client.query({ text, values: params, name });
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
    } catch (error) {
      if (!hasSqlState(error)) broken = error as Error;
      throw asUnavailable(error);
    } finally {
      deadlines.statementEnds(client);
    }
  };
  /** `sent` in one round trip, up to the first that fails (its error is the outcome's). */
  const pipelined = async (sent: Statement[]): Promise<PipelineOutcome> => {
    if (released) throw new Error('This transaction has ended');
    try {
      deadlines.statementStarts(client);
      // Inside BEGIN .. COMMIT the pipeline's closing Sync commits nothing: the transaction stays open.
      const outcome = await runPipeline(client, sent.map(({ text, params }) => ({ text, values: params, name: statements.nameFor(text) })), typeParsers);
      if (outcome.error !== undefined && !hasSqlState(outcome.error)) throw outcome.error;
      return outcome;
    } catch (error) {
      broken = error as Error;
      throw asUnavailable(error);
    } finally {
      deadlines.statementEnds(client);
    }
  };
  const opening = [{ text: 'BEGIN', params: [] }, ...(switchRole ? [switchRole] : [])];
  let started: PipelineOutcome | undefined;
  try {
    if (first === undefined) {
      for (const { text, params } of opening) await run(text, params);
    } else {
      const outcome = await pipelined([...opening, ...first]);
      // A failure of BEGIN or the role switch is the connection's, not the statements'.
      if (outcome.error !== undefined && outcome.results.length < opening.length) throw outcome.error;
      started = outcome.error === undefined ? { results: outcome.results.slice(opening.length) } : { results: outcome.results.slice(opening.length), error: outcome.error };
    }
  } catch (error) {
    // A connection that answered is handed back without the transaction it began.
    if (!broken) await run('ROLLBACK').catch(() => {});
    release();
    throw error;
  }
  const rollback = async () => {
    if (released) return;
    if (!broken) await run('ROLLBACK').catch(() => {});
    release();
  };
  return {
    ...(started && { started }),
    query: (text, params) => run(text, params, statements.nameFor(text)),
    pipeline: pipelined,
    async commit(last) {
      if (!last?.length) {
        try {
          await run('COMMIT');
        } finally {
          release();
        }
        if (commitUnconfirmed(client)) throw new UnconfirmedCommitError();
        return;
      }
      const outcome = await pipelined([...last, { text: 'COMMIT', params: [] }]).catch(async (error) => {
        release();
        throw error;
      });
      if (outcome.error !== undefined) {
        await rollback();
        throw outcome.error;
      }
      release();
      if (commitUnconfirmed(client)) throw new UnconfirmedCommitError();
    },
    rollback,
  };
}

/**
 * PGlite's own transaction, kept open until commit or rollback: it holds PGlite's lock, so the
 * rest of the backend's statements wait for it (the embedded database is one connection).
 */
function beginEmbeddedTransaction(db: InstanceType<typeof import('@electric-sql/pglite').PGlite>): Promise<OpenTransaction> {
  return new Promise<OpenTransaction>((started, failedToStart) => {
    let end: (outcome: 'commit' | 'rollback') => void = () => {};
    const ended = new Promise<'commit' | 'rollback'>((resolve) => (end = resolve));
    let finished = false;
    const done = db
      .transaction(async (tx) => {
        started({
          async query<Row>(text: string, params?: unknown[]) {
            if (finished) throw new Error('This transaction has ended');
            const result = await tx.query(text, params);
            return { rows: result.rows as Row[], rowCount: result.affectedRows ?? result.rows.length };
          },
          async pipeline(statements) {
            if (finished) throw new Error('This transaction has ended');
            // In-process: one statement after another, up to the first that fails.
            const results: QueryResult<Record<string, unknown>>[] = [];
            for (const { text, params } of statements) {
              try {
                const result = await tx.query(text, params);
                results.push({ rows: result.rows as Record<string, unknown>[], rowCount: result.affectedRows ?? result.rows.length });
              } catch (error) {
                if (!hasSqlState(error)) throw error;
                return { results, error };
              }
            }
            return { results };
          },
          async commit(last) {
            for (const { text, params } of last ?? []) {
              try {
                await tx.query(text, params);
              } catch (error) {
                finished = true;
                end('rollback');
                await done.catch(() => {});
                throw error;
              }
            }
            finished = true;
            end('commit');
            await done;
          },
          async rollback() {
            finished = true;
            end('rollback');
            await done.catch(() => {});
          },
        });
        if ((await ended) === 'rollback') await tx.rollback();
      })
      .catch((error) => {
        failedToStart(error);
        throw error;
      });
    // Errors reach commit() (or are dropped by rollback()); none is left unhandled.
    done.catch(() => {});
  });
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
  // pg_trgm, for the operators' searches (their indexes: src/operator/search-indexes.ts). PGlite
  // loads an extension's code only when asked, on every open: a database whose indexes use it
  // cannot be read without it.
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  const options = { parsers: embeddedParsers, extensions: { pg_trgm } };
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
  /** The role requests act as (actAs); migrations act as the database's own user. */
  let role: string | undefined;
  const transaction = <T>(work: (tx: Queryable) => Promise<T>) =>
    db.transaction((tx) => work({ query: async (text, params) => toResult(await tx.query(text, params)) }));

  return {
    kind: 'embedded',
    async query<Row>(text: string, params?: unknown[]) {
      return toResult<Row>(await db.query(text, params));
    },
    transaction,
    async pipeline(statements) {
      // In-process: no round trips to save, only the one transaction to keep.
      const results: QueryResult<Record<string, unknown>>[] = [];
      try {
        await transaction(async (tx) => {
          for (const { text, params } of statements) results.push(await tx.query(text, params));
        });
        return { results };
      } catch (error) {
        if (!hasSqlState(error)) throw error;
        return { results, error };
      }
    },
    begin: (async (first?: Statement[]) => {
      const tx = await beginEmbeddedTransaction(db);
      return first === undefined ? tx : Object.assign(tx, { started: await tx.pipeline(first) });
    }) as Database['begin'],
    // PGlite is a single connection already; what runs on it meanwhile waits for its turn.
    async withConnection(work) {
      if (role) await exec('RESET ROLE');
      try {
        return await work({ query: async (text, params) => toResult(await db.query(text, params)), exec });
      } finally {
        if (role) await exec(`SET ROLE ${role}`);
      }
    },
    async actAs(appRole) {
      await exec(`SET ROLE ${appRole}`);
      role = appRole;
    },
    asOwner: (work) =>
      transaction(async (tx) => {
        await tx.query(ownerSettings);
        return work(tx);
      }),
    async listen(channel, onNotification) {
      const unlisten = await db.listen(channel, () => onNotification());
      return async () => {
        if (!db.closed) await unlisten();
      };
    },
    async close() {
      try {
        await db.close();
      } finally {
        lock?.release();
      }
    },
  };
}
