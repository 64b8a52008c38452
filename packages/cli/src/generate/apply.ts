import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { version } from '../version.js';
import { mergeThreeWays } from './merge3.js';
import { render, type PlannedFile } from './render.js';

export type FileAction = 'create' | 'update' | 'remove';

export interface FileWrite {
  path: string;
  action: FileAction;
  contents?: string;
  /** How `contents` is encoded: a binary file (a kept tarball) is carried as base64. */
  encoding?: BufferEncoding;
}

/**
 * What is on disk now: contents of the planned paths, the files under src/generated/, and the
 * record of the owned files' versions (ownedFilesPath; undefined before there is one).
 */
export interface DiskState {
  contents: Map<string, string | undefined>;
  generatedFiles: string[];
  ownedVersions?: OwnedVersions;
  /** Owned path -> the template an earlier release wrote it from, when the project kept no base (readDiskState's `released`). */
  releasedBases?: Map<string, string>;
}

export const generatedDir = 'src/generated';

/**
 * The record that lets an upgrade of authstrap bring the files the user owns (created once:
 * src/app.ts, src/db/, src/extensions/, package.json, ...) up to date without losing their
 * changes: for each, the SHA-256 of the version authstrap last wrote or offered. A file still as
 * authstrap wrote it is rewritten. A changed one is merged three ways, as git merges a branch:
 * the template it was written from (kept in ownedBaseDir), the user's file and this version's.
 * Where there is no base (a project from before the bases were kept), this version is put beside
 * the file (ownedOfferSuffix), as dpkg does with a changed configuration file. Either way, until the user says the upgrade is merged or declined
 * (`authstrap resolve`, `authstrap decline`), the record marks it pending.
 */
export const ownedFilesPath = 'authstrap.files.json';
export const ownedOfferSuffix = '.authstrap-new';
/**
 * The template source each owned file was last written from (for most, the text itself): the
 * merge base of its next upgrade. Kept beside the record, which holds its SHA-256.
 */
export const ownedBaseDir = '.authstrap-base';
/**
 * `.authstrap-base/src/app.ts.base`: the suffix keeps tools from reading a base as the project's
 * (a second tsconfig.json or .gitignore, a package.json holding Handlebars).
 */
export const basePathOf = (file: string) => `${ownedBaseDir}/${file}.base`;

/**
 * Owned files that moved since an earlier release: the path it wrote -> the path this version
 * writes. 0.3.0 moved the auth engine out of src/extensions/auth/, which keeps the two files a
 * user extends (auth.service.ts, auth.decorator.ts), into src/auth/. An upgrade carries each old
 * file to its new path as planOwnedFiles would upgrade it in place (planMoves), then removes the
 * old file and its base.
 */
export const movedOwnedFiles: ReadonlyMap<string, string> = new Map(
  ['account-flows', 'auth.router', 'invitations', 'machine-keys', 'organization-manager', 'password', 'roles', 'tokens'].map((name) => [
    `src/extensions/auth/${name}.ts`,
    `src/auth/${name}.ts`,
  ]),
);

/** The old path of an owned file that moved here (movedOwnedFiles), if it did. */
const movedFrom = (file: string, moves: ReadonlyMap<string, string>) => [...moves].find(([, to]) => to === file)?.[0];

export interface OwnedVersions {
  /**
   * Path -> the SHA-256 (hex) of the template authstrap last wrote or offered for it, and of the
   * contents it wrote then (what the file is while its user has not changed it).
   */
  files: Record<string, OwnedVersion>;
  /** The version of authstrap that last generated the project, when the record says. */
  authstrap?: string;
}

export interface OwnedVersion {
  template: string;
  written: string;
  /**
   * An upgrade not yet taken in: 'conflict', merged with conflict markers left in the file;
   * 'offered', this version put beside the file (no base to merge with). Cleared by
   * `authstrap resolve` or `authstrap decline`.
   */
  pending?: PendingUpgrade['state'];
  /** The version of authstrap whose upgrade of this file its user declined. */
  declined?: string;
}

