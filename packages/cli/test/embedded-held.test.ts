import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddedDatabaseHolder } from '../src/project/database.js';
import { tempDir } from './support/cli.js';
import { freePort, listing, runCliProcess } from './support/setup.js';

/**
 * A backend holds its embedded database folder with a lock file beside it. `verify` and `fix`
 * open the folder only when no backend answers on the project's port; a backend started on
 * another port still holds its lock, and opening the folder then would make two processes write
 * one database. They leave such a folder alone and say which process holds it.
 */

const made: string[] = [];
function madeDir(prefix: string): string {
  const dir = tempDir(prefix);
  made.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

function writeLock(dataDir: string, owner: { pid: number; hostname: string }) {
  fs.writeFileSync(`${dataDir}.lock`, `${JSON.stringify({ ...owner, startedAt: new Date().toISOString() })}\n`);
}

/** The pid of a process that has exited. */
function goneProcessId(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!;
}

describe('embeddedDatabaseHolder', () => {
  let dir: string;
  beforeAll(() => {
    dir = path.join(madeDir('authstrap-held-'), 'pglite');
    fs.mkdirSync(dir);
  });

  it('names a running process on this machine, and one on another machine', () => {
    writeLock(dir, { pid: process.pid, hostname: os.hostname() });
    expect(embeddedDatabaseHolder(dir)).toEqual({ pid: process.pid });
    // Its process cannot be asked from here, so the folder counts as held.
    writeLock(dir, { pid: goneProcessId(), hostname: `not-${os.hostname()}` });
    expect(embeddedDatabaseHolder(`${dir}/`)).toMatchObject({ pid: expect.any(Number) });
  });

  it('finds no holder without a lock, with an unreadable one, or when its process is gone', () => {
    fs.rmSync(`${dir}.lock`, { force: true });
    expect(embeddedDatabaseHolder(dir)).toBeUndefined();
    fs.writeFileSync(`${dir}.lock`, 'not json');
    expect(embeddedDatabaseHolder(dir)).toBeUndefined();
    writeLock(dir, { pid: goneProcessId(), hostname: os.hostname() });
    expect(embeddedDatabaseHolder(dir)).toBeUndefined();
  });
});

describe('verify and fix on an embedded database another process holds', () => {
  let project: string;
  let dataDir: string;
  beforeAll(async () => {
    const root = madeDir('authstrap-held-project-');
    // A port nothing listens on, so that the project's own port check finds no backend.
    const setup = runCliProcess(['setup', '--yes', '--project-name', 'held', '--backend-port', String(await freePort()), '--no-install', '--no-start'], { cwd: root });
    expect(setup.status, setup.output).toBe(0);
    project = path.join(root, 'held');
    dataDir = path.join(project, '.data/pglite');
    fs.mkdirSync(dataDir, { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'untouched'), '');
    // This test's own process plays the backend that holds the folder.
    writeLock(dataDir, { pid: process.pid, hostname: os.hostname() });
  }, 60_000);

  it('verify skips the database checks, naming the process, and opens nothing', () => {
    const before = listing(path.join(project, '.data'));
    const run = runCliProcess(['verify', '--json', '--dir', project], { cwd: project, timeoutMs: 30_000 });
    expect(run.status, run.output).toBe(1); // nothing answers over HTTP
    const report = JSON.parse(run.stdout) as { checks: { id: string; status: string; message: string }[] };
    const databaseChecks = report.checks.filter((check) => check.message.includes('embedded database'));
    expect(databaseChecks.length).toBeGreaterThanOrEqual(2);
    for (const check of databaseChecks) {
      expect(check.status).toBe('skip');
      expect(check.message).toContain(`the embedded database in .data/pglite is held by process ${process.pid}`);
    }
    expect(listing(path.join(project, '.data'))).toEqual(before);
  });

  it('fix leaves the database unchecked, naming the process, and opens nothing', () => {
    const before = listing(path.join(project, '.data'));
    const run = runCliProcess(['fix', project, '--json'], { cwd: project, timeoutMs: 30_000 });
    expect(run.status, run.output).toBe(0);
    const report = JSON.parse(run.stdout) as { checks: { message: string }[] };
    expect(report.checks.some((check) => check.message.includes(`the embedded database is held by process ${process.pid}`))).toBe(true);
    expect(listing(path.join(project, '.data'))).toEqual(before);
  });
});
