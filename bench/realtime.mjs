#!/usr/bin/env node
// Live streams (GET /realtime, issue 42): the example, built as it is, three instances on one
// PostgreSQL database, and subscribers on loopback.
//
//   fan-out   SUBSCRIBERS (1000) streams of `?entity=Project`, spread over the three instances,
//             under the write load (wrk, POST /Projects through the first instance). Per event:
//             commit (the event's createdAt, taken at its commit) to arrival at a subscriber, p50
//             and p99, read on SAMPLED (50) of the streams (the others are drained unread, so the
//             bench's own parsing does not become the bottleneck). Beside it, the write rate and
//             the list rate (GET /Projects?limit=20) with the subscribers against none, in turns.
//             wrk writes as fast as the machine allows, so each write is also 1,000 messages to
//             send (and, on this one machine, 1,000 to receive and parse): the rates say what the
//             fan-out costs at saturation.
//   paced     The same 1,000 streams, with PACED (100) writes a second sent by the bench at an
//             even pace, as a team's traffic is: commit to subscriber p50/p99, and the write's own
//             latency with the subscribers against none.
//   held      HELD (10000) streams on one instance: the instance's resident memory before and
//             after, per stream; then one change, and the time until every stream has it (p50,
//             p99, last).
//
//   npm run bootstrap && (cd examples/saas-backend && npm run build)
//   node bench/realtime.mjs
//
// Settings: BENCH_PG_URL, BENCH_DURATION_SECONDS (8), BENCH_PAIRS (2), SUBSCRIBERS, SAMPLED, PACED, HELD.
// Linux; needs wrk. Writes bench/results/realtime.json.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, cpuTicks, expectStatus, listLoadArgs, postgresCpuTicks, median, runWrk, seedProjects, startExampleBackend, stopChild, throwawayDatabase, writeLoadArgs } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'realtime.json');
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const pairs = Number(process.env.BENCH_PAIRS ?? 2);
const subscriberCount = Number(process.env.SUBSCRIBERS ?? 1000);
const sampledCount = Number(process.env.SAMPLED ?? 50);
const heldCount = Number(process.env.HELD ?? 10_000);
const pacedRate = Number(process.env.PACED ?? 100);
const percentile = (values, p) => values.slice().sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];
// Hundreds of thousands of figures: Math.max(...values) would overflow the stack.
const round = (value) => Math.round(value * 100) / 100;
const largest = (values) => values.reduce((most, value) => (value > most ? value : most), -Infinity);
const spread = (values) => ({ p50: percentile(values, 50), p99: percentile(values, 99), max: largest(values) });
// wrk-create.lua reports through wrk-report.lua, which it finds here.
const wrkEnv = { ...process.env, BENCH_REPORT_LUA: path.join(benchDir, 'wrk-report.lua') };
const env = { REALTIME_STREAMS_PER_USER: '100000', REALTIME_STREAMS_PER_ORGANIZATION: '100000', LOG_LEVEL: 'error' };

/**
 * One stream, on a socket of its own. Sampled, it parses each message and keeps, per event id,
 * the milliseconds from the event's commit to its arrival; otherwise it only counts the bytes.
 */
function subscribe(base, { token, organizationId }, { sampled = false, onEvent } = {}) {
  return new Promise((resolve, reject) => {
    const request = http.get(`${base}/realtime?entity=Project`, { agent: false, headers: { authorization: `Bearer ${token}`, 'x-organization-id': organizationId } }, (response) => {
      if (response.statusCode !== 200) return reject(new Error(`GET /realtime answered ${response.statusCode}`));
      const stream = { latencies: [], bytes: 0, close: () => request.destroy() };
      let buffer = '';
      response.on('data', (chunk) => {
        stream.bytes += chunk.length;
        if (!sampled && !onEvent) return;
        const arrived = Date.now();
        const messages = (buffer + chunk.toString()).split('\n\n');
        buffer = messages.pop();
        for (const message of messages) {
          const data = message.split('\n').find((line) => line.startsWith('data: '));
          if (!data) continue;
          const event = JSON.parse(data.slice(6));
          if (event.createdAt === undefined) continue;
          if (sampled) stream.latencies.push(arrived - Date.parse(event.createdAt));
          onEvent?.(event, arrived);
        }
      });
      resolve(stream);
    });
    request.on('error', reject);
  });
}

