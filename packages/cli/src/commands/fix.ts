import fs from 'node:fs';
import path from 'node:path';
import chalk from 'chalk';
import { CliError } from '../cli-error.js';
import { applyRepairs, describeRepairs } from '../checks/apply.js';
import type { CheckResult } from '../checks/check.js';
import { readProjectSnapshot } from '../checks/project-snapshot.js';
import { examineProject } from '../checks/registry.js';
import { openProjectDatabase } from '../project/database.js';
import { maskPassword } from '../project/env-file.js';
import { printJson } from '../ui/output.js';
import type { DatabaseProbe } from '../verify/database.js';
import { formatCheck, summarizeFix } from '../ui/report.js';

export interface FixOptions {
  dryRun?: boolean;
  json?: boolean;
  databaseUrl?: string;
  frontend?: string[];
  adapterPackage?: string[];
}

export interface FixReport {
  ok: boolean;
  dryRun: boolean;
  checks: CheckResult[];
}

/**
 * `authstrap fix [dir]`: analyze -> plan -> apply -> check again. `--dry-run` prints the plan
 * (file diffs and SQL) and changes nothing. Running it twice changes nothing the second time:
 * every repair makes its own check pass.
 */
export async function fixCommand(dir: string | undefined, options: FixOptions): Promise<FixReport> {
  const projectDir = path.resolve(dir ?? '.');
  if (!fs.existsSync(path.join(projectDir, 'authstrap.schema.ts'))) {
    throw new CliError(`${projectDir} has no authstrap.schema.ts: run fix in an authstrap project (or authstrap add-auth first)`, 2);
  }
  const missingFrontend = options.frontend?.find((dir) => !fs.existsSync(path.resolve(dir)));
  if (missingFrontend !== undefined) throw new CliError(`--frontend ${missingFrontend}: no such folder (frontend folders are relative to where fix runs)`, 2);
  if (options.databaseUrl !== undefined && !/^postgres(ql)?:\/\/.+/.test(options.databaseUrl)) {
    throw new CliError('--database-url must look like postgresql://user:password@host:5432/database', 2);
  }
  const { db, note } = await openProjectDatabase(projectDir, options.databaseUrl);
  // A database named on the command line is one the user wants checked: not reaching it is a
  // failure to report, not a quiet "database not checked".
  if (!db && options.databaseUrl !== undefined) {
    throw new CliError(`Cannot check the database at ${maskPassword(options.databaseUrl)} (${note}): check --database-url`, 1);
  }
  try {
    // --frontend folders are relative to where the command runs, like [dir] (not to the project):
    // `authstrap fix backend --frontend web` from the parent means ./web.
    const frontendDirs = options.frontend?.map((dir) => path.resolve(dir));
    const examine = async () => examineProject(await readProjectSnapshot(projectDir, { db, databaseNote: note, frontendDirs, adapterPackages: options.adapterPackage }));
    const before = await examine();
    const plan = describeRepairs(before);
    const report = options.dryRun || !plan ? reportOf(before, options.dryRun === true) : await repair(projectDir, before, db, examine);
    if (options.json) printJson(report);
    else {
      if (options.dryRun && plan) console.log(`${chalk.bold('Plan (nothing changed, --dry-run):')}\n\n${plan}\n`);
      for (const result of report.checks) console.log(formatCheck(result));
      console.log(`\n${summarizeFix(report)}`);
    }
    return report;
  } finally {
    await db?.close();
  }
}

const reportOf = (checks: CheckResult[], dryRun: boolean): FixReport => ({ ok: checks.every((result) => result.status !== 'fail'), dryRun, checks });

/** Applies the repairs, examines again, and marks what the repairs made pass. */
async function repair(projectDir: string, before: CheckResult[], db: DatabaseProbe | undefined, examine: () => Promise<CheckResult[]>): Promise<FixReport> {
  await applyRepairs(projectDir, before, db);
  const after = await examine();
  return reportOf(
    after.map((result, index) => {
      const earlier = before[index]!;
      return earlier.status === 'fail' && result.status !== 'fail' ? { ...result, repaired: true, message: `repaired: ${earlier.repair?.summary ?? 'by the repairs above'}` } : result;
    }),
    false,
  );
}

