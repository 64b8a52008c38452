import type { Queryable } from './database.js';

/**
 * Holds PostgreSQL advisory locks named by `names` until `tx` ends: what a limit that counts rows
 * and then inserts one needs, so that two requests (on one instance or on two) cannot both count
 * the same rows and both insert. The second waits at the lock, then counts what the first
 * committed (each statement of a READ COMMITTED transaction reads afresh).
 *
 * The locks are taken one at a time in sorted order, so that two callers asking for the same
 * names never wait on each other crosswise. A name is hashed to the lock's 64-bit key; two names
 * with one hash only share a queue.
 */
export async function lockUntilCommit(tx: Queryable, ...names: string[]): Promise<void> {
  for (const name of [...new Set(names)].sort()) {
    await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [name]);
  }
}
