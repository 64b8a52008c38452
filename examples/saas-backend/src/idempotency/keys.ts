import { createHash, createHmac } from 'node:crypto';
import type { Request } from 'express';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { startHourlyPrune } from '../db/hourly.js';
import { setScopeStatement, type Scope } from '../db/scope.js';
import type { Statement } from '../db/sql.js';
import { badRequest } from '../http/errors.js';

/**
 * `Idempotency-Key` (the IETF httpapi draft, as Stripe has it): a client that sends a write with a
 * key of its choosing may send it again, with the same key, as often as it needs to (its answer
 * was lost to a reset connection, a 503 of a failover, a timeout) and the write is applied once.
 * The first answer is kept in the write's own transaction (keyed-write.ts) and every repeat gets
 * it again. The SQL of the keys is here; the table is `authstrap_idempotency_key`, whose rows a
 * request reaches only for its own organization and caller, or the service key's for the service
 * key (row-level security).
 */

export const idempotencyHeader = 'Idempotency-Key';

/**
 * The key a write came with, or undefined. The draft sends it as a structured-header string
 * (`"8e03978e-..."`); Stripe's clients send it bare. Both are read: 1 to 255 visible ASCII
 * characters. Anything else is a 400 naming the header.
 */
export function presentedIdempotencyKey(req: Request): string | undefined {
  const raw = req.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const value = (Array.isArray(raw) ? raw.join(',') : raw).trim();
  const key = /^"(.*)"$/.test(value) ? value.slice(1, -1) : value;
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw badRequest(`${idempotencyHeader} must be 1 to 255 visible ASCII characters (a UUID is a good key)`, { [idempotencyHeader]: 'Not a valid key' });
  }
  return key;
}

/**
 * What makes two requests the same one: method, path with its query, the organization header,
 * and body. A repeat with the same key and another fingerprint is refused (422): a key names one
 * request, never a second. An HMAC under AUTH_SECRET (`fingerprintKey`), not a bare hash: a
 * sign-in's body holds a password, and a copy of the database must not offer a hash of it to
 * guess against.
 */
export function requestFingerprint(req: Request, fingerprintKey: Buffer): string {
  return createHmac('sha256', fingerprintKey)
    .update(`${req.method} ${req.originalUrl}\n${req.header('x-organization-id') ?? ''}\n`)
    .update(JSON.stringify(req.body ?? null))
    .digest('base64url');
}

/** The fingerprint as keys kept before the HMAC have it (a bare sha256): still accepted until they expire. */
export function legacyRequestFingerprint(req: Request): string {
  return createHash('sha256')
    .update(`${req.method} ${req.originalUrl}\n`)
    .update(JSON.stringify(req.body ?? null))
    .digest('base64url');
}

/** The key of the fingerprints' HMAC, from AUTH_SECRET (without one, in development, a key everyone knows). */
export const fingerprintKeyOf = (authSecret: string | undefined): Buffer => createHmac('sha256', authSecret ?? '').update('authstrap idempotency key fingerprints').digest();

/** Whose key it is, in SQL: the request's user, or its machine key (db/scope.ts sets both). */
const caller = `COALESCE('user:' || authstrap.user_id(), 'key:' || NULLIF(current_setting('authstrap.key_id', true), ''))`;

/**
 * Whose keys a write takes and finds, in SQL: a caller's in their organization; or, in no
 * organization, the trusted server's (the service key), a signed-in user's (a write of theirs
 * that acts in no organization: creating one, their sessions, their password), or an anonymous
 * caller's (sign-up, sign-in). The keys without an organization share one partial unique index,
 * their `caller` telling them apart. The row-level security policies of the table say the same
 * (`authstrap generate`).
 */
export interface KeyOwner {
  /** The organization and the caller, as the claim inserts them. */
  values: string;
  /** Whether the request has an owner at all (a caller who is not a member has none). */
  present: string;
  /** The owner's keys. */
  rows: string;
  /** The unique index a used key of this owner violates. */
  claimedIndex: string;
  /** What goes in front of a statement to act as this owner, when the request's scope does not. */
  preamble: Statement[];
  /**
   * What undoes the preamble once the key is claimed: a built-in route's statements run as they
   * do without a key, in no scope (held-transaction.ts); the preamble comes again before the
   * answer is kept.
   */
  postamble?: Statement[];
}

