#!/usr/bin/env node
// Where a request's CPU, bytes and allocations go. Under the list load of run.mjs: the compiled
// example (a), the bare server (b), the Express floor (d, bench/express-floor.mjs: (a)'s own list
// statement on Express 5 with nothing else) and the floor (f, bench/floor-server.mjs: (a)'s whole
// job on node:http + pg, one statement). Under the write load (POST /Projects {name}): (a) and (f).
// For each: rps, the CPU time its Node process and PostgreSQL (all `postgres` processes) spent per
// request, read from /proc (Linux only), the bytes V8 allocated per request (bench/lib/
// allocation-meter.mjs), and the bytes of one response on the wire, headers included. The rps
// figures of run.mjs say how fast; these say which process, and what in it, to look at.
//
//   node bench/cpu-per-request.mjs                               # about two minutes; needs wrk
//   BENCH_CPU_PROFILE=/tmp/prof node bench/cpu-per-request.mjs   # also V8 CPU profiles of (a) and (f)
//
// With BENCH_CPU_PROFILE=<dir> each server process of each load writes a V8 CPU profile in a
// folder of its own under <dir> (a-list, f-list, a-write, f-write); the script prints the
// `node bench/profile-summary.mjs` command for each (the layer-by-layer split). With
// BENCH_HEAP_PROFILE=<dir> each writes a sampling heap profile of the measured run there
// (<label>.heapprofile; `node bench/heap-summary.mjs` says who allocates); its CPU figures then
// include the profiler's cost.
//
// Settings: BENCH_PG_URL, BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8), BENCH_ONLY (a
// comma-separated subset of a,b,d,f). Writes bench/results/cpu-per-request.json.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cpuTicks,
  freePort,
  listLoadArgs,
  postgresCpuTicks,
  runWrk,
  seedProjects,
  startChild,
  startExampleBackend,
  stopChild,
  throwawayDatabase,
  waitForOk,
  writeLoadArgs,
} from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'cpu-per-request.json');
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const profileDir = process.env.BENCH_CPU_PROFILE && path.resolve(process.env.BENCH_CPU_PROFILE);
const heapProfileDir = process.env.BENCH_HEAP_PROFILE && path.resolve(process.env.BENCH_HEAP_PROFILE);
if (heapProfileDir) fs.mkdirSync(heapProfileDir, { recursive: true });
const only = new Set((process.env.BENCH_ONLY ?? 'a,b,d,f').split(',').map((name) => name.trim()));
const allocationMeter = path.join(benchDir, 'lib', 'allocation-meter.mjs');
const listPath = '/Projects?limit=20';
// wrk-create.lua (the write load) reports through wrk-report.lua.
process.env.BENCH_REPORT_LUA = path.join(benchDir, 'wrk-report.lua');

if (!fs.existsSync('/proc/self/stat')) {
  console.error('bench: cpu-per-request.mjs reads /proc, so it runs on Linux only');
  process.exit(2);
}

/** Node's flags for a server measured under `label`: the allocation meter, and the profiler when asked. */
function measuredNodeArgs(label) {
  const args = ['--import', allocationMeter];
  if (profileDir) args.push('--cpu-prof', `--cpu-prof-dir=${path.join(profileDir, label)}`);
  return args;
}

/** Where a measured server's allocation meter writes (see bench/lib/allocation-meter.mjs). */
const allocationsFile = (label) => path.join(os.tmpdir(), `authstrap-bench-allocations-${process.pid}-${label}.txt`);

/** The meter's settings for a server measured under `label`. */
const meterEnv = (label) => ({
  BENCH_ALLOCATIONS_FILE: allocationsFile(label),
  ...(heapProfileDir ? { BENCH_HEAP_PROFILE_FILE: path.join(heapProfileDir, `${label}.heapprofile`) } : {}),
});

