import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cliPath, exampleDir, tempDir } from './support/cli.js';
import { verifyCheckIds } from './support/example-copies.js';
import { parseEnv } from '../src/project/env-file.js';
import {
  freePort,
  listing,
  nothingListensOn,
  processGroupMembers,
  requireTmux,
  runCliProcess,
  shellQuote,
  startWithNpm,
  TmuxSession,
  type StartedProject,
  userEnv,
} from './support/setup.js';

/**
 * `authstrap setup` as a user runs it: the built CLI as a process (no terminal, stdin ignored,
 * a timeout), the created backend started with its own `npm start`, and the interactive path
 * through a real terminal (tmux). One test installs dependencies for real; the others use
 * --no-install, with the example's node_modules where the backend must start.
 */

const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;
if (process.env.CI && !adminUrl) {
  // CI must exercise PostgreSQL; a missing variable must not quietly shrink the suite.
  throw new Error('CI is set but AUTHSTRAP_TEST_POSTGRES_URL is not: .ci/run should export it');
}

/** What verify cannot read while the backend holds its embedded database. */
const databaseChecks = ['tables', 'database-replication', 'operators', 'sso-connections', 'credential-provider', 'nullability', 'not-null-rows', 'row-level-security'];
const stackTrace = /\n\s+at /;

const created: string[] = [];
const running: StartedProject[] = [];
function workspace(prefix = 'authstrap-setup-'): string {
  const dir = tempDir(prefix);
  created.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of created.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  // Only reached when a test failed between start and stop.
  for (const project of running.splice(0)) await project.stop().catch(() => {});
});

const readEnv = (dir: string) => parseEnv(fs.readFileSync(path.join(dir, '.env'), 'utf8'));

