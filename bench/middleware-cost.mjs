#!/usr/bin/env node
// What each piece of the example's per-request pipeline costs under the list load: the compiled
// example, then copies of it with one middleware taken out of src/app.ts's pipeline at a time
// (then all of them at once, then the empty router of your own routes), each loaded like (a) in
// run.mjs. The copies are patched builds in examples/saas-backend/dist-bench/ (removed at the
// end); nothing in the project changes.
//
//   node bench/middleware-cost.mjs
//   BENCH_INSTRUCTIONS=1 node bench/middleware-cost.mjs   # instructions instead of rps
//
// With BENCH_INSTRUCTIONS=1 each copy is kept (dist-bench-0, dist-bench-1, ...) and measured by
// bench/instructions.mjs instead of wrk: what each piece costs the main thread in instructions
// per list request, a figure that does not move with the machine's load (about 2 minutes a copy;
// needs valgrind).
//
// Settings: BENCH_PG_URL, BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8). Needs wrk.
// Writes bench/results/middleware-cost.json (or, counting instructions, results/instructions.json).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, children, exampleDir, expectStatus, listLoadArgs, runWrk, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'middleware-cost.json');
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const listPath = '/Projects?limit=20';
const patchedDir = path.join(exampleDir, 'dist-bench');

/** The lines of dist/app.js each variant leaves out (as tsc writes them). */
const pieces = {
  'request logger': [/^\s*app\.use\(requestLogger\(logger, metrics\)\);$/m],
  'security headers (helmet)': [/^\s*app\.use\(securityHeaders\(\{[\s\S]*?\}\)\);$/m],
  cors: [/^\s*app\.use\(corsPolicy\(config\)\);$/m],
  'rate limits (/api and data)': [/^\s*app\.use\('\/api', rateLimits\.api\);$/m, /^\s*app\.use\(rateLimits\.data\);$/m],
  'CSRF guard': [/^\s*app\.use\(csrfGuard\(config\)\);$/m],
  'JSON body parser': [/^\s*app\.use\(whenBodySent\(express\.json\(.*\)\)\);$/m],
};
/**
 * Not a middleware: your routes' router (src/extensions), empty in the example. A request that no
 * route of it matches leaves it through `setImmediate` (Express's router does that when it runs
 * out of layers), and that turn of the event loop pays for itself under load (bench/README.md).
 */
const extensionRouter = [/^\s*app\.use\(extensionRouter\(\{ config, db, auth \}\)\);$/m];
const variants = [
  ['nothing (the full pipeline)', []],
  ...Object.entries(pieces),
  ['all of the above', Object.values(pieces).flat()],
  ['your routes (an empty router)', extensionRouter],
];

function buildVariant(patterns, into = patchedDir) {
  fs.rmSync(into, { recursive: true, force: true });
  fs.cpSync(path.join(exampleDir, 'dist'), into, { recursive: true });
  const appFile = path.join(into, 'app.js');
  let source = fs.readFileSync(appFile, 'utf8');
  for (const pattern of patterns) {
    if (!pattern.test(source)) throw new Error(`dist/app.js no longer has ${pattern}: update bench/middleware-cost.mjs`);
    source = source.replace(pattern, '');
  }
  fs.writeFileSync(appFile, source);
}

if (process.env.BENCH_INSTRUCTIONS === '1') {
  // Built as startExampleBackend builds it, then one copy per variant, counted by instructions.mjs.
  spawnSync(process.execPath, [path.join(exampleDir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: exampleDir, stdio: 'inherit' });
  const copies = variants.map(([name, patterns], index) => {
    const into = `${patchedDir}-${index}`;
    buildVariant(patterns, into);
    return `${into}=without ${name}`;
  });
  try {
    const counted = spawnSync(process.execPath, [path.join(benchDir, 'instructions.mjs'), ...copies], { stdio: 'inherit', env: { BENCH_LOADS: 'list', ...process.env } });
    process.exitCode = counted.status ?? 1;
  } finally {
    for (const copy of copies) fs.rmSync(copy, { recursive: true, force: true });
  }
  process.exit();
}

const database = await throwawayDatabase('mw');
const dbUrl = database.url;
try {
  // Seed once, through the full backend (which also builds dist/).
  let backend = await startExampleBackend({ dbUrl });
  const { token, organizationId } = await seedProjects(backend.base);
  await stopChild(backend.child);

  const results = [];
  for (const [name, patterns] of variants) {
    buildVariant(patterns);
    backend = await startExampleBackend({ dbUrl, entry: 'dist-bench/index.js' });
    await expectStatus(api(backend.base, 'GET', listPath, { token, organizationId }), 200, `${name}: GET ${listPath}`);
    const load = (duration) =>
      runWrk(['-d', `${duration}s`, ...listLoadArgs(backend.base, { token, organizationId })], duration);
    await load(warmupSeconds);
    const measured = await load(seconds);
    await stopChild(backend.child);
    results.push({ without: name, rps: Math.round(measured.rps), p50Ms: measured.latencyUs.p50 / 1000, p99Ms: measured.latencyUs.p99 / 1000 });
    console.log(`[bench] without ${name}: ${Math.round(measured.rps)} rps, p99 ${(measured.latencyUs.p99 / 1000).toFixed(1)} ms`);
  }
  const base = results[0].rps;
  console.log('\n  taken out                        rps    gain');
  for (const result of results) console.log(`  ${result.without.padEnd(30)} ${String(result.rps).padStart(6)}   ${result === results[0] ? '' : `${(((result.rps - base) / base) * 100).toFixed(1)} %`}`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), warmupSeconds, seconds, results }, null, 2)}\n`);
} finally {
  for (const child of children) await stopChild(child);
  fs.rmSync(patchedDir, { recursive: true, force: true });
  await database.drop();
}
