import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath, exampleDir, readTree, tempDir } from './support/cli.js';

/**
 * The `authstrap fix` checks for the schema and the live database: entity names that clash with
 * the auth entities, auth columns with the wrong nullability, and tenant-scoped rows without an
 * organization. Each on a copy of the example broken that way: `--dry-run` changes nothing
 * (files or database), fix repairs it, a second fix is a no-op, and `authstrap verify` passes.
 * The helpers are those of fix-command.test.ts.
 */

const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;
if (process.env.CI && !adminUrl) {
  // CI must exercise PostgreSQL; a missing variable must not quietly shrink the suite.
  throw new Error('CI is set but AUTHSTRAP_TEST_POSTGRES_URL is not: .ci/run should export it');
}

const checkIds = ['name-clash', 'id-field', 'module-wiring', 'credential-provider', 'cors-origin', 'nullability', 'not-null-rows'];

interface FixFinding {
  id: string;
  status: 'pass' | 'warn' | 'fail';
  message: string;
  repaired?: boolean;
}
interface FixReport {
  ok: boolean;
  dryRun: boolean;
  checks: FixFinding[];
}
interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
  output: string;
}

function runCliAsync(args: string[], cwd: string): Promise<CliResult> {
  if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} is missing: build the CLI first (npm test does)`);
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...args], { cwd, encoding: 'utf8', timeout: 50_000 }, (error, stdout, stderr) => {
      const status = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ status, stdout, stderr, output: stdout + stderr });
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function connect<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

async function query<Row>(databaseUrl: string, text: string, params: unknown[] = []): Promise<Row[]> {
  return connect(databaseUrl, async (client) => (await client.query(text, params)).rows as Row[]);
}

const cleanups: (() => Promise<void>)[] = [];

async function createDatabase(): Promise<string> {
  const name = `authstrap_fixmore_${randomBytes(6).toString('hex')}`;
  await connect(adminUrl!, (client) => client.query(`CREATE DATABASE ${name}`));
  cleanups.push(() => connect(adminUrl!, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined));
  const url = new URL(adminUrl!);
  url.pathname = `/${name}`;
  return url.toString();
}

function temporaryFolder(prefix: string): string {
  const dir = tempDir(prefix);
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A healthy .env: without one, cors-origin warns, and the checks would not all pass. */
const healthyEnv = 'ALLOWED_ORIGINS=http://localhost:5173\n';

/** A copy of the example: everything but its dependencies, data and tests; node_modules is a link. */
function copyOfExample(): string {
  const dir = path.join(temporaryFolder('authstrap-fixmore-'), 'saas-backend');
  const skipped = new Set(['node_modules', '.data', 'test', '.env']);
  fs.cpSync(exampleDir, dir, { recursive: true, filter: (source) => !skipped.has(path.relative(exampleDir, source).split(path.sep)[0]!) });
  fs.symlinkSync(path.join(exampleDir, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  fs.writeFileSync(path.join(dir, '.env'), healthyEnv);
  return dir;
}

/** Replaces `from` by `to` once; throws if `from` is not there, so a changed template cannot leave the copy healthy. */
function breakFile(dir: string, file: string, from: string, to = '') {
  const full = path.join(dir, file);
  const source = fs.readFileSync(full, 'utf8');
  if (!source.includes(from)) throw new Error(`${file} no longer contains ${JSON.stringify(from)}: update this test`);
  fs.writeFileSync(full, source.replace(from, to));
}

const treeOf = (dir: string) => readTree(dir, ['node_modules']);

interface Backend {
  url: string;
  databaseUrl: string;
}

/** Starts a copy as `npm start` would (on a fresh database unless one is given) and waits for /ready. */
async function startBackend(dir: string, databaseUrl?: string): Promise<Backend> {
  databaseUrl ??= await createDatabase();
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/index.ts'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      BCRYPT_COST: '4',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_AUTH_MAX: '1000',
      RATE_LIMIT_API_MAX: '1000',
      SERVICE_API_KEY: `fix-test-service-key-${randomBytes(12).toString('hex')}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Before the databases in the clean-up order (it runs reversed): the process holds connections.
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
  });

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 40_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the backend in ${dir} exited with ${child.exitCode}:\n${output}`);
    const ready = await fetch(`${url}/ready`, { signal: AbortSignal.timeout(1000) }).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ready) return { url, databaseUrl };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the backend in ${dir} was not ready within 40 s:\n${output}`);
}