/** A throwaway database name and URLs on the test server; `drop` removes it (WITH (FORCE)). */
function throwawayDatabase(prefix: string) {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const url = new URL(adminUrl!);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async query<Row = Record<string, unknown>>(text: string, params?: unknown[], database = name): Promise<Row[]> {
      const target = new URL(adminUrl!);
      target.pathname = `/${database}`;
      const client = new pg.Client({ connectionString: target.toString() });
      await client.connect();
      try {
        return (await client.query(text, params)).rows as Row[];
      } finally {
        await client.end();
      }
    },
    async exists(): Promise<boolean> {
      return (await this.query('SELECT 1 FROM pg_database WHERE datname = $1', [name], new URL(adminUrl!).pathname.slice(1) || 'postgres')).length === 1;
    },
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

describe('authstrap setup, non-interactive', () => {
  it('creates, installs (npm), starts and verifies a backend that then runs with its own npm start', async () => {
    const root = workspace();
    const dir = path.join(root, 'install-test');
    const port = await freePort();

    // A cache folder of its own: the new embedded database leaves its initialised copy there.
    const cacheHome = path.join(root, 'cache');
    const setup = runCliProcess(['setup', '--yes', '--project-name', 'install-test', '--dir', dir, '--backend-port', String(port)], {
      cwd: root,
      timeoutMs: 180_000,
      env: userEnv({ XDG_CACHE_HOME: cacheHome }),
    });
    console.log(`setup with npm install: ${(setup.ms / 1000).toFixed(1)} s`);
    expect(setup.status, setup.output).toBe(0);
    expect(setup.stdout).toContain('Install dependencies (npm)');
    expect(setup.stdout).toContain('migrations applied: 0001_init.sql');
    // Setup stops the backend before the database checks: every check runs.
    expect(setup.stdout).toContain(`\n${verifyCheckIds.length} passed, 0 failed\n`);
    expect(setup.stdout.match(/^✔ /gm)?.length).toBeGreaterThanOrEqual(verifyCheckIds.length + 5); // the checks and the steps
    expect(setup.stdout).not.toContain('✘');
    expect(setup.stdout).toContain('Start it:  cd install-test && npm start');
    expect(setup.output).not.toMatch(stackTrace);
    expect(fs.existsSync(path.join(dir, 'node_modules/.bin/tsx'))).toBe(true);
    expect(fs.existsSync(path.join(dir, 'package-lock.json'))).toBe(true); // npm, not pnpm, installed
    expect(fs.readdirSync(path.join(cacheHome, 'authstrap'))).toEqual([expect.stringMatching(/^pglite-[\w.+-]+-initdb\.tar$/)]);
    // Setup stopped the backend it started.
    expect(await nothingListensOn(port)).toBe(true);

    const project = await startWithNpm(dir, port);
    running.push(project);
    try {
      expect(processGroupMembers(project.pgid).length).toBeGreaterThanOrEqual(2); // npm and the node it started
      const verify = runCliProcess(['verify', '--json', '--dir', dir], { cwd: root, timeoutMs: 60_000 });
      expect(verify.status, verify.output).toBe(0);
      const report = JSON.parse(verify.stdout) as { ok: boolean; url: string; checks: { id: string; status: string; message: string }[]; leftBehind?: string };
      expect(report.ok, verify.stdout).toBe(true);
      expect(report.url).toBe(`http://localhost:${port}`);
      // Everything else passes; the embedded database is the running backend's, so its checks wait.
      expect(report.checks.map((check) => [check.id, check.status])).toEqual(verifyCheckIds.map((id) => [id, databaseChecks.includes(id) ? 'skip' : 'pass']));
      expect(report.leftBehind).toBeUndefined(); // the test users went again, with the service key
    } finally {
      await project.stop();
      running.splice(running.indexOf(project), 1);
    }
    expect(processGroupMembers(project.pgid)).toEqual([]);
    expect(await nothingListensOn(port)).toBe(true);

    const env = readEnv(dir);
    expect(env.AUTH_SECRET).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(env.SERVICE_API_KEY).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(env.SERVICE_API_KEY).not.toBe(env.AUTH_SECRET);
    expect(env.AUTH_URL).toBe(`http://localhost:${port}`);
    expect(env.PORT).toBe(String(port));
    expect(env.ALLOWED_ORIGINS).toBe('http://localhost:5173');
    expect(env.DATABASE_URL).toBeUndefined();
    expect(fs.statSync(path.join(dir, '.env')).mode & 0o077).toBe(0);
    const example = parseEnv(fs.readFileSync(path.join(dir, '.env.example'), 'utf8'));
    expect(example.AUTH_SECRET).toBe('');
    expect(example.SERVICE_API_KEY).toBe('');

    // .env (and node_modules, the database, the logs) stay out of git.
    expect(fs.readFileSync(path.join(dir, '.gitignore'), 'utf8').split('\n')).toContain('.env');
    const git = (...args: string[]) => spawnSync('git', args, { cwd: dir, encoding: 'utf8' });
    expect(git('init', '-q').status).toBe(0);
    expect(git('add', '-A').status).toBe(0);
    const tracked = git('ls-files').stdout.split('\n').filter(Boolean);
    expect(tracked).toContain('.env.example');
    expect(tracked).toContain('authstrap.schema.ts');
    expect(tracked).toContain('migrations/0001_init.sql');
    expect(tracked).not.toContain('.env');
    expect(tracked.filter((file) => /^(node_modules|\.data|\.authstrap)\//.test(file))).toEqual([]);
  }, 240_000);

  it.runIf(adminUrl)('creates a PostgreSQL database, applies the migrations and passes every check', async () => {
    const dir = path.join(workspace(), 'pg-app');
    fs.mkdirSync(dir);
    fs.symlinkSync(path.join(exampleDir, 'node_modules'), path.join(dir, 'node_modules'));
    const database = throwawayDatabase('authstrap_setup');
    const port = await freePort();
    try {
      expect(await database.exists()).toBe(false);
      const setup = runCliProcess(['setup', '--yes', '--dir', dir, '--force', '--no-install', '--backend-port', String(port), '--database-url', database.url], { cwd: path.dirname(dir), timeoutMs: 90_000 });
      expect(setup.status, setup.output).toBe(0);
      expect(setup.stdout).toContain(`created database "${database.name}"`);
      expect(setup.stdout).toContain('migrations applied: 0001_init.sql');
      expect(setup.stdout).toContain('Database connected — GET /ready 200 (postgres)');
      expect(setup.stdout).toContain(`\n${verifyCheckIds.length} passed, 0 failed\n`);
      expect(setup.stdout).not.toContain('Install dependencies');
      expect(await nothingListensOn(port)).toBe(true);

      expect(await database.exists()).toBe(true);
      const tables = await database.query<{ name: string | null }>(
        `SELECT to_regclass(name) AS name FROM unnest(ARRAY['"User"', 'account', 'session', 'verification', '"Organization"', 'member']) AS name`,
      );
      expect(tables.map((row) => row.name)).toEqual(['"User"', 'account', 'session', 'verification', '"Organization"', 'member']);
      // Verify removed the users and organizations it created.
      expect(await database.query('SELECT "id" FROM "User"')).toEqual([]);
      expect(await database.query('SELECT "id" FROM "Organization"')).toEqual([]);

      expect(readEnv(dir).DATABASE_URL).toBe(database.url);
      expect(fs.lstatSync(path.join(dir, 'node_modules')).isSymbolicLink()).toBe(true);
      expect(fs.readlinkSync(path.join(dir, 'node_modules'))).toBe(path.join(exampleDir, 'node_modules'));
    } finally {
      await database.drop();
    }
    expect(await database.exists()).toBe(false);
  }, 120_000);

  it('--no-install --no-start writes the project in seconds and says how to start it', () => {
    const root = workspace();
    const setup = runCliProcess(['setup', '--yes', '--project-name', 'quick', '--no-install', '--no-start'], { cwd: root, timeoutMs: 30_000 });
    expect(setup.status, setup.output).toBe(0);
    expect(setup.ms).toBeLessThan(5_000);
    const dir = path.join(root, 'quick');
    for (const file of ['authstrap.schema.ts', 'migrations/0001_init.sql', '.env', '.env.example', 'package.json', 'src/index.ts']) {
      expect(fs.existsSync(path.join(dir, file)), file).toBe(true);
    }
    expect(fs.readdirSync(path.join(dir, 'src/generated')).length).toBeGreaterThan(0);
    expect(fs.readFileSync(path.join(dir, 'migrations/0001_init.sql'), 'utf8')).toContain('CREATE TABLE "User"');
    expect(readEnv(dir).AUTH_SECRET).toHaveLength(32);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).name).toBe('quick');
    // Nothing installed, started or created besides the files.
    for (const absent of ['node_modules', '.data', '.authstrap']) expect(fs.existsSync(path.join(dir, absent)), absent).toBe(false);
    expect(setup.stdout).not.toContain('Verifying');
    expect(setup.stdout).toContain('Created quick\n');
    // Dependencies are not installed, so the way to start it installs them first.
    expect(setup.stdout).toContain('Start it:  cd quick && npm install && npm start');
  });

  it('the project asks for the CLI that wrote it (linked from a checkout) and its README names its own port', () => {
    const root = workspace();
    const setup = runCliProcess(['setup', '--yes', '--project-name', 'own-port', '--backend-port', '4123', '--no-install', '--no-start'], { cwd: root, timeoutMs: 30_000 });
    expect(setup.status, setup.output).toBe(0);
    const dir = path.join(root, 'own-port');
    const packageJson = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    // This CLI runs from a checkout, whose version the registry does not have: the project links it.
    expect(packageJson.devDependencies.authstrap).toBe(`file:${path.dirname(path.dirname(cliPath))}`);
    expect(packageJson.scripts).toMatchObject({ generate: 'authstrap generate', verify: 'authstrap verify', fix: 'authstrap fix' });
    expect(JSON.stringify(packageJson)).not.toContain('workspace:');
    const readme = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
    expect(readEnv(dir).PORT).toBe('4123');
    expect(readme).toContain('http://localhost:4123');
    expect(readme).not.toContain('3000');
    expect(readme).toContain('npm run generate');
    expect(readme).not.toMatch(/npmjs\.com|npx authstrap/);
  });

  it('--json: one JSON document on stdout saying what was made; progress on stderr', () => {
    const root = workspace();
    const setup = runCliProcess(['setup', '--json', '--project-name', 'as-json', '--backend-port', '4124', '--no-install', '--no-start'], { cwd: root, timeoutMs: 30_000 });
    expect(setup.status, setup.output).toBe(0);
    expect(JSON.parse(setup.stdout)).toEqual({
      ok: true,
      projectName: 'as-json',
      dir: path.join(root, 'as-json'),
      backendPort: 4124,
      frontendPort: 5173,
      database: 'embedded',
      installed: false,
      checks: [],
    });
    expect(setup.stderr).toContain('Created as-json\n');
  });

  it('--no-install ignores a busy backend port: it will not start the backend', async () => {
    const root = workspace();
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, resolve));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const setup = runCliProcess(['setup', '--yes', '--project-name', 'later', '--no-install', '--backend-port', String(port)], { cwd: root });
      expect(setup.status, setup.output).toBe(0);
      expect(setup.stdout).toContain('Start and verify skipped');
      expect(readEnv(path.join(root, 'later')).PORT).toBe(String(port));
    } finally {
      busy.close();
    }
  });
});

