// A replicated PostgreSQL for the failover tests and benches (issue 51): PostgreSQL 15 nodes
// under Debian's Patroni with a strict synchronous standby, etcd's v2 store, and HAProxy sending
// connections to the primary only (Patroni's /primary check), all on free 127.0.0.1 ports with
// files in a folder of their own. The machine's own PostgreSQL is never touched.
//
//   node scripts/replicated-postgres.mjs start [--nodes 3]   prints the URL, stops on Ctrl-C or SIGTERM
//
// As a module, startReplicatedPostgres() starts one and gives the faults the tests provoke
// (a postmaster or a whole node killed, a primary frozen and resumed, a switchover) and stop().
//
// The store is etcd's v2 API (`etcd:` in patroni.yml), not `etcd3`: Debian's Patroni 3.0.2 writes
// the leader key back without comparing who holds it in its etcd3 store, so a frozen primary that
// resumes takes the leader back and loses acknowledged writes; the v2 store compares (prevValue).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../bench/lib/loopback.mjs';

const scriptsDir = path.dirname(fileURLToPath(import.meta.url));
const pgBinDir = '/usr/lib/postgresql/15/bin';
const scope = 'authstrap';
// Debian's Python, the one its Patroni and python3-etcd are for (not a python3 earlier on PATH).
const debianPython = '/usr/bin/python3';

/** The programs needed, each with the Debian package that brings it. */
const requirements = [
  { pkg: 'postgresql-15', present: () => fs.existsSync(path.join(pgBinDir, 'postgres')) },
  { pkg: 'patroni', present: () => fs.existsSync('/usr/bin/patroni') },
  { pkg: 'etcd-server', present: () => fs.existsSync('/usr/bin/etcd') },
  { pkg: 'haproxy', present: () => fs.existsSync('/usr/sbin/haproxy') },
  { pkg: 'python3-etcd', present: () => spawnSync(debianPython, ['-c', 'import etcd']).status === 0 },
];

/** The Debian packages missing for a replicated PostgreSQL here (empty when it can start). */
export function missingPackages() {
  if (process.platform !== 'linux') return requirements.map((requirement) => requirement.pkg);
  return requirements.filter((requirement) => !requirement.present()).map((requirement) => requirement.pkg);
}

/**
 * Patroni's settings for the whole cluster (its `bootstrap.dcs`). A failover starts once the
 * leader key's ttl runs out: 10 s, with Patroni's rule loop_wait + 2 * retry_timeout <= ttl
 * (its documented minimum ttl is 20; 3.0.2 does not enforce it, and 10 keeps the tests short).
 * loop_wait 1 rather than 2 (bench/README.md, "Where a frozen primary's seconds go"): after a
 * promotion, the remaining replica only follows the new primary at its next loop, and with a
 * strict synchronous standby no commit is acknowledged until it does.
 */
export const clusterSettings = {
  ttl: 10,
  loop_wait: 1,
  retry_timeout: 4,
  maximum_lag_on_failover: 1048576,
  // A commit is acknowledged only once a synchronous standby has it, and with no standby at all
  // writes wait rather than go on alone.
  synchronous_mode: true,
  synchronous_mode_strict: true,
  postgresql: {
    use_pg_rewind: true,
    // No replication slots: Patroni 3.0.2 creates a promoted primary's slots for its replicas only
    // once the promotion's task is done, a loop or two later, and until then the remaining replica
    // is refused ("replication slot ... does not exist") and, with a strict synchronous standby,
    // no commit is acknowledged (2.5 to 3 s of every failover: bench/README.md, "Where a frozen
    // primary's seconds go"). wal_keep_size keeps the WAL a replica that was away needs instead.
    use_slots: false,
    parameters: {
      wal_level: 'replica',
      hot_standby: 'on',
      max_connections: 100,
      max_wal_senders: 10,
      max_replication_slots: 10,
      shared_buffers: '32MB',
      // A standby whose primary went away tries to connect again after this (5 s by default):
      // with a strict synchronous standby, no commit is acknowledged until it has.
      wal_retrieve_retry_interval: '1s',
      // What a replica (or an old primary being rewound) may be behind and still catch up without
      // slots: far more than a test's or a bench run's writes.
      wal_keep_size: '256MB',
    },
  },
};