/** A user or machine key acting in an organization: the scope db/scope.ts sets. */
export const callerOwner: KeyOwner = {
  values: `authstrap.organization_id(), ${caller}`,
  present: `authstrap.organization_id() IS NOT NULL AND ${caller} IS NOT NULL`,
  // The caller in a sub-select: PostgreSQL takes a COALESCE for a function that may leak, and
  // under row-level security leaves it out of the index's condition (then every key of the
  // organization is read, bench/README.md); a sub-select's value is a parameter, which it uses.
  rows: `"organizationId" = authstrap.organization_id() AND "caller" = (SELECT ${caller})`,
  claimedIndex: 'authstrap_idempotency_key_caller_key_idx',
  preamble: [],
};

/** The keys without an organization: the service key's, a user's outside one, an anonymous caller's. */
const keyWithoutOrganization = 'authstrap_idempotency_key_service_key_idx';

/** The service key (the trusted server: a Better Auth adapter, scripts), in no organization. */
export const serviceOwner: KeyOwner = {
  values: `NULL, 'service'`,
  present: 'authstrap.service()',
  rows: `"organizationId" IS NULL AND "caller" = 'service'`,
  claimedIndex: keyWithoutOrganization,
  preamble: [{ text: `SELECT set_config('authstrap.service', 'on', true)`, params: [] }],
};

const unscoped: Statement = {
  text: `SELECT set_config('authstrap.organization_id', '', true), set_config('authstrap.user_id', '', true), set_config('authstrap.role', '', true), set_config('authstrap.anonymous', '', true)`,
  params: [],
};

/** A member acting in their organization on a built-in route (/members): the caller's keys there, as callerOwner. */
export const memberOwner = (scope: Scope): KeyOwner => ({ ...callerOwner, preamble: [setScopeStatement(scope)], postamble: [unscoped] });

/** A signed-in user's write in no organization (/Organizations, /Users, /sessions, /api/auth). */
export const userOwner = (userId: string): KeyOwner => ({
  values: `NULL, 'user:' || authstrap.user_id()`,
  present: 'authstrap.user_id() IS NOT NULL',
  // In a sub-select, as callerOwner's: a value PostgreSQL puts in the index's condition under row-level security.
  rows: `"organizationId" IS NULL AND "caller" = (SELECT 'user:' || authstrap.user_id())`,
  claimedIndex: keyWithoutOrganization,
  preamble: [{ text: `SELECT set_config('authstrap.user_id', $1, true)`, params: [userId] }],
  postamble: [unscoped],
});

/**
 * A caller with no session (sign-up, sign-in, accepting an invitation as a new user): all such
 * callers share these keys, so a key must be one nobody else would choose (a UUID). Another's
 * request with the same key is a 422; the same request (same address and password) gets its
 * answer, which its sender could have had anyway. A signed-in user's keys never meet these.
 */
export const anonymousOwner: KeyOwner = {
  values: `NULL, 'anonymous'`,
  present: `current_setting('authstrap.anonymous', true) = 'on'`,
  rows: `"organizationId" IS NULL AND "caller" = 'anonymous'`,
  claimedIndex: keyWithoutOrganization,
  preamble: [{ text: `SELECT set_config('authstrap.anonymous', 'on', true)`, params: [] }],
  postamble: [unscoped],
};

const ownKey = (owner: KeyOwner) => `${owner.rows} AND "key" = $1`;

/**
 * Takes the key for this request, in its transaction, under the owner's scope. Another request
 * that took it first makes this a unique violation on the owner's `claimedIndex`, once that
 * request's transaction has ended (committed: the key is used; rolled back: this one takes it).
 * Without an owner (a caller who is not a member) nothing is taken: the route's statement finds
 * nothing either, and the answer is the caller's 403.
 *
 * `lockWaitMs` bounds that wait: past it the repeat is told its first request is still running
 * (a 409; lock_timeout's 55P03). It is set by the same statement, before the row is inserted, and
 * holds for the rest of the transaction: a keyed write that waits as long on another lock gets a
 * 503, which its client answers by sending it again with the same key.
 */
