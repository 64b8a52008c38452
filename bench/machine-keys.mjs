#!/usr/bin/env node
// What a machine key's request costs against a session's (issue 40, item 3; goal: within 10 %).
// The example, built as it is, on PostgreSQL with production settings: one user's organization
// with 50 projects, then `GET /Projects?limit=20` with 20 connections (wrk), in turns: the
// session (Authorization: Bearer) and one machine key (x-api-key, rateLimitMax high enough never
// to refuse), then the reverse order, so the machine's drift falls on both. Reports each side's
// rate, the key/session ratio (median of the pairs), and the WAL written per request: a key's read
// wrote its row on every request before the key's count moved to the rate-limit store.
//
//   npm run bootstrap && (cd examples/saas-backend && npm run build)
//   node bench/machine-keys.mjs
//
// Settings: BENCH_PG_URL, BENCH_PAIRS (3), BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8).
// Linux; needs wrk. Writes bench/results/machine-keys.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, children, cpuTicks, expectStatus, listLoadArgs, median, postgresCpuTicks, runWrk, seedProjects, startExampleBackend, stopChild, throwawayDatabase, walPosition } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'machine-keys.json');
const pairs = Number(process.env.BENCH_PAIRS ?? 3);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);

const database = await throwawayDatabase('keys');
let backend;
try {
  backend = await startExampleBackend({ dbUrl: database.url });
  const { token, organizationId } = await seedProjects(backend.base, { projects: 50 });
  const made = await expectStatus(
    api(backend.base, 'POST', '/api/auth/api-keys', { token, organizationId, body: { name: 'bench', permissions: { Project: ['list'] }, rateLimitMax: 1_000_000, rateLimitTimeWindow: 1000 } }),
    201,
    'POST /api/auth/api-keys',
  );
  const sessionArgs = listLoadArgs(backend.base, { token, organizationId });
  // The same load with the key in place of the session (and no organization header: the key's own).
  const keyArgs = ['-t', '2', '-c', '20', '--timeout', '5s', '-s', sessionArgs[sessionArgs.indexOf('-s') + 1], '-H', `x-api-key: ${made.data.key}`, `${backend.base}/Projects?limit=20`];
  const sides = { session: sessionArgs, key: keyArgs };

  const runs = [];
  for (const args of Object.values(sides)) await runWrk([...args, '-d', `${warmupSeconds}s`], warmupSeconds);
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? ['session', 'key'] : ['key', 'session'];
    const rates = {};
    for (const side of order) {
      const walBefore = await walPosition(database.url);
      const ticksBefore = { backend: cpuTicks(backend.child.pid), postgres: postgresCpuTicks() };
      const result = await runWrk([...sides[side], '-d', `${seconds}s`], seconds);
      // Clock ticks are 10 ms: per request, in µs.
      const cpuUs = (ticks) => (ticks * 10_000) / result.requests;
      const backendUs = cpuUs(cpuTicks(backend.child.pid) - ticksBefore.backend);
      const postgresUs = cpuUs(postgresCpuTicks() - ticksBefore.postgres);
      const walBytes = Number((await walPosition(database.url)) - walBefore);
      rates[side] = { rps: result.rps, p99Ms: result.latencyUs.p99 / 1000, backendUs, postgresUs, walBytesPerRequest: walBytes / result.requests };
    }
    runs.push(rates);
    console.log(
      `pair ${pair + 1}: session ${rates.session.rps.toFixed(0)} rps, key ${rates.key.rps.toFixed(0)} rps (key/session ${(rates.key.rps / rates.session.rps).toFixed(3)}); CPU per request (µs) backend ${rates.session.backendUs.toFixed(0)} / ${rates.key.backendUs.toFixed(0)}, PostgreSQL ${rates.session.postgresUs.toFixed(0)} / ${rates.key.postgresUs.toFixed(0)}; WAL per request ${rates.session.walBytesPerRequest.toFixed(1)} / ${rates.key.walBytesPerRequest.toFixed(1)} bytes`,
    );
  }
  const ratio = median(runs.map((rates) => rates.key.rps / rates.session.rps));
  console.log(`key/session, median of ${pairs} pairs: ${ratio.toFixed(3)} (goal: at least 0.9)`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), pairs, seconds, ratio, runs }, null, 2)}\n`);
} finally {
  if (backend) await stopChild(backend.child);
  for (const child of children) await stopChild(child);
  await database.drop();
}
