import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleDir, readTree, tempDir } from './support/cli.js';
import { breakFile, createResources, fixJson, healthyEnv, query, runCliAsync, type Backend, type CliResult, type FixReport, fixCheckIds } from './support/example-copies.js';

/**
 * `authstrap fix` on copies of the example, each broken in one of the ways its checks know, as
 * a user would meet them: analyze and plan (`--dry-run` changes nothing, files or database),
 * repair, run again (nothing left to do), and `authstrap verify` against the repaired backend
 * started as a process on a fresh PostgreSQL database.
 */

const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;
if (process.env.CI && !adminUrl) {
  // CI must exercise PostgreSQL; a missing variable must not quietly shrink the suite.
  throw new Error('CI is set but AUTHSTRAP_TEST_POSTGRES_URL is not: .ci/run should export it');
}

const checkIds = fixCheckIds;


const { temporaryFolder, copyOfExample, startBackend, cleanup } = createResources({ adminUrl, name: 'fix', dotEnv: healthyEnv });

const original = (file: string) => fs.readFileSync(path.join(exampleDir, file), 'utf8');
const treeOf = (dir: string) => readTree(dir, ['node_modules']);

interface VerifyReport {
  ok: boolean;
  checks: { id: string; status: string; message: string }[];
}

async function verify(backend: Backend): Promise<{ status: number | null; report: VerifyReport; output: string }> {
  // An empty folder: no .env of anyone's leaks into the run.
  const cwd = temporaryFolder('authstrap-fix-cwd-');
  // With the backend's service key, as a project's .env gives it (the adapter check needs it).
  const result = await runCliAsync(['verify', '--json', '--url', backend.url, '--database-url', backend.databaseUrl, '--service-key', backend.serviceApiKey], cwd);
  try {
    return { status: result.status, report: JSON.parse(result.stdout), output: result.output };
  } catch {
    throw new Error(`verify printed no JSON (exit ${result.status}):\n${result.output}`);
  }
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

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
  second: CliResult & { report: FixReport };
  treeAfterSecond: Map<string, string>;
  databaseAfterSecond?: unknown;
  verifyAfter: Awaited<ReturnType<typeof verify>>;
}

interface Scenario {
  name: string;
  check: string;
  /** The file whose diff the plan must show, or the SQL it must print. */
  planShows: string;
  run(): Promise<void>;
  cycle: Partial<Cycle>;
  extra: Record<string, unknown>;
  error?: unknown;
}

/** analyze/plan (twice: --json, then text) -> repair -> repair again, recording each stage. */
async function fixCycle(cycle: Partial<Cycle>, dir: string, args: string[], cwd = dir, snapshot?: () => Promise<unknown>) {
  cycle.treeBefore = treeOf(dir);
  cycle.databaseBefore = await snapshot?.();
  cycle.dryRunJson = await fixJson(['--dry-run', ...args], cwd);
  cycle.dryRunText = await runCliAsync(['fix', '--dry-run', ...args], cwd);
  cycle.treeAfterDryRun = treeOf(dir);
  cycle.databaseAfterDryRun = await snapshot?.();
  cycle.first = await fixJson(args, cwd);
  cycle.treeAfterFirst = treeOf(dir);
  cycle.second = await fixJson(args, cwd);
  cycle.treeAfterSecond = treeOf(dir);
  cycle.databaseAfterSecond = await snapshot?.();
}

const accountRows = (databaseUrl: string) => () =>
  query<{ providerId: string; accountId: string }>(databaseUrl, `SELECT "userId", "providerId", "accountId", "password" FROM "account" ORDER BY id`);

function scenario(name: string, check: string, planShows: string, run: (cycle: Partial<Cycle>, extra: Record<string, unknown>) => Promise<void>): Scenario {
  const result: Scenario = { name, check, planShows, cycle: {}, extra: {}, run: () => run(result.cycle, result.extra) };
  return result;
}

