// What the benches share: child processes that are always stopped, free loopback ports, throwaway
// databases, the example backend started as production starts it and seeded through its API,
// and a small JSON client for that API.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from './loopback.mjs';

export { freePort };

export const repoDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The middle value of `values` (the upper of the two middle ones for an even count). */
export const median = (values) => values.slice().sort((x, y) => x - y)[Math.floor(values.length / 2)];

export const exampleDir = path.join(repoDir, 'examples', 'saas-backend');

/**
 * The Node binary the example backend runs on: BENCH_NODE (a path, e.g. the one
 * `node scripts/with-node.mjs 24 -- ...` fetched into .tools/node-24), or the Node running the bench.
 */
export const benchNode = process.env.BENCH_NODE || process.execPath;

/** Every child a bench started and has not stopped yet: its cleanup stops them all. */
export const children = new Set();

export function startChild(name, command, args, options) {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  child.benchName = name;
  child.output = '';
  const keep = (chunk) => {
    child.output = (child.output + chunk).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  children.add(child);
  return child;
}

/** SIGTERM, then SIGKILL after 10 s; only the process this script started, by its handle. */
export async function stopChild(child) {
  if (!children.has(child)) return;
  children.delete(child);
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await child.exited;
  clearTimeout(timer);
}

/** Polls until `url` answers 200 (every `pollMs`), for at most `seconds`. */
export async function waitForOk(url, child, seconds = 30, pollMs = 200) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${child.benchName} exited (${child.exitCode}) before answering:\n${child.output}`);
    try {
      const response = await fetch(url);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(pollMs);
  }
  throw new Error(`${child.benchName} did not answer ${url} within ${seconds} s:\n${child.output}`);
}

let built = false;

/**
 * The example backend as production runs it: compiled once (npm run build), then `node
 * dist/index.js` with NODE_ENV=production, on 127.0.0.1, bcrypt at cost 4 and the rate limits out
 * of the way. `env` adds to (or blanks) the settings; `readyPollMs` is how often /ready is tried;
 * `entry` is the compiled entry point (or a patched copy of dist/, as the retired bench/middleware-cost.mjs used);
 * `port` a port of its own (a free one otherwise); `launcher` a command that runs node (valgrind,
 * for bench/instructions.mjs), `readySeconds` how long it may take to answer /ready, and `node` the
 * Node binary the backend runs on (BENCH_NODE, or the one running the bench).
 */
export async function startExampleBackend({ dbUrl, env = {}, readyPollMs = 200, entry = 'dist/index.js', nodeArgs = [], port: fixedPort, launcher = [], readySeconds = 60, node = benchNode }) {
  const port = fixedPort ?? (await freePort());
  const fullEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? os.homedir(),
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: dbUrl,
    AUTH_SECRET: randomBytes(24).toString('base64url'),
    AUTH_URL: `http://127.0.0.1:${port}`,
    ALLOWED_ORIGINS: '',
    LOG_LEVEL: 'warn',
    BCRYPT_COST: '4',
    RATE_LIMIT_API_MAX: '1000000000',
    RATE_LIMIT_AUTH_MAX: '1000000000',
    RATE_LIMIT_DATA_MAX: '1000000000',
    SHUTDOWN_TIMEOUT_MS: '5000',
    // Nothing routes by /ready here: stop at once.
    SHUTDOWN_DRAIN_MS: '0',
    // Users are seeded by signing up and use their session at once: confirming each address by
    // mail is the identity tests' business, not the bench's. Their mail goes to a folder of its own.
    REQUIRE_EMAIL_VERIFICATION: 'false',
    SMTP_URL: '',
    MAIL_OUTBOX_DIR: path.join(os.tmpdir(), 'authstrap-bench-mail'),
    // Blank so that a developer's examples/saas-backend/.env cannot switch them on here.
    REDIS_URL: '',
    SERVICE_API_KEY: '',
    TRUST_PROXY: '',
    EMBEDDED_DB_DIR: '',
    BODY_LIMIT: '',
    ...env,
  };
  if (!built) {
    execFileSync(process.execPath, [path.join(exampleDir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: exampleDir, stdio: 'inherit' });
    built = true;
  }
  const spawnedAt = performance.now();
  const [command, ...launcherArgs] = launcher.length > 0 ? [...launcher, node] : [node];
  const child = startChild('example backend', command, [...launcherArgs, ...nodeArgs, entry], { cwd: exampleDir, env: fullEnv });
  const base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}/ready`, child, readySeconds, readyPollMs);
  // From spawning the process to its first 200 from /ready (within one poll interval).
  return { child, base, readyMs: Math.round(performance.now() - spawnedAt) };
}

export async function api(base, method, route, { token, organizationId, body } = {}) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (organizationId) headers['x-organization-id'] = organizationId;
  if (body) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${route}`, { method, headers, body: body && JSON.stringify(body) });
  const json = await response.json().catch(() => null);
  return { status: response.status, json };
}

export async function expectStatus(promise, status, what) {
  const result = await promise;
  if (result.status !== status) throw new Error(`${what}: expected ${status}, got ${result.status} ${JSON.stringify(result.json)}`);
  return result.json;
}

/**
 * Runs wrk with `args` (its `-s` script reports through wrk-report.lua), killed 30 s after its
 * `seconds` at the latest. Resolves wrk's figures; any socket error, timeout or non-2xx fails it,
 * since the figures would not mean anything then.
 */
