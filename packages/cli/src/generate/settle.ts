import { createHash } from 'node:crypto';
import { basePathOf, ownedFilesPath, ownedOfferSuffix, type FileWrite, type OwnedVersion } from './apply.js';
import { conflictMarkerLines } from './merge3.js';
import type { PlannedFile } from './render.js';
import { version } from '../version.js';

/**
 * `authstrap resolve <file>` and `authstrap decline <file>`: the user's word that an owned file's
 * pending upgrade is merged, or that they keep their file as it is. Either way this version's
 * text becomes the file's base (the next upgrade merges from it), the offer beside the file goes,
 * and the record forgets the pending state; `decline` also records which version was declined.
 * Pure: what is on disk in, the writes (or why not) out.
 */
export type Settlement = 'resolve' | 'decline';

export interface SettleFacts {
  /** The path as the user named it, relative to the project. */
  path: string;
  /** This version's file, when authstrap creates one at that path. */
  planned?: PlannedFile;
  current?: string;
  /** authstrap.files.json as it is on disk. */
  recordText?: string;
  offerExists: boolean;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function planSettle(how: Settlement, facts: SettleFacts): { writes: FileWrite[] } | { problem: string } {
  const { path: file, planned } = facts;
  if (!planned || planned.ownership !== 'owned') return { problem: `${file} is not a file authstrap created for you to own: only those have upgrades to ${how}` };
  let record: { files?: Record<string, OwnedVersion> };
  try {
    record = JSON.parse(facts.recordText ?? '');
  } catch {
    return { problem: `${ownedFilesPath} is missing or not JSON: run \`authstrap generate\` first` };
  }
  const entry = record.files?.[file];
  if (!entry?.pending) return { problem: `${file} has no upgrade waiting (${ownedFilesPath}): nothing to ${how}` };
  if (facts.current === undefined) return { problem: `${file} does not exist: restore it (or run \`authstrap generate\` to write this version of it), then ${how} it` };
  const markers = conflictMarkerLines(facts.current);
  if (markers.length > 0) {
    const keep = how === 'decline' ? ' (keep your side of each)' : '';
    return { problem: `${file} still has conflict markers at line${markers.length === 1 ? '' : 's'} ${markers.join(', ')}: edit them out${keep}, then run \`authstrap ${how} ${file}\` again` };
  }
  const settled: OwnedVersion = {
    template: sha256(planned.template?.source ?? planned.contents),
    written: sha256(planned.contents),
    ...(how === 'decline' ? { declined: version } : {}),
  };
  const files = { ...record.files, [file]: settled };
  const writes: FileWrite[] = [{ path: ownedFilesPath, action: 'update', contents: `${JSON.stringify({ ...record, files }, null, 2)}\n` }];
  writes.push({ path: basePathOf(file), action: 'update', contents: planned.template?.source ?? planned.contents });
  if (facts.offerExists) writes.push({ path: `${file}${ownedOfferSuffix}`, action: 'remove' });
  return { writes };
}
