import fs from 'node:fs';
import path from 'node:path';
import chalk from 'chalk';
import { createTwoFilesPatch } from 'diff';
import { planSchemaEdit } from '../add-auth/schema-edit.js';
import { CliError } from '../cli-error.js';
import { applyWrites, loadTemplates, planGenerate } from '../generate/index.js';
import { defaultOrganization } from '../generate/migration.js';
import { projectDatabase } from '../project/database.js';
import { readProjectEnv } from '../project/env-file.js';
import { startAndVerify } from '../project/start-and-verify.js';
import { readSchemaLiteral } from '../schema/read-literal.js';
import { schemaFileName, validateSchema } from '../schema/index.js';
import { step } from '../ui/report.js';

export interface AddAuthOptions {
  dryRun?: boolean;
  rename?: string[];
  verify?: boolean;
}

/**
 * `authstrap add-auth [dir]`: analyze the schema -> plan (schema edit, regenerated files, the
 * migration) -> apply -> migrate and verify. Existing tables keep their rows: clashing entities
 * are renamed but keep their tables, and rows of tables that become tenant-scoped go to a
 * default organization. A second run finds nothing to do.
 */
export async function addAuthCommand(dir: string | undefined, options: AddAuthOptions): Promise<void> {
  const projectDir = path.resolve(dir ?? '.');
  const schemaFile = path.join(projectDir, schemaFileName);
  if (!fs.existsSync(schemaFile)) {
    throw new CliError(
      `${projectDir} has no ${schemaFileName}. Adding auth to a database without one (reading its tables into a schema) is not built yet; ` +
        'for now write the schema file, with `table:` naming each existing table.',
      1,
    );
  }
  const renames = parseRenames(options.rename ?? []);

  // Analyze and plan: nothing is written until every part of the plan is known to work.
  const source = fs.readFileSync(schemaFile, 'utf8');
  const edit = planSchemaEdit(source, { renames });
  if (edit.problems.length > 0) throw new CliError(`Cannot add auth:\n${edit.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  const schema = validateSchema(readSchemaLiteral(schemaFile, edit.after), schemaFileName);
  const plan = planGenerate(projectDir, schema, loadTemplates());
  if (plan.problems.length > 0) throw new CliError(`Cannot add auth:\n${plan.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  const migration = plan.writes.find((write) => write.path.startsWith('migrations/') && write.path.endsWith('.sql'));

  if (edit.after === source && plan.writes.length === 0) {
    console.log(`${path.relative(process.cwd(), projectDir) || '.'}: auth is already there; nothing to do`);
    return;
  }
  for (const rename of edit.renames) {
    console.log(`${chalk.yellow('↷')} ${rename.from} clashes with an auth entity: renamed to ${rename.to} (keeps its table "${rename.table}")`);
  }
  if (options.dryRun) {
    if (edit.after !== source) console.log(`\n${createTwoFilesPatch(`a/${schemaFileName}`, `b/${schemaFileName}`, source, edit.after, '', '', { context: 2 }).trimEnd()}`);
    console.log(`\nFiles (${plan.writes.length}):\n${plan.writes.map((write) => `  ${write.action === 'create' ? '+' : write.action === 'update' ? '~' : '-'} ${write.path}`).join('\n')}`);
    if (migration) console.log(`\n${migration.path}:\n${migration.contents}`);
    console.log('(dry run: nothing changed)');
    return;
  }

  await step('Update the schema and regenerate', async () => {
    fs.writeFileSync(schemaFile, edit.after);
    applyWrites(projectDir, plan.writes);
    return { value: undefined, result: `${plan.writes.length + 1} files${migration ? `, ${migration.path}` : ''}` };
  });
  if (!edit.authWasOn) {
    console.log(chalk.dim(`Existing rows belong to "${defaultOrganization.name}" (id ${defaultOrganization.id}); invite its people with POST /members.`));
  }

  if (options.verify === false || !fs.existsSync(path.join(projectDir, 'node_modules'))) {
    console.log(`\nStart the backend to apply the migration: cd ${path.relative(process.cwd(), projectDir) || '.'} && npm start`);
    return;
  }
  const env = readProjectEnv(projectDir);
  await startAndVerify({
    dir: projectDir,
    backendPort: Number(env.PORT || 3000),
    database: projectDatabase(projectDir, env),
    serviceKey: env.SERVICE_API_KEY || undefined,
    stepTitle: 'Start the backend and apply the migration',
    failure: 'Auth was added, but verification failed',
  });
}

/** `--rename Account=BillingAccount` -> { Account: 'BillingAccount' } */
function parseRenames(values: string[]): Record<string, string> {
  const renames: Record<string, string> = {};
  for (const value of values) {
    const match = /^([A-Za-z][A-Za-z0-9]*)=([A-Za-z][A-Za-z0-9]*)$/.exec(value);
    if (!match) throw new CliError(`--rename takes From=To entity names, e.g. --rename Account=BillingAccount (got "${value}")`, 2);
    renames[match[1]!] = match[2]!;
  }
  return renames;
}
