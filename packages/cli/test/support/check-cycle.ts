import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTree } from './cli.js';
import { createResources, fixCheckIds, fixJson, healthyEnv, runCliAsync, type Backend, type CliResult, type FixReport } from './example-copies.js';

/**
 * The life of one breakage, for the checks `fix` repairs: a copy of the example broken that way,
 * its backend started on a fresh PostgreSQL database; `verify` (in the project folder) and
 * `fix --dry-run` must agree on it; `--dry-run` changes no file and no row; `fix` repairs it; a
 * second `fix` changes nothing; the backend started again and `verify` passes. Each check's test
 * file (test/checks/<check>.test.ts) lists its breakages and calls `describeRepairCycle`.
 */

export const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;
if (process.env.CI && !adminUrl) {
  // CI must exercise PostgreSQL; a missing variable must not quietly shrink the suite.
  throw new Error('CI is set but AUTHSTRAP_TEST_POSTGRES_URL is not: .ci/run should export it');
}

export type Resources = ReturnType<typeof createResources>;

export interface VerifyCheck {
  id: string;
  title: string;
  status: 'pass' | 'warn' | 'fail' | 'skip';
  message: string;
  fix?: string;
}

export interface VerifyRun extends CliResult {
  report: { ok: boolean; url: string; checks: VerifyCheck[]; leftBehind?: string };
}

/**
 * `authstrap verify --json` in the project folder, against its backend and database, with its
 * service key as a flag unless `extraArgs` or `env` give one, or `keyFlag` is false.
 */
export async function verifyProject(dir: string, backend: Backend, extraArgs: string[] = [], env: Record<string, string> = {}, keyFlag = true): Promise<VerifyRun> {
  const serviceKey = !keyFlag || extraArgs.includes('--service-key') || env.SERVICE_API_KEY ? [] : ['--service-key', backend.serviceApiKey];
  const result = await runCliAsync(['verify', '--json', '--dir', dir, '--url', backend.url, '--database-url', backend.databaseUrl, ...serviceKey, ...extraArgs], dir, env);
  try {
    return { ...result, report: JSON.parse(result.stdout) };
  } catch {
    throw new Error(`verify printed no JSON (exit ${result.status}):\n${result.output}`);
  }
}

export interface Breakage {
  name: string;
  /** What fix's text plan must show: a file's diff header (`--- a/src/app.ts`) or SQL. */
  planShows: string[];
  /** Probes of verify that this breakage fails too (their hints must name the check). */
  alsoFailsInVerify?: string[];
  /** Checks that `fix` (and so verify) reports as warnings while it lasts (the schema does not load, say). */
  warnsWhileBroken?: string[];
  /** The copy's .env (default: a healthy one). */
  dotEnv?: string;
  /** Breaks the copy's files, before its backend starts. */
  breakFiles?(dir: string): void;
  /** Breaks the running backend's database. */
  breakData?(backend: Backend, dir: string): Promise<void>;
  /** fix's arguments and folder (default: `--database-url` of the backend, in the copy). */
  fixRun?(dir: string, backend: Backend): { args: string[]; cwd: string };
  /** Rows to compare before and after (a data breakage changes rows, not files). */
  rows?(backend: Backend): Promise<unknown>;
  /** After the cycle, with the repaired backend running: records what the check's own tests read. */
  afterRepair?(dir: string, backend: Backend, extra: Record<string, unknown>): Promise<void>;
}

export interface Cycle {
  dir: string;
  verifyBefore: VerifyRun;
  treeBefore: Map<string, string>;
  rowsBefore?: unknown;
  dryRunJson: CliResult & { report: FixReport };
  dryRunText: CliResult;
  treeAfterDryRun: Map<string, string>;
  rowsAfterDryRun?: unknown;
  first: CliResult & { report: FixReport };
  treeAfterFirst: Map<string, string>;
  rowsAfterFirst?: unknown;
  second: CliResult & { report: FixReport };
  treeAfterSecond: Map<string, string>;
  rowsAfterSecond?: unknown;
  verifyAfter: VerifyRun;
  extra: Record<string, unknown>;
}

const treeOf = (dir: string) => readTree(dir, ['node_modules', '.data']);
const statuses = (checks: { id: string; status: string }[]) => checks.map((check) => [check.id, check.status]);