export const claimStatement = (owner: KeyOwner, key: string, fingerprint: string, hours: number, lockWaitMs: number): Statement => ({
  text: `INSERT INTO "authstrap_idempotency_key" ("organizationId", "caller", "key", "fingerprint", "expiresAt")
     SELECT ${owner.values}, $1, $2, now() + make_interval(hours => $3)
       FROM (SELECT set_config('lock_timeout', $4, true)) AS "bounded"
      WHERE ${owner.present}`,
  params: [key, fingerprint, hours, `${lockWaitMs}ms`],
});

/**
 * A route's one write and the answer kept with its key, in one statement and one implicit
 * transaction: the key's row, with the answer's status and body, is inserted only for a row the
 * write returned (none: a 404 or 403 keeps nothing; a failed write, a 409, rolls both back). `body`
 * is SQL over the written row (http/envelope.ts, jsonDataSql), or '' for an answer without one.
 * The row's JSON is in the database in clear already: the body is kept unsealed (SecretSeal.open
 * reads it as it is).
 *
 * Nothing is looked up or locked first: the owner's unique index on the key decides. A key used
 * already makes the insert a unique violation on `claimedIndex`, and the write is rolled back
 * with it (keyed-write.ts then replays the kept answer). A repeat that comes while the first
 * still runs waits on that index for the first's end, up to `lockWaitMs` (lock_timeout, set by
 * the same statement before the key's row is inserted: past it, 55P03 and a 409). A repeat that
 * writes nothing (a DELETE whose row the first removed) inserts no key row: keyed-write.ts looks
 * its key up before it answers (repeatedAnswer).
 */
export const keptWithStatement = (owner: KeyOwner, write: Statement, kept: { key: string; fingerprint: string; hours: number; status: number; body: string; lockWaitMs: number }): Statement => {
  const at = write.params.length;
  return {
    text: `WITH "written" AS (${write.text}),
     "kept" AS (INSERT INTO "authstrap_idempotency_key" ("organizationId", "caller", "key", "fingerprint", "expiresAt", "status", "body")
       SELECT ${owner.values}, $${at + 1}::text, $${at + 2}::text, now() + make_interval(hours => $${at + 3}::int), $${at + 4}::int, ${kept.body}
         FROM (SELECT * FROM "written" LIMIT 1) AS "written", (SELECT set_config('lock_timeout', $${at + 5}::text, true)) AS "bounded"
        WHERE ${owner.present})
SELECT * FROM "written"`,
    params: [...write.params, kept.key, kept.fingerprint, kept.hours, kept.status, `${kept.lockWaitMs}ms`],
  };
};

/** Keeps the answer with the key, in the write's transaction, just before its commit. */
export const recordStatement = (owner: KeyOwner, key: string, status: number, body: string): Statement => ({
  text: `UPDATE "authstrap_idempotency_key" SET "status" = $2, "body" = $3 WHERE ${ownKey(owner)}`,
  params: [key, status, body],
});

/** A used key's request and answer, for a repeat; `expired` past IDEMPOTENCY_KEY_HOURS (not yet pruned). */
export interface StoredAnswer {
  fingerprint: string;
  status: number | null;
  body: string | null;
  expired: boolean;
}

export const storedAnswerStatement = (owner: KeyOwner, key: string): Statement => ({
  text: `SELECT "fingerprint", "status", "body", "expiresAt" < now() AS "expired" FROM "authstrap_idempotency_key" WHERE ${ownKey(owner)}`,
  params: [key],
});

/** Frees a key whose request failed but whose work is kept (held-transaction.ts). */
export const forgetStatement = (owner: KeyOwner, key: string): Statement => ({
  text: `DELETE FROM "authstrap_idempotency_key" WHERE ${ownKey(owner)}`,
  params: [key],
});

/** Frees a key kept past its time, which the hourly prune has not reached yet. */
export const forgetExpiredStatement = (owner: KeyOwner, key: string): Statement => ({
  text: `DELETE FROM "authstrap_idempotency_key" WHERE ${ownKey(owner)} AND "expiresAt" < now()`,
  params: [key],
});

/**
 * Deletes the keys past IDEMPOTENCY_KEY_HOURS, hourly, in every instance (db/hourly.ts). Requests
 * reach only their own keys; `authstrap.prune_idempotency_keys` reaches all.
 */
export function startIdempotencyKeyPrune({ db, logger }: { db: Database; logger: Logger }) {
  return startHourlyPrune({ db, logger, statement: 'SELECT authstrap.prune_idempotency_keys() AS "pruned"', what: 'expired idempotency keys' });
}
