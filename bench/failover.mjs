#!/usr/bin/env node
// Failovers under load (issue 51, "Measure"): the replicated PostgreSQL of the tests
// (scripts/replicated-postgres.mjs: three nodes under Patroni, strict synchronous standby, etcd v2,
// HAProxy on /primary), two instances of the example (compiled, production) on it through
// HAProxy, and a few loops per instance each sending keyed writes (POST /Projects with an
// Idempotency-Key), each write sent again with its key until acknowledged. The primary then fails,
// --runs times per kind, the kinds taken in turn:
//
//   postmaster  the primary's postmaster killed (SIGKILL); Patroni starts it again in place
//   node        the primary's node lost: Patroni and PostgreSQL killed; started again afterwards
//   frozen      the primary's PostgreSQL frozen (SIGSTOP) past the ttl, then resumed (SIGCONT)
//
// Per run: the window of failed requests (the first failed request to the first acknowledged write
// after the last one), the time from the fault to that write (served again), the answers in
// between (a 500, or a 503 without Retry-After, is a fault of the backend), and, read on the new
// primary, the acknowledged writes missing (goal 0) and the writes stored twice (goal 0; every
// write has a name of its own, and a write sent again carries its first key).
//
// Once, before the faults: what synchronous replication costs a write. The same loops of keyed
// writes against one backend on the cluster's primary (its own port, not through HAProxy) and one
// on the machine's PostgreSQL (BENCH_PG_URL, 5432), and, to tell the standby's wait from the rest,
// on the same primary with synchronous_commit = local for its database; p50 and p95 of each.
//
//   node bench/failover.mjs [--runs 10] [--kinds postmaster,node,frozen] [--loops 2] [--until 2026-12-07T00:10:00Z] [--no-cost] [--timelines]
//
// --loops is per instance; --until stops starting runs at that time (what ran is written);
// --no-cost leaves the replication cost out; --timelines prints each run's timeline (always in the
// JSON): from the fault, who holds the leader key in etcd, which servers HAProxy sends to, the
// nodes' telling log lines (promotion, synchronous standby, the old primary's last loop), and the
// backend's first and last failed requests, the requests that hung before failing, and the first
// write acknowledged after the last failure.
// Writes bench/results/failover.json after every run. Needs Debian's patroni, etcd-server, haproxy.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { clusterSettings, missingPackages, startReplicatedPostgres } from '../scripts/replicated-postgres.mjs';
import { children, exampleDir, expectStatus, api, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'failover.json');
const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1] : fallback;
}
const runsPerKind = Number(option('runs', 10));
const kinds = option('kinds', 'postmaster,node,frozen').split(',');
const loopsPerInstance = Number(option('loops', 2));
const measureCost = !process.argv.includes('--no-cost');
const showTimelines = process.argv.includes('--timelines');
const until = option('until') ? new Date(option('until')).getTime() : Infinity;
for (const kind of kinds) if (!['postmaster', 'node', 'frozen'].includes(kind)) throw new Error(`--kinds: no kind ${kind} (postmaster, node, frozen)`);
if (!(runsPerKind >= 1)) throw new Error('--runs must be at least 1');

/** Writes before the fault, and served without a failure after it, before a run ends. */
const steadyMs = 2000;
/** A run's load ends this long after the fault whatever happens; a write is given up after it too. */
const maxFaultMs = 60_000;
const retryPauseMs = 100;
/** The frozen primary resumes after this: past the ttl, so the standby is promoted meanwhile. */
const frozenMs = (clusterSettings.ttl + 8) * 1000;
/** The issue's goals: a killed postmaster served again within 10 s; otherwise within ttl + 3 s. */
const goalMs = { postmaster: 10_000, node: (clusterSettings.ttl + 3) * 1000, frozen: (clusterSettings.ttl + 3) * 1000 };
/** The replication cost's write loops: each this long, against each target in turn, twice. */
const costMs = 8000;

const missing = missingPackages();
if (missing.length) {
  console.error(`bench/failover.mjs needs Debian's ${missing.join(', ')}`);
  process.exit(2);
}

