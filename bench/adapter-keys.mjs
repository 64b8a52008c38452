#!/usr/bin/env node
// What an Idempotency-Key costs one write of the Better Auth adapter (issue 51, item 1): the
// adapter's create of a verification (Better Auth's most frequent write: every sign-in's and
// e-mail's token), one at a time, against the example built as it is, on PostgreSQL. The same
// adapter both ways: "keyed" as it sends it (a key of its own per write), "plain" through a fetch
// that takes the header off (the write as before keys existed). Alternating blocks, so that the
// machine's drift falls on both.
//
//   node bench/adapter-keys.mjs
//
// Settings: BENCH_PG_URL, BENCH_ADAPTER_WRITES (300 of each), BENCH_ADAPTER_BLOCK (25).
// Writes bench/results/adapter-keys.json.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { children, median, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const adapterDir = path.join(benchDir, '..', 'packages', 'better-auth-adapter');
const resultsFile = path.join(benchDir, 'results', 'adapter-keys.json');
const writes = Number(process.env.BENCH_ADAPTER_WRITES ?? 300);
const block = Number(process.env.BENCH_ADAPTER_BLOCK ?? 25);
const serviceKey = randomBytes(24).toString('base64url');

// The adapter as it is published (its compiled dist).
execFileSync(process.execPath, [path.join(adapterDir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: adapterDir, stdio: 'inherit' });
const { authstrapAdapter } = await import(pathToFileURL(path.join(adapterDir, 'dist', 'index.js')).href);

/** fetch without the Idempotency-Key the adapter sets. */
const withoutKey = (input, init) => {
  const headers = { ...init.headers };
  delete headers['idempotency-key'];
  return fetch(input, { ...init, headers });
};

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

const database = await throwawayDatabase('adapter_keys');
let backend;
try {
  backend = await startExampleBackend({ dbUrl: database.url, env: { SERVICE_API_KEY: serviceKey } });
  const betterAuthOptions = { secret: randomBytes(24).toString('base64url'), baseURL: 'http://localhost:3100', logger: { disabled: true } };
  const adapters = {
    keyed: authstrapAdapter({ baseUrl: backend.base, serviceKey, personalOrganization: false })(betterAuthOptions),
    plain: authstrapAdapter({ baseUrl: backend.base, serviceKey, personalOrganization: false, fetch: withoutKey })(betterAuthOptions),
  };
  const create = (adapter, n) => adapter.create({ model: 'verification', data: { identifier: `bench:${n}`, value: 'v', expiresAt: new Date(Date.now() + 3_600_000) } });
  // Warm both paths up (connections, prepared statements, JIT).
  for (let n = 0; n < 50; n++) for (const adapter of Object.values(adapters)) await create(adapter, n);

  const times = { plain: [], keyed: [] };
  for (let done = 0; done < writes; done += block) {
    const order = (done / block) % 2 === 0 ? ['plain', 'keyed'] : ['keyed', 'plain'];
    for (const kind of order) {
      for (let n = 0; n < block; n++) {
        const started = performance.now();
        await create(adapters[kind], done + n);
        times[kind].push(performance.now() - started);
      }
    }
  }
  const figures = Object.fromEntries(
    Object.entries(times).map(([kind, list]) => {
      const sorted = list.slice().sort((a, b) => a - b);
      return [kind, { writes: list.length, p50Ms: Number(median(sorted).toFixed(3)), p99Ms: Number(percentile(sorted, 99).toFixed(3)), meanMs: Number((list.reduce((a, b) => a + b, 0) / list.length).toFixed(3)) }];
    }),
  );
  const summary = { measuredAt: new Date().toISOString(), loadAverage: os.loadavg(), ...figures, keyedOverPlainP50: Number((figures.keyed.p50Ms / figures.plain.p50Ms).toFixed(3)) };
  console.log(JSON.stringify(summary, null, 2));
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(summary, null, 2)}\n`);
} finally {
  if (backend) await stopChild(backend.child);
  for (const child of children) await stopChild(child);
  await database.drop();
}
