#!/usr/bin/env node
// Reads a V8 CPU profile of the example under load (BENCH_CPU_PROFILE of cpu-per-request.mjs) and
// says where its time went, in microseconds per request:
//
//   node bench/profile-summary.mjs <file.cpuprofile> <requests>
//
// - by source: each sample's own function, grouped by package (`express-rate-limit`), file of
//   the example (`dist/logger.js`) or Node module, plus the collector, socket writes and idle;
// - by pipeline layer: each sample goes to the nearest middleware or route handler of the
//   example (or express-rate-limit's, or body-parser's) on its stack, or to Express's `next` when
//   that comes first, so a layer's figure is its own work and what it calls, not the layers after it.
//
// `requests` is every request the profiled process answered (warm-up included): cpu-per-request.mjs
// prints it. The figures are samples (one per millisecond or so), good to a microsecond or two.
import fs from 'node:fs';
import { frameLabel as label, isLayer, perRequestTable, sourceOf } from './lib/profile-frames.mjs';

const [file, requestsArgument] = process.argv.slice(2);
const requests = Number(requestsArgument);
if (!file || !(requests > 0)) {
  console.error('usage: node bench/profile-summary.mjs <file.cpuprofile> <requests answered while profiled>');
  process.exit(2);
}

const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

const bySource = new Map();
const byLayer = new Map();
const add = (map, key, microseconds) => map.set(key, (map.get(key) ?? 0) + microseconds);
let total = 0;
profile.samples.forEach((sampleId, index) => {
  const microseconds = profile.timeDeltas[index] ?? 0;
  total += microseconds;
  const leaf = nodes.get(sampleId).callFrame;
  add(bySource, sourceOf(leaf), microseconds);
  let id = sampleId;
  while (id !== undefined && !isLayer(nodes.get(id).callFrame)) id = parentOf.get(id);
  add(byLayer, id === undefined ? `outside any layer: ${sourceOf(leaf)}` : label(nodes.get(id).callFrame), microseconds);
});

const table = (map, rows) => perRequestTable(map, rows, requests, 'µs');
console.log(`${(total / requests).toFixed(0)} µs of profile per request (${requests} requests)\n`);
console.log(`By source (the sampled function's own package or file):\n${table(bySource, 25)}\n`);
console.log(`By pipeline layer (its own work and what it calls, not the layers after it):\n${table(byLayer, 25)}`);
