#!/usr/bin/env node
// What events and webhooks cost a write (issue 29): the example, built as it is, on three
// databases that differ only in what a POST /Projects records:
//   off      the events trigger of the tables switched off (ALTER TABLE ... DISABLE TRIGGER, by the
//            owner): no event, no delivery, as before events existed (the request still sends its
//            context in the round trip of its statement);
//   events   as generated: each write also writes its event (authstrap.record_event);
//   webhook  as generated, with one webhook endpoint subscribed to project.created: each write also
//            puts a delivery in the outbox, and the backend's worker POSTs it, signed, to a
//            receiver on loopback while the load runs.
// Loaded in turns (off / events / webhook, then the reverse order, ...: the machine's drift falls
// on all), with the write (POST /Projects {name}) and the authenticated list (GET /Projects?limit=20).
// Each run also reports, per request, the CPU of the backend and of PostgreSQL (all its processes)
// and the write-ahead log written. For the webhook side it also reports the time from commit (the
// event's timestamp, taken in the transaction) to the receiver's arrival, p50 and p99, how many
// deliveries were still waiting when the load stopped and how many never arrived (lost: the goal
// is 0); then the same at a pace the worker keeps up with: the list load at full speed and 20
// writes a second beside it.
//
//   npm run bootstrap && (cd examples/saas-backend && npm run build)
//   node bench/events.mjs
//
// Settings: BENCH_PG_URL, BENCH_PAIRS (2), BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8).
// Linux; needs wrk. Runs the backends with NODE_ENV=development, the only mode that lets webhooks go
// to a loopback receiver (WEBHOOKS_ALLOW_PRIVATE). Writes bench/results/events.json.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, children, cpuTicks, expectStatus, listLoadArgs, median, postgresCpuTicks, queryAsOwner, runWrk, seedProjects, startExampleBackend, stopChild, throwawayDatabase, walPosition, writeLoadArgs } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'events.json');
const pairs = Number(process.env.BENCH_PAIRS ?? 2);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const percentile = (values, p) => values.slice().sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];
// One AUTH_SECRET for every start of a side's backend: the endpoint's signing secret is sealed
// with a key derived from it, and a backend started with another could not open it.
const env = { NODE_ENV: 'development', WEBHOOKS_ALLOW_PRIVATE: 'true', OUTBOX_POLL_MS: '200', AUTH_SECRET: randomBytes(24).toString('base64url') };