interface VerifyReport {
  ok: boolean;
  checks: { id: string; status: string; message: string }[];
}

async function verify(backend: Backend): Promise<{ status: number | null; report: VerifyReport; output: string }> {
  // An empty folder: no .env of anyone's leaks into the run.
  const cwd = temporaryFolder('authstrap-fixmore-cwd-');
  const result = await runCliAsync(['verify', '--json', '--url', backend.url, '--database-url', backend.databaseUrl], cwd);
  try {
    return { status: result.status, report: JSON.parse(result.stdout), output: result.output };
  } catch {
    throw new Error(`verify printed no JSON (exit ${result.status}):\n${result.output}`);
  }
}

async function fixJson(args: string[], cwd: string): Promise<CliResult & { report: FixReport }> {
  const result = await runCliAsync(['fix', '--json', ...args], cwd);
  try {
    return { ...result, report: JSON.parse(result.stdout) };
  } catch {
    throw new Error(`fix ${args.join(' ')} printed no JSON (exit ${result.status}):\n${result.output}`);
  }
}

/** What one scenario went through; filled in stage by stage, so a failure shows where it stopped. */
interface Cycle {
  treeBefore: Map<string, string>;
  databaseBefore?: unknown;
  dryRunJson: CliResult & { report: FixReport };
  dryRunText: CliResult;
  treeAfterDryRun: Map<string, string>;
  databaseAfterDryRun?: unknown;
  first: CliResult & { report: FixReport };
  treeAfterFirst: Map<string, string>;
  databaseAfterFirst?: unknown;
  second: CliResult & { report: FixReport };
  treeAfterSecond: Map<string, string>;
  databaseAfterSecond?: unknown;
  verifyAfter: Awaited<ReturnType<typeof verify>>;
}

interface Scenario {
  name: string;
  check: string;
  /** What the failing check reports before the repair for each other check ('pass' unless named). */
  othersBefore: Record<string, 'warn'>;
  /** The file whose diff the plan must show, or the SQL it must print. */
  planShows: string[];
  run(): Promise<void>;
  cycle: Partial<Cycle>;
  extra: Record<string, unknown>;
  error?: unknown;
}

async function fixCycle(cycle: Partial<Cycle>, dir: string, args: string[], snapshot?: () => Promise<unknown>) {
  cycle.treeBefore = treeOf(dir);
  cycle.databaseBefore = await snapshot?.();
  cycle.dryRunJson = await fixJson(['--dry-run', ...args], dir);
  cycle.dryRunText = await runCliAsync(['fix', '--dry-run', ...args], dir);
  cycle.treeAfterDryRun = treeOf(dir);
  cycle.databaseAfterDryRun = await snapshot?.();
  cycle.first = await fixJson(args, dir);
  cycle.treeAfterFirst = treeOf(dir);
  cycle.databaseAfterFirst = await snapshot?.();
  cycle.second = await fixJson(args, dir);
  cycle.treeAfterSecond = treeOf(dir);
  cycle.databaseAfterSecond = await snapshot?.();
}

function scenario(
  name: string,
  check: string,
  othersBefore: Record<string, 'warn'>,
  planShows: string[],
  run: (cycle: Partial<Cycle>, extra: Record<string, unknown>) => Promise<void>,
): Scenario {
  const result: Scenario = { name, check, othersBefore, planShows, cycle: {}, extra: {}, run: () => run(result.cycle, result.extra) };
  return result;
}

const nullability = (databaseUrl: string, columns: [string, string][]) => async () =>
  Object.fromEntries(
    await Promise.all(
      columns.map(async ([table, column]) => {
        const [row] = await query<{ is_nullable: string; column_default: string | null }>(
          databaseUrl,
          `SELECT is_nullable, column_default FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND column_name = $2`,
          [table, column],
        );
        return [`${table}.${column}`, row ? `${row.is_nullable} ${row.column_default ?? ''}`.trim() : 'missing'];
      }),
    ),
  );

