#!/usr/bin/env node
// What row-level security costs (issue 28): the example, built as it is, on two databases that
// differ only in whether the policies of its tenant tables are on (as generated) or switched off
// (ALTER TABLE ... DISABLE ROW LEVEL SECURITY, by the owner). Both backends act as authstrap_app
// and send the same statements in the same round trips; the difference is PostgreSQL applying
// the policies. Loaded in turns, on / off, off / on, ... (the machine's drift falls on both), with
// the authenticated list (GET /Projects?limit=20) and a write (POST /Projects {name}). Also counts
// round trips and statements per request on the wire (bench/lib/pg-wire-counter.mjs).
//
//   npm run bootstrap && (cd examples/saas-backend && npm run build)
//   node bench/row-security.mjs
//
// Settings: BENCH_PG_URL, BENCH_PAIRS (3), BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8).
// Linux; needs wrk. Writes bench/results/row-security.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { perRequest, startWireCounter } from './lib/pg-wire-counter.mjs';
import { api, children, expectStatus, listLoadArgs, median, queryAsOwner, runWrk, seedProjects, startExampleBackend, stopChild, throwawayDatabase, writeLoadArgs } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'row-security.json');
const pairs = Number(process.env.BENCH_PAIRS ?? 3);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);



const databases = { on: await throwawayDatabase('rlson'), off: await throwawayDatabase('rlsoff') };
try {
  // The list reads one organization's 50 projects; the write load creates projects in another, so
  // that the rows it adds never change what the list reads.
  const seeded = {};
  const writers = {};
  for (const [side, database] of Object.entries(databases)) {
    const backend = await startExampleBackend({ dbUrl: database.url });
    seeded[side] = await seedProjects(backend.base);
    writers[side] = await seedProjects(backend.base, { email: 'writer@example.com', name: 'Writer', projects: 0 });
    await stopChild(backend.child);
  }
  await queryAsOwner(databases.off.url, 'ALTER TABLE "Project" NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY; ALTER TABLE "Task" NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY');

  // Round trips and statements per request, counted on the wire, with the policies on.
  const target = new URL(databases.on.url);
  const counter = await startWireCounter({ upstreamHost: target.hostname, upstreamPort: Number(target.port || 5432) });
  target.host = `127.0.0.1:${counter.port}`;
  const counted = await startExampleBackend({ dbUrl: target.toString(), env: { OUTBOX_POLL_MS: '600000' } });
  const wire = {};
  for (const [what, method, route, body, who] of [['list', 'GET', '/Projects?limit=20', undefined, seeded.on], ['write', 'POST', '/Projects', { name: 'Counted' }, writers.on]]) {
    await expectStatus(api(counted.base, method, route, { ...who, body }), method === 'POST' ? 201 : 200, what);
    const before = counter.snapshot();
    for (let index = 0; index < 20; index += 1) await api(counted.base, method, route, { ...who, body });
    const measured = perRequest(before, counter.snapshot(), 20);
    wire[what] = { roundTripsPerRequest: measured.roundTripsPerRequest, statementsPerRequest: measured.statementsPerRequest };
  }
  await stopChild(counted.child);
  await counter.close();
  console.log(`[bench] on the wire, policies on: list ${JSON.stringify(wire.list)}, write ${JSON.stringify(wire.write)}`);

  const runs = { list: { on: [], off: [] }, write: { on: [], off: [] } };
  for (let pair = 0; pair < pairs; pair += 1) {
    for (const side of pair % 2 === 0 ? ['on', 'off'] : ['off', 'on']) {
      const backend = await startExampleBackend({ dbUrl: databases[side].url });
      for (const [load, argsOf, who] of [['list', listLoadArgs, seeded], ['write', writeLoadArgs, writers]]) {
        const args = argsOf(backend.base, who[side]);
        const env = { ...process.env, BENCH_REPORT_LUA: path.join(benchDir, 'wrk-report.lua') };
        await runWrk(['-d', `${warmupSeconds}s`, ...args], warmupSeconds, env);
        const result = await runWrk(['-d', `${seconds}s`, ...args], seconds, env);
        const run = { rps: Math.round(result.rps), p50Ms: result.latencyUs.p50 / 1000, p99Ms: result.latencyUs.p99 / 1000 };
        runs[load][side].push(run);
        console.log(`[bench] ${load}, policies ${side}: ${run.rps} rps, p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms`);
      }
      await stopChild(backend.child);
    }
  }

  const summary = {};
  for (const load of ['list', 'write']) {
    const of = (side) => ({ rps: median(runs[load][side].map((run) => run.rps)), p50Ms: median(runs[load][side].map((run) => run.p50Ms)), p99Ms: median(runs[load][side].map((run) => run.p99Ms)) });
    summary[load] = { on: of('on'), off: of('off') };
    summary[load].onOverOff = Number((summary[load].on.rps / summary[load].off.rps).toFixed(3));
    console.log(`${load}: policies on ${summary[load].on.rps} rps (p99 ${summary[load].on.p99Ms} ms), off ${summary[load].off.rps} rps (p99 ${summary[load].off.p99Ms} ms): on/off ${summary[load].onOverOff}`);
  }
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), pairs, warmupSeconds, seconds, wire, runs, summary }, null, 2)}\n`);
} finally {
  for (const child of children) await stopChild(child);
  for (const database of Object.values(databases)) await database.drop();
}
