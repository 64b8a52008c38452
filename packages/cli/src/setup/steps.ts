import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import pg from 'pg';
import { CliError } from '../cli-error.js';
import { applyWrites, loadTemplates, planGenerate } from '../generate/index.js';
import { templatesDir } from '../generate/templates.js';
import { maskPassword } from '../project/env-file.js';
import { loadSchema } from '../schema/index.js';
import { randomSecret, renderEnvFiles } from './env.js';
import type { SetupSettings } from './options.js';

/** The effects of `authstrap setup`, one function per step. Each throws a CliError saying what to do. */

/**
 * The Node versions authstrap and the projects it writes support, as their `engines` say it: 20 from
 * 20.19 and 22 from 22.12 (where each line loads ES modules with `require`, unflagged; Vite, which
 * the tests and the frontend run on, asks for the same), and every line after 22. 21 is an odd line,
 * out of support.
 */
export const supportedNodeRange = '^20.19.0 || >=22.12.0';
/** Logs of the install and of the backend while setup runs it. */
export const logDir = '.authstrap';

export function checkNode(version = process.versions.node): string {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const supported = major === 20 ? minor >= 19 : major === 22 ? minor >= 12 : major > 22;
  if (!supported) {
    throw new CliError(`Node 20.19+ or 22.12+ is needed (this is ${version}); Node 24, the current LTS, is the one to install`, 1);
  }
  return `Node ${version}`;
}

export function checkTargetFolder(settings: SetupSettings): string {
  if (!fs.existsSync(settings.dir)) return `${settings.dir} (new)`;
  if (!fs.statSync(settings.dir).isDirectory()) throw new CliError(`${settings.dir} is a file: choose another --dir`, 2);
  const entries = fs.readdirSync(settings.dir);
  if (entries.length > 0 && !settings.force) {
    throw new CliError(`${settings.dir} is not empty (${entries.length} entries): choose another --dir or --project-name, or pass --force to write into it`, 2);
  }
  return entries.length > 0 ? `${settings.dir} (not empty; --force)` : `${settings.dir} (empty)`;
}

/**
 * Fails before anything is written when the backend could not listen on `port`: a usage error
 * (exit 2) naming --backend-port, never the raw EADDRINUSE/EACCES of a backend that dies later.
 */
export async function checkPortFree(port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      const reasons: Record<string, string> = {
        EADDRINUSE: 'is already in use: stop what uses it, or pass --backend-port with a free port',
        EACCES: 'needs privileges this user does not have: pass --backend-port with a port above 1023',
      };
      const reason = reasons[error.code ?? ''] ?? `cannot be listened on (${error.code ?? error.message}): pass --backend-port with another port`;
      reject(new CliError(`Port ${port} ${reason}`, 2));
    });
    server.listen(port, () => server.close(() => resolve()));
  });
}

/** The server's maintenance database, to check the server and create the project's database. */
function serverUrl(databaseUrl: string): { admin: string; database: string } {
  const url = new URL(databaseUrl);
  const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || 'postgres';
  url.pathname = '/postgres';
  return { admin: url.toString(), database };
}

