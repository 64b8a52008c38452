import fs from 'node:fs';
import path from 'node:path';
import { planSchemaEdit, type SchemaEditPlan } from '../add-auth/schema-edit.js';
import { loadTemplates, planGenerate, readClientOutputs, type GeneratePlan } from '../generate/index.js';
import { databaseModel, quote } from '../generate/table-model.js';
import { readProjectEnv } from '../project/env-file.js';
import type { EnvFileText } from '../project/loopback-hosts.js';
import { loadSchema, schemaFileName, SchemaError, validateSchema, type Schema } from '../schema/index.js';
import { readSchemaLiteral } from '../schema/read-literal.js';
import { readAppliedMigrations, type DatabaseProbe } from '../verify/database.js';
import { readRowSecurity, type LiveRowSecurity } from '../verify/row-security.js';
import { readSsoFacts, type SsoFacts } from './sso-connections.js';

/**
 * Everything the checks' `examine` looks at, read once from disk and the database. The checks
 * are pure functions of this snapshot, which is why a second run (after repairs) can say exactly
 * what is left, `--dry-run` shows the same plan a real run applies, and `verify` and `fix` agree.
 */
export interface ProjectSnapshot {
  dir: string;
  env: Record<string, string>;
  /** Text of the files some checks read, by path relative to the project ('' when missing). */
  files: Record<string, string>;
  schema?: Schema;
  schemaProblem?: string;
  /** What `authstrap generate` would write now, and those files as they are on disk. */
  generatePlan?: GeneratePlan;
  generatedOnDisk?: Record<string, string>;
  /** Where generate writes the typed client: client/authstrap-client.ts and package.json's copies. */
  clientPaths?: string[];
  /**
   * When entities clash with the auth entities (so the schema does not load): the edit that
   * renames them, keeping their tables, and what `authstrap generate` would then write.
   */
  nameClash?: NameClash;
  /** Why the schema file could not even be parsed for clashes. */
  nameClashProblem?: string;
  /**
   * Frontends found next to the backend: their folder, dev-server origin, package.json (text
   * too, for repairs) and env files (`.env.local`, `.env`, those that exist, by file name).
   */
  frontends: { dir: string; origin: string; packageJson: Record<string, any>; packageJsonText: string; envFiles: { name: string; text: string }[] }[];
  /** Package names `--adapter-package` says are the auth adapter (besides the ones recognised by name). */
  adapterPackages: string[];
  /** The live database, when it could be opened; facts gathered from it. */
  database?: DatabaseFacts;
  databaseNote?: string;
}

export interface DatabaseFacts {
  /** Password accounts whose providerId is not 'credential' (sign-in can never find them). */
  wrongProviderAccounts: number;
  /** The columns of the schema's tables as the live database has them (tables it lacks are left out). */
  columns: LiveColumn[];
  /** Row-level security on the tenant tables, and the role requests run as (projects with auth). */
  rowSecurity?: LiveRowSecurity;
  /** The project's migrations (their .sql names) and those the database records as applied. */
  migrations: { files: string[]; applied: string[] };
  /** The enabled single sign-on connections and their organizations' lapsing domains (undefined: no SSO tables). */
  sso?: SsoFacts;
}

export interface LiveColumn {
  table: string;
  column: string;
  nullable: boolean;
  /** The column's default expression, if any. */
  default: string | null;
  /** Rows where the column is NULL (0 when the column is NOT NULL). */
  nulls: number;
}

export interface NameClash {
  edit: SchemaEditPlan;
  /** Absent when the edited schema still does not validate (then `problem` says why). */
  generatePlan?: GeneratePlan;
  generatedOnDisk: Record<string, string>;
  problem?: string;
}

export const watchedFiles = [schemaFileName, 'src/app.ts', 'src/extensions/auth/auth.service.ts', '.env', '.env.example'];

/** Folders where a frontend usually lives, relative to the backend. */
const frontendCandidates = ['frontend', 'web', 'client', 'app', '../frontend', '../web', '../client', '../app'];

