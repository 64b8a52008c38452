import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { startHourlyPrune } from '../db/hourly.js';

/**
 * Deletes single sign-on's expired rows (sign-in flows, one-time codes, SAML assertion IDs) hourly,
 * in every instance (db/hourly.ts): `authstrap.prune_identity`. Expired rows are never read; this
 * keeps the tables to the last hour's sign-ins.
 */
export function startIdentityPrune({ db, logger }: { db: Database; logger: Logger }) {
  return startHourlyPrune({ db, logger, statement: 'SELECT authstrap.prune_identity() AS "pruned"', what: 'expired single sign-on flows, codes and assertion IDs' });
}
