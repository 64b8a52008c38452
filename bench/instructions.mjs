#!/usr/bin/env node
// What a request costs the example's main thread in machine instructions: a count that does not
// move with the machine's load, where rps and CPU time do (by 10 % and more from run to run on a
// shared 2-core machine). Each compiled copy of the example runs under valgrind's callgrind with
// its instrumentation off, is warmed up (so V8 has compiled what it will compile), then counts
// the instructions of its main thread (the one that runs the JavaScript; V8's compiler and
// collector threads are left out) over a fixed number of requests, list and write, sent 4 at a
// time by this script from outside valgrind.
//
//   cd examples/saas-backend
//   npm run build && cp -r dist dist-A     # before
//   (change src/, then) npm run build && cp -r dist dist-B
//   cd ../.. && node bench/instructions.mjs examples/saas-backend/dist-A examples/saas-backend/dist-B
//
// A copy may carry a label for the results: `examples/saas-backend/dist-A=before`.
// About 2 minutes per copy and load (valgrind runs Node some 30 times slower). The copies must be
// inside examples/saas-backend (they import its node_modules). Settings: BENCH_PG_URL,
// BENCH_WARMUP_REQUESTS (3000), BENCH_COUNTED_REQUESTS (500), BENCH_LOADS (list,write).
// Linux only; needs valgrind. Writes bench/results/instructions.json.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { exampleDir, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'instructions.json');
const warmupRequests = Number(process.env.BENCH_WARMUP_REQUESTS ?? 3000);
const countedRequests = Number(process.env.BENCH_COUNTED_REQUESTS ?? 500);
const loads = (process.env.BENCH_LOADS ?? 'list,write').split(',').map((load) => load.trim());
const requests = { list: { method: 'GET', path: '/Projects?limit=20' }, write: { method: 'POST', path: '/Projects' } };
// vgdb (callgrind_control's link to the running valgrind) names its files by user and host.
const vgdbEnv = { USER: os.userInfo().username || 'bench', LOGNAME: os.userInfo().username || 'bench', HOST: os.hostname() };

/** The entry point of one copy (`<folder>` or `<folder>=<label>`), or a message that names the argument to change. */
function entryOf(given) {
  const argument = given.split('=')[0];
  const directory = path.resolve(argument);
  const relative = path.relative(exampleDir, directory);
  if (relative.startsWith('..') || path.isAbsolute(relative)) throw new Error(`${argument} must be a folder inside examples/saas-backend, so that it finds its node_modules`);
  if (!fs.existsSync(path.join(directory, 'index.js'))) throw new Error(`${argument} has no index.js: copy examples/saas-backend/dist there after \`npm run build\``);
  return path.join(relative, 'index.js');
}

let entries;
try {
  if (process.argv.length < 3) throw new Error('usage: node bench/instructions.mjs <copy of examples/saas-backend/dist> [<another copy> ...]');
  entries = process.argv.slice(2).map((argument) => ({ name: argument.includes('=') ? argument.slice(argument.indexOf('=') + 1) : argument, entry: entryOf(argument) }));
  for (const load of loads) if (!requests[load]) throw new Error(`BENCH_LOADS names ${load}: use list, write or both`);
  if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('valgrind is not installed (apt-get install valgrind)');
} catch (error) {
  console.error(`bench: ${error.message}`);
  process.exit(2);
}

/** Sends `count` requests, 4 at a time; every one must succeed. */
async function send(base, headers, count, { method, path: route }) {
  let sent = 0;
  const worker = async () => {
    while (sent < count) {
      sent += 1;
      const response = await fetch(`${base}${route}`, { method, headers, body: method === 'POST' ? JSON.stringify({ name: `Counted ${sent}` }) : undefined });
      await response.arrayBuffer();
      if (response.status >= 300) throw new Error(`${method} ${route}: ${response.status}`);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

/** The instructions callgrind counted on the main thread (its file ends in -01). */
function mainThreadInstructions(outPrefix) {
  const directory = path.dirname(outPrefix);
  const files = fs.readdirSync(directory).filter((file) => file.startsWith(path.basename(outPrefix)));
  const main = files.find((file) => file.endsWith('-01'));
  const total = main && /^totals: (\d+)/m.exec(fs.readFileSync(path.join(directory, main), 'utf8'));
  for (const file of files) fs.rmSync(path.join(directory, file));
  if (!total) throw new Error(`callgrind wrote no count for the main thread (${outPrefix}*)`);
  return Number(total[1]);
}

const database = await throwawayDatabase('instructions');
const results = [];
try {
  const seeding = await startExampleBackend({ dbUrl: database.url, entry: entries[0].entry });
  const { token, organizationId } = await seedProjects(seeding.base);
  await stopChild(seeding.child);
  const headers = { authorization: `Bearer ${token}`, 'x-organization-id': organizationId, 'content-type': 'application/json' };
  for (const load of loads) {
    for (const { name, entry } of entries) {
      const outPrefix = path.join(os.tmpdir(), `authstrap-callgrind-${process.pid}-${results.length}`);
      const backend = await startExampleBackend({
        dbUrl: database.url,
        entry,
        env: vgdbEnv,
        launcher: ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', '--smc-check=all-non-file', `--callgrind-out-file=${outPrefix}`],
        readySeconds: 300,
        readyPollMs: 1000,
      });
      const control = (state) => execFileSync('callgrind_control', ['-i', state, String(backend.child.pid)], { env: { ...process.env, ...vgdbEnv }, stdio: 'ignore' });
      await send(backend.base, headers, warmupRequests, requests[load]);
      control('on');
      await send(backend.base, headers, countedRequests, requests[load]);
      control('off');
      await stopChild(backend.child);
      const perRequest = Math.round(mainThreadInstructions(outPrefix) / countedRequests);
      results.push({ load, copy: name, instructionsPerRequest: perRequest });
      console.log(`[bench] ${load}, ${name}: ${perRequest.toLocaleString('en-US')} instructions per request on the main thread`);
    }
  }
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), warmupRequests, countedRequests, results }, null, 2)}\n`);
  console.log(`written to ${path.relative(process.cwd(), resultsFile)}`);
} finally {
  await database.drop();
}
