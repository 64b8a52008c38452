import { AsyncLocalStorage } from 'node:async_hooks';
import type { Request, RequestHandler } from 'express';
import type { Config } from '../config.js';
import type { Database, PipelineOutcome, Queryable, QueryResult } from '../db/database.js';
import type { Statement } from '../db/sql.js';
import { keyedWriteOf, keyedWriteSettings, type KeyedWrite, type KeyedWriteSettings } from './keyed-write.js';
import { memberOwner, userOwner, type KeyOwner } from './keys.js';

/**
 * `Idempotency-Key` on the routes whose handlers call the database themselves, through services
 * (the built-in /Organizations, /members, /Users, /sessions, and /api/auth): such a write, sent
 * with a key, runs whole in the KeyedWrite's held transaction, so that what it writes and the
 * answer kept with its key are committed together, or not at all (keyed-write.ts).
 *
 * The handlers are not changed for it: the transaction is ambient. `keyedWrites` claims the key,
 * then runs the rest of the request in an AsyncLocalStorage that names its KeyedWrite, and the
 * Database the app hands out (`withHeldTransactions`) sends every statement made in that request
 * to the held transaction instead of the pool:
 *
 *   db.query / db.pipeline   in a SAVEPOINT of their own: one that fails is undone alone, as it
 *                            is a transaction of its own without a key
 *   db.transaction           a SAVEPOINT, released when `work` resolves, rolled back to when it
 *                            throws (what it did is undone; the rest of the request is kept)
 *   db.asOwner               the same, as the owner, the request's role restored after it
 *
 * An answer of 400 or more commits what the request did before it (a failed sign-in's record is
 * kept, as without a key) and frees the key. Work that outlives the answer (fire-and-forget) goes
 * to the pool once the held transaction is committed; after the client went away and the write
 * was rolled back, the request's later statements fail instead of running half of it elsewhere.
 */
const held = new AsyncLocalStorage<KeyedWrite>();

/** The KeyedWrite whose transaction this request's statements run in now, if any. */
function heldNow(): KeyedWrite | undefined {
  const keyed = held.getStore();
  if (!keyed) return undefined;
  if (keyed.holding) return keyed;
  if (keyed.abandoned) throw new Error('This request was abandoned by its client: its keyed write was rolled back');
  return undefined;
}

/**
 * Runs `work` after the request's keyed write is committed (at once when there is none): what
 * tells another part of the backend to look for the write (the outbox's worker).
 */
export function afterHeldCommit(work: () => void): void {
  const keyed = held.getStore();
  if (keyed) keyed.afterCommit(work);
  else work();
}

// One name serves every level: savepoints nest, and RELEASE or ROLLBACK TO reach the newest.
const savepoint: Statement = { text: 'SAVEPOINT authstrap_held', params: [] };
const release: Statement = { text: 'RELEASE SAVEPOINT authstrap_held', params: [] };
const undo: Statement[] = [{ text: 'ROLLBACK TO SAVEPOINT authstrap_held', params: [] }, release];
/**
 * Without a key each statement or transaction of a service is a transaction of its own, and what
 * it set for itself (its scope, its event context: set_config(..., true)) ends with it. A RELEASE
 * keeps such settings for the rest of the held transaction, so they are cleared after each one:
 * a later write is recorded and checked as it would be without the key (its actor, its scope),
 * not with the one before it's.
 */
const fresh: Statement = {
  text: `SELECT set_config('authstrap.organization_id', '', true), set_config('authstrap.user_id', '', true), set_config('authstrap.role', '', true),
                set_config('authstrap.anonymous', '', true), set_config('authstrap.key_id', '', true), set_config('authstrap.service', '', true),
                set_config('authstrap.request', '', true)`,
  params: [],
};

/** `statements` in a savepoint of the held transaction, in one round trip: all kept, or none. */
async function pipelineIn(keyed: KeyedWrite, statements: Statement[]): Promise<PipelineOutcome> {
  const outcome = await keyed.pipeline([savepoint, ...statements, release, fresh]);
  const results = outcome.results.slice(1, 1 + statements.length);
  if (outcome.error === undefined) return { results };
  await keyed.pipeline(undo);
  return { results, error: outcome.error };
}

async function transactionIn<T>(keyed: KeyedWrite, work: (tx: Queryable) => Promise<T>): Promise<T> {
  await keyed.query(savepoint.text);
  try {
    const result = await work({ query: (text, params) => keyed.query(text, params) });
    const ended = await keyed.pipeline([release, fresh]);
    if (ended.error !== undefined) throw ended.error;
    return result;
  } catch (error) {
    if (keyed.holding) await keyed.pipeline(undo);
    throw error;
  }
}