const patience = { startMs: 120_000, leaderMs: 60_000, syncStandbyMs: 60_000, stopMs: 20_000 };

/**
 * Starts `nodes` PostgreSQL nodes under Patroni, etcd and HAProxy, and resolves once a primary
 * serves through HAProxy with a synchronous standby and every node is running.
 */
export async function startReplicatedPostgres({ nodes: nodeCount = 3 } = {}) {
  const missing = missingPackages();
  if (missing.length) throw new Error(`a replicated PostgreSQL needs Debian's ${missing.join(', ')}: apt-get install ${missing.join(' ')}`);
  if (nodeCount < 2) throw new Error('a replicated PostgreSQL needs at least 2 nodes (a primary and its synchronous standby)');

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-replicated-postgres-'));
  // PostgreSQL refuses to run as root: as root, Patroni and PostgreSQL run as the postgres user.
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined;
  fs.chmodSync(dir, 0o755);
  const processes = new ProcessKeeper(dir);

  const ports = await freePorts(5 + 2 * nodeCount);
  const etcd = { clientPort: ports.pop(), peerPort: ports.pop() };
  const haproxy = { primaryPort: ports.pop(), replicaPort: ports.pop(), statsPort: ports.pop() };
  const nodes = Array.from({ length: nodeCount }, (_, index) => {
    const name = `pg${index + 1}`;
    const nodeDir = path.join(dir, name);
    return { name, pgPort: ports.pop(), restPort: ports.pop(), dir: nodeDir, dataDir: path.join(nodeDir, 'data'), patroni: undefined, frozen: [] };
  });

  const cluster = {
    url: `postgres://postgres@127.0.0.1:${haproxy.primaryPort}/postgres`,
    replicaUrl: `postgres://postgres@127.0.0.1:${haproxy.replicaPort}/postgres`,
    dir,
    nodes: nodes.map((node) => ({ name: node.name, pgPort: node.pgPort, restPort: node.restPort, pid: () => postmasterPid(node) })),
    leader: () => dcsLeader(nodes),
    leaderKey: () => leaderKey(etcd),
    serversUp: (proxy = 'primary') => serversUp(haproxy, proxy),
    logFile: (name) => path.join(dir, `${name}.log`),
    members: () => members(nodes),
    waitForLeader: (timeoutMs = patience.leaderMs) => waitForLeader(nodes, haproxy, timeoutMs),
    waitForSyncStandby: (timeoutMs = patience.syncStandbyMs) => waitForSyncStandby(nodes, timeoutMs),
    killPostmaster: (name) => killPostmaster(nodeNamed(nodes, name)),
    killNode: (name) => killNode(nodeNamed(nodes, name), processes),
    startNode: (name) => startNode(nodeNamed(nodes, name), processes, owner),
    freeze: (name) => freeze(nodeNamed(nodes, name)),
    resume: (name) => resume(nodeNamed(nodes, name)),
    switchover: (to) => switchover(nodes, haproxy, to),
    settle: (options) => settle(nodes, haproxy, processes, options),
    logs: () => processes.logs(),
    stop: () => stop(nodes, processes),
  };

  try {
    processes.start('etcd', '/usr/bin/etcd', etcdArguments(dir, etcd));
    await waitFor('etcd to serve its v2 API', 30_000, async () => (await httpGet(`http://127.0.0.1:${etcd.clientPort}/v2/keys/`))?.status === 200);

    for (const node of nodes) {
      fs.mkdirSync(node.dir, { mode: 0o700 });
      fs.writeFileSync(path.join(node.dir, 'patroni.yml'), patroniConfig(node, etcd));
      if (owner) fs.chownSync(node.dir, owner.uid, owner.gid);
      startNode(node, processes, owner);
    }

    const haproxyConfig = path.join(dir, 'haproxy.cfg');
    fs.writeFileSync(haproxyConfig, haproxyConfigText(nodes, haproxy));
    const check = spawnSync('/usr/sbin/haproxy', ['-c', '-q', '-f', haproxyConfig], { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`HAProxy refuses its configuration:\n${check.stdout}${check.stderr}`);
    processes.start('haproxy', '/usr/sbin/haproxy', ['-db', '-f', haproxyConfig]);

    await waitForEveryNode(nodes, patience.startMs);
    await cluster.waitForLeader();
    await cluster.waitForSyncStandby();
  } catch (error) {
    const logs = processes.logs();
    await cluster.stop();
    error.message += `\n--- logs of the replicated PostgreSQL ---\n${logs}`;
    throw error;
  }
  return cluster;
}

function nodeNamed(nodes, name) {
  const node = nodes.find((candidate) => candidate.name === name);
  if (!node) throw new Error(`no node named ${name} (the nodes are ${nodes.map((candidate) => candidate.name).join(', ')})`);
  return node;
}

function postgresUser() {
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function freePorts(count) {
  const ports = new Set();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

// ---- configuration ------------------------------------------------------------------------

/** One etcd member on loopback, with the v2 API that Patroni's `etcd:` store speaks. */
function etcdArguments(dir, { clientPort, peerPort }) {
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  return [
    '--name', 'etcd', '--data-dir', path.join(dir, 'etcd', 'data'), '--enable-v2',
    '--listen-client-urls', client, '--advertise-client-urls', client,
    '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
    '--initial-cluster', `etcd=${peer}`, '--initial-cluster-state', 'new',
  ];
}

/** A node's patroni.yml, written as JSON (which YAML reads as it is). */
function patroniConfig(node, etcd) {
  const config = {
    scope,
    name: node.name,
    restapi: { listen: `127.0.0.1:${node.restPort}`, connect_address: `127.0.0.1:${node.restPort}` },
    etcd: { host: `127.0.0.1:${etcd.clientPort}`, protocol: 'http' },
    bootstrap: {
      dcs: clusterSettings,
      initdb: [{ encoding: 'UTF8' }, { locale: 'C.UTF-8' }],
    },
    postgresql: {
      listen: `127.0.0.1:${node.pgPort}`,
      connect_address: `127.0.0.1:${node.pgPort}`,
      data_dir: node.dataDir,
      bin_dir: pgBinDir,
      pgpass: path.join(node.dir, 'pgpass'),
      // Trust on loopback: authentication is not what these tests are about.
      authentication: { superuser: { username: 'postgres' }, replication: { username: 'postgres' } },
      pg_hba: ['local all all trust', 'host all all 127.0.0.1/32 trust', 'host replication all 127.0.0.1/32 trust'],
      parameters: { unix_socket_directories: node.dir },
    },
    watchdog: { mode: 'off' },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/**
 * HAProxy: `primary` goes to the node whose Patroni answers /primary with 200 (it holds the
 * leader key), `replicas` to the running replicas, and `stats` says which servers are up.
 * A server marked down has its connections closed, so no client stays on a demoted primary.
 */
function haproxyConfigText(nodes, { primaryPort, replicaPort, statsPort }) {
  const servers = nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.pgPort} check port ${node.restPort}`).join('\n');
  const checked = (check) => [
    `  option httpchk GET ${check}`,
    '  http-check expect status 200',
    // A down server is checked every 250 ms (downinter): the promoted standby takes connections
    // within a quarter of a second of answering /primary, not up to a second later.
    '  default-server inter 1s fastinter 250ms downinter 250ms fall 2 rise 1 on-marked-down shutdown-sessions',
  ].join('\n');
  return `global
  maxconn 1000

defaults
  mode tcp
  timeout connect 2s
  timeout client 1h
  timeout server 1h
  timeout check 2s

listen primary
  bind 127.0.0.1:${primaryPort}
${checked('/primary')}
${servers}

listen replicas
  bind 127.0.0.1:${replicaPort}
  balance roundrobin
${checked('/replica')}
${servers}

listen stats
  mode http
  bind 127.0.0.1:${statsPort}
  stats enable
  stats uri /
`;
}

// ---- the cluster's state ------------------------------------------------------------------

/** Patroni's view of the members (GET /cluster from the first node that answers), or undefined. */
async function members(nodes) {
  for (const node of nodes) {
    const response = await httpGet(`http://127.0.0.1:${node.restPort}/cluster`);
    if (response?.status === 200) return JSON.parse(response.body).members;
  }
  return undefined;
}

/** The node holding the leader key, as the DCS says (undefined while none does). */
async function dcsLeader(nodes) {
  return (await members(nodes))?.find((member) => member.role === 'leader')?.name;
}

/**
 * The leader key as etcd holds it (its value, the member, and its ttl left), read from etcd
 * itself, not through a Patroni that may hang on its frozen PostgreSQL; undefined while none is held.
 */
async function leaderKey(etcd) {
  const response = await httpGet(`http://127.0.0.1:${etcd.clientPort}/v2/keys/service/${scope}/leader`);
  if (response?.status !== 200) return undefined;
  const { node } = JSON.parse(response.body);
  return { holder: node.value, ttl: node.ttl, expiration: node.expiration };
}

/** HAProxy's servers of `proxy` that are up (taking connections). */
async function serversUp(haproxy, proxy) {
  const response = await httpGet(`http://127.0.0.1:${haproxy.statsPort}/;csv`);
  if (response?.status !== 200) return [];
  const [header, ...rows] = response.body.trim().split('\n').map((line) => line.split(','));
  const column = (name) => header.indexOf(name === 'pxname' ? '# pxname' : name);
  return rows
    .filter((row) => row[column('pxname')] === proxy && !['FRONTEND', 'BACKEND'].includes(row[column('svname')]))
    .filter((row) => row[column('status')].startsWith('UP'))
    .map((row) => row[column('svname')]);
}

/** The replicas streaming from `leader` (its Patroni's view of pg_stat_replication). */
async function streamingReplicas(leader) {
  const response = await httpGet(`http://127.0.0.1:${leader.restPort}/patroni`);
  if (response?.status !== 200) return [];
  return (JSON.parse(response.body).replication ?? []).filter((sender) => sender.state === 'streaming').map((sender) => sender.application_name);
}

/**
 * Waits until the DCS names a leader, its Patroni answers /primary with 200 and HAProxy sends
 * the primary's connections to it alone; resolves its name.
 */
async function waitForLeader(nodes, haproxy, timeoutMs) {
  let leader;
  await waitFor('a primary behind HAProxy', timeoutMs, async () => {
    leader = await dcsLeader(nodes);
    if (!leader) return false;
    const node = nodeNamed(nodes, leader);
    if ((await httpGet(`http://127.0.0.1:${node.restPort}/primary`))?.status !== 200) return false;
    const up = await serversUp(haproxy, 'primary');
    return up.length === 1 && up[0] === leader;
  });
  return leader;
}

/** Waits until every node whose Patroni runs has its PostgreSQL running. */
async function waitForEveryNode(nodes, timeoutMs) {
  const started = nodes.filter((node) => node.patroni).map((node) => node.name);
  await waitFor(`${started.join(', ')} to run`, timeoutMs, async () => {
    const running = (await members(nodes))?.filter((member) => member.state === 'running').map((member) => member.name) ?? [];
    return started.every((name) => running.includes(name));
  });
}

/** Waits until a running member is the synchronous standby; resolves its name. */
async function waitForSyncStandby(nodes, timeoutMs) {
  let standby;
  await waitFor('a synchronous standby', timeoutMs, async () => {
    standby = (await members(nodes))?.find((member) => member.role === 'sync_standby' && member.state === 'running')?.name;
    return Boolean(standby);
  });
  return standby;
}

/**
 * A planned switchover from the leader to `to` (or the standby Patroni picks: in synchronous
 * mode, the synchronous one); resolves the new leader's name once HAProxy sends to it and the
 * old leader runs again as a replica (until then, its Patroni is busy demoting it and would not
 * stop when told).
 */
async function switchover(nodes, haproxy, to) {
  const leader = await dcsLeader(nodes);
  if (!leader) throw new Error('switchover: no node holds the leader key');
  const response = await httpRequest('POST', `http://127.0.0.1:${nodeNamed(nodes, leader).restPort}/switchover`, JSON.stringify({ leader, ...(to ? { candidate: to } : {}) }), 30_000);
  if (response?.status !== 200) throw new Error(`switchover from ${leader}${to ? ` to ${to}` : ''} refused: ${response ? `${response.status} ${response.body}` : 'no answer'}`);
  const newLeader = await waitForLeader(nodes, haproxy, patience.leaderMs);
  if (newLeader === leader || (to && newLeader !== to)) throw new Error(`switchover from ${leader}${to ? ` to ${to}` : ''}: ${newLeader} leads (${response.body})`);
  // The old leader only: a third node that cannot follow the new timeline is settle()'s business.
  await waitForEveryNode([nodeNamed(nodes, leader)], patience.startMs);
  return newLeader;
}

/**
 * Waits until the cluster is whole again: a leader behind HAProxy, a running synchronous standby,
 * and every started node running, the replicas streaming from the leader. A node whose Patroni
 * reports `start failed`, or that is still not running (or not streaming) after `stuckMs`, is
 * reinitialized from the leader (Patroni's POST /reinitialize: a new base backup), as an operator
 * would: seen with Patroni 3.0.2, an old primary resumed from a freeze rejoins without pg_rewind
 * while holding WAL past the fork, and cannot follow the next timeline switch ("unexpected
 * timeline ID", or "requested timeline ... does not contain minimum recovery point"). Resolves
 * how long it took and what was reinitialized (with the end of its log); throws, naming the
 * members, if the cluster is not whole within `timeoutMs`.
 */
async function settle(nodes, haproxy, processes, { timeoutMs = 180_000, stuckMs = 40_000 } = {}) {
  const startedAt = Date.now();
  const reinitialized = [];
  const started = nodes.filter((node) => node.patroni).map((node) => node.name);
  let current = [];
  while (Date.now() - startedAt < timeoutMs) {
    current = (await members(nodes)) ?? [];
    const running = (member) => member.state === 'running' || member.state === 'streaming';
    const leader = current.find((member) => member.role === 'leader' && running(member));
    // Every replica streaming from the leader, as the leader's pg_stat_replication says: Patroni
    // calls a replica `running` while it still replays a base backup or restarts after pg_rewind,
    // and a failover then has no standby to promote, or the new primary none to confirm its commits.
    const streaming = leader ? await streamingReplicas(nodeNamed(nodes, leader.name)) : [];
    const whole =
      leader !== undefined &&
      current.some((member) => member.role === 'sync_standby' && running(member)) &&
      started.every((name) => current.some((member) => member.name === name && running(member))) &&
      started.every((name) => name === leader.name || streaming.includes(name));
    if (whole) {
      await waitForLeader(nodes, haproxy, Math.max(1000, timeoutMs - (Date.now() - startedAt)));
      return { settleMs: Date.now() - startedAt, reinitialized };
    }
    const stuck = (member) =>
      member.role !== 'leader' && (member.state === 'start failed' || (Date.now() - startedAt > stuckMs && (!running(member) || (leader && !streaming.includes(member.name)))));
    for (const member of current.filter((candidate) => stuck(candidate) && !reinitialized.some((entry) => entry.node === candidate.name))) {
      const response = await httpRequest('POST', `http://127.0.0.1:${nodeNamed(nodes, member.name).restPort}/reinitialize`, JSON.stringify({ force: true }), 10_000);
      // Why, for the record: the end of its Patroni's log.
      const log = processes.logs(12).split(/^== /m).find((part) => part.startsWith(`${member.name} `));
      reinitialized.push({ node: member.name, state: member.state, afterMs: Date.now() - startedAt, answer: response?.status, log: log?.trimEnd().split('\n') });
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the cluster was not whole again (a leader, a synchronous standby, every node running) within ${timeoutMs / 1000} s: ${JSON.stringify(current)}`);
}

// ---- faults -------------------------------------------------------------------------------

/** The node's postmaster (its data folder's postmaster.pid), if it runs. */
function postmasterPid(node) {
  let pid;
  try {
    pid = Number(fs.readFileSync(path.join(node.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
  return pid && isRunning(pid) ? pid : undefined;
}

/** SIGKILL to the primary's postmaster, as a crash does; its backends notice and exit, and Patroni starts it again. */
function killPostmaster(node) {
  const pid = postmasterPid(node);
  if (!pid) throw new Error(`${node.name}: no postmaster runs`);
  process.kill(pid, 'SIGKILL');
  return pid;
}

/** SIGKILL to the node's Patroni and every PostgreSQL process of it, as a lost machine. */
function killNode(node, processes) {
  if (!node.patroni) throw new Error(`${node.name} is not running`);
  // All but its guard (scripts/process-guard.py), which reaps them and then exits.
  for (const pid of processesIn(node.dir).filter((pid) => pid !== node.patroni.pid)) signal(pid, 'SIGKILL');
  return processes.waitForExit(node.patroni, patience.stopMs).then(() => {
    node.patroni = undefined;
    node.frozen = [];
  });
}

/** Starts (or starts again, after killNode) a node's Patroni, which starts its PostgreSQL. */
function startNode(node, processes, owner) {
  if (node.patroni) throw new Error(`${node.name} runs already`);
  node.patroni = processes.start(node.name, '/usr/bin/patroni', [path.join(node.dir, 'patroni.yml')], {
    owner,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: node.dir, LANG: 'C.UTF-8' },
  });
}

/**
 * SIGSTOP to the node's postmaster and every backend, as a paused machine or a stalled disk:
 * they hold their connections and answer nothing until resume(). Patroni itself runs on.
 */
function freeze(node) {
  const postmaster = postmasterPid(node);
  if (!postmaster) throw new Error(`${node.name}: no postmaster runs`);
  // The postmaster first, so that it forks no backend after the list is read.
  signal(postmaster, 'SIGSTOP');
  node.frozen = [postmaster, ...processesIn(node.dataDir).filter((pid) => pid !== postmaster)];
  for (const pid of node.frozen) signal(pid, 'SIGSTOP');
  return node.frozen;
}

function resume(node) {
  for (const pid of node.frozen) signal(pid, 'SIGCONT');
  node.frozen = [];
}

// ---- stopping -----------------------------------------------------------------------------

/**
 * Stops HAProxy, then every Patroni (which stops its PostgreSQL), then etcd; whatever has not
 * gone within patience.stopMs is killed, and the folder is removed once nothing runs in it.
 */
async function stop(nodes, processes) {
  for (const node of nodes) resume(node);
  await processes.stop('haproxy');
  await Promise.all(nodes.filter((node) => node.patroni).map((node) => processes.stop(node.name)));
  await processes.stop('etcd');
  processes.removeFolder();
  for (const node of nodes) node.patroni = undefined;
}

/**
 * Every process the cluster starts, and the sweep that ends them. Each runs under
 * scripts/process-guard.py (which reaps what it leaves and ends it if this process dies), in a
 * working folder of its own in the cluster's folder (`<name>/`; PostgreSQL's processes in their
 * data folder inside it), so what runs there is what it started, whichever process started it.
 */
class ProcessKeeper {
  constructor(dir) {
    this.dir = dir;
    this.started = new Map();
    // A copy the postgres user can read wherever the repository is.
    this.guard = path.join(dir, 'process-guard.py');
    fs.copyFileSync(path.join(scriptsDir, 'process-guard.py'), this.guard);
    fs.chmodSync(this.guard, 0o644);
    // A test runner that ends without stop() must not leave a cluster running.
    this.onExit = () => this.killAll();
    process.once('exit', this.onExit);
  }

  start(name, command, args, { owner, env = process.env } = {}) {
    const cwd = path.join(this.dir, name);
    fs.mkdirSync(cwd, { recursive: true, mode: 0o700 });
    const logFile = path.join(this.dir, `${name}.log`);
    const log = fs.openSync(logFile, 'a');
    // A process group of its own: a Ctrl-C meant for the CLI reaches it only through stop().
    const child = spawn(debianPython, [this.guard, command, ...args], { cwd, env, stdio: ['ignore', log, log], detached: true, ...(owner ? { uid: owner.uid, gid: owner.gid } : {}) });
    fs.closeSync(log);
    const entry = { name, pid: child.pid, cwd, logFile, exited: new Promise((resolve) => child.once('exit', resolve)), exitCode: null };
    child.once('exit', (code, signalName) => (entry.exitCode = code ?? signalName));
    this.started.set(name, entry);
    return entry;
  }

  async waitForExit(entry, timeoutMs) {
    let timer;
    const timeout = new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs, 'timeout')));
    const outcome = await Promise.race([entry.exited, timeout]);
    clearTimeout(timer);
    if (outcome === 'timeout') throw new Error(`${entry.name} did not exit within ${timeoutMs / 1000} s`);
  }

  /** SIGTERM to one, and SIGKILL to it and all it left running after patience.stopMs. */
  async stop(name) {
    const entry = this.started.get(name);
    if (!entry || entry.exitCode !== null) return;
    signal(entry.pid, 'SIGTERM');
    await this.waitForExit(entry, patience.stopMs).catch(() => {
      process.stderr.write(`replicated-postgres: ${name} did not stop within ${patience.stopMs / 1000} s of SIGTERM; killed\n`);
      for (const pid of processesIn(entry.cwd).filter((pid) => pid !== entry.pid)) signal(pid, 'SIGKILL');
      // Its guard reaps them and exits; killed only if it does not.
      return this.waitForExit(entry, 5000).catch(() => {
        signal(entry.pid, 'SIGKILL');
        return this.waitForExit(entry, 5000);
      });
    });
  }

  /** The end of every log, for an error message. */
  logs(lines = 30) {
    return [...this.started.values()]
      .map((entry) => `== ${entry.name} (${entry.exitCode === null ? 'running' : `exited: ${entry.exitCode}`})\n${readTail(entry.logFile, lines)}`)
      .join('\n');
  }

  killAll() {
    for (const pid of processesIn(this.dir)) signal(pid, 'SIGKILL');
    for (const entry of this.started.values()) signal(entry.pid, 'SIGKILL');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  removeFolder() {
    const left = processesIn(this.dir);
    if (left.length) {
      for (const pid of left) signal(pid, 'SIGKILL');
      throw new Error(`processes still ran in ${this.dir} after the cluster stopped (${left.join(', ')}); killed`);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
    process.removeListener('exit', this.onExit);
  }
}

// ---- processes, by /proc --------------------------------------------------------------------

function signal(pid, name) {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

/** Whether `pid` runs (a zombie, dead but not reaped yet, does not). */
function isRunning(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** The running processes whose working folder is `dir` or inside it. */
function processesIn(dir) {
  const pids = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cwd;
    try {
      cwd = fs.readlinkSync(`/proc/${entry}/cwd`);
    } catch {
      continue;
    }
    if ((cwd === dir || cwd.startsWith(`${dir}/`)) && isRunning(Number(entry))) pids.push(Number(entry));
  }
  return pids;
}

// ---- small helpers ------------------------------------------------------------------------

function readTail(file, lines) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function httpRequest(method, url, body, timeoutMs = 2000) {
  try {
    const response = await fetch(url, { method, body, signal: AbortSignal.timeout(timeoutMs), headers: body ? { 'content-type': 'application/json' } : {} });
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined;
  }
}

const httpGet = (url) => httpRequest('GET', url);

/** Polls `check` every 200 ms until it is true; throws naming `what` after `timeoutMs`. */
async function waitFor(what, timeoutMs, check) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

// ---- the command --------------------------------------------------------------------------

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, ...rest] = process.argv.slice(2);
  const nodesFlag = rest.indexOf('--nodes');
  if (command !== 'start') {
    console.error('usage: node scripts/replicated-postgres.mjs start [--nodes 3]');
    process.exit(2);
  }
  const cluster = await startReplicatedPostgres({ nodes: nodesFlag >= 0 ? Number(rest[nodesFlag + 1]) : 3 });
  const leader = await cluster.leader();
  console.log(cluster.url);
  console.log(`replicas: ${cluster.replicaUrl}`);
  for (const node of cluster.nodes) console.log(`${node.name}${node.name === leader ? ' (primary)' : ''}: postgres 127.0.0.1:${node.pgPort}, patroni 127.0.0.1:${node.restPort}`);
  console.log(`files: ${cluster.dir}; Ctrl-C stops it`);
  await new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  console.log('stopping');
  await cluster.stop();
}
