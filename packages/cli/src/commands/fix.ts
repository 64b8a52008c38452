import fs from 'node:fs';
import path from 'node:path';
import chalk from 'chalk';
import { CliError } from '../cli-error.js';
import { printJson } from '../ui/output.js';
import { applyRepairs, describeRepairs } from '../doctor/apply.js';
import { examineAll, type Finding } from '../doctor/checks.js';
import { readProjectState } from '../doctor/project-state.js';
import { embeddedDatabaseHolder, projectDatabase, serverAnswers } from '../project/database.js';
import { maskPassword, readProjectEnv } from '../project/env-file.js';
import { openDatabase, type DatabaseProbe } from '../verify/database.js';

export interface FixOptions {
  dryRun?: boolean;
  json?: boolean;
  databaseUrl?: string;
  frontend?: string[];
  adapterPackage?: string[];
}

const symbols = { pass: chalk.green('✔'), warn: chalk.yellow('⚠'), fail: chalk.red('✘') } as const;

export interface FixReport {
  ok: boolean;
  dryRun: boolean;
  checks: (Finding & { repaired?: boolean })[];
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
    const read = () => readProjectState(projectDir, { db, databaseNote: note, frontendDirs, adapterPackages: options.adapterPackage });
    const before = examineAll(await read());
    let report: FixReport;
    if (options.dryRun || !before.some((finding) => finding.repair)) {
      report = { ok: before.every((finding) => finding.status !== 'fail'), dryRun: options.dryRun === true, checks: before };
      if (options.dryRun && !options.json) {
        const plan = describeRepairs(before);
        console.log(plan ? `${chalk.bold('Plan (nothing changed, --dry-run):')}\n\n${plan}\n` : 'Nothing to repair.\n');
      }
    } else {
      await applyRepairs(projectDir, before, db);
      const after = examineAll(await read());
      report = {
        ok: after.every((finding) => finding.status !== 'fail'),
        dryRun: false,
        checks: after.map((finding, index) => ({ ...finding, ...(before[index]!.status === 'fail' && finding.status !== 'fail' ? { repaired: true, message: `repaired: ${before[index]!.repair?.summary ?? 'by the repairs above'}` } : {}) })),
      };
    }
    if (options.json) printJson(report);
    else {
      for (const finding of report.checks) console.log(`${symbols[finding.status]} ${finding.title} ${chalk.dim(`— ${finding.message}`)}`);
      const left = report.checks.filter((finding) => finding.status === 'fail').length;
      console.log(left ? chalk.red(`\n${left} problem${left === 1 ? '' : 's'} left${options.dryRun ? ' (dry run: run without --dry-run to repair)' : ''}`) : chalk.green('\nNothing left to repair'));
    }
    return report;
  } finally {
    await db?.close();
  }
}

/** PostgreSQL from --database-url or .env; the embedded database only when no backend holds it. */
async function openProjectDatabase(projectDir: string, databaseUrl: string | undefined): Promise<{ db?: DatabaseProbe; note?: string }> {
  const env = readProjectEnv(projectDir);
  const target = projectDatabase(projectDir, env, databaseUrl);
  try {
    if (target.kind === 'postgres') return { db: await openDatabase(target) };
    if (!fs.existsSync(target.dir)) return { note: 'the embedded database does not exist yet' };
    const port = env.PORT || '3000';
    if (await serverAnswers(`http://127.0.0.1:${port}`, 1000)) return { note: `the embedded database is held by the backend on port ${port}; stop it to check the database` };
    const holder = embeddedDatabaseHolder(target.dir);
    if (holder) return { note: `the embedded database is held by process ${holder.pid} (a backend not on port ${port}); stop it to check the database` };
    return { db: await openDatabase(target) };
  } catch (error) {
    return { note: `cannot open the database: ${(error as Error).message}` };
  }
}
