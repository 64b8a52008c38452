#!/usr/bin/env node
// Where a list request's CPU goes: the compiled example (a), the bare server (b) and the Express
// floor (d, bench/express-floor.mjs: (a)'s own list statement on Express 5 with nothing else) under
// the list load of run.mjs, each with the CPU time its Node process and PostgreSQL (all `postgres`
// processes) spent per request, read from /proc (Linux only). The rps figures of run.mjs say how
// fast; these say which process to look at. BENCH_CPU_PROFILE=<dir> also writes a V8 CPU profile
// of (a) there (open it in Chrome DevTools' Performance panel).
//
//   node bench/cpu-per-request.mjs      # about a minute; needs wrk
//
// Settings: BENCH_PG_URL, BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8).
// Writes bench/results/cpu-per-request.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, freePort, postgresCpuTicks, runWrk, seedProjects, startChild, startExampleBackend, stopChild, throwawayDatabase, waitForOk } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'cpu-per-request.json');
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const profileDir = process.env.BENCH_CPU_PROFILE;
const listPath = '/Projects?limit=20';

if (!fs.existsSync('/proc/self/stat')) {
  console.error('bench: cpu-per-request.mjs reads /proc, so it runs on Linux only');
  process.exit(2);
}

/** CPU ticks so far of the given Node process and of every PostgreSQL process. */
function snapshot(nodePid) {
  return { node: cpuTicks(nodePid), postgres: postgresCpuTicks() };
}

/** Loads one server and reports rps, latency and CPU microseconds per request. */
async function measure(name, pid, url, headers) {
  const args = ['-t', '2', '-c', '20', '--timeout', '5s', '-s', path.join(benchDir, 'wrk-report.lua'), ...headers.flatMap((header) => ['-H', header]), url];
  const warmup = await runWrk(['-d', `${warmupSeconds}s`, ...args], warmupSeconds);
  const before = snapshot(pid);
  const result = await runWrk(['-d', `${seconds}s`, ...args], seconds);
  const after = snapshot(pid);
  const microsecondsPerRequest = (ticks) => Math.round((ticks * 10_000) / result.requests);
  const measured = {
    name,
    rps: Math.round(result.rps),
    p50Ms: result.latencyUs.p50 / 1000,
    p99Ms: result.latencyUs.p99 / 1000,
    nodeCpuUsPerRequest: microsecondsPerRequest(after.node - before.node),
    postgresCpuUsPerRequest: microsecondsPerRequest(after.postgres - before.postgres),
    // Node runs JavaScript on one thread: near 100 % of a core, that thread is what bounds the rps.
    nodeBusyPercentOfOneCore: Math.round((after.node - before.node) / seconds),
    // All the process answered, warm-up included: what its CPU profile covers.
    requestsAnswered: warmup.requests + result.requests,
  };
  console.log(
    `[bench] ${name}: ${measured.rps} rps, p99 ${measured.p99Ms} ms; CPU per request: Node ${measured.nodeCpuUsPerRequest} µs, PostgreSQL ${measured.postgresCpuUsPerRequest} µs; Node busy ${measured.nodeBusyPercentOfOneCore} % of one core`,
  );
  return measured;
}

const database = await throwawayDatabase('cpu');
const dbUrl = database.url;
try {
  // Seed through the API, as run.mjs does, then restart (with the profiler, when asked).
  let backend = await startExampleBackend({ dbUrl });
  const { token, organizationId } = await seedProjects(backend.base);
  await stopChild(backend.child);
  backend = await startExampleBackend({ dbUrl, nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir)}`] : [] });
  const exampleHeaders = [`Authorization: Bearer ${token}`, `x-organization-id: ${organizationId}`];
  const exampleBody = await (await fetch(`${backend.base}${listPath}`, { headers: { authorization: `Bearer ${token}`, 'x-organization-id': organizationId } })).text();
  const example = await measure('(a) example', backend.child.pid, `${backend.base}${listPath}`, exampleHeaders);
  await stopChild(backend.child);

  const port = await freePort();
  const bare = startChild('bare server', process.execPath, [path.join(benchDir, 'bare-server.mjs')], {
    env: { PATH: process.env.PATH, DATABASE_URL: dbUrl, ORG_ID: organizationId, PORT: String(port) },
  });
  await waitForOk(`http://127.0.0.1:${port}${listPath}`, bare, 30);
  const bareResult = await measure('(b) bare server', bare.pid, `http://127.0.0.1:${port}${listPath}`, []);
  await stopChild(bare);

  // (d) must answer exactly what (a) answered, or the comparison means nothing.
  const floorPort = await freePort();
  const floor = startChild('express floor', process.execPath, [path.join(benchDir, 'express-floor.mjs')], {
    env: { PATH: process.env.PATH, DATABASE_URL: dbUrl, ORG_ID: organizationId, PORT: String(floorPort) },
  });
  await waitForOk(`http://127.0.0.1:${floorPort}${listPath}`, floor, 30);
  const floorBody = await (await fetch(`http://127.0.0.1:${floorPort}${listPath}`)).text();
  if (floorBody !== exampleBody) throw new Error(`the Express floor's body differs from the example's:\n${floorBody.slice(0, 300)}\n${exampleBody.slice(0, 300)}`);
  const floorResult = await measure('(d) Express floor', floor.pid, `http://127.0.0.1:${floorPort}${listPath}`, []);
  await stopChild(floor);

  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), warmupSeconds, seconds, results: [example, bareResult, floorResult] }, null, 2)}\n`);
  console.log(`written to ${path.relative(process.cwd(), resultsFile)}`);
  if (profileDir) console.log(`CPU profile of (a) in ${profileDir}; read it with: node bench/profile-summary.mjs <its .cpuprofile> ${example.requestsAnswered}`);
} finally {
  await database.drop();
}