async function fanOut(db) {
  const instances = [];
  for (let i = 0; i < 3; i++) instances.push(await startExampleBackend({ dbUrl: db.url, env }));
  try {
    const session = await seedProjects(instances[0].base, { projects: 20 });
    const rates = { without: { write: [], list: [] }, with: { write: [], list: [] } };
    let streams = [];
    const open = async () => {
      streams = [];
      for (let i = 0; i < subscriberCount; i++) streams.push(await subscribe(instances[i % 3].base, session, { sampled: i < sampledCount }));
    };
    const close = () => {
      for (const stream of streams) stream.close();
      streams = [];
    };
    const latencies = [];
    // Where the machine's CPU went during the write load: the three instances, PostgreSQL and the
    // bench itself (which receives every message the instances send, on the same two cores).
    const cpuShares = () => ({ instances: instances.reduce((sum, instance) => sum + cpuTicks(instance.child.pid), 0), postgres: postgresCpuTicks(), bench: cpuTicks(process.pid) });
    const cpuSpent = (before, writes) => {
      const after = cpuShares();
      const seconds = (part) => (after[part] - before[part]) / 100;
      return { instancesSeconds: seconds('instances'), postgresSeconds: seconds('postgres'), benchSeconds: seconds('bench'), writes: Math.round(writes) };
    };
    const cpu = { without: [], with: [] };
    for (let pair = 0; pair < pairs; pair++) {
      for (const side of pair % 2 === 0 ? ['without', 'with'] : ['with', 'without']) {
        if (side === 'with') await open();
        const ticksBefore = cpuShares();
        const write = await runWrk(['-d', `${seconds}s`, ...writeLoadArgs(instances[0].base, session)], seconds, wrkEnv);
        cpu[side].push(cpuSpent(ticksBefore, write.rps * seconds));
        const list = await runWrk(['-d', `${seconds}s`, ...listLoadArgs(instances[0].base, session)], seconds, wrkEnv);
        rates[side].write.push(write.rps);
        rates[side].list.push(list.rps);
        if (side === 'with') {
          // What is still on its way arrives within a second of the load's end.
          await new Promise((resolve) => setTimeout(resolve, 1000));
          for (const stream of streams) for (const latency of stream.latencies) latencies.push(latency);
          close();
        }
        console.log(`pair ${pair + 1} ${side} subscribers: write ${Math.round(rates[side].write.at(-1))}/s, list ${Math.round(rates[side].list.at(-1))}/s`);
      }
    }
    const result = {
      subscribers: subscriberCount,
      sampled: sampledCount,
      deliveriesMeasured: latencies.length,
      commitToSubscriberMs: spread(latencies),
      writeRate: { without: median(rates.without.write), with: median(rates.with.write) },
      listRate: { without: median(rates.without.list), with: median(rates.with.list) },
    };
    // The instances' CPU per write without subscribers, and per message delivered with them (each
    // write is a message to each subscriber), from the pairs' sums.
    const total = (side, part) => cpu[side].reduce((sum, spent) => sum + spent[part], 0);
    result.cpu = {
      perSide: cpu,
      instancesMicrosecondsPerWriteWithout: Math.round((total('without', 'instancesSeconds') * 1e6) / total('without', 'writes')),
      instancesMicrosecondsPerWriteWith: Math.round((total('with', 'instancesSeconds') * 1e6) / total('with', 'writes')),
      instancesMicrosecondsPerMessage: round((total('with', 'instancesSeconds') * 1e6) / (total('with', 'writes') * subscriberCount)),
      benchMicrosecondsPerMessage: round((total('with', 'benchSeconds') * 1e6) / (total('with', 'writes') * subscriberCount)),
    };
    result.writeRatio = result.writeRate.with / result.writeRate.without;
    result.listRatio = result.listRate.with / result.listRate.without;

    // Paced: the write's latency without subscribers, then with them, and commit to subscriber.
    const paced = { writesPerSecond: pacedRate, seconds };
    paced.writeWithoutMs = spread(await pacedWrites(instances[0].base, session));
    await open();
    paced.writeWithMs = spread(await pacedWrites(instances[0].base, session));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const pacedLatencies = [];
    for (const stream of streams) for (const latency of stream.latencies) pacedLatencies.push(latency);
    close();
    paced.deliveriesMeasured = pacedLatencies.length;
    paced.commitToSubscriberMs = spread(pacedLatencies);
    console.log(`paced at ${pacedRate}/s: write p99 ${paced.writeWithoutMs.p99} ms without subscribers, ${paced.writeWithMs.p99} ms with; commit to subscriber p50 ${paced.commitToSubscriberMs.p50} ms, p99 ${paced.commitToSubscriberMs.p99} ms`);
    result.paced = paced;
    return result;
  } finally {
    for (const instance of instances) await stopChild(instance.child);
  }
}

