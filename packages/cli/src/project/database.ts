import path from 'node:path';
import type { DatabaseTarget } from '../verify/database.js';

/**
 * The database a project uses: PostgreSQL from `databaseUrl` (by default DATABASE_URL in its
 * .env), otherwise its embedded PGlite folder, as the backend itself decides.
 */
export function projectDatabase(projectDir: string, env: Record<string, string>, databaseUrl = env.DATABASE_URL || undefined): DatabaseTarget {
  if (databaseUrl) return { kind: 'postgres', url: databaseUrl };
  return { kind: 'embedded', dir: path.join(projectDir, env.EMBEDDED_DB_DIR || '.data/pglite') };
}

/** Whether a server answers at `url`: a running backend holds its embedded database. */
export async function serverAnswers(url: string, timeoutMs = 2000): Promise<boolean> {
  return fetch(new URL('/health', url), { signal: AbortSignal.timeout(timeoutMs) }).then(
    () => true,
    () => false,
  );
}
