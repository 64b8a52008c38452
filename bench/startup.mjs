#!/usr/bin/env node
// How fast the example backend is up, and how much memory it holds after work:
//   - cold start: from spawning `node dist/index.js` (compiled, as production runs it) to the first
//     200 from /ready, on PostgreSQL and on the embedded database, each on a fresh database (the
//     migrations run) and on one already migrated (a restart). A fresh embedded database is timed
//     twice: the first on a machine (an empty cache: PGlite runs initdb and the backend keeps an
//     initialised copy) and a later one (it starts from that copy); the bench uses a cache folder
//     of its own (XDG_CACHE_HOME), never the user's;
//   - resident memory (VmRSS) when /ready first answers, and after 10,000 authenticated
//     GET /Projects?limit=20 requests (20 at a time, keep-alive).
//
//   node bench/startup.mjs
//
// Needs PostgreSQL (BENCH_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres; the role
// must be allowed to CREATE DATABASE) and `pnpm install` done. Linux only for the memory figures
// (/proc). Writes bench/results/startup.json.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { api, children, exampleDir, expectStatus, median, seedProjects, startExampleBackend, stopChild } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'startup.json');
const pgAdminUrl = process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const runs = 3;
const requests = 10_000;
const concurrency = 20;

const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');
const admin = new pg.Client({ connectionString: pgAdminUrl });
const databases = [];
const folders = [];

async function cleanup() {
  for (const child of children) await stopChild(child);
  for (const name of databases) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => {});
  for (const folder of folders) fs.rmSync(folder, { recursive: true, force: true });
  await admin.end().catch(() => {});
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => cleanup().finally(() => process.exit(130)));

async function freshDatabaseUrl() {
  const name = `authstrap_bench_start_${process.pid}_${randomBytes(3).toString('hex')}`;
  await admin.query(`CREATE DATABASE "${name}"`);
  databases.push(name);
  const url = new URL(pgAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

function freshFolder() {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-bench-embedded-'));
  folders.push(folder);
  return path.join(folder, 'data');
}

/** An empty cache folder: a new embedded database in it finds no initialised copy. */
function newCacheHome() {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-bench-cache-'));
  folders.push(folder);
  return folder;
}

/** Resident memory of a process in MiB, from /proc (null elsewhere). */
function rssMiB(pid) {
  try {
    const kib = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Number((kib / 1024).toFixed(1));
  } catch {
    return null;
  }
}

/** Starts the backend on `database` and times spawn -> first 200 from /ready (polled every 5 ms). */
async function timedStart(database, cacheHome) {
  const env = database.startsWith('postgres')
    ? { DATABASE_URL: database }
    : { DATABASE_URL: '', EMBEDDED_DB_DIR: database, XDG_CACHE_HOME: cacheHome ?? newCacheHome() };
  const backend = await startExampleBackend({ dbUrl: env.DATABASE_URL, env: { ...env, SERVICE_API_KEY: '' }, readyPollMs: 5 });
  return { ...backend, readyMs: backend.readyMs, rssAtReadyMiB: rssMiB(backend.child.pid) };
}


async function coldStarts(kind, newDatabase) {
  const fresh = [];
  const restart = [];
  const fromCachedCopy = [];
  let rss;
  for (let run = 0; run < runs; run += 1) {
    const cacheHome = newCacheHome();
    const database = await newDatabase();
    const first = await timedStart(database, cacheHome);
    fresh.push(first.readyMs);
    rss = first.rssAtReadyMiB;
    await stopChild(first.child);
    const again = await timedStart(database, cacheHome);
    restart.push(again.readyMs);
    await stopChild(again.child);
    if (kind === 'embedded') {
      // A second new database on the same machine: the first left its initialised copy in the cache.
      const later = await timedStart(await newDatabase(), cacheHome);
      fromCachedCopy.push(later.readyMs);
      await stopChild(later.child);
    }
  }
  const result = { freshMs: fresh, freshMedianMs: median(fresh), restartMs: restart, restartMedianMs: median(restart), rssAtReadyMiB: rss };
  if (fromCachedCopy.length > 0) Object.assign(result, { freshFromCachedCopyMs: fromCachedCopy, freshFromCachedCopyMedianMs: median(fromCachedCopy) });
  const cached = result.freshFromCachedCopyMedianMs === undefined ? '' : ` (${result.freshFromCachedCopyMedianMs} ms from the cached initialised copy)`;
  console.log(`[bench] ${kind}: to /ready ${result.freshMedianMs} ms on a fresh database (migrations)${cached}, ${result.restartMedianMs} ms on a migrated one; ${rss} MiB at ready`);
  return result;
}

async function memoryAfterRequests() {
  const backend = await timedStart(await freshDatabaseUrl());
  const { token, organizationId } = await seedProjects(backend.base, { email: 'rss@example.com', name: 'Rss' });
  const before = rssMiB(backend.child.pid);
  let sent = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < requests) {
        sent += 1;
        await expectStatus(api(backend.base, 'GET', '/Projects?limit=20', { token, organizationId }), 200, 'GET /Projects');
      }
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  await sleep(1000);
  const after = rssMiB(backend.child.pid);
  await stopChild(backend.child);
  console.log(`[bench] RSS ${before} MiB before, ${after} MiB after ${requests} authenticated list requests (${Math.round(requests / seconds)} req/s from one Node client)`);
  return { requests, concurrency, rssBeforeMiB: before, rssAfterMiB: after };
}

try {
  await admin.connect();
  const results = {
    measuredAt: new Date().toISOString(),
    node: process.version,
    runs,
    coldStart: {
      postgres: await coldStarts('PostgreSQL', freshDatabaseUrl),
      embedded: await coldStarts('embedded', async () => freshFolder()),
    },
    memory: await memoryAfterRequests(),
  };
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`written to ${path.relative(process.cwd(), resultsFile)}`);
} catch (error) {
  console.error(`bench: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