async function runCycle(resources: Resources, breakage: Breakage, cycle: Partial<Cycle>) {
  const dir = resources.copyOfExample(breakage.dotEnv ?? healthyEnv);
  cycle.dir = dir;
  cycle.extra = {};
  breakage.breakFiles?.(dir);
  let backend = await resources.startBackend(dir);
  await breakage.breakData?.(backend, dir);
  const { args, cwd } = breakage.fixRun?.(dir, backend) ?? { args: ['--database-url', backend.databaseUrl], cwd: dir };

  cycle.verifyBefore = await verifyProject(dir, backend);
  cycle.treeBefore = treeOf(dir);
  cycle.rowsBefore = await breakage.rows?.(backend);
  cycle.dryRunJson = await fixJson(['--dry-run', ...args], cwd);
  cycle.dryRunText = await runCliAsync(['fix', '--dry-run', ...args], cwd);
  cycle.treeAfterDryRun = treeOf(dir);
  cycle.rowsAfterDryRun = await breakage.rows?.(backend);
  cycle.first = await fixJson(args, cwd);
  cycle.treeAfterFirst = treeOf(dir);
  cycle.rowsAfterFirst = await breakage.rows?.(backend);
  cycle.second = await fixJson(args, cwd);
  cycle.treeAfterSecond = treeOf(dir);
  cycle.rowsAfterSecond = await breakage.rows?.(backend);
  // The repaired code runs only once the backend starts again (on the same database).
  await backend.stop();
  backend = await resources.startBackend(dir, backend.databaseUrl);
  await breakage.afterRepair?.(dir, backend, cycle.extra);
  cycle.verifyAfter = await verifyProject(dir, backend);
}

/**
 * Runs every breakage of one check at once (in beforeAll) and describes the five stages as tests
 * of each. Returns each breakage's cycle, for the check's own tests.
 */
export function describeRepairCycle(check: string, breakages: Breakage[]): { resources: Resources; cycles: Map<string, Partial<Cycle>>; stage: <K extends keyof Cycle>(name: string, key: K) => Cycle[K] } {
  const resources = createResources({ adminUrl, name: check.replace(/-/g, '') });
  const cycles = new Map(breakages.map((breakage) => [breakage.name, {} as Partial<Cycle>]));
  const errors = new Map<string, unknown>();
  const stage = <K extends keyof Cycle>(name: string, key: K): Cycle[K] => {
    const value = cycles.get(name)![key];
    if (value === undefined) throw errors.get(name) ?? new Error(`${name}: stage ${key} did not run`);
    return value as Cycle[K];
  };

  describe.runIf(adminUrl)(`${check}: broken, verified, repaired, verified again`, () => {
    beforeAll(async () => {
      // Two at a time: each starts two backends, and a 2-core machine runs other test files too.
      for (let index = 0; index < breakages.length; index += 2) {
        await Promise.all(breakages.slice(index, index + 2).map((breakage) => runCycle(resources, breakage, cycles.get(breakage.name)!).catch((error) => errors.set(breakage.name, error))));
      }
      // Two minutes for each pair: a busy 2-core machine runs other test files beside them.
    }, Math.max(180_000, 120_000 * Math.ceil(breakages.length / 2)));
    // Processes first (they hold connections), then databases and folders.
    afterAll(resources.cleanup, 60_000);

    describe.each(breakages.map((breakage) => [breakage.name, breakage] as const))('%s', (name, breakage) => {
      const expected = (id: string) => (id === check ? 'fail' : breakage.warnsWhileBroken?.includes(id) ? 'warn' : 'pass');

      it('verify and fix --dry-run agree: this check fails, every other check of fix passes', () => {
        const dryRun = stage(name, 'dryRunJson');
        expect(statuses(dryRun.report.checks), dryRun.output).toEqual(fixCheckIds.map((id) => [id, expected(id)]));
        expect(dryRun.report).toMatchObject({ ok: false, dryRun: true });
        expect(dryRun.status).toBe(1);
        const verify = stage(name, 'verifyBefore');
        const fixed = new Set(fixCheckIds);
        expect(statuses(verify.report.checks.filter((result) => fixed.has(result.id))), verify.output).toEqual(statuses(dryRun.report.checks));
        expect(verify.report.checks.find((result) => result.id === check)!.fix, verify.output).toMatch(/^authstrap fix repairs it: /);
        // Probes this breakage fails too point at this check, and at nothing else.
        const failedProbes = verify.report.checks.filter((result) => result.status === 'fail' && !fixed.has(result.id));
        expect(failedProbes.map((result) => result.id).sort(), verify.output).toEqual([...(breakage.alsoFailsInVerify ?? [])].sort());
        for (const probe of failedProbes) expect(probe.fix, verify.output).toBe(`caused by ${check}: authstrap fix repairs ${check}`);
        expect(verify.status).toBe(1);
      });

      it('--dry-run prints the plan once and changes no file and no row', () => {
        const text = stage(name, 'dryRunText');
        for (const shown of breakage.planShows) expect(text.stdout, text.output).toContain(shown);
        expect(text.stdout.match(/Plan \(nothing changed, --dry-run\)/g)).toHaveLength(1);
        expect(text.stdout).toMatch(/\n1 problem found \(dry run: nothing changed; run without --dry-run to repair\)\n$/);
        expect(text.stdout).not.toMatch(/Nothing (left )?to repair/);
        expect(text.status).toBe(1);
        expect(stage(name, 'treeAfterDryRun')).toEqual(stage(name, 'treeBefore'));
        expect(cycles.get(name)!.rowsAfterDryRun).toEqual(cycles.get(name)!.rowsBefore);
      });

      it('fix repairs it (and only it), exit 0', () => {
        const first = stage(name, 'first');
        expect(first.status, first.output).toBe(0);
        expect(first.report).toMatchObject({ ok: true, dryRun: false });
        expect(statuses(first.report.checks)).toEqual(fixCheckIds.map((id) => [id, 'pass']));
        expect(first.report.checks.filter((finding) => finding.repaired).map((finding) => finding.id)).toEqual([check]);
        expect(first.report.checks.find((finding) => finding.id === check)!.message).toMatch(/^repaired: /);
        // A repair changed something: the rows for a data breakage, the files otherwise.
        if (breakage.rows) expect(stage(name, 'rowsAfterFirst')).not.toEqual(stage(name, 'rowsBefore'));
        else expect(stage(name, 'treeAfterFirst')).not.toEqual(stage(name, 'treeBefore'));
      });

      it('a second fix finds nothing to do and changes nothing', () => {
        const second = stage(name, 'second');
        expect(statuses(second.report.checks), second.output).toEqual(fixCheckIds.map((id) => [id, 'pass']));
        expect(second.report.checks.some((finding) => finding.repaired)).toBe(false);
        expect(second.status).toBe(0);
        expect(stage(name, 'treeAfterSecond')).toEqual(stage(name, 'treeAfterFirst'));
        expect(cycles.get(name)!.rowsAfterSecond).toEqual(cycles.get(name)!.rowsAfterFirst);
      });

      it('verify passes every check against the repaired backend', () => {
        const { status, report, output } = stage(name, 'verifyAfter');
        expect(report.checks.filter((result) => result.status !== 'pass'), output).toEqual([]);
        expect(report.ok).toBe(true);
        expect(status).toBe(0);
      });
    });
  });
  return { resources, cycles, stage };
}

