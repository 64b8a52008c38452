import pg from 'pg';

/** How many connections to `databaseUrl`'s database sit in an open transaction (pg_stat_activity), this one aside. */
export async function connectionsInTransaction(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM pg_stat_activity
        WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()`,
    );
    return rows[0]!.count;
  } finally {
    await client.end();
  }
}