const load = () => ({ loadAverage: os.loadavg().map((value) => Math.round(value * 100) / 100), uptime: fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0] });
const quantile = (values, q) => {
  if (!values.length) return null;
  const sorted = values.slice().sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
};
const spread = (values) => ({ n: values.length, min: quantile(values, 0), median: quantile(values, 0.5), p90: quantile(values, 0.9), max: quantile(values, 1) });

async function query(url, text, params = []) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

function databaseUrl(serverUrl, database, port) {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  if (port) url.port = String(port);
  return url.toString();
}

/** A user of `base`, signed up once; every instance accepts its session (sessions live in the database). */
async function signUp(base, email) {
  const signedUp = await expectStatus(api(base, 'POST', '/api/auth/sign-up/email', { body: { email, name: 'Failover', password: 'bench-password-1' } }), 201, 'sign-up');
  const token = signedUp.data.token;
  const session = await expectStatus(api(base, 'GET', '/api/auth/get-session', { token }), 200, 'get-session');
  return { token, organizationId: session.data.organizations[0].id };
}

/** One keyed write: its status and Retry-After, or the network error. */
async function keyedWrite(base, caller, name, key) {
  try {
    const response = await fetch(`${base}/Projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${caller.token}`, 'x-organization-id': caller.organizationId, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ name }),
      signal: AbortSignal.timeout(maxFaultMs),
    });
    await response.arrayBuffer();
    return { status: response.status, retryAfter: response.headers.get('retry-after') };
  } catch (error) {
    return { error: String(error.cause?.code ?? error.name ?? error) };
  }
}

// ---- the cost of synchronous replication ---------------------------------------------------------

/** `loops` loops of keyed writes against `base` for `ms`: every latency of a 201 (anything else is counted). */
async function writeLoops(base, caller, label, loops, ms) {
  const latencies = [];
  let failed = 0;
  const stopAt = Date.now() + ms;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      for (let index = 0; Date.now() < stopAt; index++) {
        const started = performance.now();
        const answer = await keyedWrite(base, caller, `${label}-${loop}-${index}-${randomUUID()}`, randomUUID());
        if (answer.status === 201) latencies.push(performance.now() - started);
        else failed++;
      }
    }),
  );
  return { latencies, failed };
}

async function replicationCost(cluster, primary) {
  const primaryPort = cluster.nodes.find((node) => node.name === primary).pgPort;
  const local = await throwawayDatabase('failover_cost');
  await query(cluster.url, 'CREATE DATABASE authstrap_bench_cost_sync');
  await query(cluster.url, 'CREATE DATABASE authstrap_bench_cost_local');
  // The same primary, without the wait for the standby: what the standby's confirmation costs.
  await query(cluster.url, "ALTER DATABASE authstrap_bench_cost_local SET synchronous_commit = 'local'");
  const targets = [
    { name: 'cluster primary (synchronous standby)', url: databaseUrl(cluster.url, 'authstrap_bench_cost_sync', primaryPort) },
    { name: 'single PostgreSQL (BENCH_PG_URL)', url: local.url },
    { name: 'cluster primary, synchronous_commit = local', url: databaseUrl(cluster.url, 'authstrap_bench_cost_local', primaryPort) },
  ];
  try {
    for (const target of targets) {
      target.backend = await startExampleBackend({ dbUrl: target.url, env: { LOG_LEVEL: 'error' } });
      target.caller = await signUp(target.backend.base, 'cost@example.com');
      target.latencies = [];
      target.failed = 0;
      await writeLoops(target.backend.base, target.caller, 'warm', 2 * loopsPerInstance, 1000);
    }
    // In turn, twice, so that a burst of the machine's other work falls on every target alike.
    for (let round = 0; round < 2; round++) {
      for (const target of targets) {
        const { latencies, failed } = await writeLoops(target.backend.base, target.caller, `cost-${round}`, 2 * loopsPerInstance, costMs);
        target.latencies.push(...latencies);
        target.failed += failed;
      }
    }
  } finally {
    for (const target of targets) if (target.backend) await stopChild(target.backend.child);
    await local.drop();
  }
  const round1 = (value) => Math.round(value * 10) / 10;
  const measured = targets.map((target) => ({
    target: target.name,
    writes: target.latencies.length,
    failed: target.failed,
    p50Ms: round1(quantile(target.latencies, 0.5)),
    p95Ms: round1(quantile(target.latencies, 0.95)),
  }));
  const [sync, single, localCommit] = measured;
  const ratio = (over, under) => Math.round((over / under) * 100) / 100;
  return {
    loops: 2 * loopsPerInstance,
    msPerTarget: 2 * costMs,
    targets: measured,
    syncOverSingle: { p50: ratio(sync.p50Ms, single.p50Ms), p95: ratio(sync.p95Ms, single.p95Ms) },
    syncOverLocalCommit: { p50: ratio(sync.p50Ms, localCommit.p50Ms), p95: ratio(sync.p95Ms, localCommit.p95Ms) },
    ...load(),
  };
}