export interface PendingUpgrade {
  path: string;
  state: 'conflict' | 'offered';
}

const ownedFilesAbout =
  'Written by authstrap generate: for each file it created and you own, the SHA-256 of its template and of what it wrote. ' +
  `When an upgrade of authstrap changes one of those templates, it rewrites the files you never changed and merges its changes into the others, from the text it wrote before (${ownedBaseDir}/). ` +
  '"pending" marks an upgrade not merged yet: finish it with `authstrap resolve <file>`, or keep your file with `authstrap decline <file>`. ' +
  `"authstrap" is the version that last generated the project. Commit this file and ${ownedBaseDir}/.`;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const isVersion = (value: unknown): value is OwnedVersion =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as OwnedVersion).template === 'string' &&
  typeof (value as OwnedVersion).written === 'string' &&
  [undefined, 'conflict', 'offered'].includes((value as OwnedVersion).pending);

export function readOwnedVersions(projectDir: string): OwnedVersions | undefined {
  const file = path.join(projectDir, ownedFilesPath);
  if (!fs.existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { files?: unknown; authstrap?: unknown };
    const files = parsed.files && typeof parsed.files === 'object' ? (parsed.files as Record<string, unknown>) : {};
    return {
      files: Object.fromEntries(Object.entries(files).filter((entry): entry is [string, OwnedVersion] => isVersion(entry[1]))),
      ...(typeof parsed.authstrap === 'string' ? { authstrap: parsed.authstrap } : {}),
    };
  } catch {
    // An unreadable record is no record: files that differ are then kept and reported, never overwritten.
    return { files: {} };
  }
}

/**
 * `released`: templates of earlier releases by SHA-256 (Templates.released), the base of an owned
 * file that has none in the project yet, when the record names one of them.
 */
export function readDiskState(projectDir: string, planned: PlannedFile[], released: ReadonlyMap<string, string> = new Map()): DiskState {
  const contents = new Map<string, string | undefined>();
  for (const file of planned) {
    const full = path.join(projectDir, file.path);
    contents.set(file.path, fs.existsSync(full) ? fs.readFileSync(full, 'utf8') : undefined);
  }
  // An owned file that moved here is read at its old path too, with its base (planMoves).
  const ownedPaths = planned
    .filter((planned) => planned.ownership === 'owned')
    .flatMap((file) => {
      const from = movedFrom(file.path, movedOwnedFiles);
      return from === undefined ? [file.path] : [file.path, from];
    });
  for (const file of ownedPaths) {
    for (const kept of [file, `${file}${ownedOfferSuffix}`, basePathOf(file)]) {
      const full = path.join(projectDir, kept);
      if (!contents.has(kept) && fs.existsSync(full)) contents.set(kept, fs.readFileSync(full, 'utf8'));
    }
  }
  const ownedRecord = path.join(projectDir, ownedFilesPath);
  if (fs.existsSync(ownedRecord)) contents.set(ownedFilesPath, fs.readFileSync(ownedRecord, 'utf8'));
  const ownedVersions = readOwnedVersions(projectDir);
  const releasedBases = new Map<string, string>();
  for (const file of ownedPaths) {
    const releasedBase = released.get(ownedVersions?.files[file]?.template ?? '');
    if (releasedBase !== undefined) releasedBases.set(file, releasedBase);
  }
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
  return { contents, generatedFiles: generatedFiles.sort(), ownedVersions, releasedBases };
}

