import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

/**
 * A new embedded database starts from a copy of a freshly initialised one.
 *
 * PGlite creates a database by running PostgreSQL's `initdb` in WebAssembly, which takes a few
 * seconds: most of a first start. What it writes is the same for every new database of one PGlite
 * version, so the first new database on a machine keeps a copy of it (an uncompressed tar of the
 * data directory) in the user's cache folder, and every later new database loads that instead.
 *
 * The copy only saves time: when it is missing, unreadable or cannot be written, `initdb` runs as
 * it always did. Its name carries the PGlite version, so an upgrade never loads another version's
 * files. It lives in `$XDG_CACHE_HOME/authstrap` (else `~/.cache/authstrap`); deleting it is safe.
 */

/** The file holding the initialised data directory for the installed PGlite, if it can have one. */
export function initdbTemplateFile(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const cacheRoot = env.XDG_CACHE_HOME || homeCache();
  const version = pgliteVersion();
  if (!cacheRoot || !version) return undefined;
  return path.join(cacheRoot, 'authstrap', `pglite-${version}-initdb.tar`);
}

function homeCache(): string | undefined {
  try {
    return path.join(os.homedir(), '.cache');
  } catch {
    // A user without a home folder (some containers): no copy is kept.
    return undefined;
  }
}

function pgliteVersion(): string | undefined {
  try {
    // The package exports no package.json; its entry point sits in dist/, one level below it.
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const manifest = JSON.parse(fs.readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8'));
    return typeof manifest.version === 'string' && /^[\w.+-]+$/.test(manifest.version) ? manifest.version : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether opening `dataDir` will create a database: in memory always, on disk when the folder is
 * missing or empty. A folder with other files in it is left to PGlite to judge.
 */
export function createsNewDatabase(dataDir: string): boolean {
  if (dataDir === 'memory://') return true;
  try {
    return fs.readdirSync(dataDir).length === 0;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

export function readInitdbTemplate(file: string | undefined): Blob | undefined {
  if (!file) return undefined;
  try {
    return new Blob([fs.readFileSync(file)]);
  } catch {
    return undefined;
  }
}

/**
 * Keeps the data directory of a database PGlite has just initialised (nothing else has run in
 * it yet). Written beside its final name and renamed into place, so a process that reads it never
 * sees half a file, and two processes (or threads) that both write it leave one whole copy.
 */
export async function keepInitdbTemplate(file: string | undefined, dump: () => Promise<Blob>): Promise<void> {
  if (!file) return;
  const partial = `${file}.${randomUUID()}.partial`;
  try {
    // The folder first: a cache that cannot be written costs no 40 MB dump.
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tar = Buffer.from(await (await dump()).arrayBuffer());
    fs.writeFileSync(partial, tar);
    fs.renameSync(partial, file);
  } catch {
    // No copy this time; clear what was written, if anything could be.
    removeQuietly(partial);
  }
}

/** Drops a copy that PGlite could not start from, so the next new database runs `initdb` again. */
export function dropInitdbTemplate(file: string | undefined): void {
  if (file) removeQuietly(file);
}

function removeQuietly(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    // Its folder is not a folder or not ours to change: nothing was written there either.
  }
}
