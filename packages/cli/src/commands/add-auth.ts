import fs from 'node:fs';
import path from 'node:path';
import chalk from 'chalk';
import { createTwoFilesPatch } from 'diff';
import pg from 'pg';
import { planFromDatabase } from '../add-auth/from-database.js';
import { planSchemaEdit, type EntityRename } from '../add-auth/schema-edit.js';
import { CliError } from '../cli-error.js';
import { applyWrites, loadTemplates, newMigration, planGenerate } from '../generate/index.js';
import { defaultOrganization } from '../generate/migration.js';
import { projectDatabase } from '../project/database.js';
import { readCatalog } from '../introspect/catalog.js';
import { maskPassword, readProjectEnv } from '../project/env-file.js';
import { startAndVerify } from '../project/start-and-verify.js';
import { readSchemaLiteral } from '../schema/read-literal.js';
import { schemaFileName, validateSchema } from '../schema/index.js';
import { detectPackageManager } from '../setup/options.js';
import { checkPortFree, installDependencies, writeEnvFiles } from '../setup/steps.js';
import { step } from '../ui/report.js';

export interface AddAuthOptions {
  dryRun?: boolean;
  rename?: string[];
  verify?: boolean;
  /** For a database without a schema file: the existing database. */
  databaseUrl?: string;
  backendPort?: string;
  install?: boolean;
}

/**
 * `authstrap add-auth [dir]` on an authstrap project: analyze the schema -> plan (schema edit, regenerated files, the
 * migration) -> apply -> migrate and verify. Existing tables keep their rows: clashing entities
 * are renamed but keep their tables, and rows of tables that become tenant-scoped go to a
 * default organization. A second run finds nothing to do.
 */
export async function addAuthCommand(dir: string | undefined, options: AddAuthOptions): Promise<void> {
  const projectDir = path.resolve(dir ?? '.');
  const schemaFile = path.join(projectDir, schemaFileName);
  if (!fs.existsSync(schemaFile)) return addAuthBesideDatabase(projectDir, options);
  const renames = parseRenames(options.rename ?? []);

  // Analyze and plan: nothing is written until every part of the plan is known to work.
  const source = fs.readFileSync(schemaFile, 'utf8');
  const edit = planSchemaEdit(source, { renames });
  if (edit.problems.length > 0) throw new CliError(`Cannot add auth:\n${edit.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  const schema = validateSchema(readSchemaLiteral(schemaFile, edit.after), schemaFileName);
  const plan = planGenerate(projectDir, schema, loadTemplates());
  if (plan.problems.length > 0) throw new CliError(`Cannot add auth:\n${plan.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  const migration = newMigration(plan.writes);

  if (edit.after === source && plan.writes.length === 0) {
    console.log(`${path.relative(process.cwd(), projectDir) || '.'}: auth is already there; nothing to do`);
    return;
  }
  printRenames(edit.renames);
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
  if (!edit.authWasOn) printDefaultOrganization();

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

const printDefaultOrganization = () =>
  console.log(chalk.dim(`Existing rows belong to "${defaultOrganization.name}" (id ${defaultOrganization.id}); invite its people with POST /members.`));

const printRenames = (renames: EntityRename[]) => {
  for (const rename of renames) {
    console.log(`${chalk.yellow('↷')} ${rename.from} clashes with an auth entity: renamed to ${rename.to} (keeps its table "${rename.table}")`);
  }
};

/**
 * `authstrap add-auth [dir] --database-url URL` for an app's database without a schema file:
 * read its tables into a schema, then write a new authstrap backend into `dir` beside the app,
 * whose first migration adds auth and tenancy to those tables. Then install, migrate, verify.
 */
async function addAuthBesideDatabase(projectDir: string, options: AddAuthOptions): Promise<void> {
  const databaseUrl = options.databaseUrl ?? process.env.DATABASE_URL;
  const shown = path.relative(process.cwd(), projectDir) || '.';
  if (!databaseUrl) {
    throw new CliError(
      `${shown} has no ${schemaFileName}. To add auth beside an existing database, name it: --database-url postgresql://user:password@host:5432/database ` +
        '(or set DATABASE_URL). To add auth to an authstrap project, run add-auth in its folder.',
      2,
    );
  }
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) throw new CliError(`--database-url must be a postgresql:// URL (got "${maskPassword(databaseUrl)}")`, 2);
  if (fs.existsSync(path.join(projectDir, 'package.json'))) {
    throw new CliError(
      `${shown} holds an app (package.json) that is not an authstrap project. add-auth writes the new backend into a folder of its own, beside the app: ` +
        `give a new folder, e.g. authstrap add-auth ${path.join(path.dirname(shown), `${path.basename(projectDir)}-auth`)} --database-url ...`,
      2,
    );
  }
  const backendPort = options.backendPort === undefined ? 3000 : Number(options.backendPort);
  if (!Number.isInteger(backendPort) || backendPort < 1 || backendPort > 65535) throw new CliError(`--backend-port must be a port number (got "${options.backendPort}")`, 2);
  const renames = parseRenames(options.rename ?? []);

  const catalog = await step('Read the database', async () => {
    const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
      const read = await readCatalog(client);
      return { value: read, result: `${maskPassword(databaseUrl)}: ${read.tables.length} tables` };
    } catch (error) {
      throw new CliError(`Cannot read the database at ${maskPassword(databaseUrl)}: ${(error as Error).message}. Check --database-url.`, 1);
    } finally {
      await client.end().catch(() => {});
    }
  });

  const plan = planFromDatabase(projectDir, catalog, { source: maskPassword(databaseUrl), renames, templates: loadTemplates() });
  for (const note of plan.notes) console.log(`${chalk.yellow('!')} ${note}`);
  if (plan.problems.length > 0) throw new CliError(`Cannot add auth:\n${plan.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  printRenames(plan.edit.renames);
  if (options.dryRun) {
    console.log(`\n${schemaFileName}, as read from the database:\n${plan.introspected}`);
    console.log(createTwoFilesPatch(`a/${schemaFileName}`, `b/${schemaFileName}`, plan.edit.before, plan.edit.after, '', '', { context: 2 }).trimEnd());
    console.log(`\nFiles (${plan.writes.length + 1}, in ${shown}):\n${[...plan.writes.map((write) => write.path), '.env'].map((file) => `  + ${file}`).join('\n')}`);
    if (plan.migration) console.log(`\n${plan.migration.path}:\n${plan.migration.contents}`);
    console.log('(dry run: nothing changed)');
    return;
  }

  await step('Write the backend', async () => {
    applyWrites(projectDir, plan.writes);
    writeEnvFiles({ dir: projectDir, backendPort, frontendPort: 5173, database: { kind: 'postgres', url: databaseUrl } });
    return { value: undefined, result: `${shown}: ${plan.writes.length + 1} files${plan.migration ? `, ${plan.migration.path}` : ''}` };
  });
  printDefaultOrganization();

  if (!fs.existsSync(path.join(projectDir, 'node_modules'))) {
    if (options.install === false) {
      console.log(`\nNext: cd ${shown} && npm install && npm start (the first start applies the migration)`);
      return;
    }
    const packageManager = detectPackageManager(process.env.npm_config_user_agent);
    await step(`Install dependencies (${packageManager})`, async () => ({ value: undefined, result: await installDependencies({ dir: projectDir, packageManager }) }));
  }
  if (options.verify === false) {
    console.log(`\nStart the backend to apply the migration: cd ${shown} && npm start`);
    return;
  }
  await checkPortFree(backendPort);
  const env = readProjectEnv(projectDir);
  await startAndVerify({
    dir: projectDir,
    backendPort,
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
