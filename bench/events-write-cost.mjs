#!/usr/bin/env node
// What an event costs POST /Projects, by mechanism and by part (issue 29: events on against off,
// at most 15 % slower). The example, built as it is, on databases that differ only in how a
// write's event is recorded:
//   off       the events trigger of the tables switched off: no event;
//   trigger   as generated: the trigger writes the event in the write's transaction
//             (authstrap.data_event);
//   <variant> one per file of BENCH_VARIANTS (function files; the ones measured on 2026-11-27 are in
//             git: `git show 3a78ef0:bench/events-variants/lean.sql`): that function in the
//             trigger's place, a cut-down or changed copy of the generated one, to price its parts;
//   decoding  a prototype of events taken from the write-ahead log instead: the trigger switched
//             off; the backend (a copy of dist/ with one line changed) puts the request's context
//             in the WAL with pg_logical_emit_message instead of a setting, and
//             bench/lib/decoding-consumer.mjs, a process beside it, reads the committed changes
//             from a logical replication slot and writes their events, in batches. Its runs last
//             until the consumer has written every event of the run (`drainMs` after the load),
//             and `rpsWithDrain` is its rate counted to then.
// PostgreSQL: a server this script starts (initdb in a temporary folder, on a free loopback port)
// with wal_level=logical, which decoding needs, and otherwise the settings of the machine's
// (autovacuum off, shared_buffers 128 MB); every side runs on it. BENCH_DECODING=off leaves the
// decoding side out and uses BENCH_PG_URL's server as it is instead, in throwaway databases.
// Loaded in turns (the sides in order, then in reverse, ...) with the write, 8 s after 3 s of
// warm-up; each run reports the write rate, the CPU per write of the backend, of PostgreSQL (all
// its processes) and of the consumer, the WAL per write, and the projects of the run that have
// no event (`missing`: the goal is 0).
//
//   npm run bootstrap && node bench/events-write-cost.mjs
//   BENCH_VARIANTS="my-variant.sql another.sql" node bench/events-write-cost.mjs
//
// Settings: BENCH_PAIRS (3), BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8), BENCH_VARIANTS,
// BENCH_DECODING, and for the consumer DECODING_READER (a walsender through pg_recvlogical, or
// `sql`: pg_logical_slot_get_changes). Linux; needs wrk and PostgreSQL's server binaries
// (BENCH_PG_BIN, /usr/lib/postgresql/15/bin by default). Writes bench/results/events-write-cost.json.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { benchPgUrl, children, cpuTicks, exampleDir, freePort, median, postgresCpuTicks, queryAsOwner, runWrk, seedProjects, startChild, startExampleBackend, stopChild, throwawayDatabase, walPosition, writeLoadArgs } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'events-write-cost.json');
const pairs = Number(process.env.BENCH_PAIRS ?? 3);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const pgBin = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** A PostgreSQL server of this run's own, in a temporary folder, as the `postgres` user when this runs as root. */
async function startServer() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-bench-decoding-'));
  const asPostgres = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
  if (asPostgres.length > 0) execFileSync('chown', ['postgres', dataDir]);
  const command = (binary, args) => (asPostgres.length > 0 ? [asPostgres[0], [...asPostgres.slice(1), path.join(pgBin, binary), ...args]] : [path.join(pgBin, binary), args]);
  execFileSync(...command('initdb', ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync']), { stdio: 'ignore' });
  const port = await freePort();
  const settings = { listen_addresses: '127.0.0.1', port, unix_socket_directories: dataDir, wal_level: 'logical', max_replication_slots: 4, autovacuum: 'off', shared_buffers: '128MB', max_wal_size: '1GB', min_wal_size: '80MB', max_connections: 100 };
  const child = startChild('postgres', ...command('postgres', ['-D', dataDir, ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])]));
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  for (let attempt = 0; ; attempt += 1) {
    try {
      await queryAsOwner(url, 'SELECT 1');
      break;
    } catch (error) {
      if (attempt > 100 || child.exitCode !== null) throw new Error(`the bench's PostgreSQL did not start: ${error.message}\n${child.output}`);
      await sleep(100);
    }
  }
  return {
    url,
    async database(name) {
      await queryAsOwner(url, `CREATE DATABASE "${name}"`);
      return url.replace(/\/postgres$/, `/${name}`);
    },
    async stop() {
      await stopChild(child);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A copy of the built backend whose write requests put their context in the WAL (a message) instead of a setting. */
function decodingBuild() {
  const copy = path.join(exampleDir, 'dist-decoding');
  fs.rmSync(copy, { recursive: true, force: true });
  fs.cpSync(path.join(exampleDir, 'dist'), copy, { recursive: true });
  const scopeFile = path.join(copy, 'db', 'scope.js');
  const from = "|| set_config('authstrap.request', $3, true)";
  const source = fs.readFileSync(scopeFile, 'utf8');
  if (!source.includes(from)) throw new Error(`dist/db/scope.js no longer sets the request context as "${from}": bench/events-write-cost.mjs must follow it`);
  // The user id goes first: the consumer reads the actor from it, as the trigger does from the scope's setting.
  fs.writeFileSync(scopeFile, source.replace(from, `|| pg_logical_emit_message(true, 'authstrap', COALESCE(s."userId"::text, '') || ' ' || $3)::text`));
  return 'dist-decoding/index.js';
}

/** The consumer's CPU so far: its own and its reader's (pg_recvlogical, its child), in clock ticks. */
function consumerTicks(consumer) {
  let readers = [];
  try {
    readers = execFileSync('pgrep', ['-P', String(consumer.pid)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    // none (DECODING_READER=sql): pgrep exits 1
  }
  return cpuTicks(consumer.pid) + readers.reduce((sum, pid) => sum + cpuTicks(pid), 0);
}

/**
 * The projects written since `since` that have no event yet, and the events written twice (a
 * consumer started again reads on from the last position its predecessor confirmed: at least once).
 */
async function missingSince(url, since) {
  const { rows } = await queryAsOwner(
    url,
    `SELECT (SELECT count(*) FROM "Project" p WHERE p."createdAt" >= $1 AND NOT EXISTS (SELECT FROM "authstrap_event" e WHERE e."entityId" = p."id"::text AND e."type" = 'project.created'))::int AS "missing",
            (SELECT count(*) - count(DISTINCT "entityId") FROM "authstrap_event" WHERE "type" = 'project.created' AND "createdAt" >= $1)::int AS "duplicates"`,
    [since],
  );
  return rows[0];
}

/** missingSince, after waiting (at most two minutes) for the consumer, if the side has one, to write the events of every project since `since`. */
async function waitForEvents(url, consumer, since) {
  const deadline = Date.now() + 120_000;
  let found = await missingSince(url, since);
  while (consumer && found.missing > 0 && Date.now() < deadline) {
    await sleep(20);
    found = await missingSince(url, since);
  }
  return found;
}

/**
 * BENCH_DECODING=off: no decoding side, and the other sides on BENCH_PG_URL's server as it is
 * (wal_level as its own), in throwaway databases: whether wal_level=logical changes their costs.
 */
const withDecoding = process.env.BENCH_DECODING !== 'off';
async function sharedServer() {
  const databases = [];
  return {
    url: benchPgUrl,
    async database(label) {
      const database = await throwawayDatabase(label);
      databases.push(database);
      return database.url;
    },
    async stop() {
      for (const database of databases) await database.drop();
    },
  };
}
const server = withDecoding ? await startServer() : await sharedServer();
// BENCH_VARIANTS: function files that each get a side of their own, in the trigger's place.
const variants = Object.fromEntries((process.env.BENCH_VARIANTS ?? '').split(/\s+/).filter(Boolean).map((file) => [path.basename(file, '.sql'), path.resolve(file)]));
const sides = ['off', 'trigger', ...Object.keys(variants), ...(withDecoding ? ['decoding'] : [])];
const env = { NODE_ENV: 'development' };
try {
  execFileSync(process.execPath, [path.join(exampleDir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: exampleDir, stdio: 'inherit' });
  const entries = { ...Object.fromEntries(sides.map((side) => [side, 'dist/index.js'])), ...(withDecoding ? { decoding: decodingBuild() } : {}) };
  const urls = {};
  const writers = {};
  for (const side of sides) {
    urls[side] = await server.database(`events_${side}`);
    const backend = await startExampleBackend({ dbUrl: urls[side], env });
    writers[side] = await seedProjects(backend.base, { email: 'writer@example.com', name: 'Writer', projects: 0 });
    await stopChild(backend.child);
  }
  for (const side of ['off', 'decoding'].filter((side) => sides.includes(side))) await queryAsOwner(urls[side], 'ALTER TABLE "Project" DISABLE TRIGGER "authstrap_events"; ALTER TABLE "Task" DISABLE TRIGGER "authstrap_events"');
  for (const [side, file] of Object.entries(variants)) await queryAsOwner(urls[side], fs.readFileSync(file, 'utf8'));
  if (withDecoding) await queryAsOwner(urls.decoding, `SELECT pg_create_logical_replication_slot('authstrap_events', 'test_decoding')`);
  const consumerScript = path.join(benchDir, 'lib', 'decoding-consumer.mjs');

  const runs = Object.fromEntries(sides.map((side) => [side, []]));
  for (let pair = 0; pair < pairs; pair += 1) {
    for (const side of pair % 2 === 0 ? sides : [...sides].reverse()) {
      const backend = await startExampleBackend({ dbUrl: urls[side], env, entry: entries[side] });
      const consumer = side === 'decoding' ? startChild('decoding consumer', process.execPath, [consumerScript, urls[side], 'authstrap_events'], {}) : null;
      const args = writeLoadArgs(backend.base, writers[side]);
      const wrkEnv = { ...process.env, BENCH_REPORT_LUA: path.join(benchDir, 'wrk-report.lua') };
      await runWrk(['-d', `${warmupSeconds}s`, ...args], warmupSeconds, wrkEnv);
      // The warm-up's events first, so that the run's CPU is the run's.
      await waitForEvents(urls[side], consumer, new Date(0));
      const startedAt = (await queryAsOwner(urls[side], 'SELECT now() AS "now"')).rows[0].now;
      const before = { node: cpuTicks(backend.child.pid), postgres: postgresCpuTicks(), consumer: consumer ? consumerTicks(consumer) : 0, wal: await walPosition(urls[side]) };
      const result = await runWrk(['-d', `${seconds}s`, ...args], seconds, wrkEnv);
      const loadEndedAt = performance.now();
      const found = await waitForEvents(urls[side], consumer, startedAt);
      const drainMs = Math.round(performance.now() - loadEndedAt);
      const per = (amount) => Math.round(amount / result.requests);
      const run = {
        rps: Math.round(result.rps),
        rpsWithDrain: consumer ? Math.round(result.requests / (seconds + drainMs / 1000)) : Math.round(result.rps),
        drainMs: consumer ? drainMs : 0,
        missing: side === 'off' ? 0 : found.missing,
        duplicates: side === 'off' ? 0 : found.duplicates,
        nodeUs: per((cpuTicks(backend.child.pid) - before.node) * 10_000),
        postgresUs: per((postgresCpuTicks() - before.postgres) * 10_000),
        consumerUs: consumer ? per((consumerTicks(consumer) - before.consumer) * 10_000) : 0,
        walBytes: per(Number((await walPosition(urls[side])) - before.wal)),
      };
      runs[side].push(run);
      console.log(`[bench] write, ${side}: ${JSON.stringify(run)}`);
      if (consumer) {
        await stopChild(consumer);
        const line = consumer.output.split('\n').find((text) => text.startsWith('DECODING_JSON '));
        if (line) console.log(`[bench]   consumer: ${line.slice('DECODING_JSON '.length)}`);
      }
      await stopChild(backend.child);
    }
  }

  const of = (side) => Object.fromEntries(['rps', 'rpsWithDrain', 'drainMs', 'missing', 'duplicates', 'nodeUs', 'postgresUs', 'consumerUs', 'walBytes'].map((key) => [key, median(runs[side].map((run) => run[key]))]));
  const summary = Object.fromEntries(sides.map((side) => [side, of(side)]));
  summary.triggerOverOff = Number((summary.trigger.rps / summary.off.rps).toFixed(3));
  if (withDecoding) summary.decodingOverOff = Number((summary.decoding.rpsWithDrain / summary.off.rps).toFixed(3));
  for (const side of Object.keys(variants)) summary[`${side}OverOff`] = Number((summary[side].rps / summary.off.rps).toFixed(3));
  console.log(`write: off ${summary.off.rps} rps, trigger ${summary.trigger.rps} rps (${summary.triggerOverOff}), ${withDecoding ? `decoding ${summary.decoding.rpsWithDrain} rps counted to its last event (${summary.decodingOverOff})` : 'no decoding side'}`);
  for (const side of Object.keys(variants)) console.log(`  ${side}: ${summary[side].rps} rps (${summary[`${side}OverOff`]})`);
  for (const side of sides) console.log(`  ${side} per write: ${JSON.stringify(summary[side])}`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), pairs, warmupSeconds, seconds, runs, summary }, null, 2)}\n`);
} finally {
  for (const child of [...children].filter((child) => child.benchName !== 'postgres')) await stopChild(child);
  await server.stop();
  fs.rmSync(path.join(exampleDir, 'dist-decoding'), { recursive: true, force: true });
}
