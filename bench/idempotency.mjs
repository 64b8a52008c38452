#!/usr/bin/env node
// What an Idempotency-Key costs a write (issue 51, item 1; goal: at most 5 % with a key, nothing
// without). The example, built as it is, on PostgreSQL, loaded in turns (the machine's drift falls
// on all) with three writes of POST /Projects {name}:
//   plain     no key: one round trip (the caller's lookup and the insert), as before keys existed;
//   keyed     a key of its own on every request: BEGIN, the caller, the key's claim and the insert
//             in one round trip, then the answer kept and COMMIT (src/idempotency/keyed-write.ts);
//   repeat    one key and body sent again and again: every request after the first is answered
//             from the kept answer.
// Reports each kind's requests a second, p50 and p99 per round, the CPU each request took in the
// backend's Node process and in the PostgreSQL backends of its database (not the machine's other
// PostgreSQL processes), and keyed / plain per round and its median. "Nothing without a key" is the plain write against the write before keys existed:
// bench/run.mjs's write (a) and its history in bench/README.md.
//
//   npm run bootstrap && node bench/idempotency.mjs
//
// Settings: BENCH_PG_URL, BENCH_ROUNDS (3), BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8).
// Linux; needs wrk. Writes bench/results/idempotency.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { children, cpuTicks, median, queryAsOwner, repoDir, runWrk, seedProjects, startExampleBackend, stopChild, throwawayDatabase, writeLoadArgs } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'idempotency.json');
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const report = path.join(repoDir, 'bench', 'wrk-report.lua');
const keyedScript = path.join(repoDir, 'bench', 'wrk-create-keyed.lua');

/** wrk's arguments and environment for one kind of write. */
function load(kind, base, session) {
  const args = writeLoadArgs(base, session);
  if (kind !== 'plain') args[args.indexOf('-s') + 1] = keyedScript;
  const env = { ...process.env, BENCH_REPORT_LUA: report, ...(kind === 'repeat' ? { BENCH_REPEAT_KEY: `repeat-${Date.now()}` } : {}) };
  return { args, env };
}

/** CPU ticks so far of the backend's process and of the PostgreSQL backends serving `database`. */
async function ticks(pid, database) {
  const { rows } = await queryAsOwner(database.url, 'SELECT "pid" FROM pg_stat_activity WHERE "datname" = current_database() AND "pid" <> pg_backend_pid()');
  return { node: cpuTicks(pid), postgres: Object.fromEntries(rows.map(({ pid: backend }) => [backend, cpuTicks(backend)])) };
}
/** CPU µs per request between two `ticks` (a PostgreSQL backend gone in between counts as nothing). */
function cpuPerRequest(before, after, requests) {
  const postgres = Object.entries(after.postgres).reduce((sum, [pid, value]) => sum + value - (before.postgres[pid] ?? value), 0);
  return { nodeCpuUs: Math.round(((after.node - before.node) * 10_000) / requests), postgresCpuUs: Math.round((postgres * 10_000) / requests) };
}

const database = await throwawayDatabase('idempotency');
let backend;
try {
  backend = await startExampleBackend({ dbUrl: database.url });
  const session = await seedProjects(backend.base, { projects: 1 });
  const kinds = ['plain', 'keyed', 'repeat'];
  for (const kind of kinds) {
    const { args, env } = load(kind, backend.base, session);
    await runWrk([...args, '-d', `${warmupSeconds}s`], warmupSeconds, env);
  }
  const results = [];
  for (let round = 0; round < rounds; round++) {
    // Alternate the order, so that no kind always runs on a warmer (or fuller) database.
    const order = round % 2 === 0 ? kinds : [...kinds].reverse();
    const figures = {};
    for (const kind of order) {
      const { args, env } = load(kind, backend.base, session);
      const before = await ticks(backend.child.pid, database);
      const result = await runWrk([...args, '-d', `${seconds}s`], seconds, env);
      const cpu = cpuPerRequest(before, await ticks(backend.child.pid, database), result.requests);
      figures[kind] = { rps: Math.round(result.rps), p50Ms: result.latencyUs.p50 / 1000, p99Ms: result.latencyUs.p99 / 1000, ...cpu };
    }
    const ratio = figures.keyed.rps / figures.plain.rps;
    results.push({ round, ...figures, keyedOverPlain: Number(ratio.toFixed(3)) });
    const line = (kind) => `${kind} ${figures[kind].rps} rps (p50 ${figures[kind].p50Ms} ms, p99 ${figures[kind].p99Ms} ms; CPU/request Node ${figures[kind].nodeCpuUs} µs, PostgreSQL ${figures[kind].postgresCpuUs} µs)`;
    console.log(`round ${round + 1}: ${kinds.map(line).join(', ')}; keyed/plain ${ratio.toFixed(3)}`);
  }
  const summary = { measuredAt: new Date().toISOString(), loadAverage: (await import('node:os')).loadavg()[0], keyedOverPlainMedian: median(results.map((result) => result.keyedOverPlain)), rounds: results };
  console.log(`keyed / plain, median of ${rounds} rounds: ${summary.keyedOverPlainMedian}`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(summary, null, 2)}\n`);
} finally {
  if (backend) await stopChild(backend.child);
  for (const child of children) await stopChild(child);
  await database.drop();
}