/** A webhook receiver on loopback: answers 200 at once, and keeps when each event arrived. */
async function startReceiver() {
  const arrivals = new Map();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const event = JSON.parse(body);
      if (!arrivals.has(event.id)) arrivals.set(event.id, Date.now() - Date.parse(event.timestamp));
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/hooks`, arrivals, close: () => new Promise((resolve) => server.close(resolve)) };
}

const sides = ['off', 'events', 'webhook'];
const databases = Object.fromEntries(await Promise.all(sides.map(async (side) => [side, await throwawayDatabase(`events${side}`)])));
const receiver = await startReceiver();
try {
  const seeded = {};
  for (const side of sides) {
    const backend = await startExampleBackend({ dbUrl: databases[side].url, env });
    // The list reads an organization of its own, which the write load never grows: every list
    // run reads the same 50 projects, whichever side and round it is.
    seeded[side] = { list: await seedProjects(backend.base), write: await seedProjects(backend.base, { email: 'writer@example.com', name: 'Writer', projects: 0 }) };
    if (side === 'webhook') {
      await expectStatus(api(backend.base, 'POST', '/webhook-endpoints', { ...seeded[side].write, body: { url: receiver.url, eventTypes: ['project.created'] } }), 201, 'POST /webhook-endpoints');
    }
    await stopChild(backend.child);
  }
  await queryAsOwner(databases.off.url, 'ALTER TABLE "Project" DISABLE TRIGGER "authstrap_events"; ALTER TABLE "Task" DISABLE TRIGGER "authstrap_events"');

  const runs = { write: Object.fromEntries(sides.map((side) => [side, []])), list: Object.fromEntries(sides.map((side) => [side, []])) };
  const delivery = [];
  for (let pair = 0; pair < pairs; pair += 1) {
    for (const side of pair % 2 === 0 ? sides : [...sides].reverse()) {
      const backend = await startExampleBackend({ dbUrl: databases[side].url, env });
      for (const [load, argsOf] of [['write', writeLoadArgs], ['list', listLoadArgs]]) {
        const args = argsOf(backend.base, seeded[side][load]);
        const wrkEnv = { ...process.env, BENCH_REPORT_LUA: path.join(benchDir, 'wrk-report.lua') };
        await runWrk(['-d', `${warmupSeconds}s`, ...args], warmupSeconds, wrkEnv);
        receiver.arrivals.clear();
        const startedAt = new Date();
        const before = { node: cpuTicks(backend.child.pid), postgres: postgresCpuTicks(), wal: await walPosition(databases[side].url) };
        const result = await runWrk(['-d', `${seconds}s`, ...args], seconds, wrkEnv);
        const run = { rps: Math.round(result.rps), p50Ms: result.latencyUs.p50 / 1000, p99Ms: result.latencyUs.p99 / 1000 };
        // CPU per request (clock ticks are 10 ms) and WAL per request: where a side's extra cost goes.
        const per = (amount) => Math.round(amount / result.requests);
        run.nodeUs = per((cpuTicks(backend.child.pid) - before.node) * 10_000);
        run.postgresUs = per((postgresCpuTicks() - before.postgres) * 10_000);
        run.walBytes = per(Number((await walPosition(databases[side].url)) - before.wal));
        runs[load][side].push(run);
        console.log(`[bench] ${load}, ${side}: ${run.rps} rps, p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms; per request: Node ${run.nodeUs} µs, PostgreSQL ${run.postgresUs} µs, WAL ${run.walBytes} bytes`);
        if (side === 'webhook' && load === 'write') {
          // The deliveries of the events this run committed: wait until none is pending (at most a minute), then compare.
          const pendingAtEnd = Number((await queryAsOwner(databases.webhook.url, `SELECT count(*) FROM "authstrap_outbox" WHERE "channel" = 'webhook' AND "status" = 'pending'`)).rows[0].count);
          const deadline = Date.now() + 60_000;
          let pending = pendingAtEnd;
          while (pending > 0 && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 500));
            pending = Number((await queryAsOwner(databases.webhook.url, `SELECT count(*) FROM "authstrap_outbox" WHERE "channel" = 'webhook' AND "status" = 'pending'`)).rows[0].count);
          }
          const { rows } = await queryAsOwner(databases.webhook.url, `SELECT "id" FROM "authstrap_event" WHERE "type" = 'project.created' AND "createdAt" >= '${startedAt.toISOString()}'`);
          const lost = rows.filter((row) => !receiver.arrivals.has(row.id)).length;
          const latencies = [...receiver.arrivals.values()];
          const measured = { events: rows.length, delivered: latencies.length, pendingAtEnd, lost, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
          delivery.push(measured);
          console.log(`[bench] commit to delivery: ${JSON.stringify(measured)}`);
        }
      }
      await stopChild(backend.child);
    }
  }

  // Commit to delivery at a pace the worker keeps up with: the list load at full speed, and beside
  // it one write every 50 ms (20 a second), each to be delivered to the receiver.
  const paced = [];
  for (let run = 0; run < pairs; run += 1) {
    const backend = await startExampleBackend({ dbUrl: databases.webhook.url, env });
    const wrkEnv = { ...process.env, BENCH_REPORT_LUA: path.join(benchDir, 'wrk-report.lua') };
    await runWrk(['-d', `${warmupSeconds}s`, ...listLoadArgs(backend.base, seeded.webhook.list)], warmupSeconds, wrkEnv);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    receiver.arrivals.clear();
    const startedAt = new Date();
    let listing = true;
    const list = runWrk(['-d', `${seconds}s`, ...listLoadArgs(backend.base, seeded.webhook.list)], seconds, wrkEnv).finally(() => (listing = false));
    let written = 0;
    while (listing) {
      const next = Date.now() + 50;
      await expectStatus(api(backend.base, 'POST', '/Projects', { ...seeded.webhook.write, body: { name: `Paced ${run}-${written}` } }), 201, 'POST /Projects');
      written += 1;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
    }
    const listed = await list;
    const deadline = Date.now() + 30_000;
    while (receiver.arrivals.size < written && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    const { rows } = await queryAsOwner(databases.webhook.url, `SELECT "id" FROM "authstrap_event" WHERE "type" = 'project.created' AND "createdAt" >= '${startedAt.toISOString()}'`);
    const latencies = rows.filter((row) => receiver.arrivals.has(row.id)).map((row) => receiver.arrivals.get(row.id));
    const measured = { listRps: Math.round(listed.rps), written, events: rows.length, delivered: latencies.length, lost: rows.length - latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
    paced.push(measured);
    console.log(`[bench] commit to delivery, list load + 20 writes/s: ${JSON.stringify(measured)}`);
    await stopChild(backend.child);
  }

  const summary = {};
  for (const load of ['write', 'list']) {
    const of = (side) => Object.fromEntries(['rps', 'p50Ms', 'p99Ms', 'nodeUs', 'postgresUs', 'walBytes'].map((key) => [key, median(runs[load][side].map((run) => run[key]))]));
    summary[load] = Object.fromEntries(sides.map((side) => [side, of(side)]));
    summary[load].eventsOverOff = Number((summary[load].events.rps / summary[load].off.rps).toFixed(3));
    summary[load].webhookOverOff = Number((summary[load].webhook.rps / summary[load].off.rps).toFixed(3));
    console.log(`${load}: off ${summary[load].off.rps} rps, events ${summary[load].events.rps} rps (${summary[load].eventsOverOff}), events + webhook ${summary[load].webhook.rps} rps (${summary[load].webhookOverOff})`);
    for (const side of sides) console.log(`  ${side} per request: Node ${summary[load][side].nodeUs} µs, PostgreSQL ${summary[load][side].postgresUs} µs, WAL ${summary[load][side].walBytes} bytes`);
  }
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), pairs, warmupSeconds, seconds, runs, delivery, paced, summary }, null, 2)}\n`);
} finally {
  for (const child of children) await stopChild(child);
  await receiver.close();
  for (const database of Object.values(databases)) await database.drop();
}
