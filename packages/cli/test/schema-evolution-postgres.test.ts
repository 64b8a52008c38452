import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { breakFile as editFile, createResources, query, runCliAsync } from './support/example-copies.js';
import { exampleDir, repoRoot } from './support/cli.js';

interface BackendDatabase {
  close(): Promise<void>;
}
/**
 * The migration runner of the generated backend, as a user's project runs it at startup. Loaded
 * at run time: it is the example's code, outside this package's sources.
 */
async function backendMigrations() {
  const load = (file: string) => import(path.join(exampleDir, 'src/db', file));
  const { openDatabase } = (await load('database.ts')) as {
    openDatabase(config: { databaseUrl: string; embeddedDbDir: string; projectDir: string; databaseTimeouts: { connectMs: number; queryMs: number } }): Promise<BackendDatabase>;
  };
  const { migrate } = (await load('migrate.ts')) as { migrate(db: BackendDatabase, dir: string): Promise<{ applied: string[] }> };
  return { openDatabase, migrate };
}

const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;
if (process.env.CI && !adminUrl) throw new Error('CI is set but AUTHSTRAP_TEST_POSTGRES_URL is not');

// Schema changes that keep data, end to end: the example project on a real PostgreSQL database,
// rows inserted, the schema file edited, `authstrap generate` run as a process, the migration it
// writes applied by the backend's own migrate(), and the rows read back.
describe.runIf(adminUrl)('schema changes applied to PostgreSQL keep the data', () => {
  const resources = createResources({ adminUrl, name: 'evolve' });
  afterAll(() => resources.cleanup(), 60_000);

  /** A copy of the example, migrated on a fresh database, with an organization. */
  async function migratedCopy() {
    const dir = resources.copyOfExample();
    const databaseUrl = await resources.createDatabase();
    const { openDatabase, migrate } = await backendMigrations();
    const applyMigrations = async () => {
      const db = await openDatabase({ databaseUrl, embeddedDbDir: '', projectDir: dir, databaseTimeouts: { connectMs: 10_000, queryMs: 60_000 } });
      try {
        return (await migrate(db, path.join(dir, 'migrations'))).applied;
      } finally {
        await db.close();
      }
    };
    expect(await applyMigrations()).toEqual(['0001_init.sql']);
    const [organization] = await query<{ id: string }>(databaseUrl, `INSERT INTO "Organization" ("name", "slug") VALUES ('Acme', 'acme') RETURNING "id"`);
    const sql = <Row>(text: string, params: unknown[] = []) => query<Row>(databaseUrl, text, params);
    const generate = (...args: string[]) => runCliAsync(['generate', dir, ...args], repoRoot);
    const editSchema = (from: string, to: string) => editFile(dir, 'authstrap.schema.ts', from, to);
    const migrationFiles = () => fs.readdirSync(path.join(dir, 'migrations')).filter((name) => name.endsWith('.sql')).sort();
    return { dir, organizationId: organization!.id, applyMigrations, sql, generate, editSchema, migrationFiles };
  }

  it('renames a field with renamedFrom: every row keeps its value under the new name', async () => {
    const copy = await migratedCopy();
    await copy.sql(`INSERT INTO "Project" ("organizationId", "name", "description") VALUES ($1, 'Rocket', 'to the moon'), ($1, 'Boat', NULL)`, [copy.organizationId]);

    // Renamed without saying so: refused, with the line that keeps the data, and nothing written.
    copy.editSchema("description: { type: 'text'", "summary: { type: 'text'");
    const refused = await copy.generate();
    expect(refused.status, refused.output).toBe(1);
    expect(refused.stderr).toMatch(/If field "summary" \(authstrap\.schema\.ts:13:9\) is "description" renamed, keep the data: add `renamedFrom: 'description',` to it/);
    expect(refused.stderr.indexOf('renamedFrom')).toBeLessThan(refused.stderr.indexOf('--allow-drop'));
    expect(copy.migrationFiles()).toEqual(['0001_init.sql']);

    copy.editSchema("summary: { type: 'text'", "summary: { renamedFrom: 'description', type: 'text'");
    const generated = await copy.generate();
    expect(generated.status, generated.output).toBe(0);
    const migration = fs.readFileSync(path.join(copy.dir, 'migrations/0002_rename_project.sql'), 'utf8');
    expect(migration).toContain('ALTER TABLE "Project" RENAME COLUMN "description" TO "summary";');
    expect(migration).not.toMatch(/DROP|ADD COLUMN/);
    expect(await copy.applyMigrations()).toEqual(['0002_rename_project.sql']);

    expect(await copy.sql('SELECT "name", "summary" FROM "Project" ORDER BY "name"')).toEqual([
      { name: 'Boat', summary: null },
      { name: 'Rocket', summary: 'to the moon' },
    ]);
    // renamedFrom may stay in the file: the old column is gone, so there is nothing left to do.
    const again = await copy.generate();
    expect(again.status, again.output).toBe(0);
    expect(again.stdout).toContain('up to date');
  }, 60_000);

  it('renames an entity with renamedFrom: its rows, and the rows that reference it, stay', async () => {
    const copy = await migratedCopy();
    const [project] = await copy.sql<{ id: string }>(`INSERT INTO "Project" ("organizationId", "name") VALUES ($1, 'Rocket') RETURNING "id"`, [copy.organizationId]);
    await copy.sql(`INSERT INTO "Task" ("organizationId", "projectId", "title") VALUES ($1, $2, 'Launch')`, [copy.organizationId, project!.id]);

    copy.editSchema('    Project: {\n', "    Board: {\n      renamedFrom: 'Project',\n");
    copy.editSchema("references: 'Project'", "references: 'Board'");
    const generated = await copy.generate();
    expect(generated.status, generated.output).toBe(0);
    expect(copy.migrationFiles()).toEqual(['0001_init.sql', '0002_rename_board.sql']);
    expect(fs.existsSync(path.join(copy.dir, 'src/generated/Board'))).toBe(true);
    expect(fs.existsSync(path.join(copy.dir, 'src/generated/Project'))).toBe(false);
    expect(await copy.applyMigrations()).toEqual(['0002_rename_board.sql']);

    expect(await copy.sql('SELECT "id", "name" FROM "Board"')).toEqual([{ id: project!.id, name: 'Rocket' }]);
    // Constraints and indexes carry the new name, as in a database created from the new schema.
    const snapshot = JSON.parse(fs.readFileSync(path.join(copy.dir, 'migrations/schema-snapshot.json'), 'utf8'));
    const board = snapshot.tables.find((table: { name: string }) => table.name === 'Board');
    const constraints = await copy.sql<{ conname: string }>(`SELECT conname FROM pg_constraint WHERE conrelid = '"Board"'::regclass ORDER BY conname`);
    expect(constraints.map((row) => row.conname)).toEqual([...board.constraints.map((constraint: { name: string }) => constraint.name), 'Board_pkey'].sort());
    const indexes = await copy.sql<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'Board' AND indexname NOT IN (SELECT conname FROM pg_constraint)`);
    expect(indexes.map((row) => row.indexname)).toEqual(board.indexes.map((index: { name: string }) => index.name));
    expect(await copy.sql('SELECT "title" FROM "Task" WHERE "projectId" = $1', [project!.id])).toEqual([{ title: 'Launch' }]);
    // The reference still holds: deleting the board deletes its task.
    await copy.sql('DELETE FROM "Board"');
    expect(await copy.sql('SELECT count(*)::int AS "count" FROM "Task"')).toEqual([{ count: 0 }]);
    expect((await copy.generate()).stdout).toContain('up to date');
  }, 60_000);

  it('changes a type with --allow-type-change: integer to text and back, the values converted', async () => {
    const copy = await migratedCopy();
    copy.editSchema("status: { type: 'enum', values: ['active', 'archived']", "priority: { type: 'integer', nullable: true, default: 1 },\n        status: { type: 'enum', values: ['active', 'archived']");
    expect((await copy.generate()).status).toBe(0);
    await copy.applyMigrations();
    await copy.sql(`INSERT INTO "Project" ("organizationId", "name", "priority") VALUES ($1, 'A', 7), ($1, 'B', NULL), ($1, 'C', DEFAULT)`, [copy.organizationId]);

    copy.editSchema("priority: { type: 'integer', nullable: true, default: 1 }", "priority: { type: 'text', nullable: true, default: '1' }");
    const refused = await copy.generate();
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/"Project"\."priority" changes type from integer to text\. Run `authstrap generate --allow-type-change`.*--accept-manual/);

    const toText = await copy.generate('--allow-type-change');
    expect(toText.status, toText.output).toBe(0);
    expect(toText.stdout).toMatch(/Note: the migration converts column types: review it/);
    const [textMigration] = copy.migrationFiles().slice(-1);
    const textSql = fs.readFileSync(path.join(copy.dir, 'migrations', textMigration!), 'utf8');
    expect(textSql).toContain('-- REVIEW BEFORE IT IS APPLIED');
    expect(textSql).toContain('ALTER TABLE "Project" ALTER COLUMN "priority" TYPE text USING "priority"::text;');
    await copy.applyMigrations();
    expect(await copy.sql('SELECT "name", "priority" FROM "Project" ORDER BY "name"')).toEqual([
      { name: 'A', priority: '7' },
      { name: 'B', priority: null },
      { name: 'C', priority: '1' },
    ]);
    await copy.sql(`INSERT INTO "Project" ("organizationId", "name") VALUES ($1, 'D')`, [copy.organizationId]);

    copy.editSchema("priority: { type: 'text', nullable: true, default: '1' }", "priority: { type: 'integer', nullable: true, default: 2 }");
    expect((await copy.generate('--allow-type-change')).status).toBe(0);
    await copy.applyMigrations();
    expect(await copy.sql('SELECT "name", "priority" FROM "Project" ORDER BY "name"')).toEqual([
      { name: 'A', priority: 7 },
      { name: 'B', priority: null },
      { name: 'C', priority: 1 },
      { name: 'D', priority: 1 },
    ]);
    await copy.sql(`INSERT INTO "Project" ("organizationId", "name") VALUES ($1, 'E')`, [copy.organizationId]);
    expect(await copy.sql(`SELECT "priority" FROM "Project" WHERE "name" = 'E'`)).toEqual([{ priority: 2 }]);
    expect((await copy.generate()).stdout).toContain('up to date');
  }, 60_000);

  it('records a hand-written migration with --accept-manual; the next generate is a no-op', async () => {
    const copy = await migratedCopy();
    copy.editSchema("status: { type: 'enum', values: ['active', 'archived']", "startsAt: { type: 'integer', nullable: true },\n        status: { type: 'enum', values: ['active', 'archived']");
    expect((await copy.generate()).status).toBe(0);
    await copy.applyMigrations();
    await copy.sql(`INSERT INTO "Project" ("organizationId", "name", "startsAt") VALUES ($1, 'Epoch day', 86400)`, [copy.organizationId]);

    // No cast from integer to timestamptz: generate points at the hand-written way.
    copy.editSchema("startsAt: { type: 'integer', nullable: true }", "startsAt: { type: 'datetime', nullable: true }");
    const refused = await copy.generate('--allow-type-change');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/"Project"\."startsAt" changes type from integer to timestamptz, which PostgreSQL does not convert with a cast: write the migration by hand and record it with `authstrap generate --accept-manual`/);
    // Without a hand-written migration, there is nothing to record.
    const early = await copy.generate('--accept-manual');
    expect(early.status).toBe(1);
    expect(early.stderr).toMatch(/the newest migration, migrations\/0002_alter_project\.sql, was written by authstrap\. Write migrations\/0003_<what>\.sql first/);

    fs.writeFileSync(
      path.join(copy.dir, 'migrations/0003_starts_at_as_time.sql'),
      '-- Seconds since 1970 become a point in time.\nALTER TABLE "Project" ALTER COLUMN "startsAt" TYPE timestamptz USING to_timestamp("startsAt");\n',
    );
    const accepted = await copy.generate('--accept-manual');
    expect(accepted.status, accepted.output).toBe(0);
    expect(accepted.stdout).toContain('migrations/0003_starts_at_as_time.sql is recorded as covering the change');
    expect(copy.migrationFiles()).toEqual(['0001_init.sql', '0002_alter_project.sql', '0003_starts_at_as_time.sql']);
    const snapshot = JSON.parse(fs.readFileSync(path.join(copy.dir, 'migrations/schema-snapshot.json'), 'utf8'));
    const startsAt = snapshot.tables.find((table: { name: string }) => table.name === 'Project').columns.find((column: { name: string }) => column.name === 'startsAt');
    expect(startsAt.type).toBe('timestamptz');

    const next = await copy.generate();
    expect(next.status, next.output).toBe(0);
    expect(next.stdout).toContain('up to date');
    expect(await copy.applyMigrations()).toEqual(['0003_starts_at_as_time.sql']);
    const [row] = await copy.sql<{ startsAt: Date }>(`SELECT "startsAt" FROM "Project" WHERE "name" = 'Epoch day'`);
    expect(row!.startsAt.toISOString()).toBe('1970-01-02T00:00:00.000Z');
  }, 60_000);
});
