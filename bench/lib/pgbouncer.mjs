// Debian's PgBouncer in transaction mode, started on a loopback port with the settings of
// docs/deploy.md (their `[pgbouncer]` block, with only addresses and authentication changed), in
// front of one PostgreSQL server. For the tests (test/support/backend.ts, the `pgbouncer` database
// kind) and the benches (bench/pgbouncer.mjs).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { accepts, freePort } from './loopback.mjs';

const deployDocs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'deploy.md');

export const pgbouncerBinary = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((candidate) => fs.existsSync(candidate)) ?? (spawnSync('pgbouncer', ['--version']).status === 0 ? 'pgbouncer' : undefined);

/** Its version as [major, minor] ("PgBouncer 1.18.0" -> [1, 18]), or undefined without one. */
export const pgbouncerVersion = (() => {
  if (!pgbouncerBinary) return undefined;
  const match = /PgBouncer (\d+)\.(\d+)/.exec(spawnSync(pgbouncerBinary, ['--version'], { encoding: 'utf8' }).stdout ?? '');
  return match ? [Number(match[1]), Number(match[2])] : undefined;
})();

/**
 * The PgBouncer settings of docs/deploy.md: its ```ini block with `pool_mode = transaction`, with
 * every database of `target` (host and port) behind it, listening on 127.0.0.1:`listenPort`, and
 * clients trusted (authentication is not what is tested). Throws when the block no longer has a
 * line the test changes, rather than quietly test other settings.
 */
export function pgbouncerConfigFromDocs({ target, listenPort, authFile }) {
  const blocks = [...fs.readFileSync(deployDocs, 'utf8').matchAll(/```ini\n([\s\S]*?)```/g)].map((match) => match[1]);
  let config = blocks.find((block) => /^pool_mode = transaction$/m.test(block));
  if (!config) throw new Error('docs/deploy.md has no ```ini block with `pool_mode = transaction`');
  const replace = (pattern, line) => {
    if (!pattern.test(config)) throw new Error(`docs/deploy.md's PgBouncer block has no line matching ${pattern}`);
    config = config.replace(pattern, line);
  };
  replace(/^\w+ = host=\S+ port=\d+ dbname=\S+$/m, `* = host=${target.hostname} port=${target.port || 5432}`);
  replace(/^listen_addr = .*$/m, 'listen_addr = 127.0.0.1');
  replace(/^listen_port = .*$/m, `listen_port = ${listenPort}`);
  replace(/^auth_type = .*$/m, 'auth_type = trust');
  replace(/^auth_file = .*$/m, `auth_file = ${authFile}`);
  // No Unix socket: nothing but the loopback port.
  return `${config}unix_socket_dir =\n`;
}

/**
 * Starts PgBouncer in front of the PostgreSQL server of `targetUrl` (any database on it).
 * `settings` are more lines for its `[pgbouncer]` section. Resolves `urlFor(directUrl)` (the same
 * URL through PgBouncer), `stop()` and `output()`.
 */
export async function startPgbouncer({ targetUrl, settings = '' }) {
  if (!pgbouncerBinary) throw new Error('PgBouncer is not installed (apt-get install pgbouncer)');
  const target = new URL(targetUrl);
  const listenPort = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-pgbouncer-'));
  // PgBouncer refuses to run as root: it then runs as nobody, who must read its files.
  fs.chmodSync(dir, 0o755);
  const authFile = path.join(dir, 'users.txt');
  fs.writeFileSync(authFile, `"${decodeURIComponent(target.username || 'postgres')}" "${decodeURIComponent(target.password)}"\n`, { mode: 0o644 });
  const configFile = path.join(dir, 'pgbouncer.ini');
  fs.writeFileSync(configFile, pgbouncerConfigFromDocs({ target, listenPort, authFile }) + settings, { mode: 0o644 });

  const asRoot = process.getuid?.() === 0;
  const child = spawn(pgbouncerBinary, [...(asRoot ? ['-u', 'nobody'] : []), configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk) => {
    output = (output + chunk).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 10_000;
  while (!(await accepts(listenPort))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
      throw new Error(`PgBouncer did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port: listenPort,
    pid: child.pid,
    urlFor(directUrl) {
      const url = new URL(directUrl);
      url.hostname = '127.0.0.1';
      url.port = String(listenPort);
      return url.toString();
    },
    output: () => output,
    async stop() {
      // SIGINT: PgBouncer's immediate shutdown; SIGKILL if it has not gone within 5 s.
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
