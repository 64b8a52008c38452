#!/usr/bin/env node
// Sign-in throughput against the bcrypt bound. A sign-in is one bcrypt comparison plus a few
// statements; the comparison is the cost that is there on purpose. So the bound is how many
// comparisons one Node process makes per second at the same cost and the same concurrency (the
// `bcrypt` package the backend uses, on libuv's thread pool), and the backend should come close:
//   1. the bound: BENCH_SIGN_IN_CONNECTIONS concurrent bcrypt.compare loops for the duration;
//   2. the backend (compiled, NODE_ENV=production, PostgreSQL, BCRYPT_COST the same, rate limits
//      out of the way): wrk POST /api/auth/sign-in/email with the same concurrency.
//
//   node bench/sign-in.mjs
//
// Settings: BENCH_PG_URL, BENCH_BCRYPT_COST (10), BENCH_SIGN_IN_CONNECTIONS (4),
// BENCH_SIGN_IN_SECONDS (10), BENCH_WARMUP_SECONDS (3). Writes bench/results/sign-in.json.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, children, exampleDir, expectStatus, runWrk, startExampleBackend, stopChild } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'sign-in.json');
const setting = (name, fallback) => Number(process.env[name] ?? fallback);
const settings = {
  pgUrl: process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres',
  cost: setting('BENCH_BCRYPT_COST', 10),
  connections: setting('BENCH_SIGN_IN_CONNECTIONS', 4),
  seconds: setting('BENCH_SIGN_IN_SECONDS', 10),
  warmupSeconds: setting('BENCH_WARMUP_SECONDS', 3),
};
const requireFromExample = createRequire(path.join(exampleDir, 'package.json'));
const pg = requireFromExample('pg');
const bcrypt = requireFromExample('bcrypt');
const password = 'bench-password-1';

/** Comparisons per second with `connections` of them in flight at once, for `seconds`. */
async function bcryptBound(seconds) {
  const hash = await bcrypt.hash(password, settings.cost);
  const deadline = Date.now() + seconds * 1000;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: settings.connections }, async () => {
      while (Date.now() < deadline) {
        if (!(await bcrypt.compare(password, hash))) throw new Error('bcrypt.compare said no');
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

function wrkSignIn(base, seconds) {
  const args = ['-t', '2', '-c', String(settings.connections), '-d', `${seconds}s`, '--timeout', '10s', '-s', path.join(benchDir, 'wrk-sign-in.lua'), `${base}/api/auth/sign-in/email`];
  const env = { ...process.env, BENCH_SIGN_IN_BODY: JSON.stringify({ email: 'bench@example.com', password }), BENCH_REPORT_LUA: path.join(benchDir, 'wrk-report.lua') };
  return runWrk(args, seconds, env);
}

const admin = new pg.Client({ connectionString: settings.pgUrl });
const databaseName = `authstrap_bench_signin_${process.pid}_${randomBytes(3).toString('hex')}`;
try {
  await admin.connect();
  await bcryptBound(settings.warmupSeconds);
  const bound = await bcryptBound(settings.seconds);
  console.log(`[bench] bcrypt bound at cost ${settings.cost}, ${settings.connections} at a time: ${bound.toFixed(1)} comparisons/s`);

  await admin.query(`CREATE DATABASE "${databaseName}"`);
  const url = new URL(settings.pgUrl);
  url.pathname = `/${databaseName}`;
  const backend = await startExampleBackend({ dbUrl: url.toString(), env: { BCRYPT_COST: String(settings.cost) } });
  await expectStatus(api(backend.base, 'POST', '/api/auth/sign-up/email', { body: { email: 'bench@example.com', name: 'Bench', password } }), 201, 'sign-up');
  await wrkSignIn(backend.base, settings.warmupSeconds);
  const measured = await wrkSignIn(backend.base, settings.seconds);
  await stopChild(backend.child);

  const results = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, node: process.version },
    bcryptCost: settings.cost,
    connections: settings.connections,
    seconds: settings.seconds,
    bcryptBoundPerSecond: Number(bound.toFixed(1)),
    signInsPerSecond: Number(measured.rps.toFixed(1)),
    ratio: Number((measured.rps / bound).toFixed(3)),
    signInLatencyMs: { p50: measured.latencyUs.p50 / 1000, p99: measured.latencyUs.p99 / 1000 },
  };
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`[bench] sign-in: ${results.signInsPerSecond}/s (p50 ${results.signInLatencyMs.p50} ms, p99 ${results.signInLatencyMs.p99} ms): ${results.ratio} x the bcrypt bound`);
} finally {
  for (const child of children) await stopChild(child);
  await admin.query(`DROP DATABASE IF EXISTS "${databaseName}" WITH (FORCE)`).catch(() => {});
  await admin.end().catch(() => {});
}
