import { describe, expect, it } from 'vitest';
import { checkCauses, databaseCheckVerdict } from '../src/generate/check-causes.js';
import { conflictMarkerLines, mergeThreeWays } from '../src/generate/merge3.js';

const labels = { ours: 'yours', base: 'authstrap 0.1.0', theirs: 'authstrap 0.2.0' };
const lines = (...numbers: (number | string)[]) => numbers.map((n) => `${n}\n`).join('');

describe('mergeThreeWays', () => {
  it('applies both sides when they change different lines', () => {
    const base = lines(1, 2, 3, 4, 5, 6, 7);
    const ours = lines(1, 'two', 3, 4, 5, 6, 7);
    const theirs = lines(1, 2, 3, 4, 5, 'six', 7, 8);
    expect(mergeThreeWays(base, ours, theirs, labels)).toEqual({ text: lines(1, 'two', 3, 4, 5, 'six', 7, 8), conflicts: 0 });
  });

  it('keeps an insertion of each side, at their own places', () => {
    const base = lines('import a', 'import b', '', 'limit()', 'end');
    const ours = lines('import a', 'import b', '', 'if (exempt) return', 'limit()', 'end');
    const theirs = lines('import a', 'import b', 'import c', '', 'limit()', 'end');
    // Touching changes conflict (as in git); these two are a line apart.
    expect(mergeThreeWays(base, ours, theirs, labels)).toEqual({ text: lines('import a', 'import b', 'import c', '', 'if (exempt) return', 'limit()', 'end'), conflicts: 0 });
  });

  it('takes a change both sides made alike once', () => {
    const base = lines(1, 2, 3);
    const both = lines(1, 'two', 3);
    expect(mergeThreeWays(base, both, both, labels)).toEqual({ text: both, conflicts: 0 });
  });

  it('writes a conflict with the base between the markers when both change the same lines differently', () => {
    const base = lines(1, 'max: 100', 3);
    const result = mergeThreeWays(base, lines(1, 'max: 500', 3), lines(1, 'max: env.LIMIT', 3), labels);
    expect(result.conflicts).toBe(1);
    expect(result.text).toBe(lines(1, '<<<<<<< yours', 'max: 500', '||||||| authstrap 0.1.0', 'max: 100', '=======', 'max: env.LIMIT', '>>>>>>> authstrap 0.2.0', 3));
    expect(conflictMarkerLines(result.text)).toEqual([2, 4, 6, 8]);
  });

  it('counts separate conflicts and merges what lies between them', () => {
    const base = lines('a', 'b', 'c', 'd', 'e');
    const result = mergeThreeWays(base, lines('A1', 'b', 'c', 'd', 'E1'), lines('A2', 'b', 'C', 'd', 'E2'), labels);
    expect(result.conflicts).toBe(2);
    expect(result.text).toContain(lines('>>>>>>> authstrap 0.2.0', 'b', 'C', 'd', '<<<<<<< yours'));
  });

  it('keeps the user\'s file byte for byte when the template did not change, last line without an end included', () => {
    const base = 'one\ntwo';
    const ours = 'one\r\n2\ntwo';
    expect(mergeThreeWays(base, ours, base, labels)).toEqual({ text: ours, conflicts: 0 });
    expect(mergeThreeWays(base, base, 'one\ntwo\nthree', labels)).toEqual({ text: 'one\ntwo\nthree', conflicts: 0 });
  });

  it('puts a marker on a line of its own when a side ends without a line end', () => {
    const result = mergeThreeWays('x', 'mine', 'theirs', labels);
    expect(result.text).toBe(lines('<<<<<<< yours', 'mine', '||||||| authstrap 0.1.0', 'x', '=======', 'theirs', '>>>>>>> authstrap 0.2.0'));
  });

  it('finds no markers in ordinary text, such as a line of = signs in a comment', () => {
    expect(conflictMarkerLines(lines('// ========', 'a <<<<<<< b', '=========='))).toEqual([]);
  });
});

