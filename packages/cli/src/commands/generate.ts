import path from 'node:path';
import { examineRowSecurity } from '../checks/row-level-security.js';
import { readAppliedMigrations } from '../verify/database.js';
import { readRowSecurity } from '../verify/row-security.js';
import { applyWrites, checkCauses, databaseCheckVerdict, loadTemplates, newMigration, planGenerate, readMigrationsState, readOwnedVersions } from '../generate/index.js';
import { version } from '../version.js';
import { loadSchemaWithSource, type Schema } from '../schema/index.js';
import { CliError } from '../cli-error.js';
import { openProjectDatabase } from '../project/database.js';
import { readProjectEnv } from '../project/env-file.js';
import { authstrapDependencyWrites } from '../setup/authstrap-dependency.js';
import { printJson } from '../ui/output.js';

export interface GenerateOptions {
  check?: boolean;
  dryRun?: boolean;
  allowDrop?: boolean;
  allowTypeChange?: boolean;
  acceptManual?: boolean;
  json?: boolean;
}

const symbols = { create: '+', update: '~', remove: '-' } as const;

/**
 * `--check`, past the files: whether the database's row-level security is what the schema gives
 * (a policy edited or dropped by hand shows here, and so does a migration not applied yet).
 * Undefined when it is, or cannot be looked at.
 */
async function databaseDrift(projectDir: string, schema: Schema, relative: string): Promise<{ problem?: { message: string; error: string }; note?: string }> {
  const { db, note } = await openProjectDatabase(projectDir, undefined);
  if (!db) return { note: `the database was not checked: ${note}` };
  try {
    const live = await readRowSecurity(db, schema);
    if (!live) return {};
    const finding = examineRowSecurity(schema, live);
    if (finding.status !== 'fail') return {};
    const migrations = readMigrationsState(projectDir).files.filter((name) => name.endsWith('.sql'));
    return { problem: databaseCheckVerdict({ rowSecurityProblem: finding.message, migrations, applied: await readAppliedMigrations(db), relative }) };
  } catch (error) {
    // A database the backend has not migrated yet, say: nothing to compare.
    return { note: `the database was not checked: ${(error as Error).message}` };
  } finally {
    await db.close();
  }
}

/**
 * `authstrap generate [dir]`: re-renders src/generated/ and writes a migration for what changed
 * in authstrap.schema.ts. Files outside src/generated/ are only created when missing. With
 * `--check`, the database's row-level security is compared with the schema's too.
 */
export async function generateCommand(dir: string | undefined, options: GenerateOptions): Promise<void> {
  if (options.acceptManual && (options.allowDrop || options.allowTypeChange)) {
    throw new CliError('--accept-manual writes no SQL, so --allow-drop and --allow-type-change do not apply to it: use one or the other', 2);
  }
  const projectDir = path.resolve(dir ?? '.');
  const { schema, locate } = loadSchemaWithSource(projectDir);
  // A README written now (it is only written when missing) names the port the project's .env sets.
  const port = Number(readProjectEnv(projectDir).PORT);
  const plan = planGenerate(projectDir, schema, loadTemplates(), {
    allowDrop: options.allowDrop,
    allowTypeChange: options.allowTypeChange,
    acceptManual: options.acceptManual,
    locate,
    backendPort: Number.isInteger(port) && port > 0 ? port : undefined,
  });
  if (plan.problems.length > 0) {
    throw new CliError(`Cannot generate ${projectDir}:\n${plan.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  }
  // After an upgrade installed from a tarball or a folder, package.json points outside the project.
  const dependency = await authstrapDependencyWrites(projectDir);
  plan.writes.push(...dependency.writes);
  if (dependency.note !== undefined) console.error(`Note: ${dependency.note}`);

  const relative = path.relative(process.cwd(), projectDir) || '.';
  const changes = plan.writes.map((write) => ({ action: write.action, path: write.path }));
  const drift = options.check ? await databaseDrift(projectDir, schema, relative) : {};
  const pending = plan.pendingUpgrades ?? [];
  const report = (written: boolean) => {
    if (options.json) {
      const database = drift.problem ? { ok: false, message: drift.problem.message } : drift.note ? { ok: true, message: drift.note } : undefined;
      printJson({ ok: !(options.check && (changes.length > 0 || drift.problem || pending.length > 0)), dir: projectDir, upToDate: changes.length === 0 && pending.length === 0, written, changes, pendingUpgrades: pending, ...(database ? { database } : {}) });
    }
  };
  const refuseDrift = () => {
    if (!drift.problem) return;
    report(false);
    throw new CliError(drift.problem.error, 1);
  };
  if (drift.note) console.error(drift.note);
  const causes = () =>
    checkCauses({ writes: plan.writes, dependencyWrites: dependency.writes, recordedVersion: readOwnedVersions(projectDir)?.authstrap, version, ownedPaths: new Set(plan.ownedPaths), pending });
  if (plan.writes.length === 0) {
    console.log(`${relative}: up to date with authstrap.schema.ts`);
    for (const note of plan.notes) console.log(`Note: ${note}`);
    refuseDrift();
    report(false);
    // An upgrade that waits for its user is not up to date, whatever the schema says.
    if (options.check && pending.length > 0) throw new CliError(`${relative} is not up to date:\n${causes().map((cause) => `  - ${cause}`).join('\n')}`, 1);
    return;
  }
  for (const write of plan.writes) console.log(`${symbols[write.action]} ${path.join(relative, write.path)}`);
  for (const note of plan.notes) console.log(`Note: ${note}`);

  if (options.check) {
    report(false);
    throw new CliError(`${relative} is not up to date:\n${causes().map((cause) => `  - ${cause}`).join('\n')}\nRun \`authstrap generate ${relative}\` to write what is listed above.`, 1);
  }
  if (options.dryRun) {
    // The SQL is what a reviewer needs to see before anything runs against a database.
    const migration = newMigration(plan.writes);
    if (migration) console.log(`\n--- ${path.join(relative, migration.path)} ---\n${migration.contents}--- end of ${path.basename(migration.path)} ---\n`);
    console.log(`(dry run: ${plan.writes.length} change${plan.writes.length === 1 ? '' : 's'} not written)`);
    report(false);
    return;
  }
  applyWrites(projectDir, plan.writes);
  console.log(`${plan.writes.length} file${plan.writes.length === 1 ? '' : 's'} written`);
  report(true);
}
