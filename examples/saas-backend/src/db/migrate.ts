import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Database } from './database.js';

/** Any fixed number: every instance of this backend agrees on it, so only one migrates at a time. */
const migrationLockKey = 727_165_001;

export interface MigrationReport {
  applied: string[];
  alreadyApplied: number;
}

/**
 * Applies the SQL files of `migrations/` that this database has not seen, in name order, each in
 * its own transaction, and records each one in `authstrap_migrations`. Several instances may
 * start at once: a PostgreSQL advisory lock lets one migrate while the others wait, and they
 * then find nothing left to do. An applied file that was edited afterwards stops the start.
 */
export async function migrate(db: Database, migrationsDir: string): Promise<MigrationReport> {
  const files = (await fs.readdir(migrationsDir)).filter((name) => name.endsWith('.sql')).sort();

  return db.withConnection(async (connection) => {
    await connection.query('SELECT pg_advisory_lock($1)', [migrationLockKey]);
    try {
      await connection.query(`CREATE TABLE IF NOT EXISTS authstrap_migrations (
        name text PRIMARY KEY,
        checksum text NOT NULL,
        "appliedAt" timestamptz NOT NULL DEFAULT now()
      )`);
      const { rows } = await connection.query<{ name: string; checksum: string }>(
        'SELECT name, checksum FROM authstrap_migrations',
      );
      const applied = new Map(rows.map((row) => [row.name, row.checksum]));
      const report: MigrationReport = { applied: [], alreadyApplied: 0 };

      for (const name of files) {
        const sql = await fs.readFile(path.join(migrationsDir, name), 'utf8');
        const checksum = createHash('sha256').update(sql).digest('hex');
        const previous = applied.get(name);
        if (previous !== undefined) {
          if (previous !== checksum) {
            throw new Error(
              `migrations/${name} was changed after it was applied to this database. ` +
                'Restore it and put the change in a new migration (`authstrap generate` writes one).',
            );
          }
          report.alreadyApplied += 1;
          continue;
        }
        await connection.exec('BEGIN');
        try {
          // The tables' event triggers wait for the commit (src/realtime/); a migration that
          // changes rows and then alters their table needs them to fire as each statement ends.
          await connection.exec('SET CONSTRAINTS ALL IMMEDIATE');
          await connection.exec(sql);
          await connection.query('INSERT INTO authstrap_migrations (name, checksum) VALUES ($1, $2)', [name, checksum]);
          await connection.exec('COMMIT');
        } catch (error) {
          await connection.exec('ROLLBACK');
          throw new Error(`migrations/${name} failed: ${(error as Error).message}`, { cause: error });
        }
        report.applied.push(name);
      }
      return report;
    } finally {
      await connection.query('SELECT pg_advisory_unlock($1)', [migrationLockKey]);
    }
  });
}
