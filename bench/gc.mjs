#!/usr/bin/env node
// What garbage collection costs the example under the list load: V8's own account of every
// collection (`node --trace-gc-nvp`) while wrk loads GET /Projects?limit=20 as run.mjs does. A
// scavenge (young generation) stops every request in flight for its pause and costs what survives
// it; what survives two is promoted to the old generation, which only a mark-compact frees, and a
// mark-compact's pause is the longest. So: bytes allocated, surviving and promoted per request,
// and the count, total and longest pause of each kind, next to wrk's rps, p50 and p99.
//
//   node bench/gc.mjs [compiled entry, default dist/index.js]   # about 20 s; needs wrk
//
// The entry may be a patched copy inside examples/saas-backend (as for ab.mjs), to see what a
// change does to the garbage before measuring its speed. BENCH_NODE_FLAGS adds V8 or Node flags
// (for example `--max-semi-space-size=32`). Settings: BENCH_PG_URL, BENCH_WARMUP_SECONDS (3),
// BENCH_DURATION_SECONDS (8). Writes bench/results/gc.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { children, exampleDir, listLoadArgs, runWrk, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'gc.json');
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const extraFlags = (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
const entry = process.argv[2] ? path.relative(exampleDir, path.resolve(process.argv[2])) : 'dist/index.js';

if (process.argv[2] && (entry.startsWith('..') || path.isAbsolute(entry) || !fs.existsSync(path.join(exampleDir, entry)))) {
  console.error(`bench: ${process.argv[2]} must be a compiled index.js inside examples/saas-backend (it imports that folder's node_modules)`);
  process.exit(2);
}

/** One `--trace-gc-nvp` line as numbers: pause (ms), gc (s = scavenge, mc = mark-compact, ...), bytes. */
function parseCollection(line) {
  const fields = Object.fromEntries([...line.matchAll(/(\w[\w.]*)=(\S+)/g)].map(([, key, value]) => [key, value]));
  if (fields.gc === undefined || fields.pause === undefined) return undefined;
  return { kind: fields.gc, pauseMs: Number(fields.pause), allocated: Number(fields.allocated ?? 0), promoted: Number(fields.promoted ?? 0), survived: Number(fields.new_space_survived ?? 0) };
}

/** Collections per kind: count, total and longest pause. */
function summarize(collections) {
  const byKind = {};
  for (const { kind, pauseMs } of collections) {
    const entry = (byKind[kind] ??= { count: 0, totalPauseMs: 0, longestPauseMs: 0 });
    entry.count += 1;
    entry.totalPauseMs = Math.round((entry.totalPauseMs + pauseMs) * 10) / 10;
    entry.longestPauseMs = Math.max(entry.longestPauseMs, pauseMs);
  }
  return byKind;
}

const kindNames = { s: 'scavenges', mc: 'mark-compacts', ms: 'mark-sweeps', mmc: 'minor mark-compacts' };

const database = await throwawayDatabase('gc');
try {
  const seeding = await startExampleBackend({ dbUrl: database.url });
  const { token, organizationId } = await seedProjects(seeding.base);
  await stopChild(seeding.child);

  const backend = await startExampleBackend({ dbUrl: database.url, entry, nodeArgs: ['--trace-gc-nvp', ...extraFlags] });
  // Every collection the backend reports while `recording` is on (V8 prints one line per collection).
  let recording = false;
  const collections = [];
  let partial = '';
  backend.child.stdout.on('data', (chunk) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop();
    if (!recording) return;
    for (const line of lines) {
      const collection = parseCollection(line);
      if (collection) collections.push(collection);
    }
  });

  const args = listLoadArgs(backend.base, { token, organizationId });
  await runWrk(['-d', `${warmupSeconds}s`, ...args], warmupSeconds);
  recording = true;
  const load = await runWrk(['-d', `${seconds}s`, ...args], seconds);
  recording = false;
  await stopChild(backend.child);

  const perRequest = (key) => Math.round(collections.reduce((sum, collection) => sum + collection[key], 0) / load.requests);
  const byKind = summarize(collections);
  const result = {
    date: new Date().toISOString(),
    entry,
    nodeFlags: extraFlags,
    seconds,
    requests: load.requests,
    rps: Math.round(load.rps),
    p50Ms: load.latencyUs.p50 / 1000,
    p99Ms: load.latencyUs.p99 / 1000,
    // Bytes per request: allocated in the young generation, still alive at a scavenge, promoted.
    bytesPerRequest: { allocated: perRequest('allocated'), survivedScavenge: perRequest('survived'), promoted: perRequest('promoted') },
    collections: byKind,
    percentOfRunInPauses: Math.round((collections.reduce((sum, collection) => sum + collection.pauseMs, 0) / (seconds * 1000)) * 1000) / 10,
  };
  console.log(`[bench] ${entry}${extraFlags.length ? ` ${extraFlags.join(' ')}` : ''}: ${result.rps} rps, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms`);
  console.log(`[bench] per request: ${result.bytesPerRequest.allocated} B allocated, ${result.bytesPerRequest.survivedScavenge} B survived a scavenge, ${result.bytesPerRequest.promoted} B promoted`);
  for (const [kind, summary] of Object.entries(byKind)) {
    console.log(`[bench] ${kindNames[kind] ?? kind}: ${summary.count}, ${summary.totalPauseMs} ms in all, longest ${summary.longestPauseMs} ms`);
  }
  console.log(`[bench] ${result.percentOfRunInPauses} % of the ${seconds} s in pauses`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  for (const child of children) await stopChild(child);
  await database.drop();
}