// ---- failovers under load -----------------------------------------------------------------------

/**
 * Writers send keyed writes through both instances; after steadyMs `fault` is done; the run
 * ends once writes have been served for steadyMs after the last failure (or maxFaultMs after the
 * fault). Every request's outcome is kept with its time from the fault.
 */
async function runUnderLoad(cluster, instances, caller, label, fault) {
  const requests = [];
  const acknowledged = [];
  /** Names of writes sent more than once (each time with its first key). */
  const resent = [];
  const unacknowledged = [];
  let faultAt = Infinity;
  let stopAt = Date.now() + steadyMs + maxFaultMs;
  const at = () => Date.now() - faultAt;

  const loop = async (instance, loopIndex) => {
    for (let index = 0; Date.now() < stopAt; index++) {
      const name = `${label}-${loopIndex}-${index}`;
      const key = randomUUID();
      const giveUpAt = Date.now() + maxFaultMs;
      for (let attempt = 0; ; attempt++) {
        if (attempt === 1) resent.push(name);
        const sentWall = Date.now();
        const answer = await keyedWrite(instance.base, caller, name, key);
        requests.push({ sentWall, at: at(), ...answer });
        if (answer.status === 201) {
          acknowledged.push(name);
          break;
        }
        if (Date.now() > giveUpAt) {
          unacknowledged.push(name);
          break;
        }
        await sleep(retryPauseMs);
      }
    }
  };
  const loops = instances.flatMap((instance, instanceIndex) => Array.from({ length: loopsPerInstance }, (_, index) => loop(instance, instanceIndex * loopsPerInstance + index)));
  const running = Promise.all(loops);

  await sleep(steadyMs);
  const watch = watchCluster(cluster);
  faultAt = Date.now();
  const detail = await fault();
  while (Date.now() < stopAt) {
    const failures = requests.filter((request) => request.status !== 201 && request.at >= 0);
    const lastFailure = failures.length ? Math.max(...failures.map((request) => request.at)) : 0;
    const servedAfter = requests.some((request) => request.status === 201 && request.at > lastFailure);
    if (servedAfter && at() - lastFailure > steadyMs) stopAt = Date.now();
    else await sleep(100);
  }
  await running;
  const clusterEvents = await watch.stop();

  const failures = requests.filter((request) => request.status !== 201);
  const lastFailure = failures.length ? Math.max(...failures.map((request) => request.at)) : 0;
  const firstServed = requests.filter((request) => request.status === 201 && request.at > lastFailure).map((request) => request.at);
  const servedAgainMs = firstServed.length ? Math.min(...firstServed) : null;
  const firstFailure = failures.length ? Math.min(...failures.map((request) => request.at)) : null;
  const answers = {};
  for (const failure of failures) {
    const kind = failure.status ? String(failure.status) : failure.error;
    answers[kind] = (answers[kind] ?? 0) + 1;
  }
  return {
    detail,
    acknowledged,
    resent,
    unacknowledged,
    requests: requests.length,
    failed: failures.length,
    answers,
    // A 500 or a 503 without Retry-After: the backend did not say it was a failover.
    unexplained: failures.filter((failure) => failure.status === 500 || (failure.status === 503 && !failure.retryAfter)).length,
    firstFailureMs: firstFailure,
    servedAgainMs,
    // The window of failed requests: the first failure to the first acknowledged write after the last one.
    windowMs: firstFailure === null || servedAgainMs === null ? 0 : servedAgainMs - firstFailure,
    timeline: timeline({ faultAt, requests, failures, clusterEvents, servedAgainMs, cluster }),
  };
}

