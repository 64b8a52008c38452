import fs from 'node:fs';
import path from 'node:path';
import type { PlannedFile } from './render.js';

export type FileAction = 'create' | 'update' | 'remove';

export interface FileWrite {
  path: string;
  action: FileAction;
  contents?: string;
}

/** What is on disk now: contents of the planned paths, and the files under src/generated/. */
export interface DiskState {
  contents: Map<string, string | undefined>;
  generatedFiles: string[];
}

export const generatedDir = 'src/generated';

export function readDiskState(projectDir: string, planned: PlannedFile[]): DiskState {
  const contents = new Map<string, string | undefined>();
  for (const file of planned) {
    const full = path.join(projectDir, file.path);
    contents.set(file.path, fs.existsSync(full) ? fs.readFileSync(full, 'utf8') : undefined);
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
  return { contents, generatedFiles: generatedFiles.sort() };
}

/**
 * The writes that bring the disk to the plan: generated files written when different, owned and
 * migration files only when missing, and generated files no longer planned (a removed entity)
 * deleted. Pure, so `--dry-run` and `--check` show exactly what a real run would do.
 */
export function planWrites(planned: PlannedFile[], disk: DiskState): FileWrite[] {
  const writes: FileWrite[] = [];
  for (const file of planned) {
    const current = disk.contents.get(file.path);
    if (current === undefined) writes.push({ path: file.path, action: 'create', contents: file.contents });
    else if (file.ownership === 'generated' && current !== file.contents) {
      writes.push({ path: file.path, action: 'update', contents: file.contents });
    }
  }
  const plannedPaths = new Set(planned.map((file) => file.path));
  for (const existing of disk.generatedFiles) {
    if (!plannedPaths.has(existing)) writes.push({ path: existing, action: 'remove' });
  }
  return writes;
}

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
