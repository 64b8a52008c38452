#!/usr/bin/env node
// Reads a sampling heap profile of a bench server under load (BENCH_HEAP_PROFILE of
// cpu-per-request.mjs) and says what was allocated, in bytes per request:
//
//   node bench/heap-summary.mjs <file.heapprofile> <requests>
//
// - by function: the allocating function itself (its package or file, name and line);
// - by pipeline layer: each allocation goes to the nearest middleware or route handler of the
//   example on its stack (bench/lib/profile-frames.mjs, as profile-summary.mjs splits the CPU).
//
// The profile keeps the samples of objects the collector has already freed, so it shows what a
// request allocates, not what survives it. `requests` is what wrk completed while it ran
// (cpu-per-request.mjs prints the command). Sampled every 512 bytes: good to a few hundred bytes.
import fs from 'node:fs';
import { frameLabel, isLayer, perRequestTable, sourceOf } from './lib/profile-frames.mjs';

const [file, requestsArgument] = process.argv.slice(2);
const requests = Number(requestsArgument);
if (!file || !(requests > 0)) {
  console.error('usage: node bench/heap-summary.mjs <file.heapprofile> <requests answered while profiled>');
  process.exit(2);
}

const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const byFunction = new Map();
const bySource = new Map();
const byLayer = new Map();
const add = (map, key, bytes) => map.set(key, (map.get(key) ?? 0) + bytes);
let total = 0;

/** Depth first, with the nearest layer above each node. */
const pending = [{ node: profile.head, layer: undefined }];
while (pending.length > 0) {
  const { node, layer: above } = pending.pop();
  const frame = node.callFrame;
  const layer = isLayer(frame) ? frameLabel(frame) : above;
  if (node.selfSize > 0) {
    total += node.selfSize;
    add(byFunction, frameLabel(frame), node.selfSize);
    add(bySource, sourceOf(frame), node.selfSize);
    add(byLayer, layer ?? `outside any layer: ${sourceOf(frame)}`, node.selfSize);
  }
  for (const child of node.children ?? []) pending.push({ node: child, layer });
}

const table = (map, rows) => perRequestTable(map, rows, requests, 'B', 0);
console.log(`${(total / requests / 1024).toFixed(1)} KB allocated per request (${requests} requests)\n`);
console.log(`By source (the allocating function's package or file):\n${table(bySource, 20)}\n`);
console.log(`By pipeline layer (its own allocations and those of what it calls, not the layers after it):\n${table(byLayer, 25)}\n`);
console.log(`By function:\n${table(byFunction, 30)}`);