/** The writes planWrites found, and what to tell the user about the owned files it did not write. */
export interface WritePlan {
  writes: FileWrite[];
  notes: string[];
  /** Owned files whose upgrade waits for their user (merged with conflicts, or offered beside them). */
  pending: PendingUpgrade[];
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
  const ownedPlanned = planned.filter((file) => file.ownership === 'owned');
  const moves = planMoves(ownedPlanned, disk);
  const owned = planOwnedFiles(ownedPlanned, moves.disk, options);
  for (const { to } of moves.moved) {
    // What planOwnedFiles keeps as it is (the user's file, its base) is on disk only at the old
    // path: it goes to the new one.
    const ownedWrites = owned.files.get(to) ?? [];
    const kept = [to, basePathOf(to)].filter((file) => moves.disk.contents.get(file) !== undefined && !ownedWrites.some((write) => write.path === file));
    owned.files.set(to, [...ownedWrites, ...kept.map((file) => ({ path: file, contents: moves.disk.contents.get(file)! }))]);
  }
  for (const file of planned) {
    if (file.ownership === 'generated') write(file);
    else if (file.ownership === 'migration' && disk.contents.get(file.path) === undefined) write(file);
    else if (file.ownership === 'owned') for (const ownedWrite of owned.files.get(file.path) ?? []) write(ownedWrite);
  }
  if (owned.record) write(owned.record);
  for (const { from } of moves.moved) {
    for (const old of [from, basePathOf(from)]) if (disk.contents.get(old) !== undefined) writes.push({ path: old, action: 'remove' });
  }
  const plannedPaths = new Set(planned.map((file) => file.path));
  for (const existing of disk.generatedFiles) {
    if (!plannedPaths.has(existing)) writes.push({ path: existing, action: 'remove' });
  }
  return { writes, notes: [...moves.notes, ...owned.notes], pending: owned.pending };
}

/**
 * The disk as planOwnedFiles should see it once the owned files that moved (`moves`, old path ->
 * new) are at their new paths: each old file, its base and its record entry under the new path,
 * so that it is upgraded as it would be in place (rewritten when its user never changed it,
 * merged three ways from its old base when they did). Only where the old file is there and the
 * new one is not: when both are, the old one is left alone and named in a note.
 */
export function planMoves(
  owned: PlannedFile[],
  disk: DiskState,
  moves: ReadonlyMap<string, string> = movedOwnedFiles,
): { disk: DiskState; moved: { from: string; to: string }[]; notes: string[] } {
  const contents = new Map(disk.contents);
  const files = { ...disk.ownedVersions?.files };
  const releasedBases = new Map(disk.releasedBases);
  const moved: { from: string; to: string }[] = [];
  const leftBehind: string[] = [];
  for (const { path: to } of owned) {
    const from = movedFrom(to, moves);
    if (from === undefined || disk.contents.get(from) === undefined) continue;
    if (disk.contents.get(to) !== undefined) {
      leftBehind.push(`${from} (now ${to})`);
      continue;
    }
    moved.push({ from, to });
    contents.set(to, disk.contents.get(from));
    contents.set(basePathOf(to), disk.contents.get(basePathOf(from)));
    const before = files[from];
    delete files[from];
    if (before) files[to] = before;
    const releasedBase = disk.releasedBases?.get(from);
    if (releasedBase !== undefined) releasedBases.set(to, releasedBase);
  }
  const notes: string[] = [];
  if (moved.length > 0) {
    notes.push(
      `this version moves ${moved.length === 1 ? 'a file' : `${moved.length} files`} you own: ${moved.map(({ from, to }) => `${from} -> ${to}`).join(', ')}. ` +
        'Code of yours that imports one must import it from its new place (docs/upgrading.md, "Files that moved")',
    );
  }
  if (leftBehind.length > 0) {
    notes.push(`${leftBehind.length === 1 ? 'a file' : `${leftBehind.length} files`} this version moved ${leftBehind.length === 1 ? 'is' : 'are'} at both places, so the old one is kept: ${leftBehind.join(', ')}. Delete it once nothing imports it`);
  }
  const ownedVersions = disk.ownedVersions ? { ...disk.ownedVersions, files } : undefined;
  return { disk: { ...disk, contents, ownedVersions, releasedBases }, moved, notes };
}

