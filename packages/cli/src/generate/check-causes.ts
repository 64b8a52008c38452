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

/** What `generate --check` found in the database, and the migrations of the project that have run there. */
export interface DatabaseCheckFacts {
  /** Why the database's row-level security is not the schema's (the check's message); none when it is. */
  rowSecurityProblem?: string;
  /** The project's migrations: the `.sql` file names in migrations/. */
  migrations: string[];
  /** The names the database records as applied (authstrap_migrations). */
  applied: string[];
  /** The project folder as the user named it, for the command to run. */
  relative: string;
}

/**
 * Why the database's row-level security is not the schema's, and the step that clears it; none when
 * it is. A migration not applied yet (an upgrade or a schema change that the backend has not started
 * on) is what brings the schema's policies, so a difference is put down to it, not to hand edits
 * that `fix` would undo: once it has run, a difference left is checked again. `message` is the
 * JSON's, `error` the sentence the command fails with.
 */
export function databaseCheckVerdict(facts: DatabaseCheckFacts): { message: string; error: string } | undefined {
  if (facts.rowSecurityProblem === undefined) return undefined;
  const pending = pendingMigrationsNote(facts.migrations, facts.applied);
  if (pending !== undefined) return { message: pending, error: `The database's row-level security is not the schema's yet: ${pending}.` };
  const message = facts.rowSecurityProblem;
  return { message, error: `The database's row-level security is not the schema's: ${message}. Run \`authstrap fix ${facts.relative}\` to put it back.` };
}

/**
 * The migrations of the project the database has not run yet, as the step that clears a
 * difference they explain (`generate --check`, and `fix`/`verify`'s row-level-security check);
 * none when every one has run.
 */
export function pendingMigrationsNote(migrations: string[], appliedNames: string[]): string | undefined {
  const applied = new Set(appliedNames);
  const pending = migrations.filter((name) => !applied.has(name)).map((name) => ({ path: `migrations/${name}` }));
  if (pending.length === 0) return undefined;
  return `${pending.length} migration${pending.length === 1 ? '' : 's'} not applied yet (${summary(pending)}): start the backend (it applies migrations as it starts), then check again`;
}

const count = (n: number) => `${n} file${n === 1 ? '' : 's'}`;

/** The first few paths, then how many more: a cause is one line. */
function summary(writes: Pick<FileWrite, 'path'>[]): string {
  const shown = writes.slice(0, 3).map((write) => write.path);
  return writes.length > 3 ? `${shown.join(', ')} and ${writes.length - 3} more` : shown.join(', ');
}