const defaultOrganizationId = '00000000-0000-4000-8000-000000000001';

const clashingEntities = `
    // Billing accounts: "Account" is an auth entity's name, in another case.
    Account: {
      fields: {
        plan: { type: 'string', default: 'free' },
      },
    },
    // Workshop sessions, served as /Sessions: the path of the auth sessions.
    Workshop: {
      plural: 'Sessions',
      fields: {
        title: { type: 'string' },
      },
    },
`;

const scenarios: Scenario[] = [
  scenario(
    'name-clash: entities Account and Workshop (plural Sessions) next to the auth entities',
    'name-clash',
    // Until the names are fixed, the schema does not load, so the generate-based checks cannot run.
    { 'id-field': 'warn', 'module-wiring': 'warn' },
    ['--- a/authstrap.schema.ts', '+++ b/src/generated/AppAccount/'],
    async (cycle, extra) => {
      const dir = copyOfExample();
      breakFile(dir, 'authstrap.schema.ts', '  entities: {\n', `  entities: {${clashingEntities}`);
      extra.generateBefore = await runCliAsync(['generate'], dir);
      await fixCycle(cycle, dir, []);
      extra.schema = fs.readFileSync(path.join(dir, 'authstrap.schema.ts'), 'utf8');
      extra.generateAfter = await runCliAsync(['generate', '--dry-run'], dir);
      const backend = await startBackend(dir);
      extra.tables = (
        await query<{ name: string }>(backend.databaseUrl, `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('Account', 'Workshop', 'account', 'session') ORDER BY 1`)
      ).map((row) => row.name);
      // Signed out: mounted routes ask who is calling (401), unknown ones are 404.
      extra.statuses = Object.fromEntries(await Promise.all(['/app-accounts', '/app-workshops', '/sessions'].map(async (route) => [route, (await fetch(`${backend.url}${route}`)).status])));
      cycle.verifyAfter = await verify(backend);
    },
  ),
  scenario(
    'nullability: account.password made NOT NULL, User.email made nullable',
    'nullability',
    {},
    ['ALTER TABLE "account" ALTER COLUMN "password" DROP NOT NULL;', 'ALTER TABLE "User" ALTER COLUMN "email" SET NOT NULL;'],
    async (cycle, extra) => {
      const dir = copyOfExample();
      const backend = await startBackend(dir);
      const columns = nullability(backend.databaseUrl, [['account', 'password'], ['User', 'email'], ['User', 'name']]);
      extra.columnsHealthy = await columns();
      await query(backend.databaseUrl, `ALTER TABLE "account" ALTER COLUMN "password" SET NOT NULL`);
      await query(backend.databaseUrl, `ALTER TABLE "User" ALTER COLUMN "email" DROP NOT NULL`);
      const args = ['--database-url', backend.databaseUrl];
      await fixCycle(cycle, dir, args, columns);
      cycle.verifyAfter = await verify(backend);
      // A required column with a NULL in it: reported with the count, not repaired (that would need a value).
      await query(backend.databaseUrl, `ALTER TABLE "User" ALTER COLUMN "name" DROP NOT NULL`);
      await query(backend.databaseUrl, `INSERT INTO "User" ("name", "email") VALUES (NULL, $1)`, [`nameless-${randomBytes(4).toString('hex')}@example.com`]);
      extra.withNullsBefore = await columns();
      extra.withNulls = await fixJson(args, dir);
      extra.withNullsAfter = await columns();
    },
  ),
  scenario(
    'not-null-rows: Project.organizationId made nullable, and a project inserted without one',
    'not-null-rows',
    {},
    ['INSERT INTO "Organization"', `UPDATE "Project" SET "organizationId" = '${defaultOrganizationId}'::uuid WHERE "organizationId" IS NULL;`, 'ALTER TABLE "Project" ALTER COLUMN "organizationId" SET NOT NULL;'],
    async (cycle, extra) => {
      const dir = copyOfExample();
      const backend = await startBackend(dir);
      // What a hand migration and an app of its own leave behind.
      await query(backend.databaseUrl, `ALTER TABLE "Project" ALTER COLUMN "organizationId" DROP NOT NULL`);
      await query(backend.databaseUrl, `INSERT INTO "Project" ("name") VALUES ('Legacy project')`);
      const column = nullability(backend.databaseUrl, [['Project', 'organizationId']]);
      const snapshot = async () => ({
        column: await column(),
        projects: await query(backend.databaseUrl, `SELECT "name", "organizationId"::text AS "organizationId" FROM "Project" ORDER BY "name"`),
        organizations: await query(backend.databaseUrl, `SELECT "id"::text AS id, "name" FROM "Organization" ORDER BY "name"`),
      });
      await fixCycle(cycle, dir, ['--database-url', backend.databaseUrl], snapshot);
      // The other app's insert, still without an organization, now lands in the default one.
      await query(backend.databaseUrl, `INSERT INTO "Project" ("name") VALUES ('Inserted after the fix')`);
      extra.afterInsert = await query(backend.databaseUrl, `SELECT "organizationId"::text AS "organizationId" FROM "Project" WHERE "name" = 'Inserted after the fix'`);
      cycle.verifyAfter = await verify(backend);
    },
  ),
];

