import { schemaFileName } from '../schema/index.js';
import { fail, pass, plural, warn, type Check, type FileChange } from './check.js';

/**
 * An entity named (or served at a path) like an auth entity: `Account`, `Session`, `users`, ...
 * The schema no longer loads. The repair renames it as add-auth does, keeping its table (so no
 * row moves), and writes what `authstrap generate` then writes.
 */
export const nameClash: Check = {
  id: 'name-clash',
  title: 'No entity name clashes with an auth entity',
  examine(project) {
    if (project.nameClashProblem) return warn(`cannot read ${schemaFileName}: ${project.nameClashProblem}`);
    const clash = project.nameClash;
    if (!clash) {
      if (!project.schema) return pass(`${schemaFileName} has no clashing entity names`);
      return pass(project.schema.auth ? 'no entity is named like User, account, session, verification, Organization, member or apikey' : 'auth is off');
    }
    if (clash.edit.problems.length > 0) return fail(`rename by hand: ${clash.edit.problems.join('; ')}`);
    const named = clash.edit.renames.map((rename) => `${rename.from} (table "${rename.table}")`);
    const renamed = clash.edit.renames.map((rename) => `${rename.from} -> ${rename.to}`).join(', ');
    const message = `${named.join(', ')} ${clash.edit.renames.length === 1 ? 'clashes' : 'clash'} with the auth entities, so the schema does not load`;
    const schemaFile: FileChange = { path: schemaFileName, before: clash.edit.before, after: clash.edit.after };
    if (!clash.generatePlan || clash.generatePlan.problems.length > 0) {
      const problem = clash.problem ?? clash.generatePlan?.problems.join('; ') ?? 'unknown problem';
      return {
        ...fail(`${message}; after renaming, the schema still has problems: ${problem}`),
        repair: { summary: `rename ${renamed} (keeping their tables) in ${schemaFileName}, then fix the rest and run authstrap generate`, files: [schemaFile], sql: [] },
      };
    }
    const generated = clash.generatePlan.writes
      .filter((write) => write.action !== 'remove')
      .map((write) => ({ path: write.path, before: clash.generatedOnDisk[write.path] ?? '', after: write.contents ?? '' }));
    const removed = clash.generatePlan.writes.filter((write) => write.action === 'remove').map((write) => write.path);
    return {
      ...fail(message),
      repair: {
        summary: `rename ${renamed} (keeping their tables) in ${schemaFileName} and regenerate ${plural(generated.length, 'file')}${removed.length ? `; then run authstrap generate to remove ${removed.join(', ')}` : ''}`,
        files: [schemaFile, ...generated],
        sql: [],
      },
    };
  },
};