const scenarios: Scenario[] = [
  scenario('id-field: Project lacks id in its output and create types', 'id-field', '--- a/src/generated/Project/project.schema.ts', async (cycle, extra) => {
    const dir = copyOfExample();
    breakFile(dir, 'src/generated/Project/project.schema.ts', '    id: z.uuid().optional(),\n');
    breakFile(dir, 'src/generated/Project/project.schema.ts', '    id: z.uuid(),\n');
    await fixCycle(cycle, dir, []);
    extra.repairedFileMatchesExample = fs.readFileSync(path.join(dir, 'src/generated/Project/project.schema.ts'), 'utf8') === original('src/generated/Project/project.schema.ts');
    cycle.verifyAfter = await verify(await startBackend(dir));
  }),
  scenario('module-wiring: src/app.ts does not mount generatedRouter', 'module-wiring', '--- a/src/app.ts', async (cycle, extra) => {
    const dir = copyOfExample();
    breakFile(dir, 'src/app.ts', '  app.use(generatedRouter({ db, auth, config }));\n');
    await fixCycle(cycle, dir, []);
    const app = fs.readFileSync(path.join(dir, 'src/app.ts'), 'utf8');
    extra.mountedBefore404 = /app\.use\(generatedRouter\(\{ db, auth, config \}\)\);\s*app\.use\(unknownRoute\);/.test(app);
    cycle.verifyAfter = await verify(await startBackend(dir));
  }),
  scenario('module-wiring: src/generated/index.ts lacks the /Tasks mount', 'module-wiring', '--- a/src/generated/index.ts', async (cycle, extra) => {
    const dir = copyOfExample();
    breakFile(dir, 'src/generated/index.ts', "  router.use('/Tasks', ...tenantScoped(deps, taskRouter(deps))); // Task\n");
    await fixCycle(cycle, dir, []);
    extra.repairedFileMatchesExample = fs.readFileSync(path.join(dir, 'src/generated/index.ts'), 'utf8') === original('src/generated/index.ts');
    const backend = await startBackend(dir);
    // Signed out: a mounted /Tasks asks who is calling (401); an unmounted one is unknown (404).
    extra.tasksStatus = (await fetch(`${backend.url}/Tasks`)).status;
    cycle.verifyAfter = await verify(backend);
  }),
  scenario("credential-provider (code): sign-up writes providerId 'email'", 'credential-provider', '--- a/src/extensions/auth/auth.service.ts', async (cycle, extra) => {
    const dir = copyOfExample();
    breakFile(dir, 'src/extensions/auth/auth.service.ts', `VALUES ($1, $2, 'credential', $3)`, `VALUES ($1, $2, 'email', $3)`);
    const broken = await startBackend(dir);
    extra.verifyBefore = await verify(broken);
    await fixCycle(cycle, dir, ['--database-url', broken.databaseUrl], dir, accountRows(broken.databaseUrl));
    cycle.verifyAfter = await verify(await startBackend(dir));
  }),
  scenario("credential-provider (data): an account's providerId is 'email'", 'credential-provider', 'UPDATE "account"', async (cycle, extra) => {
    const dir = copyOfExample();
    const backend = await startBackend(dir);
    const email = `erin-${randomBytes(4).toString('hex')}@example.com`;
    const password = 'correct horse battery staple';
    extra.signUpStatus = (await post(`${backend.url}/api/auth/sign-up/email`, { email, name: 'Erin', password })).status;
    const signIn = async () => (await post(`${backend.url}/api/auth/sign-in/email`, { email, password })).status;
    extra.signInBeforeBreaking = await signIn();
    // What an import from another auth library leaves behind: the password is right, the provider is not.
    await query(backend.databaseUrl, `UPDATE "account" SET "providerId" = 'email', "accountId" = $1`, [email]);
    extra.signInBroken = await signIn();
    await fixCycle(cycle, dir, ['--database-url', backend.databaseUrl], dir, accountRows(backend.databaseUrl));
    extra.signInRepaired = await signIn();
    extra.accounts = await query(backend.databaseUrl, `SELECT a."providerId", a."accountId", u.id::text AS "userId" FROM "account" a JOIN "User" u ON u.id = a."userId" WHERE u.email = $1`, [email]);
    // The same backend: the repair needed no restart, only the rows.
    cycle.verifyAfter = await verify(backend);
  }),
  scenario('cors-origin: ALLOWED_ORIGINS=* with a Vite frontend in web/ on port 5200', 'cors-origin', '--- a/.env', async (cycle, extra) => {
    const dir = copyOfExample();
    fs.writeFileSync(path.join(dir, '.env'), 'ALLOWED_ORIGINS=*\n');
    fs.mkdirSync(path.join(dir, 'web'));
    fs.writeFileSync(path.join(dir, 'web/package.json'), JSON.stringify({ name: 'web', private: true, devDependencies: { vite: '^6.0.0' } }, null, 2));
    fs.writeFileSync(path.join(dir, 'web/vite.config.ts'), "import { defineConfig } from 'vite';\n\nexport default defineConfig({ server: { port: 5200 } });\n");
    await fixCycle(cycle, dir, []);
    extra.env = fs.readFileSync(path.join(dir, '.env'), 'utf8');
    const backend = await startBackend(dir);
    extra.preflight = await preflight(backend, 'http://localhost:5200');
    extra.preflightOther = await preflight(backend, 'http://localhost:5999');
    cycle.verifyAfter = await verify(backend);
  }),
  scenario('cors-origin: --frontend names a frontend elsewhere (relative to where fix runs)', 'cors-origin', '--- a/.env', async (cycle, extra) => {
    const dir = copyOfExample();
    const frontend = path.join(temporaryFolder('authstrap-fix-ui-'), 'my-ui');
    fs.mkdirSync(frontend);
    fs.writeFileSync(path.join(frontend, 'package.json'), JSON.stringify({ name: 'my-ui', private: true, devDependencies: { vite: '^6.0.0' } }));
    fs.writeFileSync(path.join(frontend, 'vite.config.ts'), 'export default { server: { port: 5300, strictPort: true } };\n');
    // Without --frontend it is not found: nothing to fix.
    const cwd = path.dirname(dir);
    extra.withoutFrontend = await fixJson(['--dry-run', 'saas-backend'], cwd);
    await fixCycle(cycle, dir, ['saas-backend', '--frontend', path.relative(cwd, frontend)], cwd);
    extra.env = fs.readFileSync(path.join(dir, '.env'), 'utf8');
    const backend = await startBackend(dir);
    extra.preflight = await preflight(backend, 'http://localhost:5300');
    cycle.verifyAfter = await verify(backend);
  }),
];