// ---- where a failover's seconds go ----------------------------------------------------------------

/**
 * The steps of one failover, in ms from the fault, read off its timeline (null where a step did not
 * happen: a killed postmaster keeps its leader key): the old leader's last loop before the fault,
 * the leader key gone from etcd, the standby's promotion, HAProxy sending to it, its PostgreSQL
 * taking writes, the remaining replica streaming from it (with a strict synchronous standby, no
 * commit is acknowledged before), the end of the last request that hung (more than a second)
 * before it failed, the last failure, and writes served again.
 */
function phases(events, leaderBefore, leaderAfter) {
  const first = (source, pattern, from = -Infinity) => events.find((event) => event.source === source && event.atMs >= from && pattern.test(event.what))?.atMs ?? null;
  const last = (source, pattern) => events.findLast((event) => event.source === source && pattern.test(event.what))?.atMs ?? null;
  const promoted = leaderAfter && leaderAfter !== leaderBefore ? first(leaderAfter, /promoted self to leader/, 0) : null;
  return {
    oldLeaderLastLoopMs: last(leaderBefore, /^last loop before the fault/),
    leaderKeyGoneMs: first('etcd', /^no leader key/, 0),
    promotedMs: promoted,
    haproxyToNewLeaderMs: promoted === null ? null : first('haproxy', new RegExp(`^primary servers up: ${leaderAfter}$`), promoted),
    // For a killed postmaster: its restart in place.
    newLeaderWritableMs: leaderAfter ? first(leaderAfter, /database system is ready to accept connections/, promoted ?? 0) : null,
    replicaStreamingMs: promoted === null ? null : events.find((event) => event.atMs >= promoted && event.source !== leaderAfter && /started streaming WAL/.test(event.what))?.atMs ?? null,
    lastHungEndMs: last('backend', /^a request hung/),
    lastFailureMs: first('backend', /^last failed request/),
    servedAgainMs: first('backend', /^first write acknowledged after the last failure/),
  };
}

/**
 * While a run lasts, every 100 ms: who holds the leader key in etcd (read from etcd itself) and
 * which servers HAProxy sends the primary's connections to; each change with its wall time.
 */
function watchCluster(cluster) {
  const events = [];
  let holder;
  let up;
  let stopped = false;
  const sampling = (async () => {
    while (!stopped) {
      const [key, servers] = await Promise.all([cluster.leaderKey(), cluster.serversUp('primary')]);
      const now = Date.now();
      if ((key?.holder ?? null) !== holder) {
        holder = key?.holder ?? null;
        events.push({ wall: now, source: 'etcd', what: holder ? `leader key held by ${holder}` : 'no leader key (expired or deleted)' });
      }
      const upNow = servers.join(',') || 'none';
      if (upNow !== up) {
        up = upNow;
        events.push({ wall: now, source: 'haproxy', what: `primary servers up: ${upNow}` });
      }
      await sleep(100);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await sampling;
      return events;
    },
  };
}

/** Patroni's and PostgreSQL's log lines that tell a failover's steps (the rest is each loop's "no action"). */
const tellingLine = /promot|lock|demot|Assigning synchronous|synchronous_standby_names|following a different|rewind|timeline|ready to accept|starting|shutting|terminat|Got response|failed|ERROR|FATAL|WARNING/i;
/** What HAProxy's checks leave in Patroni's log when they give up on a slow answer, and PostgreSQL's refusals while it starts. */
const noise =
  /Exception happened during processing of request|Traceback|the database system is (starting up|not yet accepting connections)|Lock owner: .*; I am|in progress$|could not connect to the primary server|STATEMENT:|read-only transaction|recovery is in progress|terminating connection due to unexpected/;
/** A line's time: Patroni's "2026-12-07 02:30:01,234 INFO: ..." or PostgreSQL's "2026-12-07 02:30:01.234 UTC [pid] LOG: ...". */
const lineTime = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})[,.](\d{3})( UTC)?/;

/**
 * The nodes' log lines from a second before `faultAt` to `toWall` that tell a step, and each node's
 * last "no action" since `fromWall` and before `faultAt` (its last loop).
 */
