import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import type { Config } from '../config.js';
import { hasSqlState, type Database, type OpenTransaction, type Queryable, type QueryResult } from '../db/database.js';
import { keyedWriteOf, keyedWriteSettings, type KeyedWrite } from '../idempotency/keyed-write.js';
import { idempotencyHeader, serviceOwner } from '../idempotency/keys.js';
import { sendData } from './envelope.js';
import { HttpError } from './errors.js';
import { isServiceKeyRequest } from './session-token.js';
import { isUuid } from './validate.js';

/**
 * Transactions for the trusted server over HTTP (Better Auth's `adapter.transaction`): it opens
 * one, sends its usual service API requests with the header `x-authstrap-transaction: <id>`,
 * and commits or rolls back:
 *
 *   POST /api/service/transactions            x-authstrap-transaction: <uuid>   -> 201 { id, expiresAt }
 *   POST /Users, GET /accounts?where=...      x-authstrap-transaction: <uuid>   (inside it)
 *   POST /api/service/transactions/commit     x-authstrap-transaction: <uuid>   (or /rollback)
 *
 * A transaction holds a database connection, so none may hold one without bound:
 * - it is rolled back `timeoutMs` after it began, and after `idleMs` without a request (a client
 *   that crashed or lost the network stops sending); a request cut off mid-way (the client went
 *   away) rolls it back at once. Later use of it is refused with a 409 saying why it ended;
 * - at most `maxOpen` are open per key (one on the embedded database, which is one connection):
 *   a begin waits up to `waitMs` for one to end, then gets a 429;
 * - its requests run one at a time, in the order they arrive;
 * - a statement that fails (a conflict) ends it: PostgreSQL would refuse everything after it, so
 *   the next request gets a 409 and the commit rolls back.
 * The client chooses the id (a uuid) so that, with several instances, a proxy can send every
 * request of one transaction to the same one (hash on the header): docs/deploy.md. The id also
 * makes a begin, a commit and a rollback safe to send again when their answer was lost: a repeat
 * of a begin before any request gets the same transaction; of a commit or rollback that ended it
 * so, the same answer.
 *
 * A write outside a transaction may come with an `Idempotency-Key` (src/idempotency/), as the
 * tenant routes' do: the service key's keys are its own. Inside one it is refused (400): a request
 * of a transaction cannot be sent again (a cut one rolls the transaction back), so the unit a
 * client sends again is the whole transaction.
 */
export const transactionHeader = 'x-authstrap-transaction';

/** What a route runs its SQL on: the database, or the request's transaction. */
export interface Runner extends Queryable {
  /** Work that must be atomic: a transaction of its own, or part of the request's. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
}

interface Held {
  id: string;
  owner: string;
  tx: OpenTransaction;
  startedAt: number;
  /** Requests run one after another: each waits for this. */
  queue: Promise<unknown>;
  /** Why it can no longer be used, once it cannot. */
  ended?: string;
  /** Its rollback (or commit), once it ended: settled when the connection is given back. */
  finished?: Promise<void>;
  /** A request has run in it: a begin sent again no longer finds it as it was. */
  used?: boolean;
  timers: { total: ReturnType<typeof setTimeout>; idle?: ReturnType<typeof setTimeout> };
}

/** How many ended transactions are remembered, to tell a late request why its transaction is gone. */
const rememberedEnds = 1000;

const conflict = (message: string) => new HttpError(409, 'CONFLICT', message);

/** Why a transaction ended when its client ended it. */
const endReason = { commit: 'committed', rollback: 'rolled back by the client' } as const;

