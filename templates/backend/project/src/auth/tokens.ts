import { randomBytes } from 'node:crypto';
import type { Queryable } from '../db/database.js';
import { lockUntilCommit } from '../db/locks.js';
import { hashToken } from '../http/session-token.js';

/**
 * Single-use secrets sent by mail: confirming an address, resetting a password, confirming a new
 * address. Each is a `verification` row whose `identifier` is `<purpose>:<SHA-256 of the secret>`
 * (the secret itself is never stored, so a copy of the database resets no password) and whose
 * `value` says what it is for (the user's id, and the addresses involved). It expires, and it is
 * used up by the one DELETE ... RETURNING that reads it: of two requests with the same secret,
 * exactly one gets the row.
 */

export type TokenPurpose = 'verify-email' | 'reset-password' | 'change-email';

const lifetimeMs: Record<TokenPurpose, number> = {
  'verify-email': 24 * 60 * 60 * 1000,
  'reset-password': 60 * 60 * 1000,
  'change-email': 24 * 60 * 60 * 1000,
};

/**
 * At most this many unexpired secrets per purpose and user: asking again and again (a reset for
 * someone else's address, from many addresses) sends no more mail than this until they expire.
 */
export const liveTokensMax = 3;

const identifierOf = (purpose: TokenPurpose, token: string) => `${purpose}:${hashToken(token)}`;

/**
 * `value` is `<userId>` or `<userId>:<more>`; the user id first lets one statement find a user's
 * secrets of one purpose (to count or to end them).
 */
const ofUser = (purpose: TokenPurpose) => `"identifier" LIKE '${purpose}:%' AND split_part("value", ':', 1) = $1`;

/**
 * A new secret for `purpose`, stored hashed; undefined when the user already has `liveTokensMax`
 * unexpired ones (the caller then sends nothing, and answers as if it had).
 */
export async function issueToken(tx: Queryable, purpose: TokenPurpose, userId: string, detail: string[] = []): Promise<string | undefined> {
  // Counted, then added to: concurrent requests for one user and purpose take turns here.
  await lockUntilCommit(tx, `tokens:${purpose}:${userId}`);
  const { rows } = await tx.query<{ live: number }>(`SELECT count(*)::int AS "live" FROM "verification" WHERE ${ofUser(purpose)} AND "expiresAt" > now()`, [userId]);
  if ((rows[0]?.live ?? 0) >= liveTokensMax) return undefined;
  const token = randomBytes(32).toString('base64url');
  await tx.query(`INSERT INTO "verification" ("identifier", "value", "expiresAt") VALUES ($1, $2, $3)`, [
    identifierOf(purpose, token),
    [userId, ...detail].join(':'),
    new Date(Date.now() + lifetimeMs[purpose]),
  ]);
  return token;
}

/** Uses the secret up: its `[userId, ...detail]`, or undefined when it is unknown, used or expired. */
export async function consumeToken(tx: Queryable, purpose: TokenPurpose, token: string): Promise<string[] | undefined> {
  const { rows } = await tx.query<{ value: string }>(
    `DELETE FROM "verification" WHERE "identifier" = $1 AND "expiresAt" > now() RETURNING "value"`,
    [identifierOf(purpose, token)],
  );
  return rows[0]?.value.split(':');
}

/** Ends every secret of `purpose` the user has (a password was reset: the other reset links die). */
export async function revokeTokens(tx: Queryable, purpose: TokenPurpose, userId: string): Promise<void> {
  await tx.query(`DELETE FROM "verification" WHERE ${ofUser(purpose)}`, [userId]);
}
