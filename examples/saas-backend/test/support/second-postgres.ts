import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './process.js';

/**
 * A PostgreSQL server of the test's own, on a loopback port and a folder of its own, whose WAL is
 * on timeline `timeline` (pg_resetwal sets it, as a promotion would have; a standby keeps 1): a stand-in for a
 * promoted standby, beside the machine's server on timeline 1. With `standby`, it stays in
 * recovery (standby.signal, and no primary to follow): read-only, as a standby is. Runs as the
 * `postgres` user (the server refuses root) with trust authentication on loopback. Debian's
 * PostgreSQL 15 binaries.
 */
export interface SecondPostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  stop(): Promise<void>;
}

export const postgresBin = '/usr/lib/postgresql/15/bin';

export async function startSecondPostgres(timeline: number, options: { standby?: boolean } = {}): Promise<SecondPostgres> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-second-pg-'));
  const dataDir = path.join(folder, 'data');
  fs.chownSync(folder, uidOf('postgres'), gidOf('postgres'));
  const asPostgres = (command: string, args: string[]) => execFileSync('runuser', ['-u', 'postgres', '--', path.join(postgresBin, command), ...args], { stdio: 'pipe' });
  const port = await freePort();
  try {
    asPostgres('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync']);
    // A standby recovers from the WAL initdb wrote; one reset by pg_resetwal would have none to start from.
    if (options.standby) execFileSync('runuser', ['-u', 'postgres', '--', 'touch', path.join(dataDir, 'standby.signal')]);
    else asPostgres('pg_resetwal', ['-f', '-l', `${timeline.toString(16).toUpperCase().padStart(8, '0')}0000000000000010`, dataDir]);
    asPostgres('pg_ctl', ['-D', dataDir, '-w', '-t', '60', '-l', path.join(folder, 'server.log'), '-o', `-p ${port} -k ${folder} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start']);
  } catch (error) {
    fs.rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      try {
        asPostgres('pg_ctl', ['-D', dataDir, '-w', '-t', '60', '-m', 'immediate', 'stop']);
      } finally {
        fs.rmSync(folder, { recursive: true, force: true });
      }
    },
  };
}

const idOf = (flag: '-u' | '-g', name: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
const uidOf = (name: string) => idOf('-u', name);
const gidOf = (name: string) => idOf('-g', name);

/** Creates database `name` on the server at `serverUrl`; resolves the function that drops it. */
export async function createDatabase(serverUrl: string, name: string): Promise<() => Promise<void>> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  return async () => {
    const dropper = new pg.Client({ connectionString: serverUrl });
    await dropper.connect();
    await dropper.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await dropper.end();
  };
}

/** The address of database `name` on the server at `serverUrl`. */
export const withDatabase = (serverUrl: string, name: string) => {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
};
