import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * One process per embedded database folder. PGlite keeps the whole database in one process's
 * memory and writes it back to the folder; two processes on one folder would each accept writes
 * and the one that stops last would silently lose the other's.
 *
 * The lock is a file beside the folder (`.data/pglite.lock` for `.data/pglite`) created with
 * O_EXCL, holding the owner's pid. A lock whose process is gone (killed with kill -9, a crash) is
 * stale and is taken over; taking over goes through a second exclusive file, so two processes that
 * both find the same stale lock cannot both win.
 */

export class EmbeddedDatabaseLockedError extends Error {
  override name = 'EmbeddedDatabaseLockedError';
}

interface LockOwner {
  pid: number;
  hostname: string;
  startedAt: string;
}

export interface EmbeddedDatabaseLock {
  readonly file: string;
  release(): void;
}

/** Whether the process `pid` is running on this machine. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(fs.readFileSync(file, 'utf8')) as LockOwner;
    return Number.isSafeInteger(owner.pid) ? owner : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A lock is stale when its process is gone. One from another machine (a shared folder) is never
 * presumed stale. An unreadable one is stale only once it is a few seconds old: a fresh one may be
 * a lock whose owner is still writing it.
 */
function isStale(file: string, owner: LockOwner | undefined): boolean {
  if (owner) return owner.hostname === os.hostname() && !isRunning(owner.pid);
  try {
    return Date.now() - fs.statSync(file).mtimeMs > 5000;
  } catch {
    return true;
  }
}

function createExclusive(file: string, contents: string): boolean {
  try {
    fs.writeFileSync(file, contents, { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

export function lockEmbeddedDatabase(dataDir: string): EmbeddedDatabaseLock {
  const file = `${dataDir.replace(/[\\/]+$/, '')}.lock`;
  const me: LockOwner = { pid: process.pid, hostname: os.hostname(), startedAt: new Date().toISOString() };
  const contents = `${JSON.stringify(me)}\n`;
  fs.mkdirSync(path.dirname(file), { recursive: true });

  for (let attempt = 0; attempt < 3; attempt += 1) {
    if (createExclusive(file, contents)) return held(file);
    const owner = readOwner(file);
    if (!isStale(file, owner)) {
      throw new EmbeddedDatabaseLockedError(
        `The embedded database in ${dataDir} is in use by ${owner ? `process ${owner.pid} (since ${owner.startedAt})` : 'another process'}. ` +
          'Stop that backend first, or set EMBEDDED_DB_DIR (or DATABASE_URL) in .env to use another database.',
      );
    }
    // Stale, or unreadable (a process that died between creating and writing it). Only the
    // process that creates the takeover file may remove it.
    const takeover = `${file}.takeover`;
    if (!createExclusive(takeover, contents)) {
      if (isStale(takeover, readOwner(takeover))) fs.rmSync(takeover, { force: true });
      continue;
    }
    try {
      if (isStale(file, readOwner(file))) fs.rmSync(file, { force: true });
    } finally {
      fs.rmSync(takeover, { force: true });
    }
  }
  throw new EmbeddedDatabaseLockedError(`Could not take the lock ${file} for the embedded database in ${dataDir}; remove it if no backend is running.`);
}

function held(file: string): EmbeddedDatabaseLock {
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      // Only our own lock is removed: never one another process took over meanwhile.
      if (readOwner(file)?.pid === process.pid) fs.rmSync(file, { force: true });
    },
  };
}
