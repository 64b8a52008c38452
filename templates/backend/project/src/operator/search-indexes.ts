import type { Logger } from 'pino';
import type { Database } from '../db/database.js';

/**
 * The operators' searches (part of an address, name or slug) are served by pg_trgm's indexes,
 * which the migrations create where the database allows the extension (docs/operator.md,
 * "Search"). Where it did not, the searches still answer, reading every row: fine for a few
 * thousand users, slow at 100,000. Said once, when the backend starts, with what to do about it.
 */
export const searchIndexNames = ['User_email_trgm_idx', 'User_name_trgm_idx', 'Organization_name_trgm_idx', 'Organization_slug_trgm_idx'];

/** The search indexes this database lacks (none when the migrations could create pg_trgm). */
export async function missingSearchIndexes(db: Database): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>('SELECT "indexname" AS "name" FROM pg_indexes WHERE "schemaname" = current_schema() AND "indexname" = ANY($1::text[])', [searchIndexNames]);
  const present = new Set(rows.map((row) => row.name));
  return searchIndexNames.filter((name) => !present.has(name));
}

export async function warnWithoutSearchIndexes(db: Database, logger: Logger): Promise<void> {
  const missing = await missingSearchIndexes(db);
  if (missing.length === 0) return;
  logger.warn(
    { missing },
    "operators' searches: pg_trgm's indexes are missing (the extension could not be created), so each search reads every user and organization: " +
      'the same answers, slower with many users. Create the extension and the indexes as a role that may (docs/operator.md, "Search", has the statements).',
  );
}
