import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { PlannedFile } from './render.js';

export type FileAction = 'create' | 'update' | 'remove';

export interface FileWrite {
  path: string;
  action: FileAction;
  contents?: string;
}

/**
 * What is on disk now: contents of the planned paths, the files under src/generated/, and the
 * record of the owned files' versions (ownedFilesPath; undefined before there is one).
 */
export interface DiskState {
  contents: Map<string, string | undefined>;
  generatedFiles: string[];
  ownedVersions?: OwnedVersions;
}

export const generatedDir = 'src/generated';

/**
 * The record that lets an upgrade of authstrap bring the files the user owns (created once:
 * src/app.ts, src/db/, src/extensions/, package.json, ...) up to date without touching their
 * changes: for each, the SHA-256 of the version authstrap last wrote or offered. A file still as
 * authstrap wrote it is rewritten; a changed one is kept, and the new version is put beside it
 * (ownedOfferSuffix). As dpkg does with a changed configuration file.
 */
export const ownedFilesPath = 'authstrap.files.json';
export const ownedOfferSuffix = '.authstrap-new';

export interface OwnedVersions {
  /**
   * Path -> the SHA-256 (hex) of the template authstrap last wrote or offered for it, and of the
   * contents it wrote then (what the file is while its user has not changed it).
   */
  files: Record<string, OwnedVersion>;
}

export interface OwnedVersion {
  template: string;
  written: string;
}

const ownedFilesAbout =
  'Written by authstrap generate: for each file it created and you own, the SHA-256 of its template and of what it wrote. ' +
  'When an upgrade of authstrap changes one of those templates, it rewrites the files you never changed and puts its version of the others beside them (name.authstrap-new). Commit this file.';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const isVersion = (value: unknown): value is OwnedVersion =>
  typeof value === 'object' && value !== null && typeof (value as OwnedVersion).template === 'string' && typeof (value as OwnedVersion).written === 'string';

export function readOwnedVersions(projectDir: string): OwnedVersions | undefined {
  const file = path.join(projectDir, ownedFilesPath);
  if (!fs.existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { files?: unknown };
    const files = parsed.files && typeof parsed.files === 'object' ? (parsed.files as Record<string, unknown>) : {};
    return { files: Object.fromEntries(Object.entries(files).filter((entry): entry is [string, OwnedVersion] => isVersion(entry[1]))) };
  } catch {
    // An unreadable record is no record: files that differ are then kept and reported, never overwritten.
    return { files: {} };
  }
}

export function readDiskState(projectDir: string, planned: PlannedFile[]): DiskState {
  const contents = new Map<string, string | undefined>();
  for (const file of planned) {
    const full = path.join(projectDir, file.path);
    contents.set(file.path, fs.existsSync(full) ? fs.readFileSync(full, 'utf8') : undefined);
  }
  for (const file of planned.filter((planned) => planned.ownership === 'owned')) {
    const offer = `${file.path}${ownedOfferSuffix}`;
    const full = path.join(projectDir, offer);
    if (fs.existsSync(full)) contents.set(offer, fs.readFileSync(full, 'utf8'));
  }
  const ownedRecord = path.join(projectDir, ownedFilesPath);
  if (fs.existsSync(ownedRecord)) contents.set(ownedFilesPath, fs.readFileSync(ownedRecord, 'utf8'));
  const generatedFiles: string[] = [];
  const walk = (dir: string) => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else generatedFiles.push(path.relative(projectDir, full).split(path.sep).join('/'));
    }
  };
  walk(path.join(projectDir, generatedDir));
  return { contents, generatedFiles: generatedFiles.sort(), ownedVersions: readOwnedVersions(projectDir) };
}

/** The writes planWrites found, and what to tell the user about the owned files it did not write. */
export interface WritePlan {
  writes: FileWrite[];
  notes: string[];
}

/**
 * The writes that bring the disk to the plan: generated files written when different, migration
 * files only when missing, generated files no longer planned (a removed entity) deleted, and the
 * owned files as planOwnedFiles says. Pure, so `--dry-run` and `--check` show exactly what a real
 * run would do. `overwriteOwned` (setup --force) writes owned files as if generated.
 */