function nodeLogLines(cluster, fromWall, toWall, faultAt) {
  const lines = [];
  for (const node of cluster.nodes) {
    let text = '';
    try {
      text = fs.readFileSync(cluster.logFile(node.name), 'utf8');
    } catch {
      continue;
    }
    let lastLoop;
    for (const line of text.split('\n')) {
      const time = lineTime.exec(line);
      if (!time) continue;
      const wall = new Date(`${time[1]}T${time[2]}.${time[3]}${time[4] ? 'Z' : ''}`).getTime();
      if (wall < fromWall || wall > toWall) continue;
      const what = line.slice(time[0].length).trim();
      if (/no action/.test(what)) {
        if (wall <= faultAt) lastLoop = { wall, source: node.name, what };
      } else if (wall >= faultAt - 1000 && tellingLine.test(what) && !noise.test(what)) lines.push({ wall, source: node.name, what: what.slice(0, 200) });
    }
    if (lastLoop) lines.push({ ...lastLoop, what: `last loop before the fault: ${lastLoop.what}` });
  }
  return lines;
}

/**
 * A run's timeline, in ms from the fault: the cluster's changes (etcd, HAProxy, the nodes' logs)
 * and the backend's (its first failure, the requests that hung before they failed, the last failure,
 * and the first write acknowledged after it).
 */
function timeline({ faultAt, requests, failures, clusterEvents, servedAgainMs, cluster }) {
  const endWall = faultAt + (servedAgainMs ?? maxFaultMs) + 1000;
  const events = [...clusterEvents, ...nodeLogLines(cluster, faultAt - 3 * clusterSettings.ttl * 1000, endWall, faultAt)].map(({ wall, source, what }) => ({ atMs: wall - faultAt, source, what }));
  const tookMs = (request) => request.at - (request.sentWall - faultAt);
  const answer = (request) => (request.status ? `${request.status}${request.retryAfter ? ` (Retry-After ${request.retryAfter})` : ''}` : request.error);
  const afterFault = failures.filter((request) => request.at >= 0);
  if (afterFault.length) {
    const first = afterFault.reduce((a, b) => (b.at < a.at ? b : a));
    events.push({ atMs: first.at, source: 'backend', what: `first failed request: ${answer(first)} after ${tookMs(first)} ms` });
    const last = afterFault.reduce((a, b) => (b.at > a.at ? b : a));
    events.push({ atMs: last.at, source: 'backend', what: `last failed request: ${answer(last)} after ${tookMs(last)} ms (sent at ${last.sentWall - faultAt} ms)` });
  }
  // Requests that waited more than a second for their failure: what they waited on, and when they ended.
  const hung = afterFault.filter((request) => tookMs(request) > 1000);
  for (const request of hung) events.push({ atMs: request.at, source: 'backend', what: `a request hung ${tookMs(request)} ms (sent at ${request.sentWall - faultAt} ms), then ${answer(request)}` });
  // Writes acknowledged slowly after the fault: waits that ended well (a commit held for the standby).
  const slowAcknowledged = requests.filter((request) => request.status === 201 && request.at >= 0 && tookMs(request) > 1000);
  for (const request of slowAcknowledged) events.push({ atMs: request.at, source: 'backend', what: `a write acknowledged after ${tookMs(request)} ms (sent at ${request.sentWall - faultAt} ms)` });
  if (servedAgainMs !== null) events.push({ atMs: servedAgainMs, source: 'backend', what: 'first write acknowledged after the last failure (served again)' });
  return events.sort((a, b) => a.atMs - b.atMs);
}

