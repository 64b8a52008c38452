import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type DatabaseProbe, type DatabaseTarget } from '../verify/database.js';
import { backendSetting, readProjectEnv } from './env-file.js';

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

/**
 * PostgreSQL from --database-url, else DATABASE_URL as the backend reads it (the environment,
 * then .env); the embedded database only when no backend holds it.
 */
export async function openProjectDatabase(projectDir: string, databaseUrl: string | undefined): Promise<{ db?: DatabaseProbe; note?: string }> {
  const dotEnv = readProjectEnv(projectDir);
  const setting = (name: string) => backendSetting(name, dotEnv)?.value;
  const target = projectDatabase(projectDir, { EMBEDDED_DB_DIR: setting('EMBEDDED_DB_DIR') ?? '' }, databaseUrl ?? setting('DATABASE_URL'));
  try {
    if (target.kind === 'postgres') return { db: await openDatabase(target) };
    if (!fs.existsSync(target.dir)) return { note: 'the embedded database does not exist yet' };
    const port = setting('PORT') ?? '3000';
    if (await serverAnswers(`http://127.0.0.1:${port}`, 1000)) return { note: `the embedded database is held by the backend on port ${port}; stop it to check the database` };
    const holder = embeddedDatabaseHolder(target.dir);
    if (holder) return { note: `the embedded database is held by process ${holder.pid} (a backend not on port ${port}); stop it to check the database` };
    return { db: await openDatabase(target) };
  } catch (error) {
    return { note: `cannot open the database: ${(error as Error).message}` };
  }
}
