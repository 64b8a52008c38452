import path from 'node:path';
import pg from 'pg';

const maintenance = `SELECT set_config('authstrap.maintenance', 'on', false)`;

/** Where verify reads the database directly: PostgreSQL by URL, or an embedded PGlite folder. */
export type DatabaseTarget = { kind: 'postgres'; url: string } | { kind: 'embedded'; dir: string };

export interface DatabaseProbe {
  kind: DatabaseTarget['kind'];
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

/**
 * Opens the database for checks. An embedded folder must not be in use by a running backend:
 * PGlite is one process's database, so the caller only opens it when the backend is stopped.
 * The connection is a maintenance one (`authstrap.maintenance`): as the tables' owner it sees every
 * organization's rows past row-level security, as the checks and their repairs must.
 */
export async function openDatabase(target: DatabaseTarget): Promise<DatabaseProbe> {
  if (target.kind === 'postgres') {
    const client = new pg.Client({ connectionString: target.url, connectionTimeoutMillis: 5000 });
    await client.connect();
    await client.query(maintenance);
    return {
      kind: 'postgres',
      query: async (text, params) => (await client.query(text, params)).rows,
      close: () => client.end(),
    };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  // The backend's migrations create pg_trgm (its operators' search indexes): without its code a
  // statement that reads through those indexes fails.
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  const db = await PGlite.create(path.resolve(target.dir), { extensions: { pg_trgm } });
  await db.query(maintenance);
  return {
    kind: 'embedded',
    query: async <Row>(text: string, params?: unknown[]) => (await db.query<Row>(text, params)).rows,
    close: () => db.close(),
  };
}

/** The migrations the backend has applied to this database (none when it has not started on it yet). */
export async function readAppliedMigrations(db: DatabaseProbe): Promise<string[]> {
  const [table] = await db.query<{ exists: boolean }>(`SELECT to_regclass('authstrap_migrations') IS NOT NULL AS "exists"`);
  if (!table?.exists) return [];
  return (await db.query<{ name: string }>('SELECT name FROM authstrap_migrations ORDER BY name')).map((row) => row.name);
}
