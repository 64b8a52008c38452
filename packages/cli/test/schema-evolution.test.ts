import { PGlite } from '@electric-sql/pglite';
import { describe, expect, it } from 'vitest';
import { planMigrations, snapshotPath, type MigrationsOptions, type MigrationsState } from '../src/generate/migrations-plan.js';
import { eventTypesOf } from '../src/generate/event-sql.js';
import { applyRenames, renameInDefinition, schemaRenames } from '../src/generate/renames.js';
import { databaseModel } from '../src/generate/table-model.js';
import { readSchemaSource } from '../src/schema/read-literal.js';
import type { EntityDefinition, Schema } from '../src/schema/types.js';
import { validateSchema } from '../src/schema/validate.js';

// Planning schema changes that keep data: renames, type conversions, hand-written migrations.
// The pure planning functions (and one plan whose order matters, run on PGlite);
// schema-evolution-postgres.test.ts applies such plans to PostgreSQL through the built CLI.

const project: EntityDefinition = {
  fields: {
    title: { type: 'string', unique: true },
    status: { type: 'enum', values: ['active', 'archived'], default: 'active' },
    priority: { type: 'integer', nullable: true, default: 0 },
  },
};
const task: EntityDefinition = { fields: { projectId: { type: 'uuid', references: 'Project' }, note: { type: 'text', nullable: true } } };
const schemaOf = (entities: Record<string, EntityDefinition>): Schema => validateSchema({ entities });
const withFields = (entity: EntityDefinition, fields: Record<string, EntityDefinition['fields'][string] | undefined>): EntityDefinition => ({
  ...entity,
  fields: Object.fromEntries(Object.entries({ ...entity.fields, ...fields }).filter(([, field]) => field !== undefined)) as EntityDefinition['fields'],
});
/** `entity` with the field `from` now called `to` (same definition plus `extra`), in the same place. */
const renameField = (entity: EntityDefinition, from: string, to: string, extra: object = {}): EntityDefinition => ({
  ...entity,
  fields: Object.fromEntries(Object.entries(entity.fields).map(([name, field]) => (name === from ? [to, { ...field, ...extra }] : [name, field]))),
});

/** The migrations folder right after `schema` was generated (its init migration generated). */
function folderOf(schema: Schema, handWritten: string[] = []): MigrationsState {
  return { files: ['0001_init.sql', ...handWritten], snapshot: databaseModel(schema), handWritten };
}

function plan(before: Schema | MigrationsState, after: Schema, options: MigrationsOptions = {}) {
  const result = planMigrations(after, 'files' in before ? before : folderOf(before), options);
  const migration = result.files.find((file) => file.ownership === 'migration');
  const snapshot = result.files.find((file) => file.path === snapshotPath);
  const statements = migration ? migration.contents.split('\n\n').slice(1).map((statement) => statement.trim()) : [];
  return { ...result, path: migration?.path, sql: migration?.contents ?? '', statements, snapshot: snapshot && JSON.parse(snapshot.contents) };
}