export function planWrites(planned: PlannedFile[], disk: DiskState, options: { overwriteOwned?: boolean } = {}): WritePlan {
  const writes: FileWrite[] = [];
  const write = (file: { path: string; contents: string }) => {
    const current = disk.contents.get(file.path);
    if (current === undefined) writes.push({ path: file.path, action: 'create', contents: file.contents });
    else if (current !== file.contents) writes.push({ path: file.path, action: 'update', contents: file.contents });
  };
  const owned = planOwnedFiles(planned.filter((file) => file.ownership === 'owned'), disk, options);
  for (const file of planned) {
    if (file.ownership === 'generated') write(file);
    else if (file.ownership === 'migration' && disk.contents.get(file.path) === undefined) write(file);
    else if (file.ownership === 'owned') for (const ownedWrite of owned.files.get(file.path) ?? []) write(ownedWrite);
  }
  if (owned.record) write(owned.record);
  const plannedPaths = new Set(planned.map((file) => file.path));
  for (const existing of disk.generatedFiles) {
    if (!plannedPaths.has(existing)) writes.push({ path: existing, action: 'remove' });
  }
  return { writes, notes: owned.notes };
}

/**
 * The owned files' writes. A missing one is created. When this version's template of a file is
 * not the one authstrap last wrote or offered (ownedFilesPath): a file still as authstrap wrote it
 * is rewritten, unless its contents depend on the project (a rendered template: package.json,
 * README.md), and any other is kept, with this version's file put beside it (name.authstrap-new)
 * once, and a note. A project made before the record existed has no such versions: its files that
 * differ are kept and named in a note, once (delete one and generate again to take this version).
 * Then the record.
 */
export function planOwnedFiles(
  owned: PlannedFile[],
  disk: DiskState,
  options: { overwriteOwned?: boolean } = {},
): { files: Map<string, { path: string; contents: string }[]>; record?: { path: string; contents: string }; notes: string[] } {
  // Owned path -> what to write for it: the file itself, or this version beside it.
  const files = new Map<string, { path: string; contents: string }[]>();
  const recorded = disk.ownedVersions?.files ?? {};
  const versions: Record<string, OwnedVersion> = {};
  const offered: string[] = [];
  const unknown: string[] = [];
  for (const file of owned) {
    const template = sha256(file.template?.source ?? file.contents);
    const written = sha256(file.contents);
    const before = recorded[file.path];
    const current = disk.contents.get(file.path);
    if (current === undefined || current === file.contents || options.overwriteOwned) {
      files.set(file.path, [file]);
      versions[file.path] = { template, written };
    } else if (before?.template === template) {
      // This version's template is the one offered before: the file is the user's as it is.
      versions[file.path] = before;
    } else if (before !== undefined && !file.template?.rendered && sha256(current) === before.written) {
      files.set(file.path, [file]);
      versions[file.path] = { template, written };
    } else if (disk.ownedVersions) {
      files.set(file.path, [{ path: `${file.path}${ownedOfferSuffix}`, contents: file.contents }]);
      offered.push(file.path);
      // Still the user's file: what authstrap wrote stays the measure of "unchanged".
      versions[file.path] = { template, written: before?.written ?? written };
    } else {
      // Named in a note now, and recorded as offered: the next run has nothing more to say.
      unknown.push(file.path);
      versions[file.path] = { template, written };
    }
  }
  const record = owned.length > 0 ? { path: ownedFilesPath, contents: `${JSON.stringify({ about: ownedFilesAbout, files: sortedRecord(versions) }, null, 2)}\n` } : undefined;
  const notes: string[] = [];
  if (offered.length > 0) {
    notes.push(
      `this version of authstrap changes ${offered.length === 1 ? 'a file' : `${offered.length} files`} you have changed, so ${offered.length === 1 ? 'it is' : 'they are'} kept as ${offered.length === 1 ? 'it is' : 'they are'}; ` +
        `its version is beside each, to merge what you need, then delete: ${offered.map((file) => `${file}${ownedOfferSuffix}`).join(', ')}`,
    );
  }
  if (unknown.length > 0) {
    notes.push(
      `${unknown.length === 1 ? 'a file' : `${unknown.length} files`} authstrap created once differ${unknown.length === 1 ? 's' : ''} from what this version writes, and ${ownedFilesPath} (new) has no record of the version you started from, so they are kept as they are: ` +
        `${unknown.join(', ')}. To take this version of one, delete it and run \`authstrap generate\` again.`,
    );
  }
  return { files, record, notes };
}

const sortedRecord = <Value>(record: Record<string, Value>) => Object.fromEntries(Object.keys(record).sort().map((key) => [key, record[key]!]));

export function applyWrites(projectDir: string, writes: FileWrite[]): void {
  for (const write of writes) {
    const full = path.join(projectDir, write.path);
    if (write.action === 'remove') {
      fs.rmSync(full, { force: true });
      // Leave no empty entity folder behind.
      const dir = path.dirname(full);
      if (fs.existsSync(dir) && fs.readdirSync(dir).length === 0) fs.rmdirSync(dir);
    } else {
      fs.mkdirSync(path.dirname(full), { recursive: true });
      fs.writeFileSync(full, write.contents!);
    }
  }
}