function stage<K extends keyof Cycle>(scenario: Scenario, key: K): Cycle[K] {
  const value = scenario.cycle[key];
  if (value === undefined) throw scenario.error ?? new Error(`${scenario.name}: stage ${key} did not run`);
  return value as Cycle[K];
}
function extra<T>(scenario: Scenario, key: string): T {
  if (!(key in scenario.extra)) throw scenario.error ?? new Error(`${scenario.name}: ${key} was not recorded`);
  return scenario.extra[key] as T;
}

const statuses = (report: FixReport) => report.checks.map((finding) => [finding.id, finding.status]);
const byId = (report: FixReport, id: string) => report.checks.find((finding) => finding.id === id)!;

describe.runIf(adminUrl)('authstrap fix: name clashes, nullability, rows without an organization', () => {
  beforeAll(async () => {
    await Promise.all(
      scenarios.map((s) =>
        s.run().catch((error) => {
          s.error = error;
        }),
      ),
    );
  }, 85_000);

  afterAll(async () => {
    const pending = cleanups.splice(0).reverse();
    for (const cleanup of pending) await cleanup().catch((error) => console.error('clean-up failed:', error));
  }, 60_000);

  describe.each(scenarios.map((s) => [s.name, s] as const))('%s', (_name, s) => {
    it('(a) --dry-run reports that check failing, prints the plan, and changes no file and no row', () => {
      const json = stage(s, 'dryRunJson');
      expect(statuses(json.report), json.output).toEqual(checkIds.map((id) => [id, id === s.check ? 'fail' : (s.othersBefore[id] ?? 'pass')]));
      expect(json.report.dryRun).toBe(true);
      expect(json.report.ok).toBe(false);
      expect(json.status).toBe(1);
      const text = stage(s, 'dryRunText');
      for (const shown of s.planShows) expect(text.stdout, text.output).toContain(shown);
      expect(text.stdout).toContain('dry run');
      expect(text.status).toBe(1);
      expect(stage(s, 'treeAfterDryRun')).toEqual(stage(s, 'treeBefore'));
      expect(s.cycle.databaseAfterDryRun).toEqual(s.cycle.databaseBefore);
    });

    it('(b) fix repairs it, exit 0', () => {
      const first = stage(s, 'first');
      expect(first.status, first.output).toBe(0);
      expect(first.report.ok).toBe(true);
      expect(statuses(first.report)).toEqual(checkIds.map((id) => [id, 'pass']));
      expect(byId(first.report, s.check).repaired).toBe(true);
      expect(byId(first.report, s.check).message).toMatch(/^repaired: /);
      expect(first.report.checks.filter((finding) => finding.repaired).map((finding) => finding.id)).toEqual([s.check]);
      if (s.cycle.databaseBefore === undefined) expect(stage(s, 'treeAfterFirst')).not.toEqual(stage(s, 'treeBefore'));
      else {
        expect(stage(s, 'databaseAfterFirst')).not.toEqual(stage(s, 'databaseBefore'));
        expect(stage(s, 'treeAfterFirst')).toEqual(stage(s, 'treeBefore'));
      }
    });

    it('(c) a second fix finds nothing to do and changes nothing', () => {
      const second = stage(s, 'second');
      expect(statuses(second.report), second.output).toEqual(checkIds.map((id) => [id, 'pass']));
      expect(second.report.checks.some((finding) => finding.repaired)).toBe(false);
      expect(second.status).toBe(0);
      expect(stage(s, 'treeAfterSecond')).toEqual(stage(s, 'treeAfterFirst'));
      expect(s.cycle.databaseAfterSecond).toEqual(s.cycle.databaseAfterFirst);
    });

    it('(d) verify passes against the repaired backend', () => {
      const { status, report, output } = stage(s, 'verifyAfter');
      expect(report.checks.filter((check) => check.status !== 'pass'), output).toEqual([]);
      expect(report.ok).toBe(true);
      expect(status).toBe(0);
    });
  });

  const [nameClash, nullable, orphans] = scenarios as [Scenario, Scenario, Scenario];

  it('name-clash: generate refuses the schema before; after fix the entities are renamed, keep their tables and comments, and are served', () => {
    const before = extra<CliResult>(nameClash, 'generateBefore');
    expect(before.status, before.output).not.toBe(0);
    const schema = extra<string>(nameClash, 'schema');
    expect(schema).toContain("    AppAccount: {\n      table: 'Account',\n");
    expect(schema).toContain("    AppWorkshop: {\n      table: 'Workshop',\n");
    expect(schema).not.toContain("plural: 'Sessions'");
    expect(schema).toContain('// Billing accounts: "Account" is an auth entity\'s name, in another case.');
    expect(schema).toContain('// Tenant-scoped (the default): every project belongs to one organization.');
    const after = extra<CliResult>(nameClash, 'generateAfter');
    expect(after.status, after.output).toBe(0);
    expect(after.output).toMatch(/up to date|nothing to (do|write)|no changes/i);
    expect(extra(nameClash, 'tables')).toEqual(['Account', 'Workshop', 'account', 'session']);
    expect(extra(nameClash, 'statuses')).toEqual({ '/app-accounts': 401, '/app-workshops': 401, '/sessions': 401 });
  });

  it('nullability: the columns are as a fresh database has them after fix', () => {
    const healthy = extra<Record<string, string>>(nullable, 'columnsHealthy');
    expect(healthy).toEqual({ 'account.password': 'YES', 'User.email': 'NO', 'User.name': 'NO' });
    expect(stage(nullable, 'databaseBefore')).toEqual({ 'account.password': 'NO', 'User.email': 'YES', 'User.name': 'NO' });
    expect(stage(nullable, 'databaseAfterFirst')).toEqual(healthy);
  });

  it('nullability: a required column with NULL rows is reported with the count and left alone (exit 1)', () => {
    const result = extra<CliResult & { report: FixReport }>(nullable, 'withNulls');
    expect(result.status, result.output).toBe(1);
    expect(result.report.ok).toBe(false);
    const finding = byId(result.report, 'nullability');
    expect(finding.status).toBe('fail');
    expect(finding.repaired).toBeUndefined();
    expect(finding.message).toContain('User.name is required but 1 row has no value');
    expect(extra(nullable, 'withNullsAfter')).toEqual(extra(nullable, 'withNullsBefore'));
  });

  it('not-null-rows: the orphan project moves into the default organization, no row is lost, and inserts without one keep working', () => {
    const dryRun = stage(orphans, 'dryRunJson').report;
    expect(byId(dryRun, 'not-null-rows').message).toContain('1 row has no organization');
    expect(stage(orphans, 'databaseBefore')).toEqual({
      column: { 'Project.organizationId': 'YES' },
      projects: [{ name: 'Legacy project', organizationId: null }],
      organizations: [],
    });
    expect(stage(orphans, 'databaseAfterFirst')).toEqual({
      column: { 'Project.organizationId': `NO '${defaultOrganizationId}'::uuid` },
      projects: [{ name: 'Legacy project', organizationId: defaultOrganizationId }],
      organizations: [{ id: defaultOrganizationId, name: 'Default organization' }],
    });
    expect(extra(orphans, 'afterInsert')).toEqual([{ organizationId: defaultOrganizationId }]);
  });
});