describe('renaming a field with renamedFrom', () => {
  const v1 = schemaOf({ Project: project, Task: task });
  const v2 = schemaOf({ Project: renameField(project, 'title', 'name', { renamedFrom: 'title' }), Task: task });

  it('renames the column and its unique constraint, and adds or drops nothing', () => {
    const next = plan(v1, v2);
    expect(next.problems).toEqual([]);
    expect(next.path).toBe('migrations/0002_rename_project.sql');
    expect(next.statements).toEqual([
      'ALTER TABLE "Project" RENAME COLUMN "title" TO "name";',
      'ALTER TABLE "Project" RENAME CONSTRAINT "Project_organizationId_title_key" TO "Project_organizationId_name_key";',
    ]);
  });

  it('writes the snapshot of the new schema, so that the next run, renamedFrom still there, is a no-op', () => {
    const next = plan(v1, v2);
    expect(next.snapshot).toEqual(databaseModel(v2));
    const again = plan({ files: ['0001_init.sql', '0002_rename_project.sql'], snapshot: next.snapshot }, v2);
    expect(again.problems).toEqual([]);
    expect(again.files.map((file) => file.path)).toEqual([snapshotPath]);
  });

  it('renames the CHECK of an enum and an index on the column', () => {
    const before = schemaOf({ Project: { ...project, indexes: [['status']] } });
    const after = schemaOf({ Project: { ...renameField(project, 'status', 'state', { renamedFrom: 'status' }), indexes: [['state']] } });
    const next = plan(before, after);
    expect(next.problems).toEqual([]);
    expect(next.statements).toEqual([
      'ALTER TABLE "Project" RENAME COLUMN "status" TO "state";',
      'ALTER TABLE "Project" RENAME CONSTRAINT "Project_status_check" TO "Project_state_check";',
      'ALTER INDEX "Project_status_idx" RENAME TO "Project_state_idx";',
    ]);
  });

  it('follows a `column` mapping: renamedFrom names the old column', () => {
    const mapped = renameField(project, 'title', 'title', { column: 'project_title' });
    const next = plan(schemaOf({ Project: mapped }), schemaOf({ Project: renameField(project, 'title', 'name', { renamedFrom: 'project_title' }) }));
    expect(next.statements[0]).toBe('ALTER TABLE "Project" RENAME COLUMN "project_title" TO "name";');
  });

  it('keeps the old column with `column:`, which needs no migration at all', () => {
    const next = plan(v1, schemaOf({ Project: renameField(project, 'title', 'name', { column: 'title' }), Task: task }));
    expect(next.problems).toEqual([]);
    expect(next.path).toBeUndefined();
  });

  it('ignores a renamedFrom whose old column is not in the snapshot', () => {
    const next = plan(v1, schemaOf({ Project: withFields(project, { code: { type: 'string', nullable: true, renamedFrom: 'never_existed' } }), Task: task }));
    expect(next.statements).toEqual(['ALTER TABLE "Project" ADD COLUMN "code" text;']);
  });
});

