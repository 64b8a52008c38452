import fs from 'node:fs';
import path from 'node:path';
import { loadTemplates, planGenerate, type GeneratePlan } from '../generate/index.js';
import { readProjectEnv } from '../project/env-file.js';
import { loadSchema, SchemaError, type Schema } from '../schema/index.js';
import type { DatabaseProbe } from '../verify/database.js';

/**
 * Everything the `fix` checks look at, read once from disk and the database. The checks are
 * pure functions of this snapshot, which is why a second run (after repairs) can say exactly
 * what is left and `--dry-run` shows the same plan a real run applies.
 */
export interface ProjectState {
  dir: string;
  env: Record<string, string>;
  /** Text of the files some checks read, by path relative to the project ('' when missing). */
  files: Record<string, string>;
  schema?: Schema;
  schemaProblem?: string;
  /** What `authstrap generate` would write now, and those files as they are on disk. */
  generatePlan?: GeneratePlan;
  generatedOnDisk?: Record<string, string>;
  /** Frontends found next to the backend: their folder and dev-server origin. */
  frontends: { dir: string; origin: string; packageJson: Record<string, any> }[];
  /** The live database, when it could be opened; facts gathered from it. */
  database?: DatabaseFacts;
  databaseNote?: string;
}

export interface DatabaseFacts {
  /** Password accounts whose providerId is not 'credential' (sign-in can never find them). */
  wrongProviderAccounts: number;
}

export const watchedFiles = ['src/app.ts', 'src/extensions/auth/auth.service.ts', '.env', '.env.example'];

/** Folders where a frontend usually lives, relative to the backend. */
const frontendCandidates = ['frontend', 'web', 'client', 'app', '../frontend', '../web', '../client', '../app'];

function devServerOrigin(dir: string, packageJson: Record<string, any>): string | undefined {
  const dependencies = { ...packageJson.dependencies, ...packageJson.devDependencies };
  const viteConfig = ['vite.config.ts', 'vite.config.js', 'vite.config.mjs'].map((name) => path.join(dir, name)).find((file) => fs.existsSync(file));
  if (dependencies.vite || viteConfig) {
    const port = viteConfig ? /port\s*:\s*(\d{2,5})/.exec(fs.readFileSync(viteConfig, 'utf8'))?.[1] : undefined;
    return `http://localhost:${port ?? 5173}`;
  }
  if (dependencies.next) return 'http://localhost:3000';
  return undefined;
}

export function findFrontends(projectDir: string, extra: string[] = []): ProjectState['frontends'] {
  const found: ProjectState['frontends'] = [];
  for (const candidate of [...extra, ...frontendCandidates]) {
    const dir = path.resolve(projectDir, candidate);
    const file = path.join(dir, 'package.json');
    if (dir === path.resolve(projectDir) || !fs.existsSync(file) || found.some((frontend) => frontend.dir === dir)) continue;
    const packageJson = JSON.parse(fs.readFileSync(file, 'utf8'));
    const origin = devServerOrigin(dir, packageJson);
    if (origin) found.push({ dir, origin, packageJson });
  }
  return found;
}

export async function readProjectState(dir: string, options: { db?: DatabaseProbe; databaseNote?: string; frontendDirs?: string[] } = {}): Promise<ProjectState> {
  const files = Object.fromEntries(
    watchedFiles.map((file) => [file, fs.existsSync(path.join(dir, file)) ? fs.readFileSync(path.join(dir, file), 'utf8') : '']),
  );
  const state: ProjectState = { dir, env: readProjectEnv(dir), files, frontends: findFrontends(dir, options.frontendDirs), databaseNote: options.databaseNote };
  try {
    state.schema = loadSchema(dir);
    state.generatePlan = planGenerate(dir, state.schema, loadTemplates());
    state.generatedOnDisk = Object.fromEntries(
      state.generatePlan.writes.map((write) => {
        const file = path.join(dir, write.path);
        return [write.path, fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''];
      }),
    );
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error;
    state.schemaProblem = error.message;
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
    state.database = { wrongProviderAccounts: row?.n ?? 0 };
  }
  return state;
}
