#!/usr/bin/env node
// What Better Auth costs the backend when it keeps its data there through
// @authstrap/better-auth-adapter: HTTP requests to the backend and SQL statements (and database
// round trips) per sign-up, sign-in and get-session, with 10,000 sessions in the table, with
// Better Auth's `advanced.database.joins` on and off; and what the adapter's transactions cost
// (a sign-up with and without them: time, connections held, and 20 sign-ups at once).
//
//   node bench/better-auth-requests.mjs
//
// Needs PostgreSQL (BENCH_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres; the role
// must be allowed to CREATE DATABASE) and `pnpm install` done. No load: every operation runs one
// after the other, BENCH_BA_REPEATS (20) times, and the counts are averaged. Writes
// bench/results/better-auth.json.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { children, exampleDir, median, startExampleBackend, stopChild } from './lib/harness.mjs';
import { perRequest, startWireCounter } from './lib/pg-wire-counter.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const adapterDir = path.join(benchDir, '..', 'packages', 'better-auth-adapter');
const resultsFile = path.join(benchDir, 'results', 'better-auth.json');
const pgAdminUrl = process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const repeats = Number(process.env.BENCH_BA_REPEATS ?? 20);
const seededSessions = 10_000;
const serviceKey = randomBytes(24).toString('base64url');
const authSecret = randomBytes(24).toString('base64url');

if (!Number.isInteger(repeats) || repeats < 1 || repeats > 1000) {
  console.error('bench: BENCH_BA_REPEATS must be a whole number from 1 to 1000');
  process.exit(2);
}

const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');
// The adapter as it is published (its compiled dist), and the Better Auth it is tested with.
execFileSync(process.execPath, [path.join(adapterDir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: adapterDir, stdio: 'inherit' });
const { authstrapAdapter, authstrapPassword } = await import(pathToFileURL(path.join(adapterDir, 'dist', 'index.js')).href);
const betterAuthEntry = createRequire(path.join(adapterDir, 'package.json')).resolve('better-auth').replace(/\.cjs$/, '.mjs');
const { betterAuth } = await import(pathToFileURL(betterAuthEntry).href);

const admin = new pg.Client({ connectionString: pgAdminUrl });
const databaseName = `authstrap_bench_ba_${process.pid}_${randomBytes(3).toString('hex')}`;
let counter;

async function cleanup() {
  for (const child of children) await stopChild(child);
  await counter?.close().catch(() => {});
  await admin.query(`DROP DATABASE IF EXISTS "${databaseName}" WITH (FORCE)`).catch((error) => console.error(`bench: could not drop ${databaseName}: ${error.message}`));
  await admin.end().catch(() => {});
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => cleanup().finally(() => process.exit(130)));

/** Seeds 1,000 users with 10 sessions each, straight into the database (not through the API). */
async function seedSessions(url) {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    await db.query(`INSERT INTO "User" ("email", "name") SELECT 'seed' || i || '@example.com', 'Seed ' || i FROM generate_series(1, ${seededSessions / 10}) AS i`);
    await db.query(
      `INSERT INTO "session" ("userId", "token", "expiresAt")
       SELECT u."id", md5(random()::text || s), now() + interval '7 days' FROM "User" u CROSS JOIN generate_series(1, 10) AS s WHERE u."email" LIKE 'seed%'`,
    );
    await db.query('ANALYZE');
    const { rows } = await db.query('SELECT count(*)::int AS n FROM "session"');
    return rows[0].n;
  } finally {
    await db.end();
  }
}