describe('renaming an entity with renamedFrom', () => {
  const v1 = schemaOf({ Project: project, Task: task });
  const v2 = schemaOf({ Board: { ...project, renamedFrom: 'Project' }, Task: { fields: { ...task.fields, projectId: { type: 'uuid', references: 'Board' } } } });

  it('renames the table, its primary key, constraints and index; the reference to it is untouched', () => {
    const next = plan(v1, v2);
    expect(next.problems).toEqual([]);
    expect(next.path).toBe('migrations/0002_rename_board.sql');
    expect(next.statements).toEqual([
      'ALTER TABLE "Project" RENAME TO "Board";',
      'ALTER INDEX IF EXISTS "Project_pkey" RENAME TO "Board_pkey";',
      'ALTER TABLE "Board" RENAME CONSTRAINT "Project_organizationId_title_key" TO "Board_organizationId_title_key";',
      'ALTER TABLE "Board" RENAME CONSTRAINT "Project_id_organizationId_key" TO "Board_id_organizationId_key";',
      'ALTER TABLE "Board" RENAME CONSTRAINT "Project_organizationId_fkey" TO "Board_organizationId_fkey";',
      'ALTER TABLE "Board" RENAME CONSTRAINT "Project_status_check" TO "Board_status_check";',
      'ALTER INDEX "Project_organizationId_createdAt_idx" RENAME TO "Board_organizationId_createdAt_idx";',
      // Its events are board.* from now on.
      'DROP TRIGGER IF EXISTS "authstrap_events" ON "Board";',
      `CREATE CONSTRAINT TRIGGER "authstrap_events" AFTER INSERT OR UPDATE OR DELETE ON "Board" DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION authstrap.data_event('board', 'Board', '{}', 'organizationId');`,
    ]);
    expect(next.snapshot).toEqual(databaseModel(v2));
    expect(plan({ files: ['0001_init.sql', '0002_rename_board.sql'], snapshot: next.snapshot }, v2).path).toBeUndefined();
  });

  it('renames a table and one of its columns in one migration, the table first', () => {
    const next = plan(v1, schemaOf({ Board: { ...renameField(project, 'title', 'name', { renamedFrom: 'title' }), renamedFrom: 'Project' } }), { allowDrop: true });
    expect(next.statements.slice(0, 3)).toEqual([
      'ALTER TABLE "Project" RENAME TO "Board";',
      'ALTER INDEX IF EXISTS "Project_pkey" RENAME TO "Board_pkey";',
      'ALTER TABLE "Board" RENAME COLUMN "title" TO "name";',
    ]);
    expect(next.statements).toContain('ALTER TABLE "Board" RENAME CONSTRAINT "Project_organizationId_title_key" TO "Board_organizationId_name_key";');
  });

  it('renames to the name of a table that a new entity then takes, and PostgreSQL (PGlite) runs it', async () => {
    const before = schemaOf({ Project: project });
    const next = plan(before, schemaOf({ Board: { ...project, renamedFrom: 'Project' }, Project: { fields: { label: { type: 'string' } } } }));
    expect(next.problems).toEqual([]);
    expect(next.statements[0]).toBe('ALTER TABLE "Project" RENAME TO "Board";');
    expect(next.sql.indexOf('CREATE TABLE "Project"')).toBeGreaterThan(next.sql.indexOf('RENAME TO "Board"'));

    const db = new PGlite();
    try {
      await db.exec(planMigrations(before, { files: [] }).files.find((file) => file.ownership === 'migration')!.contents);
      const { rows } = await db.query<{ id: string }>(`INSERT INTO "Organization" ("name", "slug") VALUES ('Acme', 'acme') RETURNING "id"`);
      await db.query(`INSERT INTO "Project" ("organizationId", "title") VALUES ($1, 'Kept')`, [rows[0]!.id]);
      await db.exec(next.sql);
      expect((await db.query('SELECT "title" FROM "Board"')).rows).toEqual([{ title: 'Kept' }]);
      expect((await db.query('SELECT count(*)::int AS "count" FROM "Project"')).rows).toEqual([{ count: 0 }]);
    } finally {
      await db.close();
    }
  });
});

describe("turning a table's events off with `events: false`, and on again", () => {
  const v1 = schemaOf({ Project: project, Task: task });
  const v2 = schemaOf({ Project: project, Task: { ...task, events: false } });

  it('drops its trigger and nothing else, takes its types out of the event list, and makes the trigger again when on again', () => {
    expect(databaseModel(v2).tables.find((table) => table.name === 'Task')?.events).toBeUndefined();
    expect(eventTypesOf(v1).map((event) => event.type)).toContain('task.created');
    expect(eventTypesOf(v2).map((event) => event.type).filter((type) => /^(task|project)\./.test(type))).toEqual(['project.created', 'project.deleted', 'project.updated']);

    const off = plan(v1, v2);
    expect(off.problems).toEqual([]);
    expect(off.statements).toEqual(['DROP TRIGGER IF EXISTS "authstrap_events" ON "Task";']);
    const afterOff: MigrationsState = { files: ['0001_init.sql', off.path!], snapshot: off.snapshot, handWritten: [] };
    expect(plan(afterOff, v2).path).toBeUndefined();

    const on = plan(afterOff, v1);
    expect(on.statements).toEqual([
      'DROP TRIGGER IF EXISTS "authstrap_events" ON "Task";',
      `CREATE CONSTRAINT TRIGGER "authstrap_events" AFTER INSERT OR UPDATE OR DELETE ON "Task" DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION authstrap.data_event('task', 'Task', '{}', 'organizationId');`,
    ]);
  });
});

