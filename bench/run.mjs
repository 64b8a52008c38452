#!/usr/bin/env node
// The "Measure" bench: how much the example backend's authenticated, tenant-scoped
// GET /Projects?limit=20 costs next to (b) a bare node:http + pg server running the same data
// query, (c) Better Auth on Express 5 doing the same work, (d) Express running (a)'s own statement
// and (f) the floor: node:http + pg doing (a)'s whole job (session, membership, count and page) in
// one named statement; then POST /Projects {name} on (a) and (f). And how many SQL statements (and
// database round trips) one authenticated request makes on each. (a) and (f) are measured in
// BENCH_ROUNDS rounds (3) of the list, then (after one write load of each, not counted) as many of
// the write, in alternating order (a f, f a, a f), and the ratios are reported per round and as medians.
//
//   node bench/run.mjs            (or: pnpm bench; about 15 minutes)
//
// Needs wrk, PostgreSQL (BENCH_PG_URL, default postgresql://postgres@127.0.0.1:5432/postgres; the
// role must be allowed to CREATE DATABASE) and `pnpm install` done. Everything it starts listens on
// 127.0.0.1 and every load run is bounded in time. It creates a throwaway database and drops it.
// Writes bench/results/latest.json.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { api, children, expectStatus, freePort, median, runWrk, seedProjects, startChild, startExampleBackend, stopChild, waitForOk } from './lib/harness.mjs';
import { perRequest, startWireCounter } from './lib/pg-wire-counter.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const repoDir = path.resolve(benchDir, '..');
const exampleDir = path.join(repoDir, 'examples', 'saas-backend');
const resultsFile = path.join(benchDir, 'results', 'latest.json');

const settings = {
  pgUrl: process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres',
  threads: intFromEnv('BENCH_THREADS', 2),
  connections: intFromEnv('BENCH_CONNECTIONS', 20),
  warmupSeconds: intFromEnv('BENCH_WARMUP_SECONDS', 5),
  durationSeconds: intFromEnv('BENCH_DURATION_SECONDS', 15),
  projects: intFromEnv('BENCH_PROJECTS', 50),
  countedRequests: intFromEnv('BENCH_COUNTED_REQUESTS', 200),
  // (a) and (f), list and write, measured this many times in alternating order.
  rounds: intFromEnv('BENCH_ROUNDS', 3),
  poolSize: 10, // the example's pg pool (src/db/database.ts); the bare server uses the same
};
const listPath = '/Projects?limit=20';

function intFromEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 100_000) fail(`${name} must be a whole number from 1 to 100000 (got ${raw})`);
  return value;
}

function fail(message) {
  console.error(`bench: ${message}`);
  process.exit(2);
}

function log(message) {
  console.log(`[bench] ${message}`);
}

// ---------------------------------------------------------------------------------------------
// Preflight

const wrkCheck = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
if (wrkCheck.error) {
  fail(
    'wrk is not installed. Install it and run again:\n' +
      '  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y wrk\n' +
      '  macOS:         brew install wrk',
  );
}
const wrkVersion = `${wrkCheck.stdout}${wrkCheck.stderr}`.split('\n')[0].replace(/\s*Copyright.*$/, '').trim();
if (!fs.existsSync(path.join(exampleDir, 'node_modules', 'pg'))) fail('examples/saas-backend has no node_modules: run `pnpm install` at the repository root first');
const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');
if (!fs.existsSync(path.join(benchDir, 'better-auth-server', 'node_modules', 'better-auth'))) fail('bench/better-auth-server has no node_modules: run `pnpm install` at the repository root first');
const betterAuthVersion = JSON.parse(fs.readFileSync(path.join(benchDir, 'better-auth-server', 'package.json'), 'utf8')).dependencies['better-auth'];

// ---------------------------------------------------------------------------------------------
// Processes, cleanup

let admin;
let databaseName;
let counter;

