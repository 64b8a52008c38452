import path from 'node:path';
import { applyWrites, loadTemplates, newMigration, planGenerate } from '../generate/index.js';
import { loadSchemaWithSource } from '../schema/index.js';
import { CliError } from '../cli-error.js';

export interface GenerateOptions {
  check?: boolean;
  dryRun?: boolean;
  allowDrop?: boolean;
  allowTypeChange?: boolean;
  acceptManual?: boolean;
}

const symbols = { create: '+', update: '~', remove: '-' } as const;

/**
 * `authstrap generate [dir]`: re-renders src/generated/ and writes a migration for what changed
 * in authstrap.schema.ts. Files outside src/generated/ are only created when missing.
 */
export function generateCommand(dir: string | undefined, options: GenerateOptions): void {
  if (options.acceptManual && (options.allowDrop || options.allowTypeChange)) {
    throw new CliError('--accept-manual writes no SQL, so --allow-drop and --allow-type-change do not apply to it: use one or the other', 2);
  }
  const projectDir = path.resolve(dir ?? '.');
  const { schema, locate } = loadSchemaWithSource(projectDir);
  const plan = planGenerate(projectDir, schema, loadTemplates(), {
    allowDrop: options.allowDrop,
    allowTypeChange: options.allowTypeChange,
    acceptManual: options.acceptManual,
    locate,
  });
  if (plan.problems.length > 0) {
    throw new CliError(`Cannot generate ${projectDir}:\n${plan.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  }

  const relative = path.relative(process.cwd(), projectDir) || '.';
  if (plan.writes.length === 0) {
    console.log(`${relative}: up to date with authstrap.schema.ts`);
    return;
  }
  for (const write of plan.writes) console.log(`${symbols[write.action]} ${path.join(relative, write.path)}`);
  for (const note of plan.notes) console.log(`Note: ${note}`);

  if (options.check) {
    throw new CliError(`${relative} is not up to date with authstrap.schema.ts: run \`authstrap generate ${relative}\``, 1);
  }
  if (options.dryRun) {
    // The SQL is what a reviewer needs to see before anything runs against a database.
    const migration = newMigration(plan.writes);
    if (migration) console.log(`\n--- ${path.join(relative, migration.path)} ---\n${migration.contents}--- end of ${path.basename(migration.path)} ---\n`);
    console.log(`(dry run: ${plan.writes.length} change${plan.writes.length === 1 ? '' : 's'} not written)`);
    return;
  }
  applyWrites(projectDir, plan.writes);
  console.log(`${plan.writes.length} file${plan.writes.length === 1 ? '' : 's'} written`);
}