describe('authstrap setup, bad usage', () => {
  /** Runs setup in a fresh folder; the folder's listing before and after. */
  function attempt(args: string[], prepare?: (root: string) => void) {
    const root = workspace();
    prepare?.(root);
    const before = listing(root);
    const run = runCliProcess(['setup', ...args], { cwd: root, timeoutMs: 30_000 });
    const after = listing(root);
    expect(run.output).not.toMatch(stackTrace);
    expect(run.signal, run.output).toBeNull(); // it ended by itself, not by the timeout
    return { ...run, root, before, after };
  }

  it('an unknown flag: exit 2, naming it, nothing written', () => {
    const run = attempt(['--frobnicate', '--yes', '--project-name', 'x', '--no-install']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("unknown option '--frobnicate'");
    expect(run.after).toEqual(run.before);
  });

  it('--backend-port 70000: exit 2, naming the flag', () => {
    const run = attempt(['--yes', '--project-name', 'x', '--backend-port', '70000', '--no-install']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--backend-port');
    expect(run.stderr).toContain('70000');
    expect(run.after).toEqual(run.before);
  });

  it('the same backend and frontend port: exit 2, naming both flags', () => {
    const run = attempt(['--yes', '--project-name', 'x', '--backend-port', '3000', '--frontend-port', '3000', '--no-install']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--backend-port and --frontend-port must differ');
    expect(run.after).toEqual(run.before);
  });

  it('no --project-name and no --dir with --yes: exit 2 at once, naming --project-name', () => {
    const run = attempt(['--yes', '--no-install']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--project-name');
    expect(run.ms).toBeLessThan(10_000);
    expect(run.after).toEqual(run.before);
  });

  it('no --project-name without a terminal (and without --yes): exit 2, never a prompt', () => {
    const run = attempt(['--no-install']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--project-name');
    expect(run.output).not.toMatch(/^\? /m); // no inquirer prompt was shown
    expect(run.after).toEqual(run.before);
  });

  it('a non-empty folder without --force: exit 2, naming the folder and --force, the folder unchanged', () => {
    const run = attempt(['--yes', '--dir', 'existing', '--no-install'], (root) => {
      fs.mkdirSync(path.join(root, 'existing'));
      fs.writeFileSync(path.join(root, 'existing/notes.txt'), 'mine\n');
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(path.join(run.root, 'existing'));
    expect(run.stderr).toContain('not empty');
    expect(run.stderr).toContain('--force');
    expect(run.after).toEqual(run.before);
    expect(fs.readFileSync(path.join(run.root, 'existing/notes.txt'), 'utf8')).toBe('mine\n');
  });

  it('an unreachable PostgreSQL: exit 1, the URL with its password masked, no folder created', () => {
    const run = attempt(['--yes', '--project-name', 'unreachable', '--no-install', '--database-url', 'postgresql://app:hunter2@127.0.0.1:1/app']);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('postgresql://app:***@127.0.0.1:1/app');
    expect(run.output).not.toContain('hunter2');
    expect(run.stderr).toContain('--database-url');
    expect(fs.existsSync(path.join(run.root, 'unreachable'))).toBe(false);
    expect(run.after).toEqual(run.before);
  });

  it('an install that cannot run: exit 1, saying which package manager, where the log is, and what was left', () => {
    // A PATH with only node on it: no package manager can be found.
    const nodeOnly = path.join(workspace(), 'bin');
    fs.mkdirSync(nodeOnly);
    fs.symlinkSync(process.execPath, path.join(nodeOnly, 'node'));
    const root = workspace();
    const run = runCliProcess(['setup', '--yes', '--project-name', 'no-pm', '--package-manager', 'yarn'], { cwd: root, timeoutMs: 30_000, env: { PATH: nodeOnly } });
    expect(run.status, run.output).toBe(1);
    expect(run.output).not.toMatch(stackTrace);
    const log = path.join(root, 'no-pm', '.authstrap', 'install.log');
    expect(run.stderr).toContain('Could not run yarn');
    expect(run.stderr).toContain('--package-manager');
    expect(run.stderr).toContain(log);
    expect(fs.readFileSync(log, 'utf8').length).toBeGreaterThan(0);
    expect(run.stderr).toContain(`The project files are in ${path.join(root, 'no-pm')}, but setup did not finish`);
  });

  it('a backend port in use: exit 2 naming the port and --backend-port, before anything is written or installed', async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, resolve));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const run = attempt(['--yes', '--project-name', 'busy', '--backend-port', String(port)]);
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(`Port ${port} is already in use`);
      expect(run.stderr).toContain('--backend-port');
      expect(run.after).toEqual(run.before);
    } finally {
      busy.close();
    }
  });

  it.runIf(adminUrl)('a PostgreSQL user that may not create the database: exit 1, masked URL, says what is left', async () => {
    const role = `authstrap_nocreate_${randomBytes(4).toString('hex')}`;
    const database = throwawayDatabase('authstrap_setup_denied');
    const url = new URL(database.url);
    url.username = role;
    url.password = 'not-shown-9f2';
    await database.query(`CREATE ROLE ${role} LOGIN NOCREATEDB PASSWORD 'not-shown-9f2'`, [], new URL(adminUrl!).pathname.slice(1) || 'postgres');
    try {
      const run = attempt(['--yes', '--project-name', 'denied', '--no-install', '--no-start', '--database-url', url.toString()]);
      expect(run.status).toBe(1);
      expect(run.stderr).toContain(`Cannot create database "${database.name}"`);
      expect(run.stderr).toContain(`${role}:***@`);
      expect(run.output).not.toContain('not-shown-9f2');
      expect(run.stderr).toContain('setup did not finish'); // the written files are not left unexplained
      expect(await database.exists()).toBe(false);
    } finally {
      await database.drop();
      await database.query(`DROP ROLE IF EXISTS ${role}`, [], new URL(adminUrl!).pathname.slice(1) || 'postgres');
    }
  });
});

describe('authstrap setup in a terminal', () => {
  const command = `${shellQuote(process.execPath)} ${shellQuote(cliPath)} setup --no-install --no-start`;

  it('asks for the name, the ports and the database (embedded), and writes them', async () => {
    requireTmux();
    const cwd = workspace('authstrap-tty-');
    const session = new TmuxSession(command, cwd);
    try {
      await session.waitFor('? Project name');
      session.answer('tty-embedded');
      await session.waitFor('? Backend port');
      session.answer('4101');
      await session.waitFor('? Next.js frontend');
      session.answer(''); // none: no frontend port to ask for
      await session.waitFor('❯ Embedded PostgreSQL');
      expect(session.capture()).not.toContain('Frontend port');
      session.answer(''); // the first choice
      expect(await session.exitCode(), session.capture()).toBe(0);
      const screen = session.capture();
      expect(screen).toContain('✔ Database Embedded PostgreSQL');
      expect(screen).toMatch(/^Created tty-embedded\s*$/m);
      expect(screen).not.toMatch(stackTrace);
    } finally {
      session.kill();
    }
    const env = readEnv(path.join(cwd, 'tty-embedded'));
    expect(env.PORT).toBe('4101');
    expect(env.AUTH_URL).toBe('http://localhost:4101');
    // Vite's port, the default without a frontend (--frontend-port to choose another).
    expect(env.ALLOWED_ORIGINS).toBe('http://localhost:5173');
    expect(env.DATABASE_URL).toBeUndefined();
  }, 90_000);

  it('asks for the frontend port only when there is a frontend', async () => {
    requireTmux();
    const cwd = workspace('authstrap-tty-');
    const session = new TmuxSession(command, cwd);
    try {
      await session.waitFor('? Project name');
      session.answer('tty-web');
      await session.waitFor('? Backend port');
      session.answer('4301');
      await session.waitFor('? Next.js frontend');
      session.answer('tty-web-app');
      await session.waitFor('? Frontend port (allowed by CORS) (3001)');
      session.answer('4302');
      await session.waitFor('❯ Embedded PostgreSQL');
      session.answer('');
      expect(await session.exitCode(), session.capture()).toBe(0);
    } finally {
      session.kill();
    }
    expect(readEnv(path.join(cwd, 'tty-web')).ALLOWED_ORIGINS).toBe('http://localhost:4302');
    expect(fs.existsSync(path.join(cwd, 'tty-web-app/package.json'))).toBe(true);
  }, 90_000);

  it.runIf(adminUrl)('asks for the PostgreSQL server field by field and writes the DATABASE_URL they make', async () => {
    requireTmux();
    const server = new URL(adminUrl!);
    const host = server.hostname;
    const dbPort = server.port || '5432';
    const user = decodeURIComponent(server.username || 'postgres');
    // A password that must be URL-encoded; the server's own when it has one (the test server trusts local users).
    const secret = server.password ? decodeURIComponent(server.password) : 'p@ss:w/rd %20?';
    const database = throwawayDatabase('authstrap_tty');
    const cwd = workspace('authstrap-tty-');
    const session = new TmuxSession(command, cwd);
    let screen = '';
    try {
      await session.waitFor('? Project name');
      session.answer('tty-app');
      await session.waitFor('? Backend port');
      session.answer('4201');
      await session.waitFor('? Next.js frontend');
      session.answer(''); // none
      await session.waitFor('❯ Embedded PostgreSQL');
      session.keys('Down');
      await session.waitFor('❯ A PostgreSQL server');
      session.answer('');
      await session.waitFor('? PostgreSQL host');
      session.answer(host);
      await session.waitFor('? PostgreSQL port');
      session.answer(dbPort);
      await session.waitFor('? PostgreSQL user');
      session.answer(user);
      await session.waitFor('? PostgreSQL password');
      session.answer(secret);
      await session.waitFor('? Database name (created if missing) (tty_app)');
      session.answer(database.name);
      expect(await session.exitCode(), session.capture()).toBe(0);
      screen = session.capture();
      expect(screen).toContain('✔ Database A PostgreSQL server');
      expect(screen).toContain(`created database "${database.name}"`);
      expect(screen).toMatch(/^Created tty-app\s*$/m);
      expect(screen).not.toContain(secret); // typed as *, shown masked
      expect(screen).not.toMatch(stackTrace);
      expect(await database.exists()).toBe(true);
    } finally {
      session.kill();
      await database.drop();
    }
    const env = readEnv(path.join(cwd, 'tty-app'));
    expect(env.PORT).toBe('4201');
    expect(env.AUTH_URL).toBe('http://localhost:4201');
    expect(env.ALLOWED_ORIGINS).toBe('http://localhost:5173');
    expect(env.DATABASE_URL).toBe(`postgresql://${encodeURIComponent(user)}:${encodeURIComponent(secret)}@${host}:${dbPort}/${database.name}`);
    if (!server.password) expect(env.DATABASE_URL).toContain(':p%40ss%3Aw%2Frd%20%2520%3F@');

    // For the docs: AUTHSTRAP_SAVE_TRANSCRIPT=docs/setup-interactive.txt saves this run's last screen.
    const transcript = process.env.AUTHSTRAP_SAVE_TRANSCRIPT;
    if (transcript) {
      const shown = screen.replace(/\n?\[exit 0\]$/, '');
      fs.writeFileSync(path.resolve(import.meta.dirname, '../../..', transcript), `$ authstrap setup --no-install --no-start\n${shown}\n`);
    }
  }, 90_000);

  it('Ctrl+C at a prompt ends it without a stack trace and without writing anything', async () => {
    requireTmux();
    const cwd = workspace('authstrap-tty-');
    const session = new TmuxSession(command, cwd);
    try {
      await session.waitFor('? Project name');
      session.keys('C-c');
      expect(await session.exitCode(), session.capture()).toBe(130);
      const screen = session.capture();
      expect(screen).toContain('Setup cancelled; nothing was written.');
      expect(screen).not.toMatch(stackTrace);
      expect(screen).not.toContain('failed unexpectedly');
    } finally {
      session.kill();
    }
    expect(fs.readdirSync(cwd)).toEqual([]);
  }, 60_000);
});