/** `pacedRate` creates a second for `seconds`, each sent on time whatever the others' answers; resolves each one's latency in ms. */
async function pacedWrites(base, session) {
  const started = Date.now();
  const writes = [];
  for (let i = 0; i < pacedRate * seconds; i++) {
    const due = started + (i * 1000) / pacedRate;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    const sent = Date.now();
    writes.push(expectStatus(api(base, 'POST', '/Projects', { ...session, body: { name: `paced ${i}` } }), 201, 'POST /Projects').then(() => Date.now() - sent));
  }
  return Promise.all(writes);
}

/** Resident memory of a process, in bytes (/proc). */
const residentBytes = (pid) => Number(fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/)[1]) * 1024;

async function held(db) {
  const instance = await startExampleBackend({ dbUrl: db.url, env });
  try {
    const session = await seedProjects(instance.base, { email: 'held@example.com', projects: 1 });
    // One stream first, so that the reader and its statements are there before the baseline.
    const first = await subscribe(instance.base, session);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = residentBytes(instance.child.pid);
    const arrivals = [];
    let sentAt = 0;
    const streams = [first];
    for (let i = 0; i < heldCount; i++) {
      streams.push(await subscribe(instance.base, session, { onEvent: (_event, arrived) => arrivals.push(arrived - sentAt) }));
      if (i % 1000 === 999) console.log(`${i + 1} streams open`);
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const after = residentBytes(instance.child.pid);
    sentAt = Date.now();
    await expectStatus(api(instance.base, 'POST', '/Projects', { ...session, body: { name: 'To everyone' } }), 201, 'POST /Projects');
    const deadline = Date.now() + 30_000;
    while (arrivals.length < heldCount && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    for (const stream of streams) stream.close();
    return {
      streams: heldCount,
      residentBytesPerStream: Math.round((after - before) / heldCount),
      residentMiB: { before: Math.round(before / 1048576), after: Math.round(after / 1048576) },
      delivered: arrivals.length,
      oneChangeToAllMs: { p50: percentile(arrivals, 50), p99: percentile(arrivals, 99), last: largest(arrivals) },
    };
  } finally {
    await stopChild(instance.child);
  }
}

const results = { when: new Date().toISOString() };
for (const [name, run] of [['fanOut', fanOut], ['held', held]]) {
  const db = await throwawayDatabase(`realtime_${name.toLowerCase()}`);
  try {
    results[name] = await run(db);
    console.log(name, JSON.stringify(results[name]));
  } finally {
    await db.drop();
  }
}
fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
console.log(`written to ${path.relative(process.cwd(), resultsFile)}`);