/** Each kind's fault, and what puts the cluster back afterwards. */
let frozenResume;
const faults = {
  postmaster: {
    async provoke(cluster, leader) {
      const pid = cluster.killPostmaster(leader);
      return { killedPid: pid };
    },
  },
  node: {
    async provoke(cluster, leader) {
      await cluster.killNode(leader);
      return {};
    },
    async restore(cluster, leader) {
      cluster.startNode(leader);
    },
  },
  frozen: {
    async provoke(cluster, leader) {
      const frozen = cluster.freeze(leader);
      // Resumed while the writers run on: the old primary wakes up after the standby took over.
      frozenResume = { at: Date.now() + frozenMs, timer: setTimeout(() => cluster.resume(leader), frozenMs) };
      return { frozenProcesses: frozen.length, frozenMs };
    },
    async restore(cluster, leader) {
      // The writers stop once writes are served again, which is before the old primary wakes up.
      if (frozenResume) await sleep(Math.max(0, frozenResume.at + 1000 - Date.now()));
      clearTimeout(frozenResume?.timer);
      frozenResume = undefined;
      cluster.resume(leader);
    },
  },
};

/** Every acknowledged write of `names` stored once? Read on the primary (through HAProxy). */
async function storedOnce(url, names) {
  const rows = await query(url, 'SELECT name, count(*)::int AS times FROM "Project" WHERE name = ANY($1) GROUP BY name', [names]);
  const times = new Map(rows.map((row) => [row.name, row.times]));
  return { lost: names.filter((name) => !times.has(name)), doubled: names.filter((name) => (times.get(name) ?? 0) > 1) };
}

/** Writes stored twice among all of the run's (acknowledged or not): a name is one write. */
async function doubledAmong(url, prefix) {
  const rows = await query(url, 'SELECT name FROM "Project" WHERE name LIKE $1 GROUP BY name HAVING count(*) > 1', [`${prefix}-%`]);
  return rows.map((row) => row.name);
}

function summary(runs) {
  const byKind = {};
  for (const kind of kinds) {
    const ofKind = runs.filter((run) => run.kind === kind);
    const served = ofKind.filter((run) => run.servedAgainMs !== null);
    byKind[kind] = {
      runs: ofKind.length,
      goalMs: goalMs[kind],
      windowMs: spread(served.map((run) => run.windowMs)),
      servedAgainMs: spread(served.map((run) => run.servedAgainMs)),
      withinGoal: served.filter((run) => run.servedAgainMs < goalMs[kind]).length,
      notServedAgain: ofKind.length - served.length,
      // Old primaries of this kind's runs that did not rejoin by themselves (reinitialized later).
      oldPrimaryReinitialized: results.reinitialized.filter((entry) => entry.lostLeadTo === kind).length,
      acknowledged: ofKind.reduce((sum, run) => sum + run.acknowledged, 0),
      lost: ofKind.reduce((sum, run) => sum + run.lost.length, 0),
      resent: ofKind.reduce((sum, run) => sum + run.resent, 0),
      doubled: ofKind.reduce((sum, run) => sum + run.doubled.length, 0),
      unexplained: ofKind.reduce((sum, run) => sum + run.unexplained, 0),
      leaderChanged: ofKind.filter((run) => run.leaderAfter && run.leaderAfter !== run.leaderBefore).length,
      // Each step's time from the fault (phases()), over the runs where it happened.
      phases: Object.fromEntries(
        Object.keys(ofKind[0]?.phases ?? {}).map((step) => [step, spread(ofKind.map((run) => run.phases[step]).filter((value) => value !== null))]),
      ),
    };
  }
  return byKind;
}

// ---- the bench ------------------------------------------------------------------------------------

const results = {
  measuredAt: new Date().toISOString(),
  machine: { cpus: os.cpus().length, ...load() },
  settings: { runsPerKind, kinds, instances: 2, loopsPerInstance, steadyMs, maxFaultMs, retryPauseMs, frozenMs, goalMs, patroni: clusterSettings },
  replicationCost: null,
  runs: [],
  /** Nodes that were not running again before a run (Patroni's `start failed`, or stuck `starting`) and were reinitialized; with the run that took the lead from each. */
  reinitialized: [],
  summary: null,
  stoppedEarly: null,
};
const save = () => {
  results.summary = summary(results.runs);
  fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
};

