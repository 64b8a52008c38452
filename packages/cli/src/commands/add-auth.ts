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
import { authstrapDependency } from '../setup/authstrap-dependency.js';
import { detectPackageManager, parsePort } from '../setup/options.js';
import { checkPortFree, installDependencies, writeEnvFiles } from '../setup/steps.js';
import { printJson } from '../ui/output.js';
import { step } from '../ui/report.js';
import type { VerifyReport } from '../verify/index.js';

export interface AddAuthOptions {
  dryRun?: boolean;
  rename?: string[];
  verify?: boolean;
  /** For a database without a schema file: the existing database. */
  databaseUrl?: string;
  backendPort?: string;
  install?: boolean;
  json?: boolean;
}

/** What `add-auth --json` prints. */
interface AddAuthReport {
  ok: true;
  /** The authstrap project that has auth now (for an existing app: the new backend beside it). */
  dir: string;
  outcome: 'nothing-to-do' | 'dry-run' | 'applied';
  renames: EntityRename[];
  files: readonly string[];
  migration?: string;
  checks?: VerifyReport['checks'];
}

const reportJson = (options: AddAuthOptions, report: Omit<AddAuthReport, 'ok'>) => {
  if (options.json) printJson({ ok: true, ...report });
};

/**
 * `authstrap add-auth [dir]` on an authstrap project: analyze the schema -> plan (schema edit, regenerated files, the
 * migration) -> apply -> migrate and verify. Existing tables keep their rows: clashing entities
 * are renamed but keep their tables, and rows of tables that become tenant-scoped go to a
 * default organization. A second run finds nothing to do.
 */