export function runWrk(args, seconds, env = process.env) {
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const line = output.split('\n').find((text) => text.startsWith('BENCH_JSON '));
      if (code !== 0 || !line) return reject(new Error(`wrk failed (exit ${code}):\n${output}`));
      const result = JSON.parse(line.slice('BENCH_JSON '.length));
      const errors = Object.values(result.errors).reduce((sum, count) => sum + count, 0);
      if (errors > 0 || result.requests === 0) return reject(new Error(`wrk saw errors, so the figures would not mean anything: ${JSON.stringify(result.errors)}\n${output}`));
      resolve(result);
    });
  });
}

/**
 * wrk's arguments for (a)'s list load as the benches run it: `GET /Projects?limit=20` with the
 * session and organization headers, 2 threads, 20 connections, reported by wrk-report.lua. The
 * caller adds `-d <seconds>s`.
 */
export function listLoadArgs(base, { token, organizationId }) {
  const report = path.join(repoDir, 'bench', 'wrk-report.lua');
  return ['-t', '2', '-c', '20', '--timeout', '5s', '-s', report, '-H', `Authorization: Bearer ${token}`, '-H', `x-organization-id: ${organizationId}`, `${base}/Projects?limit=20`];
}

/** wrk's arguments for the write: POST /Projects with a name, each request a new project (wrk-create.lua). The caller adds `-d <seconds>s`. */
export function writeLoadArgs(base, { token, organizationId }) {
  return ['-t', '2', '-c', '20', '--timeout', '5s', '-s', path.join(repoDir, 'bench', 'wrk-create.lua'), '-H', `Authorization: Bearer ${token}`, '-H', `x-organization-id: ${organizationId}`, `${base}/Projects`];
}

/** Runs `statement` (with `params`, if any) on a connection of its own to `url` as its URL's user (BENCH_PG_URL's: the tables' owner), and resolves its result. */
export async function queryAsOwner(url, statement, params) {
  const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(statement, params);
  } finally {
    await client.end();
  }
}

/** Where the server's write-ahead log is, in bytes (PostgreSQL's LSN), read through `url`. */
export async function walPosition(url) {
  const { rows } = await queryAsOwner(url, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS "bytes"`);
  return BigInt(rows[0].bytes.split('.')[0]);
}

/**
 * The list load's data, through the API of a running example: one user (whose sign-up creates
 * their organization and session) and `projects` projects in that organization. Resolves what
 * the load sends: the session token and the organization id.
 */
export async function seedProjects(base, { email = 'bench@example.com', name = 'Bench', projects = 50 } = {}) {
  const signUp = await expectStatus(api(base, 'POST', '/api/auth/sign-up/email', { body: { email, name, password: 'bench-password-1' } }), 201, 'sign-up');
  const token = signUp.data.token;
  const organizationId = (await expectStatus(api(base, 'GET', '/api/auth/get-session', { token }), 200, 'get-session')).data.organizations[0].id;
  for (let index = 1; index <= projects; index += 1) {
    await expectStatus(api(base, 'POST', '/Projects', { token, organizationId, body: { name: `Project ${index}` } }), 201, 'POST /Projects');
  }
  return { token, organizationId };
}

/**
 * Writes `count` audit events of `organizationId` (acted by `actorId`) straight into
 * authstrap_event, as the tables' owner, spread evenly over the last 90 days, newest first: five
 * types in turn, each with a record of its own.
 */
export function insertAuditEvents(dbUrl, organizationId, actorId, count) {
  return queryAsOwner(
    dbUrl,
    `INSERT INTO "authstrap_event" ("type", "organizationId", "actorType", "actorId", "entity", "entityId", "data", "createdAt")
     SELECT (ARRAY['project.created', 'project.updated', 'project.deleted', 'member.updated', 'key.created'])[1 + n % 5], $1, 'user', $2,
            (ARRAY['Project', 'Project', 'Project', 'member', 'apikey'])[1 + n % 5], gen_random_uuid()::text,
            jsonb_build_object('record', jsonb_build_object('name', 'Project ' || n)), now() - (n * (90 * 86400.0 / $3)) * interval '1 second'
       FROM generate_series(1, $3) n`,
    [organizationId, actorId, count],
  );
}

/** utime + stime of one process so far, in clock ticks (100 per second on Linux; reads /proc). */
export function cpuTicks(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0; // the process ended in between
  }
}

/** utime + stime so far of every PostgreSQL process on this machine (its server and its backends), in clock ticks. */
export function postgresCpuTicks() {
  const pids = execFileSync('pgrep', ['-x', 'postgres'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  return pids.reduce((sum, pid) => sum + cpuTicks(pid), 0);
}

/** The PostgreSQL the benches create their databases in (a role that may CREATE DATABASE). */
export const benchPgUrl = process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

/**
 * A new, empty database `authstrap_bench_<label>_<pid>_<random>` next to BENCH_PG_URL's: resolves
 * its URL and `drop()`, which removes it (also while connections are open) and never throws, for
 * a `finally`.
 */
export async function throwawayDatabase(label) {
  const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');
  const admin = new pg.Client({ connectionString: benchPgUrl });
  const name = `authstrap_bench_${label}_${process.pid}_${randomBytes(3).toString('hex')}`;
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } catch (error) {
    await admin.end().catch(() => {});
    throw error;
  }
  const url = new URL(benchPgUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch((error) => console.error(`bench: could not drop ${name}: ${error.message}`));
      await admin.end().catch(() => {});
    },
  };
}