export function serviceTransactions(db: Database, config: Pick<Config, 'serviceApiKey' | 'serviceTransactions' | 'idempotency' | 'databaseTimeouts' | 'authSecret'>) {
  const settings = config.serviceTransactions;
  const keyedWrites = keyedWriteSettings(config, serviceOwner);
  // The embedded database is one connection: a second transaction could only wait for the first.
  const maxOpen = db.kind === 'embedded' ? 1 : settings.maxOpen;
  const open = new Map<string, Held>();
  const endedBecause = new Map<string, string>();
  /** Commits PostgreSQL has not answered yet: a commit sent again meanwhile waits for the same answer. */
  const committing = new Map<string, Promise<void>>();
  const waiting: (() => void)[] = [];
  let closed = false;

  /** Begins under way (a connection being checked out): they hold their place already. */
  const starting = new Map<string, number>();
  const placesTaken = (owner: string) => [...open.values()].filter((held) => held.owner === owner).length + (starting.get(owner) ?? 0);

  /** Ends a transaction: no statement of it runs any more, and it rolls back once its request in flight is done. */
  function end(held: Held, reason: string, outcome: 'commit' | 'rollback' = 'rollback'): Promise<void> {
    if (held.ended) return Promise.resolve();
    held.ended = reason;
    clearTimeout(held.timers.total);
    clearTimeout(held.timers.idle);
    open.delete(held.id);
    // A commit is 'committed' once PostgreSQL says so: a commit sent again is answered by that.
    endedBecause.set(held.id, outcome === 'commit' ? 'being committed' : reason);
    if (endedBecause.size > rememberedEnds) endedBecause.delete(endedBecause.keys().next().value!);
    const finished = held.queue.catch(() => {}).then(() => (outcome === 'commit' ? held.tx.commit() : held.tx.rollback()));
    held.finished = finished.catch(() => {});
    if (outcome === 'commit') {
      const answered = finished.then(
        () => void endedBecause.set(held.id, reason),
        (error) => void endedBecause.set(held.id, `its commit failed, so whether it was kept is unknown (${(error as Error).message.slice(0, 200)})`),
      );
      committing.set(held.id, answered);
      void answered.then(() => committing.delete(held.id));
    }
    // Whoever waits for a place gets it once the connection is back.
    void finished.catch(() => {}).then(() => waiting.shift()?.());
    return finished;
  }

  function armIdle(held: Held) {
    clearTimeout(held.timers.idle);
    held.timers.idle = setTimeout(() => void end(held, `rolled back: no request for ${settings.idleMs} ms (SERVICE_TRANSACTION_IDLE_MS)`), settings.idleMs);
    held.timers.idle.unref();
  }

  /** Waits for a place under the cap, at most `waitMs`, and takes it (see `starting`); false when none came. */
  async function place(owner: string): Promise<boolean> {
    const deadline = Date.now() + settings.waitMs;
    while (placesTaken(owner) >= maxOpen) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiting.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    // Taken before the next await, so that two begins cannot both see the last free place.
    starting.set(owner, (starting.get(owner) ?? 0) + 1);
    return true;
  }

  /** The request's transaction id: a uuid in the header; undefined when there is none. */
  function idOf(req: Request): string | undefined {
    const header = req.headers[transactionHeader];
    if (header === undefined) return undefined;
    if (typeof header !== 'string' || !isUuid(header)) throw new HttpError(400, 'BAD_REQUEST', `${transactionHeader} must be one uuid`);
    return header.toLowerCase();
  }

  function heldBy(req: Request, id: string): Held {
    const held = open.get(id);
    if (held && isServiceKeyRequest(req, config.serviceApiKey)) return held;
    throw conflict(endedBecause.has(id) ? `Transaction ${id} has ended (${endedBecause.get(id)})` : `No open transaction ${id} here: begin one first (with several instances, every request of a transaction must reach the one that began it)`);
  }

  /**
   * Runs one request's work on the transaction, after the requests before it; a failed statement
   * ends it, and the request fails once it has rolled back (see `run`).
   */
  function within<T>(held: Held, req: Request, work: (runner: Runner) => Promise<T>): Promise<T> {
    const runner: Runner = {
      query: (text, params) => {
        if (held.ended) throw conflict(`Transaction ${held.id} has ended (${held.ended})`);
        return held.tx.query(text, params);
      },
      // Already atomic: it commits or rolls back as a whole.
      transaction: (inner) => inner(runner),
    };
    // A client that goes away before its answer is sent is gone: roll back now.
    req.res?.once('close', () => {
      if (!req.res!.writableFinished) void end(held, 'rolled back: the client went away during a request');
    });
    held.used = true;
    const run = held.queue.catch(() => {}).then(async () => {
      if (held.ended) throw conflict(`Transaction ${held.id} has ended (${held.ended})`);
      clearTimeout(held.timers.idle);
      try {
        return await work(runner);
      } catch (error) {
        if (hasSqlState(error) || !(error instanceof HttpError)) void end(held, `rolled back: a statement failed in an earlier request (${(error as Error).message.slice(0, 200)})`);
        throw error;
      } finally {
        if (!held.ended) armIdle(held);
      }
    });
    held.queue = run;
    return run.catch(async (error: unknown) => {
      await held.finished;
      throw error;
    });
  }

  const owner = 'service';

  /** The transaction a begin, commit or rollback names: the header is required. */
  const named = (req: Request) => {
    const id = idOf(req);
    if (id === undefined) throw new HttpError(400, 'BAD_REQUEST', `Name the transaction in the ${transactionHeader} header (a uuid you choose)`);
    return id;
  };

  const began = (res: Response, held: Held) =>
    sendData(res, { id: held.id, expiresAt: new Date(held.startedAt + settings.timeoutMs).toISOString(), idleTimeoutMs: settings.idleMs }, 201);

  const begin: RequestHandler = async (req, res) => {
    const id = named(req);
    const already = open.get(id);
    // A begin sent again (its answer was lost): the same transaction, while nothing has run in it.
    if (already && !already.used) return began(res, already);
    if (already || endedBecause.has(id)) throw conflict(`Transaction ${id} was begun already; use a new id`);
    if (closed) throw new HttpError(503, 'SERVICE_UNAVAILABLE', 'The server is shutting down');
    if (!(await place(owner))) {
      res.setHeader('Retry-After', '1');
      throw new HttpError(
        429,
        'RATE_LIMITED',
        `${maxOpen} transactions are open for this key, the most allowed (SERVICE_TRANSACTIONS_MAX${db.kind === 'embedded' ? '; one on the embedded database' : ''}): commit or roll one back first`,
      );
    }
    const release = () => starting.set(owner, starting.get(owner)! - 1);
    let tx: OpenTransaction;
    try {
      tx = await db.begin();
    } catch (error) {
      release();
      waiting.shift()?.();
      throw error;
    }
    release();
    if (open.has(id)) {
      // Begun twice at once under one id: the first keeps it.
      await tx.rollback();
      waiting.shift()?.();
      throw conflict(`Transaction ${id} was begun already; use a new id`);
    }
    const held: Held = {
      id,
      owner,
      tx,
      startedAt: Date.now(),
      queue: Promise.resolve(),
      timers: { total: setTimeout(() => void end(held, `rolled back: open longer than ${settings.timeoutMs} ms (SERVICE_TRANSACTION_TIMEOUT_MS)`), settings.timeoutMs) },
    };
    held.timers.total.unref();
    open.set(id, held);
    armIdle(held);
    began(res, held);
  };

  const finish =
    (outcome: 'commit' | 'rollback'): RequestHandler =>
    async (req, res) => {
      const id = named(req);
      const done = outcome === 'commit' ? 'committed' : 'rolled back';
      // Sent again while the first commit is still running (its answer is slow, not lost yet): the
      // first one's outcome, once PostgreSQL gives it, rather than a 409 the client cannot act on.
      await committing.get(id);
      // Sent again after its answer was lost: it ended as asked, and is answered so again.
      if (!open.has(id) && endedBecause.get(id) === endReason[outcome]) return sendData(res, { id, outcome: done });
      const held = heldBy(req, id);
      // The requests before it finish first; a transaction that failed meanwhile rolls back.
      await held.queue.catch(() => {});
      if (held.ended) throw conflict(`Transaction ${id} has ended (${held.ended})`);
      await end(held, endReason[outcome], outcome);
      sendData(res, { id, outcome: done });
    };

  return {
    /** POST /api/service/transactions, /commit and /rollback: the service key's only (registerTransactionRoutes documents them). */
    router(): Router {
      const router = Router();
      router.use((req, _res, next) => {
        if (!isServiceKeyRequest(req, config.serviceApiKey)) throw new HttpError(403, 'FORBIDDEN', 'Transactions are for the trusted server (the service key)');
        next();
      });
      router.post('/', begin);
      router.post('/commit', finish('commit'));
      router.post('/rollback', finish('rollback'));
      return router;
    },

    /**
     * Runs a route's work on the request's transaction (its header), or on the database when it
     * names none: a write with an Idempotency-Key in a transaction of its own, behind the key.
     * Work that fails rejects once what it wrote is rolled back and its connection given back (a
     * failed statement ends the request's transaction): what the failure leads to, such as a
     * refused sign-in on the record, runs outside it, also on the embedded database's one connection.
     */
    run<T>(req: Request, work: (runner: Runner) => Promise<T>): Promise<T> {
      const id = idOf(req);
      const keyed = keyedWriteOf(req, keyedWrites);
      if (id === undefined && keyed) {
        return work(keyedRunner(db, keyed)).catch(async (error: unknown) => {
          await keyed.rollback();
          throw error;
        });
      }
      if (id === undefined) return work(db);
      if (keyed) throw new HttpError(400, 'BAD_REQUEST', `${idempotencyHeader} is not taken inside a transaction (${transactionHeader}): a transaction is sent again as a whole`);
      return within(heldBy(req, id), req, work);
    },

    /** Rolls back every open transaction (shutdown) and refuses new ones. */
    async close(): Promise<void> {
      closed = true;
      await Promise.all([...open.values()].map((held) => end(held, 'rolled back: the server shut down')));
    },
  };
}