export async function addAuthCommand(dir: string | undefined, options: AddAuthOptions): Promise<void> {
  const projectDir = path.resolve(dir ?? '.');
  const schemaFile = path.join(projectDir, schemaFileName);
  if (!fs.existsSync(schemaFile)) {
    if (!fs.existsSync(path.join(projectDir, 'package.json'))) return addAuthBesideDatabase(projectDir, options);
    // An app of its own (package.json, no schema file): its backend goes into a folder beside it.
    const backendDir = backendFolderBeside(projectDir);
    if (fs.existsSync(path.join(backendDir, schemaFileName))) {
      console.log(`${shownPath(projectDir)} is an app; its authstrap backend is ${shownPath(backendDir)}`);
      return addAuthCommand(backendDir, options);
    }
    return addAuthBesideDatabase(backendDir, options, projectDir);
  }
  const renames = parseRenames(options.rename ?? []);

  // Analyze and plan: nothing is written until every part of the plan is known to work.
  const source = fs.readFileSync(schemaFile, 'utf8');
  const edit = planSchemaEdit(source, { renames });
  if (edit.problems.length > 0) throw new CliError(`Cannot add auth:\n${edit.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  const schema = validateSchema(readSchemaLiteral(schemaFile, edit.after), schemaFileName);
  const plan = planGenerate(projectDir, schema, loadTemplates());
  if (plan.problems.length > 0) throw new CliError(`Cannot add auth:\n${plan.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  const migration = newMigration(plan.writes);

  const files = plan.writes.map((write) => write.path);
  if (edit.after === source && plan.writes.length === 0) {
    console.log(`${path.relative(process.cwd(), projectDir) || '.'}: auth is already there; nothing to do`);
    reportJson(options, { dir: projectDir, outcome: 'nothing-to-do', renames: [], files: [] });
    return;
  }
  printRenames(edit.renames);
  if (options.dryRun) {
    if (edit.after !== source) console.log(`\n${createTwoFilesPatch(`a/${schemaFileName}`, `b/${schemaFileName}`, source, edit.after, '', '', { context: 2 }).trimEnd()}`);
    console.log(`\nFiles (${plan.writes.length}):\n${plan.writes.map((write) => `  ${write.action === 'create' ? '+' : write.action === 'update' ? '~' : '-'} ${write.path}`).join('\n')}`);
    if (migration) console.log(`\n${migration.path}:\n${migration.contents}`);
    console.log('(dry run: nothing changed)');
    reportJson(options, { dir: projectDir, outcome: 'dry-run', renames: edit.renames, files, migration: migration?.path });
    return;
  }

  await step('Update the schema and regenerate', async () => {
    fs.writeFileSync(schemaFile, edit.after);
    applyWrites(projectDir, plan.writes);
    return { value: undefined, result: `${plan.writes.length + 1} files${migration ? `, ${migration.path}` : ''}` };
  });
  if (!edit.authWasOn) printDefaultOrganization();

  const applied = { dir: projectDir, outcome: 'applied', renames: edit.renames, files, migration: migration?.path } as const;
  if (options.verify === false || !fs.existsSync(path.join(projectDir, 'node_modules'))) {
    console.log(`\nStart the backend to apply the migration: cd ${path.relative(process.cwd(), projectDir) || '.'} && npm start`);
    reportJson(options, applied);
    return;
  }
  const env = readProjectEnv(projectDir);
  const verified = await startAndVerify({
    dir: projectDir,
    backendPort: Number(env.PORT || 3000),
    database: projectDatabase(projectDir, env),
    serviceKey: env.SERVICE_API_KEY || undefined,
    stepTitle: 'Start the backend and apply the migration',
    failure: 'Auth was added, but verification failed',
  });
  reportJson(options, { ...applied, checks: verified.checks });
}

const printDefaultOrganization = () =>
  console.log(chalk.dim(`Existing rows belong to "${defaultOrganization.name}" (id ${defaultOrganization.id}); invite its people with POST /members.`));

const printRenames = (renames: EntityRename[]) => {
  for (const rename of renames) {
    console.log(`${chalk.yellow('↷')} ${rename.from} clashes with an auth entity: renamed to ${rename.to} (keeps its table "${rename.table}")`);
  }
};

/** `shop/` -> `shop-auth/` next to it: where add-auth puts the backend of an app's database. */
const backendFolderBeside = (appDir: string) => path.join(path.dirname(appDir), `${path.basename(appDir)}-auth`);

const shownPath = (dir: string) => path.relative(process.cwd(), dir) || '.';

/**
 * `authstrap add-auth [dir] --database-url URL` for an app's database without a schema file:
 * read its tables into a schema, then write a new authstrap backend into `projectDir` beside the
 * app, whose first migration adds auth and tenancy to those tables. Then install, migrate,
 * verify. Run in the app's own folder (`appDir`), the database comes from the app's .env.
 */
async function addAuthBesideDatabase(projectDir: string, options: AddAuthOptions, appDir?: string): Promise<void> {
  const appEnv = appDir ? readProjectEnv(appDir) : {};
  const databaseUrl = options.databaseUrl ?? (appEnv.DATABASE_URL || undefined) ?? process.env.DATABASE_URL;
  const shown = shownPath(projectDir);
  if (!databaseUrl) {
    const where = appDir
      ? `${shownPath(appDir)} holds an app (package.json) without ${schemaFileName}, and ${path.join(shownPath(appDir), '.env')} has no DATABASE_URL.`
      : `${shown} has no ${schemaFileName}.`;
    throw new CliError(
      `${where} To add auth beside an existing database, name it: --database-url postgresql://user:password@host:5432/database ` +
        '(or set DATABASE_URL). To add auth to an authstrap project, run add-auth in its folder.',
      2,
    );
  }
  const urlSource = options.databaseUrl !== undefined ? '--database-url' : appEnv.DATABASE_URL ? `DATABASE_URL in ${path.join(shownPath(appDir!), '.env')}` : 'DATABASE_URL';
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) throw new CliError(`${urlSource} must be a postgresql:// URL (got "${maskPassword(databaseUrl)}")`, 2);
  if (fs.existsSync(path.join(projectDir, 'package.json'))) {
    throw new CliError(`${shown} holds another app (package.json): add-auth writes the new backend into a folder of its own; move ${shown} away, or name a new folder: authstrap add-auth <new-folder> --database-url ...`, 2);
  }
  if (appDir && fs.existsSync(projectDir) && fs.readdirSync(projectDir).some((entry) => entry !== 'node_modules')) {
    throw new CliError(`${shown}, where the backend of ${shownPath(appDir)} goes, exists and is not empty: move it away, or name a new folder: authstrap add-auth <new-folder> --database-url ...`, 2);
  }
  // Beside an app that listens on 3000 (its .env says so), the new backend takes the next port.
  const defaultPort = appEnv.PORT?.trim() === '3000' ? 3001 : 3000;
  const backendPort = parsePort('--backend-port', options.backendPort, defaultPort);
  const willVerify = options.verify !== false && (options.install !== false || fs.existsSync(path.join(projectDir, 'node_modules')));
  const renames = parseRenames(options.rename ?? []);
  if (willVerify && !options.dryRun) await checkPortFree(backendPort);

  const catalog = await step('Read the database', async () => {
    const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
      const read = await readCatalog(client);
      return { value: read, result: `${maskPassword(databaseUrl)}: ${read.tables.length} tables` };
    } catch (error) {
      throw new CliError(`Cannot read the database at ${maskPassword(databaseUrl)}: ${(error as Error).message}. Check ${urlSource}.`, 1);
    } finally {
      await client.end().catch(() => {});
    }
  });

  const authstrap = options.dryRun ? undefined : await authstrapDependency();
  const plan = planFromDatabase(projectDir, catalog, {
    source: maskPassword(databaseUrl),
    renames,
    templates: loadTemplates(),
    backendPort,
    authstrapDependency: authstrap?.spec,
  });
  for (const note of plan.notes) console.log(`${chalk.yellow('!')} ${note}`);
  if (plan.problems.length > 0) throw new CliError(`Cannot add auth:\n${plan.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  printRenames(plan.edit.renames);
  if (options.dryRun) {
    console.log(`\n${schemaFileName}, as read from the database:\n${plan.introspected}`);
    console.log(createTwoFilesPatch(`a/${schemaFileName}`, `b/${schemaFileName}`, plan.edit.before, plan.edit.after, '', '', { context: 2 }).trimEnd());
    console.log(`\nFiles (${plan.writes.length + 1}, in ${shown}):\n${[...plan.writes.map((write) => write.path), '.env'].map((file) => `  + ${file}`).join('\n')}`);
    if (plan.migration) console.log(`\n${plan.migration.path}:\n${plan.migration.contents}`);
    console.log('(dry run: nothing changed)');
    reportJson(options, { dir: projectDir, outcome: 'dry-run', renames: plan.edit.renames, files: [...plan.writes.map((write) => write.path), '.env'], migration: plan.migration?.path });
    return;
  }

  await step('Write the backend', async () => {
    applyWrites(projectDir, plan.writes);
    writeEnvFiles({ dir: projectDir, backendPort, frontendPort: 5173, database: { kind: 'postgres', url: databaseUrl } });
    return { value: undefined, result: `${shown}: ${plan.writes.length + 1} files${plan.migration ? `, ${plan.migration.path}` : ''}; ${authstrap!.note}` };
  });
  console.log(`The new backend is in ${chalk.bold(shown)}${appDir ? `, beside the app in ${shownPath(appDir)}` : ''}; it uses the app's database (${maskPassword(databaseUrl)}) and port ${backendPort}.`);
  printDefaultOrganization();
  const applied = { dir: projectDir, outcome: 'applied', renames: plan.edit.renames, files: [...plan.writes.map((write) => write.path), '.env'], migration: plan.migration?.path } as const;

  if (!fs.existsSync(path.join(projectDir, 'node_modules'))) {
    if (options.install === false) {
      console.log(`\nNext: cd ${shown} && npm install && npm start (the first start applies the migration)`);
      reportJson(options, applied);
      return;
    }
    const packageManager = detectPackageManager(process.env.npm_config_user_agent);
    await step(`Install dependencies (${packageManager})`, async () => ({ value: undefined, result: await installDependencies({ dir: projectDir, packageManager }) }));
  }
  if (options.verify === false) {
    console.log(`\nStart the backend to apply the migration: cd ${shown} && npm start`);
    reportJson(options, applied);
    return;
  }
  const env = readProjectEnv(projectDir);
  const verified = await startAndVerify({
    dir: projectDir,
    backendPort,
    database: projectDatabase(projectDir, env),
    serviceKey: env.SERVICE_API_KEY || undefined,
    stepTitle: 'Start the backend and apply the migration',
    failure: 'Auth was added, but verification failed',
  });
  reportJson(options, { ...applied, checks: verified.checks });
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
