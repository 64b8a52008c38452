import { ownedBaseDir, ownedFilesPath, ownedOfferSuffix, pendingNote, type FileWrite, type PendingUpgrade } from './apply.js';

/**
 * Why `generate --check` finds a project out of date, in the user's terms: the schema changed,
 * another version of authstrap wrote the project (its engine files and generated code differ),
 * files under src/generated/ were edited, or package.json's authstrap dependency points outside
 * the project. Pure: the planned writes and what the project's record says in, sentences out.
 */
export interface CheckCauseFacts {
  writes: Pick<FileWrite, 'path' | 'action'>[];
  /** The writes that belong to the authstrap dependency (a tarball kept inside, package.json). */
  dependencyWrites: Pick<FileWrite, 'path'>[];
  /** Which authstrap last generated the project (authstrap.files.json), when the record says. */
  recordedVersion?: string;
  version: string;
  /** Paths the user owns (created once): an upgrade writes them, the schema never does. */
  ownedPaths: ReadonlySet<string>;
  /** Owned files whose upgrade waits to be merged or declined. */
  pending?: PendingUpgrade[];
}

const isMigration = (file: string) => file.startsWith('migrations/');

export function checkCauses(facts: CheckCauseFacts): string[] {
  const dependency = new Set(facts.dependencyWrites.map((write) => write.path));
  const isBase = (file: string) => file.startsWith(`${ownedBaseDir}/`);
  const bases = facts.writes.filter((write) => isBase(write.path));
  const writes = facts.writes.filter((write) => !dependency.has(write.path) && write.path !== ownedFilesPath && !isBase(write.path));
  const upgraded = facts.recordedVersion !== undefined && facts.recordedVersion !== facts.version;
  const owned = writes.filter((write) => facts.ownedPaths.has(write.path.replace(ownedOfferSuffix, '')) && !isMigration(write.path));
  const generated = writes.filter((write) => !owned.includes(write) && !isMigration(write.path));
  const migrations = writes.filter((write) => isMigration(write.path) && write.path.endsWith('.sql'));
  const causes: string[] = [];
  if (migrations.length > 0) causes.push(`authstrap.schema.ts changed: ${migrations.map((write) => write.path).join(', ')} to write`);
  if (upgraded) {
    const files = [...owned, ...generated];
    causes.push(`authstrap ${facts.recordedVersion} generated the project and this is ${facts.version}: ${files.length > 0 ? `${count(files.length)} to bring up to date (${summary(files)})` : 'its record to update'}`);
  } else {
    if (owned.length > 0) causes.push(`${count(owned.length)} the project owns ${owned.length === 1 ? 'is' : 'are'} missing or offered again: ${summary(owned)}`);
    if (generated.length > 0) {
      causes.push(
        migrations.length > 0
          ? `src/generated/ follows the schema: ${count(generated.length)}`
          : `${count(generated.length)} under src/generated/ ${generated.length === 1 ? 'differs' : 'differ'} from what authstrap.schema.ts gives (edited by hand, or a schema change that needs no migration): ${summary(generated)}`,
      );
    }
  }
  if (!upgraded && bases.length > 0) causes.push(`${count(bases.length)} of ${ownedBaseDir}/ to write: the bases the next upgrade merges from`);
  if (dependency.size > 0) causes.push("package.json's authstrap dependency points outside the project");
  if (facts.pending?.length) causes.push(pendingNote(facts.pending));
  if (causes.length === 0 && facts.writes.some((write) => write.path === ownedFilesPath)) {
    causes.push(`${ownedFilesPath} is missing or out of date`);
  }
  return causes;
}

const count = (n: number) => `${n} file${n === 1 ? '' : 's'}`;

/** The first few paths, then how many more: a cause is one line. */
function summary(writes: Pick<FileWrite, 'path'>[]): string {
  const shown = writes.slice(0, 3).map((write) => write.path);
  return writes.length > 3 ? `${shown.join(', ')} and ${writes.length - 3} more` : shown.join(', ');
}