export type ServiceTransactions = ReturnType<typeof serviceTransactions>;

/**
 * The service key's write with an Idempotency-Key: its first statement goes behind the key's
 * claim, in a transaction held until the answer is kept (idempotency/keyed-write.ts), and every
 * later one in it; a key used already throws the kept answer (or its 409, 422) instead.
 */
function keyedRunner(db: Database, keyed: KeyedWrite): Runner {
  const begun = async (statements: { text: string; params: unknown[] }[]) => {
    const outcome = await keyed.begin(db, [], statements);
    if (outcome.error !== undefined) throw await keyed.refusal(db, outcome.error);
    return outcome.results;
  };
  const runner: Runner = {
    async query<Row>(text: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      if (keyed.holding) return keyed.query<Row>(text, params);
      return (await begun([{ text, params }]))[0] as QueryResult<Row>;
    },
    async transaction(work) {
      if (!keyed.holding) await begun([]);
      return work(runner);
    },
  };
  return runner;
}

/** The transaction routes in the OpenAPI document. */
export function registerTransactionRoutes(registry: OpenAPIRegistry): void {
  const tags = ['service transactions'];
  const header = z.object({ [transactionHeader]: z.uuid().meta({ description: 'The transaction: a uuid the client chooses at begin and sends on every request of it' }) });
  const envelope = (data: z.ZodType) => ({ content: { 'application/json': { schema: z.object({ success: z.literal(true), data }) } } });
  const errors = {
    400: { description: 'No transaction header, or not a uuid' },
    403: { description: 'Not the service key' },
    409: { description: 'No such open transaction here, or it has ended (the message says why)' },
  };
  registry.registerPath({
    method: 'post', path: '/api/service/transactions', operationId: 'beginTransaction', tags, security: [{ bearer: [] }],
    summary: 'Begin a transaction (service key only)',
    description:
      'Service API requests with the same header then run in it, one at a time. Rolled back after SERVICE_TRANSACTION_TIMEOUT_MS, after SERVICE_TRANSACTION_IDLE_MS without a request, or when a request of it is cut off. ' +
      'Sent again with the same id before any request ran in it (its answer was lost), it answers the same transaction.',
    request: { headers: header },
    responses: {
      201: { description: 'Open', ...envelope(z.object({ id: z.uuid(), expiresAt: z.iso.datetime(), idleTimeoutMs: z.int() })) },
      ...errors,
      429: { description: 'SERVICE_TRANSACTIONS_MAX are open for this key; Retry-After says when to try again' },
    },
  });
  for (const outcome of ['commit', 'rollback'] as const) {
    registry.registerPath({
      method: 'post', path: `/api/service/transactions/${outcome}`, operationId: `${outcome}Transaction`, tags, security: [{ bearer: [] }],
      summary: `${outcome === 'commit' ? 'Commit' : 'Roll back'} a transaction (service key only)`,
      description: `Sent again after the transaction was ${outcome === 'commit' ? 'committed' : 'rolled back by its client'} (its answer was lost), the same answer.`,
      request: { headers: header },
      responses: { 200: { description: outcome === 'commit' ? 'Committed' : 'Rolled back', ...envelope(z.object({ id: z.uuid(), outcome: z.enum(['committed', 'rolled back']) })) }, ...errors },
    });
  }
}