/** db/database.ts's asOwner, in the held transaction: the owner's settings for `work`, then the request's again. */
async function asOwnerIn<T>(keyed: KeyedWrite, work: (tx: Queryable) => Promise<T>): Promise<T> {
  return transactionIn(keyed, async (tx) => {
    const { rows } = await tx.query<{ role: string; maintenance: string }>(`SELECT current_setting('role') AS "role", COALESCE(current_setting('authstrap.maintenance', true), '') AS "maintenance"`);
    await tx.query(`SELECT set_config('role', session_user, true), set_config('authstrap.maintenance', 'on', true)`);
    const result = await work(tx);
    await tx.query(`SELECT set_config('role', $1, true), set_config('authstrap.maintenance', $2, true)`, [rows[0]!.role, rows[0]!.maintenance]);
    return result;
  });
}

/**
 * Records a refusal (`record`: a refused sign-in's event, auth/sign-in-policy.ts) once per
 * request, however often the request is sent again with its `Idempotency-Key`: `record` runs in
 * the request's keyed write, and the refusal's answer (its 403) is kept with the key in the same
 * transaction, as a success's is, so a repeat gets the same answer and records nothing. `keyed`:
 * the request's keyed write when its statements do not run in it already (the service API's,
 * rolled back by the statement a trigger refused: it takes its key again first, KeyedWrite.retake).
 * Without a key, `record` is a transaction of its own: each attempt is on the record.
 */
export async function recordRefusalOnce(db: Database, record: (tx: Queryable) => Promise<void>, keyed: KeyedWrite | undefined = held.getStore()): Promise<void> {
  if (!keyed) return db.transaction(record);
  await keyed.retake(db);
  await transactionIn(keyed, record);
  keyed.keepFailure();
}

/**
 * `db` as the app hands it out: the same, except that a request running a keyed write of
 * `keyedWrites` sends its statements to that write's transaction. Everything else (the routes
 * behind tenantScoped, which hold their keyed writes themselves; requests without a key; the
 * workers) goes to `db` as before, at the cost of one AsyncLocalStorage lookup per call.
 */
export function withHeldTransactions(db: Database): Database {
  return {
    ...db,
    async query<Row>(text: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      const keyed = heldNow();
      if (!keyed) return db.query<Row>(text, params);
      const outcome = await pipelineIn(keyed, [{ text, params }]);
      if (outcome.error !== undefined) throw outcome.error;
      return outcome.results[0] as QueryResult<Row>;
    },
    async pipeline(statements) {
      const keyed = heldNow();
      return keyed ? pipelineIn(keyed, statements) : db.pipeline(statements);
    },
    async transaction(work) {
      const keyed = heldNow();
      return keyed ? transactionIn(keyed, work) : db.transaction(work);
    },
    async asOwner(work) {
      const keyed = heldNow();
      return keyed ? asOwnerIn(keyed, work) : db.asOwner(work);
    },
  };
}

/**
 * The middleware that makes a route's writes take an `Idempotency-Key`: when a write comes with
 * one, `ownerOf` says whose key it is (after authentication: the caller is known, or the request
 * is anonymous); the key is claimed in a transaction held until the answer is kept, and the rest
 * of the request runs in it. A key already used is answered here: the first answer again
 * (`Idempotent-Replayed: true`), a 422 for another request, a 409 while the first still runs. A
 * request without the header, or without an owner (`ownerOf` gives none), passes on untouched.
 */
export function keyedWrites(
  { db, config }: { db: Database; config: Pick<Config, 'idempotency' | 'databaseTimeouts' | 'authSecret'> },
  ownerOf: (req: Request) => KeyOwner | undefined | Promise<KeyOwner | undefined>,
): RequestHandler {
  // Sealing and the fingerprints' key are derived once; only the owner is the request's.
  let settings: Omit<KeyedWriteSettings, 'owner'> | undefined;
  return async (req, res, next) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.headers['idempotency-key'] === undefined || held.getStore()) return next();
    const owner = await ownerOf(req);
    if (!owner) return next();
    settings ??= { ...keyedWriteSettings(config, owner), failuresKeepTheirWork: true };
    const keyed = keyedWriteOf(req, { ...settings, owner })!;
    keyed.key(); // a malformed key: its 400
    const outcome = await keyed.begin(db, [], []);
    if (outcome.error !== undefined) throw await keyed.refusal(db, outcome.error);
    held.run(keyed, next);
  };
}

/**
 * Whose key a signed-in user's write to a built-in route takes (behind the auth guard): a
 * member's, in the organization the scope guard found (/members), else the user's own, in no
 * organization (/Organizations, /Users, /sessions). The service key's writes are served before
 * (service-api.ts, with keys of its own): none here.
 */
export function signedInOwner(req: Request): KeyOwner | undefined {
  const caller = req.caller;
  if (caller?.kind !== 'user') return undefined;
  if (req.organizationId && req.role) return memberOwner({ organizationId: req.organizationId, userId: caller.user.id, role: req.role });
  return userOwner(caller.user.id);
}
