#!/usr/bin/env node
// Is a change to the example faster? Two compiled copies of it, A (before) and B (after), loaded
// in turns with (a)'s list load: A B, B A, A B, ... so that the machine's drift (5 to 10 % from one
// run to the next here) falls on both alike. Prints each run and the medians of rps, p99 and the
// Node CPU per request (from /proc, as cpu-per-request.mjs reads it). A single run of run.mjs
// cannot show a change of a few %; three or more pairs of this can.
//
//   cd examples/saas-backend
//   npm run build && cp -r dist dist-A     # before
//   (change src/, then) npm run build && cp -r dist dist-B
//   cd ../.. && node bench/ab.mjs examples/saas-backend/dist-A examples/saas-backend/dist-B
//
// The copies must be inside examples/saas-backend (they import its node_modules) and must answer
// the list with the same body. Settings: BENCH_PG_URL, BENCH_PAIRS (3), BENCH_WARMUP_SECONDS (3),
// BENCH_DURATION_SECONDS (8), BENCH_LOAD (list; or write: POST /Projects as run.mjs's write, whose
// list then differs from run to run, so the bodies are not compared; or keyed-write: the same with
// an Idempotency-Key of its own on every request, as bench/idempotency.mjs's keyed load). Linux only; needs wrk. Writes bench/results/ab.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { children, cpuTicks, exampleDir, listLoadArgs, median, repoDir, writeLoadArgs, runWrk, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'ab.json');
const pairs = Number(process.env.BENCH_PAIRS ?? 3);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const listPath = '/Projects?limit=20';
const writes = process.env.BENCH_LOAD === 'write' || process.env.BENCH_LOAD === 'keyed-write';
const keyedWrites = process.env.BENCH_LOAD === 'keyed-write';
// wrk-create.lua reports through wrk-report.lua, which it is told the path of.
const wrkEnv = { ...process.env, BENCH_REPORT_LUA: path.join(repoDir, 'bench', 'wrk-report.lua') };

/** The entry point of one copy, or a message that names the argument to change. */
function entryOf(argument, label) {
  const usage = 'usage: node bench/ab.mjs <copy A of examples/saas-backend/dist> <copy B>';
  if (!argument) throw new Error(`${usage}\n(${label} is missing)`);
  const directory = path.resolve(argument);
  const relative = path.relative(exampleDir, directory);
  if (relative.startsWith('..') || path.isAbsolute(relative)) throw new Error(`${label} (${argument}) must be a folder inside examples/saas-backend, so that it finds its node_modules`);
  if (!fs.existsSync(path.join(directory, 'index.js'))) throw new Error(`${label} (${argument}) has no index.js: copy examples/saas-backend/dist there after \`npm run build\``);
  return path.join(relative, 'index.js');
}


let entries;
try {
  entries = { A: entryOf(process.argv[2], 'A'), B: entryOf(process.argv[3], 'B') };
} catch (error) {
  console.error(`bench: ${error.message}`);
  process.exit(2);
}
if (!fs.existsSync('/proc/self/stat')) {
  console.error('bench: ab.mjs reads /proc, so it runs on Linux only');
  process.exit(2);
}

const database = await throwawayDatabase('ab');
const dbUrl = database.url;
try {
  // A seeds the database (and migrates it); both then read the same rows.
  const seeding = await startExampleBackend({ dbUrl, entry: entries.A });
  const { token, organizationId } = await seedProjects(seeding.base);
  await stopChild(seeding.child);

  const runs = { A: [], B: [] };
  const bodies = {};
  for (let pair = 0; pair < pairs; pair += 1) {
    for (const side of pair % 2 === 0 ? ['A', 'B'] : ['B', 'A']) {
      const backend = await startExampleBackend({ dbUrl, entry: entries[side] });
      bodies[side] = await (await fetch(`${backend.base}${listPath}`, { headers: { authorization: `Bearer ${token}`, 'x-organization-id': organizationId } })).text();
      const args = (writes ? writeLoadArgs : listLoadArgs)(backend.base, { token, organizationId });
      if (keyedWrites) args[args.indexOf('-s') + 1] = path.join(repoDir, 'bench', 'wrk-create-keyed.lua');
      await runWrk(['-d', `${warmupSeconds}s`, ...args], warmupSeconds, wrkEnv);
      const ticksBefore = cpuTicks(backend.child.pid);
      const result = await runWrk(['-d', `${seconds}s`, ...args], seconds, wrkEnv);
      const run = {
        rps: Math.round(result.rps),
        p99Ms: result.latencyUs.p99 / 1000,
        nodeCpuUsPerRequest: Math.round(((cpuTicks(backend.child.pid) - ticksBefore) * 10_000) / result.requests),
      };
      await stopChild(backend.child);
      runs[side].push(run);
      console.log(`[bench] ${side}: ${run.rps} rps, p99 ${run.p99Ms} ms, Node ${run.nodeCpuUsPerRequest} µs per request`);
    }
    if (!writes && bodies.A !== bodies.B) throw new Error(`A and B answer ${listPath} differently, so their speeds cannot be compared:\nA: ${bodies.A.slice(0, 300)}\nB: ${bodies.B.slice(0, 300)}`);
  }

  const medians = Object.fromEntries(
    Object.entries(runs).map(([side, list]) => [side, { rps: median(list.map((run) => run.rps)), p99Ms: median(list.map((run) => run.p99Ms)), nodeCpuUsPerRequest: median(list.map((run) => run.nodeCpuUsPerRequest)) }]),
  );
  const change = (((medians.B.rps - medians.A.rps) / medians.A.rps) * 100).toFixed(1);
  console.log(`\nmedians of ${pairs} pairs: A ${medians.A.rps} rps, ${medians.A.nodeCpuUsPerRequest} µs; B ${medians.B.rps} rps, ${medians.B.nodeCpuUsPerRequest} µs; B/A ${change} % in rps`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), entries, pairs, warmupSeconds, seconds, runs, medians }, null, 2)}\n`);
} finally {
  for (const child of children) await stopChild(child);
  await database.drop();
}