describe('checkCauses', () => {
  const ownedPaths = new Set(['src/app.ts', 'src/http/rate-limit.ts']);
  const base = { dependencyWrites: [], version: '0.2.0', recordedVersion: '0.2.0', ownedPaths };

  it('names a schema change by the migration it needs', () => {
    const writes = [
      { path: 'src/generated/Task/task.schema.ts', action: 'update' as const },
      { path: 'migrations/0002_alter_task.sql', action: 'create' as const },
      { path: 'migrations/schema.snapshot.json', action: 'update' as const },
    ];
    expect(checkCauses({ ...base, writes })).toEqual(['authstrap.schema.ts changed: migrations/0002_alter_task.sql to write', 'src/generated/ follows the schema: 1 file']);
  });

  it('names an upgrade of authstrap, not the schema, when another version generated the project', () => {
    const writes = [
      { path: 'src/http/rate-limit.ts', action: 'update' as const },
      { path: 'src/generated/index.ts', action: 'update' as const },
      { path: 'authstrap.files.json', action: 'update' as const },
    ];
    const causes = checkCauses({ ...base, recordedVersion: '0.1.0', writes });
    expect(causes).toEqual(['authstrap 0.1.0 generated the project and this is 0.2.0: 2 files to bring up to date (src/http/rate-limit.ts, src/generated/index.ts)']);
    expect(causes.join()).not.toContain('schema');
  });

  it('names generated files edited by hand, and a dependency outside the project', () => {
    const causes = checkCauses({
      ...base,
      writes: [{ path: 'src/generated/index.ts', action: 'update' }, { path: 'package.json', action: 'update' }, { path: 'vendor/authstrap-9.9.9.tgz', action: 'create' }],
      dependencyWrites: [{ path: 'package.json' }, { path: 'vendor/authstrap-9.9.9.tgz' }],
    });
    expect(causes).toEqual([
      '1 file under src/generated/ differs from what authstrap.schema.ts gives (edited by hand, or a schema change that needs no migration): src/generated/index.ts',
      "package.json's authstrap dependency points outside the project",
    ]);
  });

  it('names the bases to write, not src/generated/, for a project that kept none yet', () => {
    const writes = [{ path: '.authstrap-base/src/app.ts.base', action: 'create' as const }, { path: 'authstrap.files.json', action: 'update' as const }];
    expect(checkCauses({ ...base, writes })).toEqual(['1 file of .authstrap-base/ to write: the bases the next upgrade merges from']);
  });

  it('names owned files that are missing, and a missing record', () => {
    expect(checkCauses({ ...base, writes: [{ path: 'src/app.ts', action: 'create' }] })).toEqual(['1 file the project owns is missing or offered again: src/app.ts']);
    expect(checkCauses({ ...base, writes: [{ path: 'authstrap.files.json', action: 'create' }] })).toEqual(['authstrap.files.json is missing or out of date']);
  });
});

describe('databaseCheckVerdict', () => {
  const handEdit = "Project: policy authstrap_select is not the schema's (edited by hand?)";
  const base = { migrations: ['0001_init.sql', '0002_rules_project.sql'], applied: ['0001_init.sql', '0002_rules_project.sql'], relative: 'api' };

  it('finds nothing when the row-level security is the schema\'s, migrations pending or not', () => {
    expect(databaseCheckVerdict(base)).toBeUndefined();
    expect(databaseCheckVerdict({ ...base, applied: ['0001_init.sql'] })).toBeUndefined();
  });

  it('sends a difference to fix when every migration has run', () => {
    expect(databaseCheckVerdict({ ...base, rowSecurityProblem: handEdit })).toEqual({
      message: handEdit,
      error: `The database's row-level security is not the schema's: ${handEdit}. Run \`authstrap fix api\` to put it back.`,
    });
  });

  it('puts a difference down to the migration not applied yet, and says to start the backend, not to run fix', () => {
    const verdict = databaseCheckVerdict({ ...base, applied: ['0001_init.sql'], rowSecurityProblem: handEdit });
    expect(verdict).toEqual({
      message: '1 migration not applied yet (migrations/0002_rules_project.sql): start the backend (it applies migrations as it starts), then check again',
      error: "The database's row-level security is not the schema's yet: 1 migration not applied yet (migrations/0002_rules_project.sql): start the backend (it applies migrations as it starts), then check again.",
    });
    expect(verdict!.error).not.toContain('fix');
    expect(verdict!.error).not.toContain('by hand');
  });

  it('counts every migration of a database the backend never started on, and names the first few', () => {
    const migrations = ['0001_init.sql', '0002_a.sql', '0003_b.sql', '0004_c.sql'];
    expect(databaseCheckVerdict({ ...base, migrations, applied: [], rowSecurityProblem: handEdit })?.message).toBe(
      '4 migrations not applied yet (migrations/0001_init.sql, migrations/0002_a.sql, migrations/0003_b.sql and 1 more): start the backend (it applies migrations as it starts), then check again',
    );
  });

  it('does not count an applied migration whose file is gone as pending', () => {
    expect(databaseCheckVerdict({ ...base, applied: [...base.applied, '0000_existing_tables.sql'], rowSecurityProblem: handEdit })?.message).toBe(handEdit);
  });
});