function devServerOrigin(dir: string, packageJson: Record<string, any>): string | undefined {
  const dependencies = { ...packageJson.dependencies, ...packageJson.devDependencies };
  const viteConfig = ['vite.config.ts', 'vite.config.js', 'vite.config.mjs'].map((name) => path.join(dir, name)).find((file) => fs.existsSync(file));
  if (dependencies.vite || viteConfig) {
    const port = viteConfig ? /port\s*:\s*(\d{2,5})/.exec(fs.readFileSync(viteConfig, 'utf8'))?.[1] : undefined;
    return `http://localhost:${port ?? 5173}`;
  }
  if (dependencies.next) {
    // `next dev --port 3001` (what setup --frontend writes) or `-p 3001`; Next's own default otherwise.
    const port = /(?:--port|-p)[ =](\d{2,5})/.exec(packageJson.scripts?.dev ?? '')?.[1];
    return `http://localhost:${port ?? 3000}`;
  }
  return undefined;
}

/**
 * The apps that hold a copy of the typed client (package.json's `authstrap.clients`, which
 * setup --frontend writes): the nearest folder above each copy with a package.json.
 */
function clientFrontendDirs(projectDir: string): string[] {
  let clients: unknown;
  try {
    clients = JSON.parse(fs.readFileSync(path.join(projectDir, 'package.json'), 'utf8')).authstrap?.clients;
  } catch {
    return [];
  }
  if (!Array.isArray(clients)) return [];
  const dirs: string[] = [];
  for (const client of clients.filter((entry): entry is string => typeof entry === 'string')) {
    let dir = path.dirname(path.resolve(projectDir, client));
    for (let depth = 0; depth < 4 && dir !== path.dirname(dir); depth++, dir = path.dirname(dir)) {
      if (fs.existsSync(path.join(dir, 'package.json'))) {
        if (dir !== path.resolve(projectDir)) dirs.push(dir);
        break;
      }
    }
  }
  return dirs;
}

/** The frontends beside the project and in `extra`; a folder whose package.json does not parse is none. */
export function findFrontends(projectDir: string, extra: string[] = []): ProjectSnapshot['frontends'] {
  const found: ProjectSnapshot['frontends'] = [];
  for (const candidate of [...extra, ...clientFrontendDirs(projectDir), ...frontendCandidates]) {
    const dir = path.resolve(projectDir, candidate);
    const file = path.join(dir, 'package.json');
    if (dir === path.resolve(projectDir) || !fs.existsSync(file) || found.some((frontend) => frontend.dir === dir)) continue;
    const packageJsonText = fs.readFileSync(file, 'utf8');
    let packageJson: Record<string, any>;
    try {
      packageJson = JSON.parse(packageJsonText);
    } catch {
      continue;
    }
    const origin = devServerOrigin(dir, packageJson);
    if (origin) found.push({ dir, origin, packageJson, packageJsonText, envFiles: readFrontendEnvFiles(dir) });
  }
  return found;
}

/** Where a frontend keeps the addresses it uses (Next.js and Vite read both; `.env.local` wins). */
const frontendEnvFileNames = ['.env.local', '.env'];

function readFrontendEnvFiles(dir: string): { name: string; text: string }[] {
  return frontendEnvFileNames.filter((name) => fs.existsSync(path.join(dir, name))).map((name) => ({ name, text: fs.readFileSync(path.join(dir, name), 'utf8') }));
}

/** The frontends' env files, by path relative to the backend project (`web/.env.local`). */
export function frontendEnvTexts(projectDir: string, frontends: ProjectSnapshot['frontends']): EnvFileText[] {
  return frontends.flatMap((frontend) => frontend.envFiles.map((file) => ({ path: path.relative(projectDir, path.join(frontend.dir, file.name)), text: file.text })));
}

/**
 * The backend's .env and its frontends' env files (those found beside it, and `frontendDirs`),
 * for `setup` to run the loopback-hosts check on without reading the whole project.
 */
export function readUrlSettings(projectDir: string, frontendDirs: string[] = []): { backend: EnvFileText; frontends: EnvFileText[] } {
  return { backend: { path: '.env', text: readFileOr(path.join(projectDir, '.env')) }, frontends: frontendEnvTexts(projectDir, findFrontends(projectDir, frontendDirs)) };
}