async function cleanup() {
  for (const child of children) await stopChild(child);
  if (counter) await counter.close().catch(() => {});
  if (admin && databaseName) {
    await admin.query(`DROP DATABASE IF EXISTS "${databaseName}" WITH (FORCE)`).catch((error) => console.error(`bench: could not drop ${databaseName}: ${error.message}`));
    databaseName = undefined;
  }
  if (admin) await admin.end().catch(() => {});
  admin = undefined;
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    console.error(`bench: ${signal}, cleaning up`);
    cleanup().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------------------------
// The two servers

function databaseUrl(port = undefined) {
  const url = new URL(settings.pgUrl);
  url.pathname = `/${databaseName}`;
  if (port !== undefined) {
    url.hostname = '127.0.0.1';
    url.port = String(port);
  }
  return url.toString();
}

async function startExample(dbUrl) {
  return startExampleBackend({ dbUrl, env: { SERVICE_API_KEY: '' } });
}

async function startBare(organizationId, dbUrl) {
  const port = await freePort();
  const child = startChild('bare server', process.execPath, [path.join(benchDir, 'bare-server.mjs')], {
    cwd: benchDir,
    env: { PATH: process.env.PATH, DATABASE_URL: dbUrl, ORG_ID: organizationId, PORT: String(port) },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}${listPath}`, child, 30);
  return { child, base };
}

/** (d): the Express floor (bench/express-floor.mjs): (a)'s own list statement on Express 5, nothing else. */
async function startExpressFloor(organizationId, dbUrl) {
  const port = await freePort();
  const child = startChild('express floor', process.execPath, [path.join(benchDir, 'express-floor.mjs')], {
    cwd: benchDir,
    env: { PATH: process.env.PATH, DATABASE_URL: dbUrl, ORG_ID: organizationId, PORT: String(port) },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}${listPath}`, child, 30);
  return { child, base };
}

/** (f): the floor (bench/floor-server.mjs): (a)'s whole job for the list and the create, by hand, one statement each. */
async function startFloor(dbUrl) {
  const port = await freePort();
  const child = startChild('floor server', process.execPath, [path.join(benchDir, 'floor-server.mjs')], {
    cwd: benchDir,
    env: { PATH: process.env.PATH, DATABASE_URL: dbUrl, PORT: String(port) },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}/health`, child, 30);
  return { child, base };
}

/** (c): Better Auth on Express 5 (bench/better-auth-server), its tables migrated at startup. */
async function startBetterAuth(dbUrl) {
  const port = await freePort();
  const dir = path.join(benchDir, 'better-auth-server');
  const child = startChild('better-auth server', process.execPath, [path.join(dir, 'server.mjs')], {
    cwd: dir,
    env: { PATH: process.env.PATH, DATABASE_URL: dbUrl, PORT: String(port), AUTH_SECRET: 'bench-better-auth-secret-0123456789abcdef', NODE_ENV: 'production' },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}/api/auth/ok`, child, 60);
  return { child, base };
}

/** Signs the bench user up on (c) (same address as on the example) and returns its session cookie. */
async function betterAuthCookie(base) {
  const response = await fetch(`${base}/api/auth/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base },
    body: JSON.stringify({ email: 'bench@example.com', name: 'Bench', password: 'bench-password-1' }),
  });
  if (!response.ok) throw new Error(`Better Auth sign-up: ${response.status} ${await response.text()}`);
  const cookie = response.headers.getSetCookie().find((line) => line.startsWith('better-auth.session_token='));
  if (!cookie) throw new Error('Better Auth set no session cookie');
  return cookie.split(';')[0];
}

// ---------------------------------------------------------------------------------------------
// Counting: statements on the wire, and transactions PostgreSQL committed

async function xactCommit() {
  const { rows } = await admin.query('SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = $1', [databaseName]);
  return Number(rows[0]?.n ?? 0);
}

/** Waits (at most 15 s) until no client is connected to the bench database: their stats are flushed on exit. */
async function waitForNoBackends() {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const { rows } = await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [databaseName]);
    if (rows[0].n === 0) return;
    await sleep(200);
  }
  throw new Error('clients of the bench database did not go away within 15 s');
}

// PostgreSQL 15 flushes a busy backend's counters at most once a second and an idle one's within
// 10 s (PGSTAT_IDLE_INTERVAL); waiting 11 s idle makes the baseline include everything before it.
const statsSettleMs = 11_000;

// ---------------------------------------------------------------------------------------------
// wrk

function listLoad(base, headers, seconds) {
  const args = ['-t', String(settings.threads), '-c', String(settings.connections), '-d', `${seconds}s`, '--timeout', '5s', '-s', path.join(benchDir, 'wrk-report.lua')];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  args.push(`${base}${listPath}`);
  return runWrk(args, seconds);
}

/** The write: POST /Projects, each request a project of its own name (bench/wrk-create.lua). */
function writeLoad(base, headers, seconds) {
  const args = ['-t', String(settings.threads), '-c', String(settings.connections), '-d', `${seconds}s`, '--timeout', '5s', '-s', path.join(benchDir, 'wrk-create.lua')];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  args.push(`${base}/Projects`);
  return runWrk(args, seconds, { ...process.env, BENCH_REPORT_LUA: path.join(benchDir, 'wrk-report.lua') });
}

/** Warm-up (discarded), then the measured run; commits counted across both. */
async function measure(name, server, headers, load = listLoad) {
  await sleep(statsSettleMs);
  const loadBefore = os.loadavg()[0];
  const commitsBefore = await xactCommit();
  log(`${name}: warm-up ${settings.warmupSeconds} s`);
  const warmup = await load(server.base, headers, settings.warmupSeconds);
  log(`${name}: measuring ${settings.durationSeconds} s (${settings.threads} threads, ${settings.connections} connections)`);
  const result = await load(server.base, headers, settings.durationSeconds);
  const loadAfter = os.loadavg()[0];
  await stopChild(server.child);
  await waitForNoBackends();
  const commits = (await xactCommit()) - commitsBefore;
  const requests = warmup.requests + result.requests;
  return {
    rps: Math.round(result.rps),
    p99Ms: result.latencyUs.p99 / 1000,
    p50Ms: result.latencyUs.p50 / 1000,
    p90Ms: result.latencyUs.p90 / 1000,
    maxMs: result.latencyUs.max / 1000,
    requests: result.requests,
    durationS: result.durationUs / 1e6,
    warmupRequests: warmup.requests,
    // Every statement sent outside BEGIN/COMMIT is its own transaction, so this is statements per
    // request under the real concurrent load (slightly high: requests still in flight when wrk
    // stopped were answered but not counted by wrk).
    committedTransactions: commits,
    committedTransactionsPerRequest: Number((commits / requests).toFixed(3)),
    // 1-minute load average before the warm-up and after the run: on 2 cores, anything well above
    // what this bench itself adds (about 2 to 3) means other work shared the machine.
    loadAverage1m: { before: Number(loadBefore.toFixed(2)), after: Number(loadAfter.toFixed(2)) },
  };
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const startedAt = new Date();
  admin = new pg.Client({ connectionString: settings.pgUrl });
  await admin.connect();
  const { rows: versionRows } = await admin.query('SHOW server_version');
  databaseName = `authstrap_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  await admin.query(`CREATE DATABASE "${databaseName}"`);
  log(`database ${databaseName} created`);

  // 1. The example behind the counting proxy: migrations, seeding, statements per request.
  const pgUrl = new URL(settings.pgUrl);
  counter = await startWireCounter({ upstreamHost: pgUrl.hostname, upstreamPort: Number(pgUrl.port || 5432) });
  let example = await startExample(databaseUrl(counter.port));
  log('example backend up (through the statement counter); seeding');

  const signUp = await expectStatus(
    api(example.base, 'POST', '/api/auth/sign-up/email', { body: { email: 'bench@example.com', name: 'Bench', password: 'bench-password-1' } }),
    201,
    'sign-up',
  );
  const token = signUp.data.token;
  const session = await expectStatus(api(example.base, 'GET', '/api/auth/get-session', { token }), 200, 'get-session');
  const organizationId = session.data.organizations[0].id;
  const auth = { token, organizationId };
  // The write load creates projects in an organization of its own, so the list's page never changes.
  const writer = await seedProjects(example.base, { email: 'writer@example.com', name: 'Writer', projects: 0 });

  let before = counter.snapshot();
  for (let index = 1; index <= settings.projects; index += 1) {
    await expectStatus(api(example.base, 'POST', '/Projects', { ...auth, body: { name: `Project ${String(index).padStart(3, '0')}` } }), 201, 'POST /Projects');
  }
  const createCount = perRequest(before, counter.snapshot(), settings.projects);

  const check = await expectStatus(api(example.base, 'GET', listPath, auth), 200, `GET ${listPath}`);
  if (check.data.length !== 20 || check.meta.total !== settings.projects) throw new Error(`unexpected list: ${check.data.length} rows, total ${check.meta.total}`);
  for (let index = 0; index < 20; index += 1) await api(example.base, 'GET', listPath, auth); // warm the pool
  before = counter.snapshot();
  for (let index = 0; index < settings.countedRequests; index += 1) await expectStatus(api(example.base, 'GET', listPath, auth), 200, `GET ${listPath}`);
  const listCount = perRequest(before, counter.snapshot(), settings.countedRequests);
  log(`GET ${listPath}: ${listCount.statementsPerRequest} statements, ${listCount.roundTripsPerRequest} round trips per request`);

  await stopChild(example.child);

  // The bare server through the same counter: its two statements (count, then the page).
  let bare = await startBare(organizationId, databaseUrl(counter.port));
  for (let index = 0; index < 20; index += 1) await api(bare.base, 'GET', listPath);
  before = counter.snapshot();
  for (let index = 0; index < settings.countedRequests; index += 1) await expectStatus(api(bare.base, 'GET', listPath), 200, `bare GET ${listPath}`);
  const bareCount = perRequest(before, counter.snapshot(), settings.countedRequests);
  await stopChild(bare.child);

  // (c) through the same counter: Better Auth's getSession, the membership, the page.
  let betterAuth = await startBetterAuth(databaseUrl(counter.port));
  const cookie = await betterAuthCookie(betterAuth.base);
  const baHeaders = { cookie, 'x-organization-id': organizationId };
  const baGet = () => fetch(`${betterAuth.base}${listPath}`, { headers: baHeaders }).then(async (response) => {
    if (response.status !== 200) throw new Error(`(c) GET ${listPath}: ${response.status} ${await response.text()}`);
    return response.json();
  });
  for (let index = 0; index < 20; index += 1) await baGet();
  before = counter.snapshot();
  for (let index = 0; index < settings.countedRequests; index += 1) await baGet();
  const betterAuthCount = perRequest(before, counter.snapshot(), settings.countedRequests);
  await stopChild(betterAuth.child);
  await counter.close();
  counter = undefined;
  // Both read the same rows (checked below, before the load); the example now reads the page and
  // the total in one statement, the bare server in two.

  // 2. The example, straight to PostgreSQL: what every other server must answer too.
  example = await startExample(databaseUrl());
  const exampleList = await expectStatus(api(example.base, 'GET', listPath, auth), 200, `GET ${listPath}`);
  const exampleBody = await (await fetch(`${example.base}${listPath}`, { headers: { authorization: `Bearer ${token}`, 'x-organization-id': organizationId } })).text();
  const writerHeaders = { Authorization: `Bearer ${writer.token}`, 'x-organization-id': writer.organizationId };
  const exampleCreated = await expectStatus(api(example.base, 'POST', '/Projects', { ...writer, body: { name: 'Shape' } }), 201, 'POST /Projects');
  await stopChild(example.child);
  const bearer = { Authorization: `Bearer ${token}`, 'x-organization-id': organizationId };

  // 3. The bare server, same database, same query, no auth.
  bare = await startBare(organizationId, databaseUrl());
  const bareList = await expectStatus(api(bare.base, 'GET', listPath), 200, `bare GET ${listPath}`);
  const sameRows = JSON.stringify(bareList.data.map((row) => row.id)) === JSON.stringify(exampleList.data.map((row) => row.id));
  if (!sameRows || bareList.meta.total !== exampleList.meta.total) throw new Error('the bare server does not return the same page as the example');
  const b = await measure('(b) bare node:http + pg', bare, {});

  // 3b. (d) the Express floor: it must answer (a)'s bytes exactly, or a/d means nothing.
  const floor = await startExpressFloor(organizationId, databaseUrl());
  const floorBody = await (await fetch(`${floor.base}${listPath}`)).text();
  if (floorBody !== exampleBody) throw new Error('the Express floor does not answer what the example answers');
  const d = await measure('(d) Express floor', floor, {});

  // 3c. (f) the floor: the same page and total for the same bearer, and a record with the same
  // fields for the same write, or a/f means nothing.
  let handWritten = await startFloor(databaseUrl());
  const floorList = await (await fetch(`${handWritten.base}${listPath}`, { headers: bearer })).json();
  if (JSON.stringify(floorList.data) !== JSON.stringify(exampleList.data) || floorList.meta.total !== exampleList.meta.total) {
    throw new Error('the floor server (f) does not answer the page the example answers');
  }
  const floorCreated = await (await fetch(`${handWritten.base}/Projects`, { method: 'POST', headers: { ...writerHeaders, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Shape' }) })).json();
  if (JSON.stringify(Object.keys(floorCreated.data)) !== JSON.stringify(Object.keys(exampleCreated.data)) || floorCreated.data.organizationId !== writer.organizationId) {
    throw new Error('the floor server (f) does not answer the record the example answers');
  }
  await stopChild(handWritten.child);

  // 4. (c) Better Auth on Express 5, same database, same page, same session headers' worth of work.
  betterAuth = await startBetterAuth(databaseUrl());
  const betterAuthList = await baGet();
  if (JSON.stringify(betterAuthList.data.map((row) => row.id)) !== JSON.stringify(exampleList.data.map((row) => row.id))) {
    throw new Error('the Better Auth server does not return the same page as the example');
  }
  const c = await measure('(c) Better Auth on Express 5', betterAuth, baHeaders);

  // 5. (a) against (f), the list and then the write (POST /Projects {name}), in BENCH_ROUNDS
  // rounds whose order alternates (a f, f a, a f, ...), so that the machine's drift over the run
  // falls on both alike. Each round gives its own ratios; the run reports their medians. Every list
  // round comes before the first write: the writes add tens of thousands of rows to the table the
  // list reads (in another organization), and every list must read the same table.
  const rounds = [];
  const orderOf = (round) => (round % 2 === 1 ? ['a', 'f'] : ['f', 'a']);
  for (let round = 1; round <= settings.rounds; round += 1) {
    const measured = {};
    for (const who of orderOf(round)) {
      measured[who] = who === 'a'
        ? await measure(`list round ${round}: (a) example backend`, await startExample(databaseUrl()), bearer)
        : await measure(`list round ${round}: (f) floor, node:http + pg, one statement`, await startFloor(databaseUrl()), bearer);
    }
    rounds.push({ round, order: orderOf(round).join(' '), ...measured });
  }
  // The first write load on the freshly seeded database grows its tables from 50 rows to tens of
  // thousands, and whoever writes first pays for that (round 1's write was the lowest in both runs
  // of 2026-11-27 night): so one write load of each, not counted, before the measured rounds.
  await measure('write warm-up of the database (not counted): (a)', await startExample(databaseUrl()), writerHeaders, writeLoad);
  await measure('write warm-up of the database (not counted): (f)', await startFloor(databaseUrl()), writerHeaders, writeLoad);
  for (const entry of rounds) {
    const { round } = entry;
    for (const who of orderOf(round)) {
      entry[`${who}Write`] = who === 'a'
        ? await measure(`write round ${round}: (a) example, POST /Projects`, await startExample(databaseUrl()), writerHeaders, writeLoad)
        : await measure(`write round ${round}: (f) floor, POST /Projects`, await startFloor(databaseUrl()), writerHeaders, writeLoad);
    }
    entry.ratios = {
      listRps: Number((entry.a.rps / entry.f.rps).toFixed(3)),
      listP99: Number((entry.a.p99Ms / entry.f.p99Ms).toFixed(3)),
      writeRps: Number((entry.aWrite.rps / entry.fWrite.rps).toFixed(3)),
      writeP99: Number((entry.aWrite.p99Ms / entry.fWrite.p99Ms).toFixed(3)),
      overBetterAuth: Number((entry.a.rps / c.rps).toFixed(3)),
    };
    log(`round ${round} (${entry.order}): a/f list ${entry.ratios.listRps} (p99 ${entry.ratios.listP99}), write ${entry.ratios.writeRps} (p99 ${entry.ratios.writeP99})`);
  }
  // The tables below show the round whose list a/f is the median one.
  const middle = rounds.slice().sort((x, y) => x.ratios.listRps - y.ratios.listRps)[Math.floor(rounds.length / 2)];
  const { a, f, aWrite, fWrite } = middle;
  const medianOf = (pick) => median(rounds.map(pick));

  const cpus = os.cpus();
  const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoDir, encoding: 'utf8' }).stdout.trim();
  const dirty = spawnSync('git', ['status', '--porcelain'], { cwd: repoDir, encoding: 'utf8' }).stdout.trim() !== '';
  const results = {
    date: startedAt.toISOString(),
    commit: git ? `${git}${dirty ? '+local changes' : ''}` : null,
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model ?? null,
      memoryGiB: Number((os.totalmem() / 2 ** 30).toFixed(1)),
      os: `${os.type()} ${os.release()}`,
      node: process.version,
      postgres: versionRows[0].server_version,
      wrk: wrkVersion,
      note: 'wrk, the server under test and PostgreSQL share the same cores',
    },
    load: {
      tool: 'wrk',
      url: `http://127.0.0.1:<port>${listPath}`,
      threads: settings.threads,
      connections: settings.connections,
      warmupSeconds: settings.warmupSeconds,
      durationSeconds: settings.durationSeconds,
      projectsSeeded: settings.projects,
      poolSize: settings.poolSize,
    },
    example: { what: `GET ${listPath} with Authorization: Bearer <session token> and x-organization-id`, ...a },
    bare: { what: `node:http + pg, same SQL (count + page), no auth (bench/bare-server.mjs)`, ...b },
    expressFloor: { what: `Express 5 + pg running (a)'s own list statement, built once; no auth, no middleware (bench/express-floor.mjs)`, ...d },
    floor: { what: `node:http + pg doing (a)'s whole list job in one named statement: session by SHA-256, membership, count and page as JSON (bench/floor-server.mjs)`, ...f },
    write: {
      what: 'POST /Projects {name}: (a) the example; (f) the floor, the session, membership and insert in one named statement',
      example: aWrite,
      floor: fWrite,
    },
    betterAuth: {
      what: `Better Auth ${betterAuthVersion} on Express 5: auth.api.getSession (cookie), the membership, then the same page and total (bench/better-auth-server)`,
      ...c,
    },
    ratio: {
      rps: Number((a.rps / b.rps).toFixed(3)),
      p99: Number((a.p99Ms / b.p99Ms).toFixed(3)),
      rpsOverBetterAuth: Number((a.rps / c.rps).toFixed(3)),
      // What authstrap's pipeline costs (a/d), and what Express with the JSON statement costs (d/b).
      rpsOverExpressFloor: Number((a.rps / d.rps).toFixed(3)),
      expressFloorOverBare: Number((d.rps / b.rps).toFixed(3)),
      // Issue 32's goals: a/f >= 0.7 for the list, >= 0.75 for the write, p99(a) <= 1.5 x p99(f).
      rpsOverFloor: Number((a.rps / f.rps).toFixed(3)),
      p99OverFloor: Number((a.p99Ms / f.p99Ms).toFixed(3)),
      writeRpsOverFloor: Number((aWrite.rps / fWrite.rps).toFixed(3)),
      writeP99OverFloor: Number((aWrite.p99Ms / fWrite.p99Ms).toFixed(3)),
    },
    // (a) and (f) in alternating rounds: each round's measurements and ratios, and their medians.
    rounds,
    medians: {
      rpsOverFloor: medianOf((r) => r.ratios.listRps),
      p99OverFloor: medianOf((r) => r.ratios.listP99),
      writeRpsOverFloor: medianOf((r) => r.ratios.writeRps),
      writeP99OverFloor: medianOf((r) => r.ratios.writeP99),
      rpsOverBetterAuth: medianOf((r) => r.ratios.overBetterAuth),
    },
    statementsPerRequest: {
      method: 'wire-protocol count through a loopback proxy (bench/lib/pg-wire-counter.mjs), sequential requests after a warm-up',
      list: listCount,
      bareList: { what: 'the bare server: count, then the page', ...bareCount },
      betterAuthList: { what: '(c): getSession, the membership, then the page with its total', ...betterAuthCount },
      create: { what: 'POST /Projects while seeding', ...createCount },
    },
  };
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);

  console.log('');
  console.log(`machine: ${cpus.length} x ${results.machine.cpuModel}, ${results.machine.node}, PostgreSQL ${results.machine.postgres}, ${wrkVersion}`);
  console.log(`load: wrk -t${settings.threads} -c${settings.connections} -d${settings.durationSeconds}s after a ${settings.warmupSeconds} s warm-up, ${settings.projects} projects, pool ${settings.poolSize}`);
  console.log('');
  console.log(`                              rps     p50 ms   p99 ms   statements/request (commits)`);
  const row = (label, r) => console.log(`${label.padEnd(28)} ${String(r.rps).padStart(6)}   ${r.p50Ms.toFixed(2).padStart(6)}   ${r.p99Ms.toFixed(2).padStart(6)}   ${r.committedTransactionsPerRequest}`);
  row('(a) example, authenticated', a);
  row('(b) bare node:http + pg', b);
  row('(c) Better Auth, Express 5', c);
  row('(d) Express floor', d);
  row('(f) floor, one statement', f);
  row('(a) POST /Projects', aWrite);
  row('(f) POST /Projects', fWrite);
  console.log(`1-min load average before/after: (a) ${a.loadAverage1m.before}/${a.loadAverage1m.after}, (b) ${b.loadAverage1m.before}/${b.loadAverage1m.after}, (c) ${c.loadAverage1m.before}/${c.loadAverage1m.after}, (d) ${d.loadAverage1m.before}/${d.loadAverage1m.after}`);
  console.log(`ratio a/b: rps ${results.ratio.rps}, p99 ${results.ratio.p99}; a/c: rps ${results.ratio.rpsOverBetterAuth}; a/d: rps ${results.ratio.rpsOverExpressFloor}; d/b: rps ${results.ratio.expressFloorOverBare}`);
  console.log(`ratio a/f (round ${middle.round}): list rps ${results.ratio.rpsOverFloor}, p99 ${results.ratio.p99OverFloor}; write rps ${results.ratio.writeRpsOverFloor}, p99 ${results.ratio.writeP99OverFloor}`);
  for (const r of rounds) console.log(`  round ${r.round} (${r.order}): a/f list ${r.ratios.listRps} (p99 ${r.ratios.listP99}), write ${r.ratios.writeRps} (p99 ${r.ratios.writeP99}), a/c ${r.ratios.overBetterAuth}`);
  const m = results.medians;
  console.log(`medians of ${rounds.length} rounds: a/f list ${m.rpsOverFloor} (p99 ${m.p99OverFloor}), write ${m.writeRpsOverFloor} (p99 ${m.writeP99OverFloor}), a/c ${m.rpsOverBetterAuth}`);
  console.log('');
  console.log(`GET ${listPath} on the example, counted on the wire over ${listCount.requests} requests:`);
  console.log(`  ${listCount.statementsPerRequest} statements and ${listCount.roundTripsPerRequest} round trips per request`);
  for (const { sql, perRequest: times } of listCount.sql) console.log(`  ${times} x ${sql.length > 150 ? `${sql.slice(0, 150)}...` : sql}`);
  console.log(`bare server: ${bareCount.statementsPerRequest} statements, ${bareCount.roundTripsPerRequest} round trips per request (count, then the page)`);
  console.log(`Better Auth (c): ${betterAuthCount.statementsPerRequest} statements, ${betterAuthCount.roundTripsPerRequest} round trips per request`);
  for (const { sql, perRequest: times } of betterAuthCount.sql) console.log(`  ${times} x ${sql.length > 150 ? `${sql.slice(0, 150)}...` : sql}`);
  console.log(`POST /Projects: ${createCount.statementsPerRequest} statements, ${createCount.roundTripsPerRequest} round trips per request`);
  console.log('');
  console.log(`written to ${path.relative(process.cwd(), resultsFile) || resultsFile}`);

  // The rest of the story: sign-in against the bcrypt bound, cold start and memory. BENCH_LIST_ONLY=1
  // skips them (to repeat only the list comparison, as for a median of several runs).
  if (process.env.BENCH_LIST_ONLY !== '1') {
    for (const script of ['sign-in.mjs', 'startup.mjs']) {
      console.log(`\n[bench] node bench/${script}`);
      const run = spawnSync(process.execPath, [path.join(benchDir, script)], { stdio: 'inherit', env: process.env });
      if (run.status !== 0) throw new Error(`bench/${script} failed (exit ${run.status})`);
    }
  }
}

try {
  await main();
} catch (error) {
  console.error(`bench failed: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
