#!/usr/bin/env node
// Rolling restarts behind nginx: how many requests fail for the clients? Three instances of the
// example (compiled, NODE_ENV=production, so with its 5 s drain) on one PostgreSQL database and
// one Redis, behind Debian's nginx with the site of docs/deploy.md (bench/lib/nginx.mjs); clients
// send creates, reads and updates through nginx as fast as they are answered, while each instance
// in turn gets SIGTERM and a new one is started on its port, BENCH_ROUNDS times over. Counts the
// answers that were a 5xx or a broken connection (goal: none), the requests nginx sent again to
// another instance, and checks every acknowledged write is in the database once.
//
//   node bench/rolling-restart.mjs
//
// Settings: BENCH_PG_URL, BENCH_REDIS_URL (redis://127.0.0.1:6379), BENCH_ROUNDS (5),
// BENCH_CLIENTS (16), BENCH_DRAIN_MS (the production default when unset), BENCH_ENTRY (a compiled
// copy of the example to run instead of its dist/index.js, e.g. a version before a change). Needs nginx.
// Writes bench/results/rolling-restart.json.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { api, children, exampleDir, expectStatus, freePort, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';
import { siteFromDeployDocs, startNginx } from './lib/nginx.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'rolling-restart.json');
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const clients = Number(process.env.BENCH_CLIENTS ?? 16);
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');

const database = await throwawayDatabase('rolling');
const ports = [await freePort(), await freePort(), await freePort()];
const env = {
  REDIS_URL: redisUrl,
  RATE_LIMIT_PREFIX: `bench-rolling-${randomBytes(4).toString('hex')}:`,
  TRUST_PROXY: '1',
  // The harness turns the drain off for the other benches; here it is production's (or the setting's).
  SHUTDOWN_DRAIN_MS: process.env.BENCH_DRAIN_MS ?? '',
  // One line per failure only: 5xx answers are what this bench is about.
  LOG_LEVEL: 'error',
};
// BENCH_ENTRY: another compiled copy of the example inside examples/saas-backend (a version before a change).
const entry = process.env.BENCH_ENTRY ?? 'dist/index.js';
const start = (port) => startExampleBackend({ dbUrl: database.url, port, env, readyPollMs: 50, entry });
let nginx;
let stopping = false;
try {
  // All three share AUTH_SECRET through the database only (sessions live there), so any instance
  // accepts the session another made.
  const instances = [];
  for (const port of ports) instances.push(await start(port));
  const nginxPort = await freePort();
  nginx = await startNginx(siteFromDeployDocs(ports, nginxPort), nginxPort);
  const signUp = await expectStatus(api(nginx.url, 'POST', '/api/auth/sign-up/email', { body: { email: 'rolling@example.com', name: 'Rolling', password: 'bench-password-1' } }), 201, 'sign-up');
  const token = signUp.data.token;
  const organizationId = (await expectStatus(api(nginx.url, 'GET', '/api/auth/get-session', { token }), 200, 'get-session')).data.organizations[0].id;

  const failures = [];
  const acknowledged = new Map();
  let sent = 0;
  const startedAt = performance.now();
  const client = async (index) => {
    const mine = [];
    for (let step = 0; !stopping; step += 1) {
      const kind = mine.length === 0 ? 0 : step % 4;
      const [method, route, body] = [
        ['POST', '/Projects', { name: `Client ${index} step ${step}` }],
        ['GET', '/Projects?limit=5'],
        ['GET', `/Projects/${mine[step % mine.length]}`],
        ['PATCH', `/Projects/${mine[step % mine.length]}`, { description: `Step ${step}` }],
      ][kind];
      sent += 1;
      try {
        const response = await api(nginx.url, method, route, { token, organizationId, body });
        if (response.status >= 500 || response.status !== (method === 'POST' ? 201 : 200)) {
          failures.push({ method, route, status: response.status, atMs: Math.round(performance.now() - startedAt) });
        } else if (method === 'POST') {
          mine.push(response.json.data.id);
          acknowledged.set(response.json.data.id, { name: response.json.data.name, description: null });
        } else if (method === 'PATCH') {
          acknowledged.get(response.json.data.id).description = response.json.data.description;
        }
      } catch (error) {
        failures.push({ method, route, error: String(error.cause?.code ?? error.cause ?? error), atMs: Math.round(performance.now() - startedAt) });
      }
    }
  };
  const load = Promise.all(Array.from({ length: clients }, (_, index) => client(index)));

  const restarts = [];
  await sleep(2000);
  for (let round = 0; round < rounds; round += 1) {
    for (let index = 0; index < instances.length; index += 1) {
      const signalled = performance.now();
      await stopChild(instances[index].child);
      const stoppedMs = Math.round(performance.now() - signalled);
      instances[index] = await start(ports[index]);
      restarts.push({ round, instance: index, stoppedMs, readyMs: Math.round(performance.now() - signalled) });
      console.log(`[bench] round ${round + 1}, instance ${index + 1}: stopped in ${stoppedMs} ms, its successor ready ${restarts.at(-1).readyMs} ms after the signal; ${failures.length} failures so far`);
      // Until nginx tries it again (fail_timeout, 2 s) and it takes its share.
      await sleep(3000);
    }
  }
  stopping = true;
  await load;
  const elapsedMs = Math.round(performance.now() - startedAt);

  const retried = nginx.accessLog().split('\n').filter((line) => line.includes(', ')).length;
  const check = new pg.Client({ connectionString: database.url });
  await check.connect();
  const { rows } = await check.query('SELECT "id", "name", "description" FROM "Project" WHERE "organizationId" = $1', [organizationId]);
  await check.end();
  const stored = new Map(rows.map((row) => [row.id, row]));
  const lost = [...acknowledged].filter(([id, expected]) => stored.get(id)?.name !== expected.name || stored.get(id)?.description !== expected.description).length;
  const duplicated = rows.length - new Set(rows.map((row) => row.name)).size;

  const result = {
    date: new Date().toISOString(),
    loadAverage1m: os.loadavg()[0],
    settings: { rounds, clients, drainMs: env.SHUTDOWN_DRAIN_MS || 'production default (5000)', entry },
    restarts: restarts.length,
    requests: sent,
    elapsedMs,
    failures: failures.length,
    failuresByKind: Object.entries(
      failures.reduce((kinds, failure) => {
        const kind = `${failure.method} ${failure.status ?? failure.error}`;
        return { ...kinds, [kind]: (kinds[kind] ?? 0) + 1 };
      }, {}),
    ).map(([kind, count]) => ({ kind, count })),
    retriedByNginx: retried,
    acknowledgedWrites: acknowledged.size,
    lost,
    duplicated,
    nginxErrors: nginx.errorLog().split('\n').filter((line) => line.includes('[error]') && !line.includes('Connection refused')).slice(0, 20),
    restartTimes: restarts,
  };
  console.log(`\n${restarts.length} restarts, ${sent} requests from ${clients} clients in ${(elapsedMs / 1000).toFixed(1)} s: ${failures.length} failed for the client ` +
    `(${result.failuresByKind.map((entry) => `${entry.count} ${entry.kind}`).join(', ') || 'none'}); ${retried} sent again by nginx; ` +
    `${acknowledged.size} acknowledged creates, ${lost} lost, ${duplicated} duplicated`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
  if (failures.length > 0 || lost > 0 || duplicated > 0) process.exitCode = 1;
} finally {
  stopping = true;
  await nginx?.stop();
  for (const child of children) await stopChild(child);
  await database.drop();
}