export async function readProjectSnapshot(
  dir: string,
  options: { db?: DatabaseProbe; databaseNote?: string; frontendDirs?: string[]; adapterPackages?: string[] } = {},
): Promise<ProjectSnapshot> {
  const files = Object.fromEntries(watchedFiles.map((file) => [file, readFileOr(path.join(dir, file))]));
  const state: ProjectSnapshot = {
    dir,
    env: readProjectEnv(dir),
    files,
    frontends: findFrontends(dir, options.frontendDirs),
    adapterPackages: options.adapterPackages ?? [],
    databaseNote: options.databaseNote,
  };
  try {
    state.schema = loadSchema(dir);
    state.generatePlan = planGenerate(dir, state.schema, loadTemplates());
    state.generatedOnDisk = filesOnDisk(dir, state.generatePlan);
    state.clientPaths = readClientOutputs(dir).paths;
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    state.schemaProblem = error.message;
    readNameClash(state);
  }
  if (options.db) {
    // A database the backend has not migrated yet has no "account" table: a note, not a crash
    // (before, `fix --database-url` on a fresh database died with 'relation "account" does not exist').
    const [table] = await options.db.query<{ name: string | null }>(`SELECT to_regclass('"account"')::text AS name`);
    if (!table?.name) {
      state.databaseNote = 'the database has no "account" table yet (start the backend once to run its migrations)';
      return state;
    }
    const [row] = await options.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "account" WHERE "password" IS NOT NULL AND "providerId" IS DISTINCT FROM 'credential'`,
    );
    const rowSecurity = state.schema && (await readRowSecurity(options.db, state.schema));
    state.database = {
      wrongProviderAccounts: row?.n ?? 0,
      columns: state.schema ? await readLiveColumns(options.db, state.schema) : [],
      ...(rowSecurity ? { rowSecurity } : {}),
      migrations: { files: migrationFiles(dir), applied: await readAppliedMigrations(options.db) },
      sso: await readSsoFacts(options.db),
    };
  }
  return state;
}

const readFileOr = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');

/** The .sql files of the project's migrations folder, sorted ([] without one). */
const migrationFiles = (dir: string) => {
  const folder = path.join(dir, 'migrations');
  return fs.existsSync(folder) ? fs.readdirSync(folder).filter((name) => name.endsWith('.sql')).sort() : [];
};

/** The files a generate plan would write, as they are on disk now ('' when missing). */
const filesOnDisk = (dir: string, plan: GeneratePlan) =>
  Object.fromEntries(plan.writes.map((write) => [write.path, readFileOr(path.join(dir, write.path))]));

/** The schema did not load: if entity names clash with the auth entities, plan the renames and what generate writes after them. */
function readNameClash(state: ProjectSnapshot) {
  const source = state.files[schemaFileName] ?? '';
  if (!source) return;
  try {
    const edit = planSchemaEdit(source);
    // With auth off there is nothing to clash with; add-auth is what turns it on.
    if (!edit.authWasOn || (edit.renames.length === 0 && edit.problems.length === 0)) return;
    const clash: NameClash = { edit, generatedOnDisk: {} };
    state.nameClash = clash;
    if (edit.problems.length > 0) return;
    try {
      const schema = validateSchema(readSchemaLiteral(path.join(state.dir, schemaFileName), edit.after), schemaFileName);
      clash.generatePlan = planGenerate(state.dir, schema, loadTemplates());
      clash.generatedOnDisk = filesOnDisk(state.dir, clash.generatePlan);
    } catch (error) {
      if (!(error instanceof SchemaError)) throw error;
      clash.problem = error.message;
    }
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    state.nameClashProblem = error.message;
  }
}

/** Nullability, default and NULL count of every column of the schema's tables that the database has. */
async function readLiveColumns(db: DatabaseProbe, schema: Schema): Promise<LiveColumn[]> {
  const tables = databaseModel(schema).tables.map((table) => table.name);
  const rows = await db.query<{ table: string; column: string; nullable: string; default: string | null }>(
    `SELECT table_name AS "table", column_name AS "column", is_nullable AS "nullable", column_default AS "default"
       FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ANY($1::text[])
      ORDER BY table_name, ordinal_position`,
    [tables],
  );
  const columns: LiveColumn[] = rows.map((row) => ({ table: row.table, column: row.column, nullable: row.nullable === 'YES', default: row.default, nulls: 0 }));
  for (const table of tables) {
    const nullable = columns.filter((column) => column.table === table && column.nullable);
    if (nullable.length === 0) continue;
    const [counts] = await db.query<Record<string, number>>(
      `SELECT ${nullable.map((column, index) => `count(*) FILTER (WHERE ${quote(column.column)} IS NULL)::int AS c${index}`).join(', ')} FROM ${quote(table)}`,
    );
    nullable.forEach((column, index) => (column.nulls = counts?.[`c${index}`] ?? 0));
  }
  return columns;
}