/**
 * The owned files' writes. A missing one is created. When this version's template of a file is
 * not the one authstrap last wrote or offered (ownedFilesPath), a file still as authstrap wrote it
 * is rewritten, unless its contents depend on the project (a rendered template: package.json,
 * README.md, rendered today perhaps with another name). Any other is merged three ways from its
 * base (for a rendered one, the older template rendered with today's data, so that only the
 * template's changes are changes): clean merges are written, conflicts are written with their
 * markers and left pending. Without a base, this version is put beside
 * the file (name.authstrap-new), pending too. A project made before the record existed has no
 * versions at all: its files that differ are kept and named in a note, once (delete one and
 * generate again to take this version). Then the record, and the bases of what was written.
 */
export function planOwnedFiles(
  owned: PlannedFile[],
  disk: DiskState,
  options: { overwriteOwned?: boolean } = {},
): { files: Map<string, { path: string; contents: string }[]>; record?: { path: string; contents: string }; notes: string[]; pending: PendingUpgrade[] } {
  // Owned path -> what to write for it: the file itself (or its merge), this version beside it, its base.
  const files = new Map<string, { path: string; contents: string }[]>();
  const recorded = disk.ownedVersions?.files ?? {};
  const versions: Record<string, OwnedVersion> = {};
  const merged: string[] = [];
  const conflicted: string[] = [];
  const conflictedNow = new Set<string>();
  const offered: string[] = [];
  const unknown: string[] = [];
  for (const file of owned) {
    const source = file.template?.source ?? file.contents;
    const template = sha256(source);
    const written = sha256(file.contents);
    const before = recorded[file.path];
    const current = disk.contents.get(file.path);
    const rendered = file.template?.rendered === true;
    const basePath = basePathOf(file.path);
    // The base is the template source a file was written from: for a file rendered for the
    // project, rendered again with today's data, so that its name and port are no change.
    const baseSource = disk.contents.get(basePath) ?? disk.releasedBases?.get(file.path);
    const base = baseSource === undefined ? undefined : baseFor(file, baseSource);
    const asBase = [{ path: basePath, contents: source }];
    if (current === undefined || current === file.contents || options.overwriteOwned) {
      files.set(file.path, [file, ...asBase]);
      versions[file.path] = { template, written };
    } else if (before?.template === template) {
      // This version's template is the one written or offered before: the file is the user's as it
      // is. Its base is this version's template, unless an upgrade of it is still pending.
      versions[file.path] = before;
      if (!before.pending && baseSource === undefined) files.set(file.path, asBase);
    } else if (before !== undefined && !rendered && sha256(current) === before.written) {
      files.set(file.path, [file, ...asBase]);
      versions[file.path] = { template, written };
    } else if (before !== undefined && base !== undefined && sha256(baseSource!) === before.template) {
      const labels = { ours: `yours: ${file.path}`, base: `authstrap ${disk.ownedVersions?.authstrap ?? 'before'}`, theirs: `authstrap ${version}` };
      const merge = mergeThreeWays(base, current, file.contents, labels);
      if (merge.conflicts === 0) {
        files.set(file.path, [{ path: file.path, contents: merge.text }, ...asBase]);
        versions[file.path] = { template, written };
        // Listed when the user had changed it: otherwise this is a plain rewrite (a rendered file).
        if (merge.text !== current && current !== base) merged.push(file.path);
      } else {
        // The base stays what it was until the user says the merge is done (authstrap resolve).
        files.set(file.path, [{ path: file.path, contents: merge.text }]);
        versions[file.path] = { template, written: before.written, pending: 'conflict' };
        conflictedNow.add(file.path);
        conflicted.push(`${file.path} (${merge.conflicts === 1 ? '1 conflict' : `${merge.conflicts} conflicts`})`);
      }
    } else if (disk.ownedVersions) {
      files.set(file.path, [{ path: `${file.path}${ownedOfferSuffix}`, contents: file.contents }]);
      offered.push(file.path);
      // Still the user's file: what authstrap wrote stays the measure of "unchanged".
      versions[file.path] = { template, written: before?.written ?? written, pending: 'offered' };
    } else {
      // Named in a note now, and kept as if declined: this version becomes its base, so the next
      // upgrade merges from here, and the next run has nothing more to say.
      unknown.push(file.path);
      files.set(file.path, asBase);
      versions[file.path] = { template, written };
    }
  }
  const record = owned.length > 0 ? { path: ownedFilesPath, contents: `${JSON.stringify({ about: ownedFilesAbout, authstrap: version, files: sortedRecord(versions) }, null, 2)}\n` } : undefined;
  const pending = Object.entries(versions).flatMap(([file, owned]) => (owned.pending ? [{ path: file, state: owned.pending }] : []));
  const notes: string[] = [];
  if (merged.length > 0) {
    notes.push(`merged this version's changes into ${merged.length === 1 ? 'a file' : `${merged.length} files`} you changed (review them before you commit): ${merged.join(', ')}`);
  }
  if (conflicted.length > 0) {
    notes.push(
      `this version changes lines you changed too, so ${conflicted.length === 1 ? 'a file holds' : `${conflicted.length} files hold`} both between conflict markers (<<<<<<< yours ... >>>>>>> authstrap ${version}): ${conflicted.join(', ')}. ` +
        'Edit each to what it should be, then run `authstrap resolve <file>`.',
    );
  }
  if (offered.length > 0) {
    notes.push(
      `this version of authstrap changes ${offered.length === 1 ? 'a file' : `${offered.length} files`} you have changed, and has no base to merge them from, so ${offered.length === 1 ? 'it is' : 'they are'} kept as ${offered.length === 1 ? 'it is' : 'they are'}; ` +
        `its version is beside each: ${offered.map((file) => `${file}${ownedOfferSuffix}`).join(', ')}. Merge what you need, then run \`authstrap resolve <file>\` (or \`authstrap decline <file>\` to keep yours as it is).`,
    );
  }
  // Those offered or merged with conflicts in this run have their own notes above.
  const waiting = pending.filter((upgrade) => !offered.includes(upgrade.path) && !conflictedNow.has(upgrade.path));
  if (waiting.length > 0) notes.push(pendingNote(waiting));
  if (unknown.length > 0) {
    notes.push(
      `${unknown.length === 1 ? 'a file' : `${unknown.length} files`} authstrap created once differ${unknown.length === 1 ? 's' : ''} from what this version writes, and ${ownedFilesPath} (new) has no record of the version you started from, so they are kept as they are: ` +
        `${unknown.join(', ')}. To take this version of one, delete it and run \`authstrap generate\` again.`,
    );
  }
  return { files, record, notes, pending };
}

/** The text to merge from: the base source, rendered with this file's data when it is a template; undefined when it no longer renders. */
function baseFor(file: PlannedFile, baseSource: string): string | undefined {
  if (!file.template?.rendered || !file.template.data) return baseSource;
  try {
    return render(baseSource, file.template.data);
  } catch {
    return undefined;
  }
}

/** The reminder of upgrades still waiting, in generate's notes and the owned-upgrades check. */
export function pendingNote(pending: PendingUpgrade[]): string {
  const described = pending.map((upgrade) => (upgrade.state === 'conflict' ? `${upgrade.path} (merged with conflicts)` : `${upgrade.path} (this version beside it as ${upgrade.path}${ownedOfferSuffix})`));
  return (
    `the upgrade of ${pending.length === 1 ? 'a file you own is' : `${pending.length} files you own are`} not merged yet: ${described.join(', ')}. ` +
    'Once merged, run `authstrap resolve <file>`; to keep yours as it is, `authstrap decline <file>`'
  );
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
      fs.writeFileSync(full, write.contents!, write.encoding ?? 'utf8');
    }
  }
}