describe('a removed field or entity while another is added: the refusal says how to keep the data', () => {
  const source = `export default {
  entities: {
    Project: {
      fields: {
        name: { type: 'string', unique: true },
        status: { type: 'enum', values: ['active', 'archived'], default: 'active' },
        priority: { type: 'integer', nullable: true, default: 0 },
      },
    },
  },
};
`;
  const { value, locate } = readSchemaSource('/p/authstrap.schema.ts', source);
  const renamedInFile = validateSchema(value, 'authstrap.schema.ts', locate);
  const v1 = schemaOf({ Project: project });

  it('names renamedFrom with the exact line and where to add it, then column:, before --allow-drop', () => {
    const refused = plan(v1, renamedInFile, { locate });
    expect(refused.files).toEqual([]);
    const problem = refused.problems.find((text) => text.startsWith('column "Project"."title"'))!;
    expect(problem).toContain(`If field "name" (authstrap.schema.ts:5:9) is "title" renamed, keep the data: add \`renamedFrom: 'title',\` to it`);
    expect(problem).toContain("`column: 'title',`");
    expect(problem.indexOf('renamedFrom')).toBeLessThan(problem.indexOf('--allow-drop'));
    expect(refused.problems.find((text) => text.startsWith('column "Project"."name" is new and required'))).toContain('see `renamedFrom`');
  });

  it('names every new field as a candidate when there are several', () => {
    const refused = plan(v1, schemaOf({ Project: withFields(project, { title: undefined, name: { type: 'string', default: '' }, code: { type: 'string', nullable: true } }) }));
    expect(refused.problems).toEqual([expect.stringMatching(/^column "Project"\."title" .*If one of the new fields "name", "code" is "title" renamed, .*add `renamedFrom: 'title',` to that field/)]);
  });

  it('suggests renamedFrom and table: for an entity replaced by a new one', () => {
    const entitySource = `export default {\n  entities: {\n    Board: {\n      fields: { title: { type: 'string', unique: true } },\n    },\n  },\n};\n`;
    const read = readSchemaSource('/p/authstrap.schema.ts', entitySource);
    const refused = plan(v1, validateSchema(read.value, 'authstrap.schema.ts', read.locate), { locate: read.locate });
    expect(refused.problems).toEqual([
      expect.stringMatching(
        /^table "Project" is no longer in the schema; .*If entity "Board" \(authstrap\.schema\.ts:3:5\) is "Project" renamed, keep the rows: add `renamedFrom: 'Project',` to it .*`table: 'Project',`.*Otherwise put it back, or run `authstrap generate --allow-drop`/,
      ),
    ]);
  });

  it('says only "put it back or --allow-drop" when nothing was added', () => {
    const refused = plan(v1, schemaOf({ Project: withFields(project, { priority: undefined }) }));
    expect(refused.problems).toEqual([expect.stringMatching(/^column "Project"\."priority" is no longer in the schema; dropping it would delete its data\. Put the field back, or run/)]);
  });
});

describe('changing the type of a field', () => {
  const v1 = schemaOf({ Project: project });
  const priorityAsText = schemaOf({ Project: withFields(project, { priority: { type: 'text', nullable: true, default: 'normal' } }) });

  it('is refused by default, naming --allow-type-change and --accept-manual', () => {
    const refused = plan(v1, priorityAsText);
    expect(refused.files).toEqual([]);
    expect(refused.problems).toEqual([
      expect.stringMatching(/^column "Project"\."priority" changes type from integer to text\. Run `authstrap generate --allow-type-change` .*`USING "priority"::text`.*`authstrap generate --accept-manual`/),
    ]);
  });

  it('with --allow-type-change converts with USING, the old default dropped first, and asks for a review at the top', () => {
    const next = plan(v1, priorityAsText, { allowTypeChange: true });
    expect(next.problems).toEqual([]);
    expect(next.statements).toEqual([
      'ALTER TABLE "Project" ALTER COLUMN "priority" DROP DEFAULT;',
      'ALTER TABLE "Project" ALTER COLUMN "priority" TYPE text USING "priority"::text;',
      `ALTER TABLE "Project" ALTER COLUMN "priority" SET DEFAULT 'normal';`,
    ]);
    expect(next.sql).toMatch(/^-- Generated by authstrap[^]*-- REVIEW BEFORE IT IS APPLIED[^]*--   "Project"\."priority": integer -> text\n/);
    expect(next.notes).toEqual([expect.stringContaining('review it before it is applied')]);
  });

  it('is refused even with --allow-type-change when PostgreSQL has no cast, pointing at a hand-written migration', () => {
    const refused = plan(v1, schemaOf({ Project: withFields(project, { priority: { type: 'datetime', nullable: true } }) }), { allowTypeChange: true });
    expect(refused.problems).toEqual([expect.stringMatching(/changes type from integer to timestamptz, which PostgreSQL does not convert with a cast: write the migration by hand .*--accept-manual/)]);
  });

  it('writes no review comment into a migration without type changes', () => {
    expect(plan(v1, schemaOf({ Project: withFields(project, { code: { type: 'string', nullable: true } }) })).sql).not.toContain('REVIEW');
  });
});

