import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTree } from './support/cli.js';
import { breakFile, createResources, fixJson, healthyEnv, query, runCliAsync, type Backend, type CliResult, type FixReport, fixCheckIds } from './support/example-copies.js';

/**
 * The `authstrap fix` checks for the schema and the live database: entity names that clash with
 * the auth entities, auth columns with the wrong nullability, and tenant-scoped rows without an
 * organization. Each on a copy of the example broken that way: `--dry-run` changes nothing
 * (files or database), fix repairs it, a second fix is a no-op, and `authstrap verify` passes.
 * The shared helpers are in support/example-copies.ts; the rest follows fix-command.test.ts.
 */

const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;
if (process.env.CI && !adminUrl) {
  // CI must exercise PostgreSQL; a missing variable must not quietly shrink the suite.
  throw new Error('CI is set but AUTHSTRAP_TEST_POSTGRES_URL is not: .ci/run should export it');
}

const checkIds = fixCheckIds;


const { temporaryFolder, copyOfExample, startBackend, cleanup } = createResources({ adminUrl, name: 'fixmore', dotEnv: healthyEnv });

const treeOf = (dir: string) => readTree(dir, ['node_modules']);

interface VerifyReport {
  ok: boolean;
  checks: { id: string; status: string; message: string }[];
}

async function verify(backend: Backend): Promise<{ status: number | null; report: VerifyReport; output: string }> {
  // An empty folder: no .env of anyone's leaks into the run.
  const cwd = temporaryFolder('authstrap-fixmore-cwd-');
  // With the backend's service key, as a project's .env gives it (the adapter check needs it).
  const result = await runCliAsync(['verify', '--json', '--url', backend.url, '--database-url', backend.databaseUrl, '--service-key', backend.serviceApiKey], cwd);
  try {
    return { status: result.status, report: JSON.parse(result.stdout), output: result.output };
  } catch {
    throw new Error(`verify printed no JSON (exit ${result.status}):\n${result.output}`);
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
      // Two memberships without an organization for one user: moved into the default organization
      // together, they would break UNIQUE (organizationId, userId). fix says so and changes nothing.
      await query(backend.databaseUrl, `ALTER TABLE "member" ALTER COLUMN "organizationId" DROP NOT NULL`);
      const [twice] = await query<{ id: string }>(backend.databaseUrl, `INSERT INTO "User" ("name", "email") VALUES ('Twice', $1) RETURNING "id"`, [`twice-${randomBytes(4).toString('hex')}@example.com`]);
      await query(backend.databaseUrl, `INSERT INTO "member" ("userId", "role", "organizationId") VALUES ($1, 'member', NULL), ($1, 'admin', NULL)`, [twice!.id]);
      const members = async () => ({
        column: await nullability(backend.databaseUrl, [['member', 'organizationId']])(),
        orphans: await query(backend.databaseUrl, `SELECT "role" FROM "member" WHERE "organizationId" IS NULL ORDER BY "role"`),
        files: readTree(dir, ['node_modules', '.data']),
      });
      extra.collisionBefore = await members();
      extra.collision = await runCliAsync(['fix', '--database-url', backend.databaseUrl], dir);
      extra.collisionAfter = await members();
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

  afterAll(cleanup, 60_000);

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

  it('not-null-rows: a backfill that would break a unique key is reported, and nothing changes', () => {
    const collision = extra<CliResult>(orphans, 'collision');
    expect(collision.status).toBe(1);
    expect(collision.stderr).toMatch(/The repairs could not be applied, so nothing was changed/);
    expect(collision.stderr).toMatch(/member_organizationId_userId_key/);
    expect(collision.stderr).toMatch(/Give one of them another value \(or an organization\) by hand, then run fix again/);
    expect(collision.stderr).not.toMatch(/\n\s+at /);
    const before = extra<{ orphans: unknown[] }>(orphans, 'collisionBefore');
    expect(before.orphans).toHaveLength(2);
    expect(extra(orphans, 'collisionAfter')).toEqual(before);
  });
});