async function main() {
  await admin.connect();
  await admin.query(`CREATE DATABASE "${databaseName}"`);
  const adminUrl = new URL(pgAdminUrl);
  const databaseUrl = (port) => {
    const url = new URL(pgAdminUrl);
    url.pathname = `/${databaseName}`;
    if (port) Object.assign(url, { hostname: '127.0.0.1', port: String(port) });
    return url.toString();
  };
  counter = await startWireCounter({ upstreamHost: adminUrl.hostname, upstreamPort: Number(adminUrl.port || 5432) });
  const backend = await startExampleBackend({ dbUrl: databaseUrl(counter.port), env: { SERVICE_API_KEY: serviceKey, AUTH_SECRET: authSecret } });
  const sessions = await seedSessions(databaseUrl());
  console.log(`[bench] ${sessions} sessions in the table`);

  const requests = [];
  const countingFetch = (input, init) => {
    requests.push(`${init?.method ?? 'GET'} ${new URL(input instanceof Request ? input.url : String(input)).pathname}`);
    return fetch(input, init);
  };
  const results = {};
  const makeAuth = ({ joins, transactions, fetch: fetchImpl = countingFetch }) =>
    betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl: backend.base, serviceKey, fetch: fetchImpl, transactions }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      advanced: { database: { joins } },
      logger: { disabled: true },
    });
  /** Runs `work(i)` `repeats` times and averages what it sent; the median time of one call too. */
  const measure = async (operation, label, work) => {
    requests.length = 0;
    const times = [];
    const before = counter.snapshot();
    for (let index = 0; index < repeats; index += 1) {
      const started = performance.now();
      await work(index);
      times.push(performance.now() - started);
    }
    const wire = perRequest(before, counter.snapshot(), repeats);
    const result = {
      httpRequests: requests.length / repeats,
      statements: wire.statementsPerRequest,
      roundTrips: wire.roundTripsPerRequest,
      medianMs: Number(median(times).toFixed(1)),
      routes: [...new Set(requests)],
      sql: wire.sql.map(({ sql, perRequest: times }) => ({ times, sql: sql.slice(0, 160) })),
    };
    results[`${operation} (${label})`] = result;
    console.log(`[bench] ${operation}, ${label}: ${result.httpRequests} HTTP requests, ${result.statements} statements, ${result.roundTrips} round trips, median ${result.medianMs} ms`);
    return result;
  };
  // A sign-up without the adapter's transactions, for comparison (joins do not change a sign-up).
  const withoutTransactions = makeAuth({ joins: true, transactions: false });
  await measure('sign-up', 'transactions off', (index) => withoutTransactions.api.signUpEmail({ body: { email: `ba-t-${index}@example.com`, password: 'bench-password-1', name: 'Bench' } }));
  for (const joins of [true, false]) {
    const auth = makeAuth({ joins, transactions: true });
    const label = joins ? 'joins on' : 'joins off';
    const email = (index) => `ba-${joins ? 'j' : 'n'}-${index}@example.com`;
    await measure('sign-up', `${label}, transactions on`, (index) => auth.api.signUpEmail({ body: { email: email(index), password: 'bench-password-1', name: 'Bench' } }));
    const cookies = [];
    await measure('sign-in', label, async (index) => {
      const signedIn = await auth.api.signInEmail({ body: { email: email(index), password: 'bench-password-1' }, returnHeaders: true });
      cookies.push(signedIn.headers.get('set-cookie').split(';')[0]);
    });
    await measure('get-session', label, async (index) => {
      const session = await auth.api.getSession({ headers: new Headers({ cookie: cookies[index] }) });
      if (session?.user.email !== email(index)) throw new Error(`get-session answered ${JSON.stringify(session)}`);
    });
  }

  const transactionCost = await measureTransactions(makeAuth, databaseUrl());

  await stopChild(backend.child);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ measuredAt: new Date().toISOString(), sessionsInTable: sessions, repeats, results, transactionCost }, null, 2)}\n`);
  console.log('\n| Better Auth call | HTTP requests | SQL statements | round trips |\n|---|---|---|---|');
  for (const [name, result] of Object.entries(results)) console.log(`| ${name} | ${result.httpRequests} | ${result.statements} | ${result.roundTrips} |`);
  console.log('\n| transactions | held per sign-up (median, max) | 20 sign-ups at once | connections idle in a transaction at most | database connections at most |\n|---|---|---|---|---|');
  for (const [name, cost] of Object.entries(transactionCost)) {
    console.log(`| ${name} | ${cost.heldMedianMs ?? '-'} ms, ${cost.heldMaxMs ?? '-'} ms | ${cost.concurrentMs} ms | ${cost.maxInTransaction} | ${cost.maxConnections} |`);
  }
  console.log(`\nwritten to ${path.relative(process.cwd(), resultsFile)}`);
}


/**
 * What a transaction costs: how long one sign-up holds its connection (its begin to its commit,
 * seen by the adapter, one sign-up at a time), and 20 sign-ups started at once, with and without
 * transactions: the time they take and, sampled every 5 ms from pg_stat_activity, the most
 * connections of the backend and the most of them idle inside an open transaction (held between
 * two statements: what a transaction over HTTP costs the pool).
 */
async function measureTransactions(makeAuth, url) {
  const monitor = new pg.Client({ connectionString: url });
  await monitor.connect();
  const cost = {};
  try {
    for (const transactions of [true, false]) {
      const began = new Map();
      const held = [];
      const timingFetch = async (input, init) => {
        const pathname = new URL(input instanceof Request ? input.url : String(input)).pathname;
        const id = init?.headers?.['x-authstrap-transaction'];
        const response = await fetch(input, init);
        if (pathname === '/api/service/transactions') began.set(id, performance.now());
        if (pathname.endsWith('/commit') || pathname.endsWith('/rollback')) held.push(performance.now() - began.get(id));
        return response;
      };
      const auth = makeAuth({ joins: true, transactions, fetch: timingFetch });
      const tag = transactions ? 'on' : 'off';
      for (let index = 0; index < repeats; index += 1) {
        await auth.api.signUpEmail({ body: { email: `held-${tag}-${index}@example.com`, password: 'bench-password-1', name: 'Bench' } });
      }
      const heldOne = held.length ? { heldMedianMs: Number(median(held).toFixed(1)), heldMaxMs: Number(Math.max(...held).toFixed(1)) } : {};
      let maxConnections = 0;
      let maxInTransaction = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const { rows } = await monitor.query(
            `SELECT count(*)::int AS "all", count(*) FILTER (WHERE state LIKE 'idle in transaction%')::int AS "inTransaction"
               FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
          );
          maxConnections = Math.max(maxConnections, rows[0].all);
          maxInTransaction = Math.max(maxInTransaction, rows[0].inTransaction);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 20 }, (_, index) => auth.api.signUpEmail({ body: { email: `burst-${tag}-${index}@example.com`, password: 'bench-password-1', name: 'Bench' } })),
      );
      const concurrentMs = Math.round(performance.now() - started);
      sampling = false;
      await sampler;
      cost[`transactions ${tag}`] = {
        ...heldOne,
        concurrentMs,
        maxConnections,
        maxInTransaction,
      };
      console.log(`[bench] transactions ${tag}: ${JSON.stringify(cost[`transactions ${tag}`])}`);
    }
  } finally {
    await monitor.end();
  }
  return cost;
}

try {
  await main();
} catch (error) {
  console.error(`bench: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