/** A browser's CORS preflight for a credentialed sign-in: the Access-Control-Allow-Origin it gets. */
async function preflight(backend: Backend, origin: string): Promise<string | null> {
  const response = await fetch(`${backend.url}/api/auth/sign-in/email`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  });
  return response.headers.get('access-control-allow-origin');
}

/** A stage's record, or the error that stopped the scenario before it. */
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

describe.runIf(adminUrl)('authstrap fix on broken copies of the example', () => {
  beforeAll(async () => {
    // Every scenario at once; each records how far it got, and its error, for the tests below.
    await Promise.all(
      scenarios.map((s) =>
        s.run().catch((error) => {
          s.error = error;
        }),
      ),
    );
  }, 85_000);

  // Processes first (they hold connections), then databases and folders.
  afterAll(cleanup, 60_000);

  describe.each(scenarios.map((s) => [s.name, s] as const))('%s', (_name, s) => {
    it('(a) --dry-run reports exactly that check failing, prints the plan, and changes no file and no row', () => {
      const json = stage(s, 'dryRunJson');
      expect(statuses(json.report), json.output).toEqual(checkIds.map((id) => [id, id === s.check ? 'fail' : 'pass']));
      expect(json.report.dryRun).toBe(true);
      expect(json.report.ok).toBe(false);
      expect(json.status).toBe(1);
      const text = stage(s, 'dryRunText');
      expect(text.stdout, text.output).toContain(s.planShows);
      expect(text.stdout).toContain('dry run');
      expect(text.status).toBe(1);
      // Both dry runs together: not a byte of any file, not a row.
      expect(stage(s, 'treeAfterDryRun')).toEqual(stage(s, 'treeBefore'));
      expect(s.cycle.databaseAfterDryRun).toEqual(s.cycle.databaseBefore);
    });

    it('(b) fix repairs it, exit 0', () => {
      const first = stage(s, 'first');
      expect(first.status, first.output).toBe(0);
      expect(first.report.ok).toBe(true);
      expect(first.report.dryRun).toBe(false);
      expect(statuses(first.report)).toEqual(checkIds.map((id) => [id, 'pass']));
      expect(byId(first.report, s.check).repaired).toBe(true);
      expect(byId(first.report, s.check).message).toMatch(/^repaired: /);
      expect(first.report.checks.filter((finding) => finding.repaired).map((finding) => finding.id)).toEqual([s.check]);
      // A repair changed something: the files for a code breakage, the rows for a data one.
      if (s.planShows.startsWith('--- a/')) expect(stage(s, 'treeAfterFirst')).not.toEqual(stage(s, 'treeBefore'));
      else expect(stage(s, 'databaseAfterSecond')).not.toEqual(stage(s, 'databaseBefore'));
    });

    it('(c) a second fix finds nothing to do and changes nothing', () => {
      const second = stage(s, 'second');
      expect(statuses(second.report), second.output).toEqual(checkIds.map((id) => [id, 'pass']));
      expect(second.report.checks.some((finding) => finding.repaired)).toBe(false);
      expect(second.report.ok).toBe(true);
      expect(second.status).toBe(0);
      expect(stage(s, 'treeAfterSecond')).toEqual(stage(s, 'treeAfterFirst'));
    });

    it('(d) verify passes against the repaired backend', () => {
      const { status, report, output } = stage(s, 'verifyAfter');
      expect(report.checks.filter((check) => check.status !== 'pass'), output).toEqual([]);
      expect(report.ok).toBe(true);
      expect(status).toBe(0);
    });
  });

  const [idField, appWiring, indexWiring, credentialCode, credentialData, corsWeb, corsElsewhere] = scenarios as [Scenario, Scenario, Scenario, Scenario, Scenario, Scenario, Scenario];

  it('id-field: the repaired schema file is the one generate writes, byte for byte', () => {
    expect(extra(idField, 'repairedFileMatchesExample')).toBe(true);
  });

  it('module-wiring: generatedRouter is mounted again before the 404 handler', () => {
    expect(extra(appWiring, 'mountedBefore404')).toBe(true);
  });

  it('module-wiring: src/generated/index.ts is restored byte for byte, and /Tasks answers again', () => {
    expect(extra(indexWiring, 'repairedFileMatchesExample')).toBe(true);
    expect(extra(indexWiring, 'tasksStatus')).toBe(401);
  });

  it("credential-provider (code): verify fails sign-in before the fix, and the fix makes sign-up write 'credential'", () => {
    const before = extra<Awaited<ReturnType<typeof verify>>>(credentialCode, 'verifyBefore');
    expect(before.report.checks.find((check) => check.id === 'sign-in')?.status, before.output).toBe('fail');
    expect(before.report.ok).toBe(false);
    const service = stage(credentialCode, 'treeAfterFirst').get('src/extensions/auth/auth.service.ts')!;
    expect(service).toBe(original('src/extensions/auth/auth.service.ts'));
  });

  it("credential-provider (data): sign-in refused while providerId is 'email', accepted after fix, account keyed by its user", () => {
    expect(extra(credentialData, 'signUpStatus')).toBe(201);
    expect(extra(credentialData, 'signInBeforeBreaking')).toBe(200);
    expect(extra(credentialData, 'signInBroken')).toBe(401);
    const dryRun = stage(credentialData, 'dryRunJson').report;
    expect(byId(dryRun, 'credential-provider').message).toContain('1 account has a password');
    expect(stage(credentialData, 'databaseBefore')).toEqual([expect.objectContaining({ providerId: 'email' })]);
    expect(extra(credentialData, 'signInRepaired')).toBe(200);
    const accounts = extra<{ providerId: string; accountId: string; userId: string }[]>(credentialData, 'accounts');
    expect(accounts).toHaveLength(1);
    expect(accounts[0]!.providerId).toBe('credential');
    expect(accounts[0]!.accountId).toBe(accounts[0]!.userId);
    // The second run left the rows as the first one repaired them.
    expect(stage(credentialData, 'databaseAfterSecond')).toEqual([
      expect.objectContaining({ providerId: 'credential', accountId: accounts[0]!.userId }),
    ]);
  });

  it('cors-origin: .env gets the Vite port, and a preflight from it is allowed (and only from it)', () => {
    expect(extra(corsWeb, 'env')).toBe('ALLOWED_ORIGINS=http://localhost:5200\n');
    expect(extra(corsWeb, 'preflight')).toBe('http://localhost:5200');
    expect(extra(corsWeb, 'preflightOther')).toBeNull();
  });

  it('cors-origin: --frontend adds the origin of a frontend outside the project, keeping the existing one', () => {
    const without = extra<CliResult & { report: FixReport }>(corsElsewhere, 'withoutFrontend');
    expect(statuses(without.report), without.output).toEqual(checkIds.map((id) => [id, 'pass']));
    expect(extra(corsElsewhere, 'env')).toBe('ALLOWED_ORIGINS=http://localhost:5173,http://localhost:5300\n');
    expect(extra(corsElsewhere, 'preflight')).toBe('http://localhost:5300');
  });
});

describe('authstrap fix: bad usage', () => {
  it('in a folder without authstrap.schema.ts: exit 2, naming the file, changing nothing', async () => {
    const dir = tempDir('authstrap-fix-empty-');
    try {
      fs.writeFileSync(path.join(dir, '.env'), 'ALLOWED_ORIGINS=*\n');
      const { status, stdout, stderr } = await runCliAsync(['fix'], dir);
      expect(status).toBe(2);
      expect(stderr).toContain('authstrap.schema.ts');
      expect(stdout).toBe('');
      expect(fs.readdirSync(dir)).toEqual(['.env']);
      expect(fs.readFileSync(path.join(dir, '.env'), 'utf8')).toBe('ALLOWED_ORIGINS=*\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an unknown option: exit 2, naming it', async () => {
    const dir = tempDir('authstrap-fix-empty-');
    try {
      const { status, stderr } = await runCliAsync(['fix', '--frobnicate'], dir);
      expect(status).toBe(2);
      expect(stderr).toContain('--frobnicate');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
