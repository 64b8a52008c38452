import fs from 'node:fs';
import os from 'node:os';
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

/**
 * The process holding an embedded database folder, from the lock file the backend keeps beside it
 * (`.data/pglite.lock` for `.data/pglite`, the project's src/db/embedded-lock.ts). A backend on
 * another port than .env's answers no `serverAnswers`, but still holds its lock: opening the folder
 * then would make two processes write one database. A lock whose process is gone is not a holder.
 */
export function embeddedDatabaseHolder(dir: string): { pid: number } | undefined {
  let owner: { pid?: unknown; hostname?: unknown };
  try {
    owner = JSON.parse(fs.readFileSync(`${dir.replace(/[\\/]+$/, '')}.lock`, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof owner.pid !== 'number' || !Number.isSafeInteger(owner.pid)) return undefined;
  // A lock from another machine (a shared folder) is taken as held: its process cannot be asked.
  if (owner.hostname !== os.hostname()) return { pid: owner.pid };
  try {
    process.kill(owner.pid, 0);
    return { pid: owner.pid };
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? { pid: owner.pid } : undefined;
  }
}