describe('--accept-manual: a hand-written migration covers the change', () => {
  const v1 = schemaOf({ Project: project });
  const v2 = schemaOf({ Project: withFields(project, { priority: { type: 'datetime', nullable: true } }) });

  it('updates the snapshot, writes no SQL, and shows what authstrap would have done', () => {
    const accepted = plan(folderOf(v1, ['0002_priority_to_date.sql']), v2, { acceptManual: true });
    expect(accepted.problems).toEqual([]);
    expect(accepted.files.map((file) => file.path)).toEqual([snapshotPath]);
    expect(accepted.snapshot).toEqual(databaseModel(v2));
    expect(accepted.notes).toEqual([expect.stringMatching(/^migrations\/0002_priority_to_date\.sql is recorded as covering .*\n.*changes type from integer to timestamptz/)]);
    expect(plan({ ...folderOf(v1, ['0002_priority_to_date.sql']), snapshot: accepted.snapshot }, v2).path).toBeUndefined();
  });

  it('refuses when the newest migration was written by authstrap, naming the file to write', () => {
    const refused = plan({ files: ['0001_init.sql', '0002_alter_project.sql'], snapshot: databaseModel(v1), handWritten: [] }, v2, { acceptManual: true });
    expect(refused.files).toEqual([]);
    expect(refused.problems).toEqual([expect.stringMatching(/the newest migration, migrations\/0002_alter_project\.sql, was written by authstrap\. Write migrations\/0003_<what>\.sql first/)]);
  });

  it('has nothing to record when the schema did not change', () => {
    const same = plan(folderOf(v1), v1, { acceptManual: true });
    expect(same.problems).toEqual([]);
    expect(same.files.map((file) => file.path)).toEqual([snapshotPath]);
    expect(same.notes).toEqual([]);
  });
});