let cluster;
let stopping = false;
const onSignal = () => {
  stopping = true;
  console.error('bench/failover.mjs: stopping after this run');
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);
try {
  console.log(`starting the cluster (load ${os.loadavg()[0].toFixed(2)})`);
  cluster = await startReplicatedPostgres({ nodes: 3 });
  const firstLeader = await cluster.waitForLeader();

  if (measureCost) {
    results.replicationCost = await replicationCost(cluster, firstLeader);
    console.log('synchronous replication, keyed write:', JSON.stringify(results.replicationCost));
    save();
  }

  const database = 'authstrap_bench_failover';
  await query(cluster.url, `CREATE DATABASE ${database}`);
  const url = databaseUrl(cluster.url, database);
  // One after the other: the first migrates, the second finds it done.
  const instances = [];
  for (let index = 0; index < 2; index++) instances.push(await startExampleBackend({ dbUrl: url, env: { LOG_LEVEL: 'error' } }));
  const caller = await signUp(instances[0].base, 'failover@example.com');

  const order = Array.from({ length: runsPerKind }, () => kinds).flat();
  for (const [index, kind] of order.entries()) {
    if (stopping || Date.now() > until) {
      results.stoppedEarly = `${stopping ? 'stopped by a signal' : `--until ${new Date(until).toISOString()} reached`} after ${index} of ${order.length} runs`;
      break;
    }
    let settling;
    try {
      settling = await cluster.settle();
    } catch (error) {
      results.stoppedEarly = `before run ${index + 1}: ${error.message}\n${cluster.logs()}`;
      break;
    }
    for (const { node, state, afterMs, log } of settling.reinitialized) {
      console.log(`  ${node}: ${state} after ${Math.round(afterMs / 1000)} s; reinitialized from the leader`);
      // Which run took the lead from it: the fault it did not come back from by itself.
      const lostLead = results.runs.findLast((run) => run.leaderBefore === node && run.leaderAfter !== node);
      results.reinitialized.push({ beforeRun: index + 1, node, lostLeadInRun: lostLead?.run, lostLeadTo: lostLead?.kind, settleMs: settling.settleMs, log: { node, state, log } });
    }
    const leaderBefore = await cluster.waitForLeader();
    const fault = faults[kind];
    const before = load();
    const label = `${kind}-${index}`;
    let run;
    try {
      run = await runUnderLoad(cluster, instances, caller, label, () => fault.provoke(cluster, leaderBefore));
    } finally {
      await fault.restore?.(cluster, leaderBefore);
    }
    const leaderAfter = await cluster.waitForLeader().catch(() => undefined);
    const { lost, doubled } = await storedOnce(url, run.acknowledged);
    const doubledAny = await doubledAmong(url, label);
    const ready = await Promise.all(instances.map(async (instance) => (await fetch(`${instance.base}/ready`).catch(() => undefined))?.status ?? 0));
    const record = {
      kind,
      run: index + 1,
      leaderBefore,
      leaderAfter,
      ...run.detail,
      firstFailureMs: run.firstFailureMs,
      windowMs: run.windowMs,
      servedAgainMs: run.servedAgainMs,
      requests: run.requests,
      failed: run.failed,
      answers: run.answers,
      unexplained: run.unexplained,
      acknowledged: run.acknowledged.length,
      resent: run.resent.length,
      unacknowledged: run.unacknowledged.length,
      lost,
      doubled: [...new Set([...doubled, ...doubledAny])],
      ready,
      loadBefore: before,
      loadAfter: load(),
      phases: phases(run.timeline, leaderBefore, leaderAfter),
      timeline: run.timeline,
    };
    results.runs.push(record);
    save();
    console.log(
      `${String(index + 1).padStart(2)} ${kind.padEnd(10)} ${leaderBefore}->${leaderAfter ?? '?'}  window ${(run.windowMs / 1000).toFixed(1)} s, served again ${run.servedAgainMs === null ? '-' : (run.servedAgainMs / 1000).toFixed(1)} s after the fault; ` +
        `${record.acknowledged} acknowledged, ${record.resent} resent, ${lost.length} lost, ${record.doubled.length} doubled, ${run.unexplained} unexplained; ${JSON.stringify(run.answers)}; load ${before.loadAverage[0]}`,
    );
    if (showTimelines) for (const event of run.timeline) console.log(`   ${String(event.atMs).padStart(7)} ms  ${event.source.padEnd(7)} ${event.what}`);
  }
  save();
  console.log(JSON.stringify(results.summary, null, 2));
} finally {
  for (const child of children) await stopChild(child);
  await cluster?.stop();
}