export interface ProbeBreakage {
  name: string;
  /** Breaks the copy's files, before its backend starts. */
  breakFiles?(dir: string): void;
  /** Breaks the running backend's database. */
  breakData?(backend: Backend, dir: string): Promise<void>;
  /** The path that says the backend has started (default /ready). */
  waitFor?: string;
  /** Every check verify fails (this one among them). */
  fails: string[];
  /** The hint verify gives on this check: exactly, or a pattern. */
  hint: string | RegExp;
  verifyArgs?: string[];
  verifyEnv?: Record<string, string>;
}

/**
 * Breakages that only a running backend shows (the checks with a probe and nothing for `fix` to
 * repair): verify, in the project folder, fails exactly the checks named, with the hint named,
 * and `fix --dry-run` agrees with it on every check of its own.
 */
export function describeProbeBreakages(check: string, breakages: ProbeBreakage[]): { stage: (name: string) => { verify: VerifyRun; fix: CliResult & { report: FixReport } } } {
  const resources = createResources({ adminUrl, name: check.replace(/-/g, '') });
  const runs = new Map<string, { verify: VerifyRun; fix: CliResult & { report: FixReport } }>();
  const errors = new Map<string, unknown>();
  const stage = (name: string) => {
    const run = runs.get(name);
    if (!run) throw errors.get(name) ?? new Error(`${name} did not run`);
    return run;
  };

  describe.runIf(adminUrl)(`${check}: what only a running backend shows`, () => {
    beforeAll(async () => {
      await Promise.all(
        breakages.map(async (breakage) => {
          try {
            const dir = resources.copyOfExample(healthyEnv);
            breakage.breakFiles?.(dir);
            const backend = await resources.startBackend(dir, undefined, breakage.waitFor);
            await breakage.breakData?.(backend, dir);
            const verify = await verifyProject(dir, backend, breakage.verifyArgs, breakage.verifyEnv);
            runs.set(breakage.name, { verify, fix: await fixJson(['--dry-run', '--database-url', backend.databaseUrl], dir) });
          } catch (error) {
            errors.set(breakage.name, error);
          }
        }),
      );
    }, 120_000);
    afterAll(resources.cleanup, 60_000);

    describe.each(breakages.map((breakage) => [breakage.name, breakage] as const))('%s', (name, breakage) => {
      it(`verify fails exactly ${breakage.fails.join(', ')}, with its hint`, () => {
        const { verify } = stage(name);
        expect(verify.report.checks.filter((result) => result.status === 'fail').map((result) => result.id).sort(), verify.output).toEqual([...breakage.fails].sort());
        const hint = verify.report.checks.find((result) => result.id === check)!.fix;
        if (typeof breakage.hint === 'string') expect(hint, verify.output).toBe(breakage.hint);
        else expect(hint, verify.output).toMatch(breakage.hint);
        expect(verify.report.ok).toBe(false);
        expect(verify.status).toBe(1);
      });

      it('fix --dry-run fails the same checks of its own as verify', () => {
        const { verify, fix } = stage(name);
        const failing = (checks: { id: string; status: string }[]) => checks.filter((result) => result.status === 'fail' && fixCheckIds.includes(result.id)).map((result) => result.id);
        expect(failing(fix.report.checks), fix.output).toEqual(failing(verify.report.checks));
        expect(fix.status).toBe(failing(fix.report.checks).length ? 1 : 0);
      });
    });
  });
  return { stage };
}