export async function checkPostgresReachable(databaseUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl(databaseUrl).admin, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
    return `PostgreSQL ${rows[0]!.server_version}`;
  } catch (error) {
    throw new CliError(`Cannot reach PostgreSQL at ${maskPassword(databaseUrl)}: ${(error as Error).message}. Check --database-url (host, port, user, password).`, 1);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Creates the database named in the URL when the server does not have it yet. */
export async function ensureDatabase(databaseUrl: string): Promise<string> {
  const { admin, database } = serverUrl(databaseUrl);
  const client = new pg.Client({ connectionString: admin, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    const { rows } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (rows.length > 0) return `database "${database}" exists`;
    await client.query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`);
    return `created database "${database}"`;
  } catch (error) {
    // A server error (e.g. a user without CREATEDB) is a failed step to explain, not a crash
    // with a stack trace; the URL is shown with its password masked.
    throw new CliError(
      `Cannot create database "${database}" at ${maskPassword(databaseUrl)}: ${(error as Error).message}. Create it yourself, or use a user that may create databases.`,
      1,
    );
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The starter schema, the rendered project, migrations, .env and .env.example.
 * `authstrapDependency` is how package.json asks for authstrap (see authstrap-dependency.ts).
 */
export function writeProject(settings: SetupSettings, authstrapDependency?: string): string {
  fs.mkdirSync(settings.dir, { recursive: true });
  const schemaFile = path.join(settings.dir, 'authstrap.schema.ts');
  if (!fs.existsSync(schemaFile) || settings.force) {
    fs.copyFileSync(path.join(templatesDir(), 'backend/starter/authstrap.schema.ts'), schemaFile);
  }
  const plan = planGenerate(settings.dir, loadSchema(settings.dir), loadTemplates(), {
    packageName: settings.projectName,
    overwriteOwned: settings.force,
    backendPort: settings.backendPort,
    authstrapDependency,
  });
  if (plan.problems.length > 0) throw new CliError(plan.problems.join('\n'), 1);
  applyWrites(settings.dir, plan.writes);
  writeEnvFiles(settings);
  return `${plan.writes.length + 2} files`;
}

/**
 * `.env` with fresh secrets (readable by its owner only) and `.env.example`. Written after the
 * templates: this project's ports and database replace the generic example.
 */
export function writeEnvFiles(settings: Pick<SetupSettings, 'dir' | 'backendPort' | 'frontendPort' | 'database'>): void {
  const { env, example } = renderEnvFiles(settings, { authSecret: randomSecret(32), serviceApiKey: randomSecret(43) });
  fs.writeFileSync(path.join(settings.dir, '.env.example'), example);
  fs.writeFileSync(path.join(settings.dir, '.env'), env, { mode: 0o600 });
}

export async function installDependencies(settings: Pick<SetupSettings, 'dir' | 'packageManager'>, logFile = path.join(settings.dir, logDir, 'install.log')): Promise<string> {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const result = await execa(settings.packageManager, ['install'], { cwd: settings.dir, all: true, reject: false, env: { CI: 'true' } });
  fs.writeFileSync(logFile, result.all || result.message || '');
  if (result.exitCode === undefined) {
    // It never ran: the package manager is not installed (or not on PATH).
    throw new CliError(`Could not run ${settings.packageManager} (${result.code ?? 'not found'}); install it or pass --package-manager npm. Details are in ${logFile}`, 1);
  }
  if (result.exitCode !== 0) {
    throw new CliError(`${settings.packageManager} install failed (exit ${result.exitCode}); its output is in ${logFile}`, 1);
  }
  return `${settings.packageManager} install`;
}

export interface RunningBackend {
  url: string;
  stop(): Promise<void>;
}

/**
 * Compiles the project as `npm run build` does (its own TypeScript, whatever the package
 * manager), so that it starts the way production runs it: `node dist/index.js`.
 */
export async function buildBackend(dir: string): Promise<string> {
  const logFile = path.join(dir, logDir, 'build.log');
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const tsc = path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!fs.existsSync(tsc)) throw new CliError(`TypeScript is not installed in ${dir}; run its package manager's install first`, 1);
  const result = await execa(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: dir, all: true, reject: false });
  fs.writeFileSync(logFile, result.all ?? '');
  if (result.exitCode !== 0) {
    const firstError = (result.all ?? '').split('\n').find((line) => /error TS\d+/.test(line));
    throw new CliError(`The backend does not compile${firstError ? `: ${firstError.trim()}` : ''}. The compiler's output is in ${logFile}`, 1);
  }
  return 'dist/';
}

function pick(env: NodeJS.ProcessEnv, names: string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => (env[name] ? [[name, env[name]]] : [])));
}

/**
 * Starts the project as `npm start` does (the compiled `dist/index.js`: build it first) and waits until /ready answers. Its environment holds
 * only what a shell needs, so that .env decides, as it will when the user starts it. HOME and XDG_CACHE_HOME are passed on: a new
 * embedded database keeps its initialised copy in the user's cache folder (the project's src/db/embedded-template.ts).
 */
export async function startBackend(settings: Pick<SetupSettings, 'dir' | 'backendPort'>, timeoutMs = 90_000): Promise<{ backend: RunningBackend; migrations: string }> {
  const logFile = path.join(settings.dir, logDir, 'backend.log');
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const log = fs.createWriteStream(logFile);
  const child: ResultPromise = execa(process.execPath, ['--enable-source-maps', 'dist/index.js'], {
    cwd: settings.dir,
    env: { LOG_LEVEL: 'info', ...pick(process.env, ['HOME', 'XDG_CACHE_HOME']) },
    extendEnv: false,
    reject: false,
    all: true,
    buffer: false,
  });
  let output = '';
  child.all?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    log.write(chunk);
  });
  const url = `http://127.0.0.1:${settings.backendPort}`;
  let exited = false;
  void child.then(() => (exited = true));

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited) {
      const reason = /"msg":"([^"]*)"|^(?!\{)(.+)$/m.exec(output.trim().split('\n').pop() ?? '');
      throw new CliError(`The backend stopped while starting: ${reason?.[1] ?? reason?.[2] ?? 'see the log'}. Its output is in ${logFile}`, 1);
    }
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new CliError(`The backend did not become ready within ${timeoutMs / 1000} s; its output is in ${logFile}`, 1);
    }
    try {
      if ((await fetch(`${url}/ready`, { signal: AbortSignal.timeout(2000) })).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  const applied = /"applied":\[([^\]]*)\]/.exec(output)?.[1];
  return {
    backend: {
      url,
      async stop() {
        if (!exited) {
          child.kill('SIGTERM');
          await child;
        }
        log.end();
      },
    },
    migrations: applied ? `migrations applied: ${applied.replace(/"/g, '')}` : 'migrations already applied',
  };
}
