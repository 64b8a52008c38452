import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterEach, describe, expect, it } from 'vitest';
import { initdbTemplateFile } from '../src/db/embedded-template.js';
import { signUp } from './support/backend.js';
import { spawnBackend, type BackendProcess } from './support/process.js';

/**
 * A new embedded database starts from the initialised copy kept in the user's cache
 * (src/db/embedded-template.ts). Each test gives the backend a cache folder of its own through
 * XDG_CACHE_HOME, so what a test finds there is what that test's backends wrote.
 */

const scratch: string[] = [];
const started: BackendProcess[] = [];

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}

function startOn(dataDir: string, cacheHome: string): BackendProcess {
  const backend = spawnBackend({ EMBEDDED_DB_DIR: dataDir, XDG_CACHE_HOME: cacheHome });
  started.push(backend);
  return backend;
}

async function stop(backend: BackendProcess): Promise<void> {
  backend.child.kill('SIGTERM');
  expect(await backend.exited).toBe(0);
}

/** Signs up and creates a project: the migrations ran and the database takes writes. */
async function expectWorking(backend: BackendProcess, email: string): Promise<void> {
  const owner = await signUp(await backend.listening, email);
  expect((await owner.api('POST', '/Projects', { body: { name: 'Works' } })).status).toBe(201);
}

async function tablesIn(dataDir: string): Promise<string[]> {
  const db = await PGlite.create(dataDir);
  try {
    const { rows } = await db.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1");
    return rows.map((row) => row.name);
  } finally {
    await db.close();
  }
}

afterEach(async () => {
  for (const backend of started.splice(0)) {
    backend.child.kill('SIGKILL');
    await backend.exited;
  }
  for (const dir of scratch.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a new embedded database and the initialised copy in the cache', () => {
  it('the first new database leaves the copy, named for the installed PGlite, and later new ones start from it', async () => {
    const cacheHome = tempDir('authstrap-cache-');
    const template = initdbTemplateFile({ XDG_CACHE_HOME: cacheHome })!;
    const installed = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../node_modules/@electric-sql/pglite/package.json'), 'utf8'));
    expect(template).toBe(path.join(cacheHome, 'authstrap', `pglite-${installed.version}-initdb.tar`));

    const first = path.join(tempDir('authstrap-pglite-'), 'db');
    const backend = startOn(first, cacheHome);
    await expectWorking(backend, 'first@example.com');
    await stop(backend);
    expect(fs.readdirSync(path.dirname(template))).toEqual([path.basename(template)]);

    // The copy is a freshly initialised database: none of the first backend's tables are in it.
    const fromCopy = await PGlite.create({ loadDataDir: new Blob([fs.readFileSync(template)]) });
    expect((await fromCopy.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")).rows).toEqual([{ n: 0 }]);
    // Mark it, so that a database made from it can be told apart from one made by initdb.
    await fromCopy.exec('CREATE TABLE from_the_cached_copy (id int)');
    const marked = Buffer.from(await (await fromCopy.dumpDataDir('none')).arrayBuffer());
    await fromCopy.close();
    fs.writeFileSync(template, marked);

    const second = path.join(tempDir('authstrap-pglite-'), 'db');
    const secondBackend = startOn(second, cacheHome);
    await expectWorking(secondBackend, 'second@example.com');
    await stop(secondBackend);
    const secondTables = await tablesIn(second);
    expect(secondTables).toContain('from_the_cached_copy');
    expect(secondTables).toContain('authstrap_migrations');

    // An existing database is opened as it is, never loaded from the copy.
    const restarted = startOn(first, cacheHome);
    await expectWorking(restarted, 'again@example.com');
    await stop(restarted);
    expect(await tablesIn(first)).not.toContain('from_the_cached_copy');
  });

  it('a damaged copy is dropped: the database is created the long way and a good copy replaces it', async () => {
    const cacheHome = tempDir('authstrap-cache-');
    const template = initdbTemplateFile({ XDG_CACHE_HOME: cacheHome })!;
    fs.mkdirSync(path.dirname(template), { recursive: true });
    fs.writeFileSync(template, 'not a tar archive');

    const dataDir = path.join(tempDir('authstrap-pglite-'), 'db');
    const backend = startOn(dataDir, cacheHome);
    await expectWorking(backend, 'damaged@example.com');
    await stop(backend);

    const replaced = await PGlite.create({ loadDataDir: new Blob([fs.readFileSync(template)]) });
    expect((await replaced.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await replaced.close();
  });

  it('a cache folder that cannot be written costs only the time: the backend starts and keeps its data', async () => {
    const notAFolder = path.join(tempDir('authstrap-cache-'), 'a-file');
    fs.writeFileSync(notAFolder, '');
    const dataDir = path.join(tempDir('authstrap-pglite-'), 'db');
    const backend = startOn(dataDir, notAFolder);
    await expectWorking(backend, 'unwritable@example.com');
    await stop(backend);
    expect(await tablesIn(dataDir)).toContain('authstrap_migrations');
  });

  it('the in-memory database starts from the copy too', async () => {
    const cacheHome = tempDir('authstrap-cache-');
    const first = startOn('memory://', cacheHome);
    await expectWorking(first, 'memory-first@example.com');
    await stop(first);
    const template = initdbTemplateFile({ XDG_CACHE_HOME: cacheHome })!;
    expect(fs.existsSync(template)).toBe(true);
    fs.writeFileSync(template, 'not a tar archive');

    // A damaged copy is found on the next in-memory start as well, and replaced.
    const second = startOn('memory://', cacheHome);
    await expectWorking(second, 'memory-second@example.com');
    await stop(second);
    expect(fs.statSync(template).size).toBeGreaterThan(1_000_000);
  });
});
