#!/usr/bin/env node
// The list route through PgBouncer in transaction mode (Debian's, with docs/deploy.md's settings)
// against PostgreSQL directly: (a)'s load on the same compiled example, in turns
// (bench/lib/variants.mjs): direct with prepared statements (the default), direct without them,
// and through PgBouncer (where they are off by default: PgBouncer before 1.21 cannot keep them).
// PgBouncer's own CPU per request is counted beside the backend's.
//
//   node bench/pgbouncer.mjs
//
// Settings: BENCH_PG_URL, BENCH_ROUNDS (3), BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8).
// Linux only (reads /proc); needs wrk and pgbouncer. Writes bench/results/pgbouncer.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { children, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';
import { pgbouncerVersion, startPgbouncer } from './lib/pgbouncer.mjs';
import { alternate, roundSettings } from './lib/variants.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'pgbouncer.json');
const settings = roundSettings();

const database = await throwawayDatabase('pgbouncer');
const pgbouncer = await startPgbouncer({ targetUrl: database.url });
try {
  const seeding = await startExampleBackend({ dbUrl: database.url });
  const seed = await seedProjects(seeding.base);
  await stopChild(seeding.child);

  const variants = [
    { name: 'direct', start: () => startExampleBackend({ dbUrl: database.url }) },
    { name: 'direct, unprepared', start: () => startExampleBackend({ dbUrl: database.url, env: { DATABASE_PREPARED_STATEMENTS: 'false' } }) },
    {
      name: 'PgBouncer',
      start: () => startExampleBackend({ dbUrl: pgbouncer.urlFor(database.url), env: { DATABASE_DIRECT_URL: database.url } }),
      extraPids: () => [pgbouncer.pid],
    },
  ];
  const { runs, medians, againstFirst } = await alternate(variants, { seed, ...settings });
  const line = (name) => `${name} ${medians[name].rps} rps (p99 ${medians[name].p99Ms} ms, Node ${medians[name].nodeCpuUsPerRequest} µs${medians[name].extraCpuUsPerRequest ? `, PgBouncer ${medians[name].extraCpuUsPerRequest} µs` : ''})`;
  console.log(`\nmedians of ${settings.rounds} rounds, PgBouncer ${pgbouncerVersion?.join('.')}: ${variants.map((variant) => line(variant.name)).join('; ')}`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), loadAverage1m: os.loadavg()[0], pgbouncerVersion, settings, runs, medians, againstFirst }, null, 2)}\n`);
} finally {
  for (const child of children) await stopChild(child);
  await pgbouncer.stop();
  await database.drop();
}