describe('applyRenames and renameInDefinition', () => {
  it('rewrites own columns and the referenced table, never enum values', () => {
    const columns = new Map([['status', 'state']]);
    const tables = new Map([['Project', 'Board']]);
    expect(renameInDefinition(`CHECK ("status" IN ('"status"', 'x'))`, columns, tables)).toBe(`CHECK ("state" IN ('"status"', 'x'))`);
    expect(renameInDefinition('FOREIGN KEY ("status", "organizationId") REFERENCES "Project" ("id", "organizationId") ON DELETE SET NULL ("status")', columns, tables)).toBe(
      'FOREIGN KEY ("state", "organizationId") REFERENCES "Board" ("id", "organizationId") ON DELETE SET NULL ("state")',
    );
  });

  it('skips a rename already done and one whose new name is taken', () => {
    const model = databaseModel(schemaOf({ Project: project, Task: task }));
    const renamed = applyRenames(model, { tables: [{ from: 'Gone', to: 'Project' }, { from: 'Task', to: 'Project' }], columns: [{ table: 'Project', from: 'title', to: 'status' }] });
    expect(renamed.statements).toEqual([]);
    expect(renamed.model).toEqual(model);
  });

  it('keeps what an index is through a rename: unique, lower(), its method and its condition, over the new names', () => {
    const model = databaseModel(schemaOf({ Project: project, Task: task }));
    const withIndexes = {
      ...model,
      tables: model.tables.map((table) =>
        table.name === 'Project'
          ? {
              ...table,
              indexes: [
                { name: 'Project_title_lower_idx', columns: ['title'], unique: true, lowercase: true },
                { name: 'Project_status_partial_idx', columns: ['status'], where: `"status" IS NOT NULL AND "title" <> 'status'` },
                { name: 'Project_createdAt_idx', columns: ['createdAt'], method: 'brin' as const },
              ],
            }
          : table,
      ),
    };
    const renamed = applyRenames(withIndexes, { tables: [{ from: 'Project', to: 'Board' }], columns: [{ table: 'Board', from: 'status', to: 'state' }] });
    expect(renamed.model.tables.find((table) => table.name === 'Board')!.indexes).toEqual([
      { name: 'Project_title_lower_idx', columns: ['title'], unique: true, lowercase: true },
      { name: 'Project_status_partial_idx', columns: ['state'], where: `"state" IS NOT NULL AND "title" <> 'status'` },
      { name: 'Project_createdAt_idx', columns: ['createdAt'], method: 'brin' },
    ]);
  });

  it('reads the renames of a schema as table and column names', () => {
    const schema = schemaOf({ Board: { table: 'boards', renamedFrom: 'projects', fields: { name: { type: 'string', column: 'board_name', renamedFrom: 'title' } } } });
    expect(schemaRenames(schema)).toEqual({ tables: [{ from: 'projects', to: 'boards' }], columns: [{ table: 'boards', from: 'title', to: 'board_name' }] });
  });
});

describe('e-mail addresses unique case-insensitively, in a project made before', () => {
  const schema = schemaOf({});
  /** The tables as projects had them: User.email a UNIQUE constraint, no index of lower(email). */
  const before = (() => {
    const model = databaseModel(schema);
    return {
      ...model,
      tables: model.tables.map((table) =>
        table.name !== 'User'
          ? table
          : {
              ...table,
              constraints: [...table.constraints, { name: 'User_email_key', definition: 'UNIQUE ("email")' }],
              indexes: table.indexes.filter((index) => !index.lowercase),
            },
      ),
    };
  })();

  it('gets a migration that swaps the constraint for a unique index of lower(email), which PostgreSQL (PGlite) runs', async () => {
    const next = plan({ files: ['0001_init.sql'], snapshot: before, handWritten: [] }, schema);
    expect(next.problems).toEqual([]);
    expect(next.statements).toEqual(['ALTER TABLE "User" DROP CONSTRAINT "User_email_key";', 'CREATE UNIQUE INDEX "User_email_lower_key" ON "User" (lower("email"));']);

    const db = new PGlite();
    try {
      const init = planMigrations(schema, { files: [] }).files.find((file) => file.ownership === 'migration')!.contents;
      // The old tables: today's, with the old constraint instead of the index.
      await db.exec(init.replace('CREATE UNIQUE INDEX "User_email_lower_key" ON "User" (lower("email"));', 'ALTER TABLE "User" ADD CONSTRAINT "User_email_key" UNIQUE ("email");'));
      await db.query(`INSERT INTO "User" ("email", "name") VALUES ('ada@example.com', 'Ada')`);
      await db.exec(next.sql);
      // The address as written is kept; another case of it is the same address.
      await db.query(`INSERT INTO "User" ("email", "name") VALUES ('Grace@Example.com', 'Grace')`);
      expect((await db.query('SELECT "email" FROM "User" ORDER BY "email"')).rows).toEqual([{ email: 'Grace@Example.com' }, { email: 'ada@example.com' }]);
      await expect(db.query(`INSERT INTO "User" ("email", "name") VALUES ('ADA@example.com', 'Ada again')`)).rejects.toThrow(/User_email_lower_key/);
    } finally {
      await db.close();
    }
  });
});