/** The bytes the server's JavaScript has allocated so far: asks its meter and waits for the answer. */
async function allocatedBytes(pid, label) {
  const file = allocationsFile(label);
  const previous = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  process.kill(pid, 'SIGUSR2');
  for (let tries = 0; tries < 500; tries += 1) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    if (text !== previous && text.endsWith('\n')) return Number(text.split(' ')[1]);
  }
  throw new Error(`the allocation meter of ${label} did not answer`);
}

/**
 * One response's bytes on the wire, headers included: the request sent by hand on a socket of its
 * own (HTTP/1.1, closed after the answer), so nothing but the server decides what comes back.
 */
function responseBytes(url, { method = 'GET', headers = {}, body } = {}) {
  const { hostname, port, pathname, search } = new URL(url);
  const lines = [`${method} ${pathname}${search} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const answer = Buffer.concat(chunks);
      const headerEnd = answer.indexOf('\r\n\r\n') + 4;
      resolve({ status: Number(answer.subarray(9, 12).toString()), headerBytes: headerEnd, bodyBytes: answer.length - headerEnd, totalBytes: answer.length });
    });
    // Written, not ended: a server may take the end of the request for the end of the connection.
    socket.write(`${lines.join('\r\n')}\r\n\r\n${body ?? ''}`);
  });
}

/** CPU ticks so far of the given Node process and of every PostgreSQL process. */
function snapshot(nodePid) {
  return { node: cpuTicks(nodePid), postgres: postgresCpuTicks() };
}

/** Loads one server with `loadArgs` (wrk's, without the duration) and reports what a request cost it. */
async function measure(name, label, pid, loadArgs, oneRequest) {
  const warmup = await runWrk(['-d', `${warmupSeconds}s`, ...loadArgs], warmupSeconds);
  const allocatedBefore = await allocatedBytes(pid, label);
  const before = snapshot(pid);
  const result = await runWrk(['-d', `${seconds}s`, ...loadArgs], seconds);
  const after = snapshot(pid);
  const allocatedAfter = await allocatedBytes(pid, label);
  const wire = await oneRequest();
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
    allocatedBytesPerRequest: Math.round((allocatedAfter - allocatedBefore) / result.requests),
    response: wire,
    // All the process answered, warm-up included: what its CPU profile covers.
    requestsAnswered: warmup.requests + result.requests + 1,
  };
  console.log(
    `[bench] ${name}: ${measured.rps} rps, p99 ${measured.p99Ms} ms; per request: Node ${measured.nodeCpuUsPerRequest} µs, PostgreSQL ${measured.postgresCpuUsPerRequest} µs, ` +
      `${Math.round(measured.allocatedBytesPerRequest / 100) / 10} KB allocated; response ${wire.totalBytes} bytes (${wire.headerBytes} of headers); Node busy ${measured.nodeBusyPercentOfOneCore} % of one core`,
  );
  if (profileDir) console.log(`[bench]   profile: node bench/profile-summary.mjs ${path.join(profileDir, label)}/*.cpuprofile ${measured.requestsAnswered}`);
  if (heapProfileDir) console.log(`[bench]   allocations: node bench/heap-summary.mjs ${path.join(heapProfileDir, `${label}.heapprofile`)} ${result.requests}`);
  return measured;
}

/** A bench server of its own (bench/<file>) on a free port, measured with the meter (and profiler). */
async function startBenchServer(name, file, label, env, readyPath) {
  const port = await freePort();
  const child = startChild(name, process.execPath, [...measuredNodeArgs(label), path.join(benchDir, file)], {
    cwd: benchDir,
    env: { PATH: process.env.PATH, ...env, PORT: String(port), ...meterEnv(label) },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}${readyPath}`, child, 30);
  return { child, base };
}

const database = await throwawayDatabase('cpu');
const dbUrl = database.url;
const results = [];
try {
  // Seed through the API, as run.mjs does; each measured server then starts afresh.
  const seeding = await startExampleBackend({ dbUrl });
  const { token, organizationId } = await seedProjects(seeding.base);
  await stopChild(seeding.child);
  const caller = { token, organizationId };
  const callerHeaders = { authorization: `Bearer ${token}`, 'x-organization-id': organizationId };
  const newProject = JSON.stringify({ name: 'Bench one request' });

  const example = async (label) => startExampleBackend({ dbUrl, nodeArgs: measuredNodeArgs(label), env: meterEnv(label) });
  let exampleBody;
  if (only.has('a')) {
    const a = await example('a-list');
    exampleBody = await (await fetch(`${a.base}${listPath}`, { headers: callerHeaders })).text();
    results.push({ load: 'list', ...(await measure('(a) example, list', 'a-list', a.child.pid, listLoadArgs(a.base, caller), () => responseBytes(`${a.base}${listPath}`, { headers: callerHeaders }))) });
    await stopChild(a.child);
  }
  if (only.has('b')) {
    const b = await startBenchServer('bare server', 'bare-server.mjs', 'b-list', { DATABASE_URL: dbUrl, ORG_ID: organizationId }, listPath);
    const args = listLoadArgs(b.base, caller).filter((arg, i, all) => arg !== '-H' && all[i - 1] !== '-H');
    results.push({ load: 'list', ...(await measure('(b) bare server, list', 'b-list', b.child.pid, args, () => responseBytes(`${b.base}${listPath}`))) });
    await stopChild(b.child);
  }
  if (only.has('d')) {
    const d = await startBenchServer('express floor', 'express-floor.mjs', 'd-list', { DATABASE_URL: dbUrl, ORG_ID: organizationId }, listPath);
    // (d) must answer exactly what (a) answered, or the comparison means nothing.
    const body = await (await fetch(`${d.base}${listPath}`)).text();
    if (exampleBody !== undefined && body !== exampleBody) throw new Error(`the Express floor's body differs from the example's:\n${body.slice(0, 300)}\n${exampleBody.slice(0, 300)}`);
    const args = listLoadArgs(d.base, caller).filter((arg, i, all) => arg !== '-H' && all[i - 1] !== '-H');
    results.push({ load: 'list', ...(await measure('(d) Express floor, list', 'd-list', d.child.pid, args, () => responseBytes(`${d.base}${listPath}`))) });
    await stopChild(d.child);
  }
  if (only.has('f')) {
    const f = await startBenchServer('floor server', 'floor-server.mjs', 'f-list', { DATABASE_URL: dbUrl }, '/health');
    const body = await (await fetch(`${f.base}${listPath}`, { headers: callerHeaders })).text();
    if (exampleBody !== undefined && JSON.stringify(JSON.parse(body)) !== JSON.stringify(JSON.parse(exampleBody))) throw new Error(`the floor's page differs from the example's:\n${body.slice(0, 300)}\n${exampleBody.slice(0, 300)}`);
    results.push({ load: 'list', ...(await measure('(f) floor, list', 'f-list', f.child.pid, listLoadArgs(f.base, caller), () => responseBytes(`${f.base}${listPath}`, { headers: callerHeaders }))) });
    await stopChild(f.child);
  }
  if (only.has('a')) {
    const a = await example('a-write');
    results.push({ load: 'write', ...(await measure('(a) example, write', 'a-write', a.child.pid, writeLoadArgs(a.base, caller), () => responseBytes(`${a.base}/Projects`, { method: 'POST', headers: callerHeaders, body: newProject }))) });
    await stopChild(a.child);
  }
  if (only.has('f')) {
    const f = await startBenchServer('floor server', 'floor-server.mjs', 'f-write', { DATABASE_URL: dbUrl }, '/health');
    results.push({ load: 'write', ...(await measure('(f) floor, write', 'f-write', f.child.pid, writeLoadArgs(f.base, caller), () => responseBytes(`${f.base}/Projects`, { method: 'POST', headers: callerHeaders, body: newProject }))) });
    await stopChild(f.child);
  }

  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), warmupSeconds, seconds, results }, null, 2)}\n`);
  console.log(`written to ${path.relative(process.cwd(), resultsFile)}`);
} finally {
  for (const label of ['a-list', 'b-list', 'd-list', 'f-list', 'a-write', 'f-write']) fs.rmSync(allocationsFile(label), { force: true });
  await database.drop();
}
