import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { cliPath, exampleDir, tempDir } from './cli.js';

/**
 * Copies of examples/saas-backend, broken on purpose and started as real processes on throwaway
 * PostgreSQL databases: what the verify and fix tests share. Each test file makes its own
 * resources with `createResources`, so each cleans up only what it made.
 */

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
  output: string;
}

/** The built CLI, asynchronously: several runs (and the backends they probe) at once. `env` is added to this process's environment. */
export function runCliAsync(args: string[], cwd: string, env: Record<string, string> = {}): Promise<CliResult> {
  if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} is missing: build the CLI first (npm test does)`);
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...args], { cwd, encoding: 'utf8', timeout: 50_000, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      const status = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ status, stdout, stderr, output: stdout + stderr });
    });
  });
}

/** What `authstrap fix --json` prints. */
export interface FixFinding {
  id: string;
  status: 'pass' | 'warn' | 'fail' | 'skip';
  message: string;
  repaired?: boolean;
}

export interface FixReport {
  ok: boolean;
  dryRun: boolean;
  checks: FixFinding[];
}

/** `authstrap fix --json` with `args`; throws with the output when it printed no JSON. */
export async function fixJson(args: string[], cwd: string): Promise<CliResult & { report: FixReport }> {
  const result = await runCliAsync(['fix', '--json', ...args], cwd);
  try {
    return { ...result, report: JSON.parse(result.stdout) };
  } catch {
    throw new Error(`fix ${args.join(' ')} printed no JSON (exit ${result.status}):\n${result.output}`);
  }
}

/** A port nothing listens on right now: the OS picks it, so parallel backends do not collide. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** One connection for one use, always closed: no pool to end when a test file is done. */
export async function connect<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

export async function query<Row>(databaseUrl: string, text: string, params: unknown[] = []): Promise<Row[]> {
  return connect(databaseUrl, async (client) => (await client.query(text, params)).rows as Row[]);
}

/** The counts of rows in the given tables, as numbers. */
export async function countRows(databaseUrl: string, tables: string[]): Promise<Record<string, number>> {
  const [row] = await query<Record<string, string>>(databaseUrl, `SELECT ${tables.map((table) => `(SELECT count(*) FROM "${table}") AS "${table}"`).join(', ')}`);
  return Object.fromEntries(Object.entries(row!).map(([table, count]) => [table, Number(count)]));
}

/** Replaces `from` by `to` once in one file of a copy; throws if `from` is not there, so a changed template cannot quietly leave the copy healthy. */
export function breakFile(dir: string, file: string, from: string, to = '') {
  const full = path.join(dir, file);
  const source = fs.readFileSync(full, 'utf8');
  if (!source.includes(from)) throw new Error(`${file} no longer contains ${JSON.stringify(from)}: update this test`);
  fs.writeFileSync(full, source.replace(from, to));
}

/** A healthy .env: without one, cors-origin warns, and the fix checks would not all pass. */
export const healthyEnv = 'ALLOWED_ORIGINS=http://localhost:5173\n';

export interface Backend {
  url: string;
  databaseUrl: string;
  serviceApiKey: string;
  /** Stops the process (SIGTERM, then SIGKILL after 5 s); its database stays. */
  stop(): Promise<void>;
}

export interface ResourceOptions {
  /** The PostgreSQL server to create the throwaway databases on (any database of it, as an admin). */
  adminUrl: string | undefined;
  /** Names what this test file makes: databases `authstrap_<name>_…`, folders `authstrap-<name>-…`. */
  name: string;
  /** Written as the copy's .env when given; the example's own .env is never copied. */
  dotEnv?: string;
  /** More environment for the started backends, over the defaults. */
  backendEnv?: Record<string, string>;
}

/**
 * Databases, folders, copies and backends that `cleanup` removes again, in reverse order of
 * making: a backend is started after its database and copy, and must stop first, since its
 * process holds connections to the database and files in the folder.
 */
export function createResources({ adminUrl, name, dotEnv, backendEnv = {} }: ResourceOptions) {
  const cleanups: (() => Promise<void>)[] = [];

  async function createDatabase(): Promise<string> {
    const database = `authstrap_${name}_${randomBytes(6).toString('hex')}`;
    await connect(adminUrl!, (client) => client.query(`CREATE DATABASE ${database}`));
    cleanups.push(() => connect(adminUrl!, (client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)).then(() => undefined));
    const url = new URL(adminUrl!);
    url.pathname = `/${database}`;
    return url.toString();
  }

  function temporaryFolder(prefix: string): string {
    const dir = tempDir(prefix);
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  /**
   * A copy of the example: everything but its dependencies, data, tests and .env. node_modules is a
   * link to the example's own: installing per copy would take minutes, and the copies only change
   * source files. It sits in a folder named saas-backend, as the example does. `env` is its .env
   * (default: the resources' `dotEnv`).
   */
  function copyOfExample(env = dotEnv): string {
    const dir = path.join(temporaryFolder(`authstrap-${name}-`), 'saas-backend');
    const skipped = new Set(['node_modules', '.data', 'test', '.env']);
    fs.cpSync(exampleDir, dir, { recursive: true, filter: (source) => !skipped.has(path.relative(exampleDir, source).split(path.sep)[0]!) });
    fs.symlinkSync(path.join(exampleDir, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    if (env !== undefined) fs.writeFileSync(path.join(dir, '.env'), env);
    return dir;
  }

  /**
   * Starts a copy as `npm start` would (on a fresh database unless one is given; `embedded`: the
   * embedded one, in the folder its .env names or else .data/pglite) and waits until `waitFor`
   * answers 200 (/ready; /health for a copy whose /ready is broken on purpose).
   */
  async function startBackend(dir: string, databaseUrl?: string, waitFor = '/ready'): Promise<Backend> {
    databaseUrl ??= await createDatabase();
    const database = databaseUrl === 'embedded' ? {} : { DATABASE_URL: databaseUrl };
    const port = await freePort();
    const serviceApiKey = `${name}-test-service-key-${randomBytes(12).toString('hex')}`;
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/index.ts'], {
      cwd: dir,
      // Only what the backend needs: nothing of the environment running the tests leaks in.
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PORT: String(port),
        HOST: '127.0.0.1',
        ...database,
        BCRYPT_COST: '4',
        LOG_LEVEL: 'warn',
        RATE_LIMIT_AUTH_MAX: '1000',
        RATE_LIMIT_API_MAX: '1000',
        SERVICE_API_KEY: serviceApiKey,
        ...backendEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const stop = async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
    };
    // Before the databases in the clean-up order (it runs reversed): the process holds connections.
    cleanups.push(stop);

    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 40_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`the backend in ${dir} exited with ${child.exitCode}:\n${output}`);
      const ready = await fetch(`${url}${waitFor}`, { signal: AbortSignal.timeout(1000) }).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ready) return { url, databaseUrl, serviceApiKey, stop };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the backend in ${dir} did not answer ${waitFor} within 40 s:\n${output}`);
  }

  /** For afterAll: processes first (they hold connections), then databases and folders; a failure is logged, not thrown, so the rest still goes. */
  async function cleanup() {
    const pending = cleanups.splice(0).reverse();
    for (const clean of pending) await clean().catch((error) => console.error('clean-up failed:', error));
  }

  return { createDatabase, temporaryFolder, copyOfExample, startBackend, cleanup };
}

/** Every check of `authstrap verify`, in the order it reports them. */
export const verifyCheckIds = [
  'server-up',
  'database-connected',
  'api-docs',
  'name-clash',
  'id-field',
  'module-wiring',
  'sign-up',
  'sign-in',
  'session',
  'auth-endpoints',
  'tenant-isolation',
  'realtime',
  'operator-routes',
  'service-credential',
  'cors-origin',
  'loopback-hosts',
  'adapter-version',
  'tables',
  'database-replication',
  'operators',
  'sso-connections',
  'credential-provider',
  'nullability',
  'not-null-rows',
  'row-level-security',
  'owned-upgrades',
];

/** Every check of `authstrap fix` (those of verify that examine the project), in the order it reports them. */
export const fixCheckIds = ['name-clash', 'id-field', 'module-wiring', 'cors-origin', 'loopback-hosts', 'adapter-version', 'sso-connections', 'credential-provider', 'nullability', 'not-null-rows', 'row-level-security', 'owned-upgrades'];
