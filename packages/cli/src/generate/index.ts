import fs from 'node:fs';
import path from 'node:path';
import type { Schema } from '../schema/types.js';
import { planWrites, readDiskState, type FileWrite, type PendingUpgrade } from './apply.js';
import { clientOutputs, type ClientOutputs } from './client-outputs.js';
import { generatedMigrationMark, planMigrations, snapshotPath, type MigrationsOptions, type MigrationsState } from './migrations-plan.js';
import { renderProject } from './render.js';
import type { Templates } from './templates.js';

export { applyWrites, readOwnedVersions, type FileWrite } from './apply.js';
export { checkCauses, databaseCheckVerdict } from './check-causes.js';
export { clientOutputs, clientPath, type ClientOutputs } from './client-outputs.js';
export type { MigrationsState } from './migrations-plan.js';
export { loadTemplates } from './templates.js';

/** The new migration among planned writes, if the schema change needs one. */
export const newMigration = (writes: FileWrite[]): FileWrite | undefined =>
  writes.find((write) => write.path.startsWith('migrations/') && write.path.endsWith('.sql'));

export interface GeneratePlan {
  writes: FileWrite[];
  problems: string[];
  /** What to tell the user besides the writes (a migration to review, a migration recorded). */
  notes: string[];
  /** The files the project owns (created once), as this version of authstrap plans them. */
  ownedPaths?: string[];
  /** Owned files whose upgrade waits for their user: merged with conflicts, or offered beside them. */
  pendingUpgrades?: PendingUpgrade[];
}

export function readMigrationsState(projectDir: string): MigrationsState {
  const dir = path.join(projectDir, 'migrations');
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
  const snapshotFile = path.join(projectDir, snapshotPath);
  const snapshot = fs.existsSync(snapshotFile) ? JSON.parse(fs.readFileSync(snapshotFile, 'utf8')) : undefined;
  const handWritten = files.filter((name) => name.endsWith('.sql') && !fs.readFileSync(path.join(dir, name), 'utf8').startsWith(generatedMigrationMark));
  return { files, snapshot, handWritten };
}

/** A package name from a folder name: `My App` -> `my-app`. */
export function packageNameFor(projectDir: string): string {
  const name = path
    .basename(path.resolve(projectDir))
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+|[-]+$/g, '');
  return name || 'backend';
}

/**
 * Where the typed client goes: client/authstrap-client.ts and the copies package.json lists. A
 * copy's folder is created when missing, but its parent must exist: a mistyped path is not a tree
 * of new folders.
 */
export function readClientOutputs(projectDir: string): ClientOutputs {
  const file = path.join(projectDir, 'package.json');
  let packageJson: unknown;
  try {
    packageJson = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    // No package.json yet (a new project), or one npm cannot read either: no copies to make.
    packageJson = undefined;
  }
  const { paths, problems } = clientOutputs(packageJson);
  for (const copy of paths.slice(1)) {
    const parent = path.dirname(path.dirname(path.resolve(projectDir, copy)));
    if (!fs.existsSync(parent)) {
      problems.push(`package.json: the "authstrap.clients" entry ${JSON.stringify(copy)} is in a folder whose parent ${path.relative(projectDir, parent)} does not exist`);
    }
  }
  return { paths, problems };
}

/** The files the project owns (created once), as this version of authstrap writes them for it. */
export function renderOwnedFiles(projectDir: string, schema: Schema, templates: Templates, options: { backendPort?: number } = {}) {
  const client = readClientOutputs(projectDir);
  return renderProject(schema, templates, { packageName: packageNameFor(projectDir), backendPort: options.backendPort, clientPaths: client.paths }).filter((file) => file.ownership === 'owned');
}

/** Reads the project, renders the schema and works out every write, without changing anything. */
export function planGenerate(
  projectDir: string,
  schema: Schema,
  templates: Templates,
  options: MigrationsOptions & {
    packageName?: string;
    /** For the files created once (README, package.json): see RenderOptions. */
    backendPort?: number;
    authstrapDependency?: string;
    overwriteOwned?: boolean;
    /** The migrations as they will be before these writes (add-auth records existing tables first). */
    migrationsState?: MigrationsState;
  } = {},
): GeneratePlan {
  const client = readClientOutputs(projectDir);
  if (client.problems.length > 0) return { writes: [], problems: client.problems, notes: [] };
  const files = renderProject(schema, templates, {
    packageName: options.packageName ?? packageNameFor(projectDir),
    backendPort: options.backendPort,
    authstrapDependency: options.authstrapDependency,
    clientPaths: client.paths,
  });
  const migrations = planMigrations(schema, options.migrationsState ?? readMigrationsState(projectDir), options);
  if (migrations.problems.length > 0) return { writes: [], problems: migrations.problems, notes: [] };
  // `setup --force` writes a whole new project over same-named files; `generate` never does.
  const planned = [...files, ...migrations.files];
  const { writes, notes, pending } = planWrites(planned, readDiskState(projectDir, planned, templates.released), { overwriteOwned: options.overwriteOwned });
  const ownedPaths = planned.filter((file) => file.ownership === 'owned').map((file) => file.path);
  return { writes, problems: [], notes: [...migrations.notes, ...notes], ownedPaths, pendingUpgrades: pending };
}
