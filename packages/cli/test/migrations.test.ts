import { PGlite } from '@electric-sql/pglite';
import { afterEach, describe, expect, it } from 'vitest';
import { diffModels } from '../src/generate/migration.js';
import { planMigrations, snapshotPath, type MigrationsOptions, type MigrationsState } from '../src/generate/migrations-plan.js';
import { databaseModel } from '../src/generate/table-model.js';
import type { DatabaseModel } from '../src/generate/table-types.js';
import type { EntityDefinition, Schema } from '../src/schema/types.js';
import { validateSchema } from '../src/schema/validate.js';

/** The entities of examples/saas-backend: a tenant-scoped Project and its Tasks. */
const project: EntityDefinition = {
  fields: {
    name: { type: 'string', minLength: 2, maxLength: 200 },
    description: { type: 'text', nullable: true, maxLength: 5000 },
    status: { type: 'enum', values: ['active', 'archived'], default: 'active' },
  },
};
const task: EntityDefinition = {
  parent: 'projectId',
  fields: {
    projectId: { type: 'uuid', references: 'Project', onDelete: 'cascade' },
    title: { type: 'string', minLength: 1, maxLength: 200, searchable: true },
    status: { type: 'enum', values: ['todo', 'doing', 'done'], default: 'todo' },
  },
};

const schemaOf = (entities: Record<string, EntityDefinition>): Schema => validateSchema({ entities });
/** Project with some of its fields changed (a field set to undefined is removed). */
const projectWith = (fields: Record<string, EntityDefinition['fields'][string] | undefined>): EntityDefinition => ({
  fields: Object.fromEntries(Object.entries({ ...project.fields, ...fields }).filter(([, field]) => field !== undefined)) as EntityDefinition['fields'],
});

const emptyFolder: MigrationsState = { files: [] };

/** The migrations/ folder after the first `authstrap generate` of `schema`. */
function folderAfterInit(schema: Schema): MigrationsState {
  const plan = planMigrations(schema, emptyFolder);
  expect(plan.problems).toEqual([]);
  const snapshot = plan.files.find((file) => file.path === snapshotPath)!;
  return { files: plan.files.map((file) => file.path.slice('migrations/'.length)).sort(), snapshot: JSON.parse(snapshot.contents) };
}

/** The migration `generate` writes when the schema goes from `before` to `after`. */
function migrate(before: Schema, after: Schema, options: MigrationsOptions = {}) {
  const plan = planMigrations(after, folderAfterInit(before), options);
  const migration = plan.files.find((file) => file.ownership === 'migration');
  return { ...plan, path: migration?.path, sql: migration?.contents ?? '' };
}

const initSql = (schema: Schema) => planMigrations(schema, emptyFolder).files.find((file) => file.ownership === 'migration')!.contents;
const createdTables = (sql: string) => [...sql.matchAll(/^CREATE TABLE "([^"]+)"/gm)].map((match) => match[1]);

describe('the first migration', () => {
  const schema = schemaOf({ Project: project, Task: task });

  it('is 0001_init.sql, written with the snapshot of the database model', () => {
    const plan = planMigrations(schema, emptyFolder);
    expect(plan.problems).toEqual([]);
    expect(plan.files.map((file) => [file.path, file.ownership])).toEqual([
      [snapshotPath, 'generated'],
      ['migrations/0001_init.sql', 'migration'],
    ]);
    expect(JSON.parse(plan.files[0]!.contents)).toEqual(databaseModel(schema));
  });

  it('creates every table, each after the tables it references', () => {
    const order = createdTables(initSql(schema));
    expect([...order].sort()).toEqual([
      'Organization', 'Project', 'Task', 'User', 'account', 'apikey', 'authstrap_activity_day', 'authstrap_domain', 'authstrap_event', 'authstrap_idempotency_key', 'authstrap_member_suspension', 'authstrap_operator',
      'authstrap_outbox', 'authstrap_saml_assertion', 'authstrap_scim_directory', 'authstrap_scim_group', 'authstrap_scim_group_member', 'authstrap_scim_request',
      'authstrap_scim_role_mapping', 'authstrap_scim_token', 'authstrap_scim_user', 'authstrap_sso_certificate', 'authstrap_sso_code', 'authstrap_sso_connection',
      'authstrap_sso_flow', 'authstrap_sso_identity', 'authstrap_sso_policy', 'authstrap_user_ban', 'authstrap_webhook_endpoint', 'member', 'session', 'verification',
    ]);
    const before = (referenced: string, referencing: string) => expect(order.indexOf(referenced)).toBeLessThan(order.indexOf(referencing));
    before('User', 'account');
    before('User', 'session');
    before('Organization', 'session');
    before('Organization', 'member');
    before('Organization', 'Project');
    before('Project', 'Task');
  });

  it('creates tables in reference order even when the schema lists the referencing entity first', () => {
    const order = createdTables(initSql(schemaOf({ Task: task, Project: project })));
    expect(order.indexOf('Project')).toBeLessThan(order.indexOf('Task'));
  });

  it('keys a reference between tenant-scoped tables on ("id", "organizationId"), and a global one on "id"', () => {
    const sql = initSql(schema);
    expect(sql).toContain('CONSTRAINT "Project_id_organizationId_key" UNIQUE ("id", "organizationId")');
    expect(sql).toContain(
      'CONSTRAINT "Task_projectId_fkey" FOREIGN KEY ("projectId", "organizationId") REFERENCES "Project" ("id", "organizationId") ON DELETE CASCADE',
    );
    expect(sql).toContain('CONSTRAINT "member_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User" ("id") ON DELETE CASCADE');
    expect(sql).toContain('CONSTRAINT "Task_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization" ("id") ON DELETE CASCADE');
  });

  it('adds the foreign key of a reference cycle once both tables exist', () => {
    const sql = initSql(
      schemaOf({
        Team: { fields: { leadId: { type: 'uuid', nullable: true, references: 'Player', onDelete: 'restrict' } } },
        Player: { fields: { teamId: { type: 'uuid', references: 'Team' } } },
      }),
    );
    const deferred = 'ALTER TABLE "Team" ADD CONSTRAINT "Team_leadId_fkey" FOREIGN KEY ("leadId", "organizationId") REFERENCES "Player" ("id", "organizationId") ON DELETE RESTRICT;';
    expect(sql).toContain(deferred);
    expect(sql.indexOf(deferred)).toBeGreaterThan(sql.indexOf('CREATE TABLE "Player"'));
  });
});

describe('later migrations', () => {
  const v1 = schemaOf({ Project: project, Task: task });

  it('writes no migration for an unchanged schema, only the snapshot', () => {
    const plan = migrate(v1, schemaOf({ Project: project, Task: task }));
    expect(plan.problems).toEqual([]);
    expect(plan.files.map((file) => file.path)).toEqual([snapshotPath]);
  });

  it('adds a nullable field with ADD COLUMN in 0002_alter_<table>.sql', () => {
    const plan = migrate(v1, schemaOf({ Project: projectWith({ dueDate: { type: 'datetime', nullable: true } }), Task: task }));
    expect(plan.path).toBe('migrations/0002_alter_project.sql');
    expect(plan.sql).toContain('ALTER TABLE "Project" ADD COLUMN "dueDate" timestamptz;');
  });

  it('adds a required field that has a default as NOT NULL with that default', () => {
    const plan = migrate(v1, schemaOf({ Project: projectWith({ priority: { type: 'integer', default: 3 } }), Task: task }));
    expect(plan.sql).toContain('ALTER TABLE "Project" ADD COLUMN "priority" integer NOT NULL DEFAULT 3;');
  });

  it('refuses a new required field without a default, naming it and suggesting "default" or "nullable"', () => {
    const plan = migrate(v1, schemaOf({ Project: projectWith({ priority: { type: 'integer' } }), Task: task }));
    expect(plan.files).toEqual([]);
    expect(plan.problems).toHaveLength(1);
    expect(plan.problems[0]).toContain('"Project"."priority"');
    expect(plan.problems[0]).toMatch(/Give the field a "default", or make it "nullable"/);
  });

  it('refuses to drop a removed field unless drops are allowed, then drops the column', () => {
    const v2 = schemaOf({ Project: projectWith({ description: undefined }), Task: task });
    const refused = migrate(v1, v2);
    expect(refused.files).toEqual([]);
    expect(refused.problems).toEqual([expect.stringMatching(/^column "Project"\."description" is no longer in the schema; .*--allow-drop/)]);

    const allowed = migrate(v1, v2, { allowDrop: true });
    expect(allowed.problems).toEqual([]);
    expect(allowed.sql).toContain('ALTER TABLE "Project" DROP COLUMN "description";');
  });

  it('refuses to drop a removed entity unless drops are allowed, then drops the table', () => {
    const v2 = schemaOf({ Project: project });
    const refused = migrate(v1, v2);
    expect(refused.files).toEqual([]);
    expect(refused.problems).toEqual([expect.stringMatching(/^table "Task" is no longer in the schema; .*--allow-drop/)]);

    const allowed = migrate(v1, v2, { allowDrop: true });
    expect(allowed.sql).toContain('DROP TABLE "Task";');
    // Project no longer needs the key that Task's reference used, once Task is gone.
    const dropKey = 'ALTER TABLE "Project" DROP CONSTRAINT "Project_id_organizationId_key";';
    expect(allowed.sql).toContain(dropKey);
    expect(allowed.sql.indexOf('DROP TABLE "Task";')).toBeLessThan(allowed.sql.indexOf(dropKey));
  });

  it('drops a referencing table before the table it references', () => {
    const { sql } = migrate(v1, schemaOf({}), { allowDrop: true });
    expect(sql.indexOf('DROP TABLE "Task";')).toBeGreaterThan(-1);
    expect(sql.indexOf('DROP TABLE "Task";')).toBeLessThan(sql.indexOf('DROP TABLE "Project";'));
  });

  it('replaces the CHECK constraint when enum values change', () => {
    const { sql } = migrate(v1, schemaOf({ Project: projectWith({ status: { type: 'enum', values: ['active', 'paused', 'archived'], default: 'active' } }), Task: task }));
    const drop = 'ALTER TABLE "Project" DROP CONSTRAINT "Project_status_check";';
    const add = `ALTER TABLE "Project" ADD CONSTRAINT "Project_status_check" CHECK ("status" IN ('active', 'paused', 'archived'));`;
    expect(sql).toContain(drop);
    expect(sql).toContain(add);
    expect(sql.indexOf(drop)).toBeLessThan(sql.indexOf(add));
  });

  it('changes NOT NULL when a field becomes nullable or required', () => {
    const nullable = migrate(v1, schemaOf({ Project: projectWith({ name: { type: 'string', nullable: true } }), Task: task }));
    expect(nullable.sql).toContain('ALTER TABLE "Project" ALTER COLUMN "name" DROP NOT NULL;');
    const required = migrate(v1, schemaOf({ Project: projectWith({ description: { type: 'text' } }), Task: task }));
    expect(required.sql).toContain('ALTER TABLE "Project" ALTER COLUMN "description" SET NOT NULL;');
  });

  it('changes the column default when the field default changes', () => {
    const { sql } = migrate(v1, schemaOf({ Project: projectWith({ status: { type: 'enum', values: ['active', 'archived'], default: 'archived' } }), Task: task }));
    expect(sql.trim().split('\n\n').slice(1)).toEqual([`ALTER TABLE "Project" ALTER COLUMN "status" SET DEFAULT 'archived';`]);
  });


  it('numbers the next migration after the highest existing one', () => {
    const v2 = schemaOf({ Project: projectWith({ dueDate: { type: 'datetime', nullable: true } }), Task: task });
    const state = folderAfterInit(v1);
    const afterCustom = { ...state, files: [...state.files, '0002_alter_project.sql', '0007_backfill.sql'] };
    const plan = planMigrations(v2, afterCustom);
    expect(plan.files.map((file) => file.path)).toEqual([snapshotPath, 'migrations/0008_alter_project.sql']);
  });

  it('gives an existing table the key a new table references before creating that table', () => {
    const plan = migrate(schemaOf({ Project: project }), v1);
    expect(plan.path).toBe('migrations/0002_create_task_alter_project.sql');
    const addKey = 'ALTER TABLE "Project" ADD CONSTRAINT "Project_id_organizationId_key" UNIQUE ("id", "organizationId");';
    expect(plan.sql).toContain(addKey);
    expect(plan.sql.indexOf(addKey)).toBeLessThan(plan.sql.indexOf('CREATE TABLE "Task"'));
  });

  it('refuses to plan when migrations exist but their snapshot is missing', () => {
    const plan = planMigrations(v1, { files: ['0001_init.sql', '0002_alter_project.sql'] });
    expect(plan.files).toEqual([]);
    expect(plan.problems).toEqual([expect.stringMatching(/^migrations\/schema-snapshot\.json is missing, .*2 existing migrations/)]);
  });

  it('reports every refused change at once', () => {
    const plan = diffModels(databaseModel(v1), databaseModel(schemaOf({ Project: projectWith({ name: undefined, priority: { type: 'integer' } }) })));
    expect(plan.problems).toEqual([
      expect.stringMatching(/^column "Project"\."priority" is new and required/),
      expect.stringMatching(/^column "Project"\."name" is no longer in the schema/),
      expect.stringMatching(/^table "Task" is no longer in the schema/),
    ]);
  });
});

describe('migrations applied to PostgreSQL (PGlite)', () => {
  const databases: PGlite[] = [];
  const database = () => {
    const db = new PGlite();
    databases.push(db);
    return db;
  };
  afterEach(async () => {
    for (const db of databases.splice(0)) await db.close();
  });

  const insertId = async (db: PGlite, sql: string, params: unknown[]) => (await db.query<{ id: string }>(`${sql} RETURNING "id"`, params)).rows[0]!.id;
  const organization = (db: PGlite, slug: string) => insertId(db, 'INSERT INTO "Organization" ("name", "slug") VALUES ($1, $1)', [slug]);
  const insertProject = (db: PGlite, organizationId: string, name: string, extra: Record<string, unknown> = {}) => {
    const columns = ['organizationId', 'name', ...Object.keys(extra)];
    const values = [organizationId, name, ...Object.values(extra)];
    return insertId(db, `INSERT INTO "Project" (${columns.map((column) => `"${column}"`).join(', ')}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')})`, values);
  };
  const insertTask = (db: PGlite, organizationId: string, projectId: string) =>
    insertId(db, 'INSERT INTO "Task" ("organizationId", "projectId", "title") VALUES ($1, $2, $3)', [organizationId, projectId, 'A task']);

  it('runs the init migration and a later ALTER migration, and their constraints hold', async () => {
    const v1 = schemaOf({ Project: projectWith({ code: { type: 'string', nullable: true, unique: true } }), Task: task });
    const v2 = schemaOf({
      Project: projectWith({
        code: { type: 'string', nullable: true, unique: true },
        status: { type: 'enum', values: ['active', 'paused', 'archived'], default: 'active' },
        dueDate: { type: 'datetime', nullable: true },
      }),
      Task: task,
    });
    const db = database();
    await db.exec(initSql(v1));

    const acme = await organization(db, 'acme');
    const globex = await organization(db, 'globex');
    const acmeProject = await insertProject(db, acme, 'Rocket', { code: 'R1' });
    const row = await db.query<{ status: string }>('SELECT "status" FROM "Project" WHERE "id" = $1', [acmeProject]);
    expect(row.rows[0]!.status).toBe('active');

    await expect(insertProject(db, acme, 'Bad', { status: 'bogus' })).rejects.toMatchObject({ constraint: 'Project_status_check' });
    await expect(insertProject(db, acme, 'Again', { code: 'R1' })).rejects.toMatchObject({ constraint: 'Project_organizationId_code_key' });
    await expect(insertProject(db, globex, 'Same code, other tenant', { code: 'R1' })).resolves.toEqual(expect.any(String));

    await expect(insertTask(db, acme, acmeProject)).resolves.toEqual(expect.any(String));
    // A task of globex cannot point at a project of acme, whatever the application does.
    await expect(insertTask(db, globex, acmeProject)).rejects.toMatchObject({ constraint: 'Task_projectId_fkey' });

    await expect(insertProject(db, acme, 'Paused', { status: 'paused' })).rejects.toMatchObject({ constraint: 'Project_status_check' });
    const next = migrate(v1, v2);
    expect(next.path).toBe('migrations/0002_alter_project.sql');
    await db.exec(next.sql);
    await expect(insertProject(db, acme, 'Paused', { status: 'paused', dueDate: '2030-01-01T00:00:00Z' })).resolves.toEqual(expect.any(String));
    const kept = await db.query<{ name: string; dueDate: Date | null }>('SELECT "name", "dueDate" FROM "Project" WHERE "id" = $1', [acmeProject]);
    expect(kept.rows).toEqual([{ name: 'Rocket', dueDate: null }]);

    await db.query('DELETE FROM "Organization" WHERE "id" = $1', [acme]);
    const left = await db.query<{ count: number }>('SELECT count(*)::int AS "count" FROM "Task"');
    expect(left.rows[0]!.count).toBe(0);
  });

  it('adds an entity that references an existing tenant-scoped entity, cycle included', async () => {
    const v1 = schemaOf({ Project: project });
    const v2 = schemaOf({
      Project: projectWith({ leadId: { type: 'uuid', nullable: true, references: 'Lead', onDelete: 'restrict' } }),
      Task: task,
      Lead: { fields: { projectId: { type: 'uuid', references: 'Project' } } },
    });
    const db = database();
    await db.exec(initSql(v1));
    const acme = await organization(db, 'acme');
    const globex = await organization(db, 'globex');
    const acmeProject = await insertProject(db, acme, 'Rocket');

    const next = migrate(v1, v2);
    expect(next.problems).toEqual([]);
    await db.exec(next.sql);
    await expect(insertTask(db, acme, acmeProject)).resolves.toEqual(expect.any(String));
    await expect(insertTask(db, globex, acmeProject)).rejects.toMatchObject({ constraint: 'Task_projectId_fkey' });
  });

  it('drops removed entities, referencing tables first, when drops are allowed', async () => {
    const comment: EntityDefinition = { fields: { taskId: { type: 'uuid', references: 'Task' } } };
    const v1 = schemaOf({ Project: project, Task: task, Comment: comment });
    const db = database();
    await db.exec(initSql(v1));

    const next = migrate(v1, schemaOf({ Project: project }), { allowDrop: true });
    expect(next.problems).toEqual([]);
    await db.exec(next.sql);
    const tables = await db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('Project', 'Task', 'Comment')`,
    );
    expect(tables.rows).toEqual([{ table_name: 'Project' }]);
  });
});

describe('row-level security in migrations', () => {
  const databases: PGlite[] = [];
  afterEach(async () => {
    for (const db of databases.splice(0)) await db.close();
  });
  const database = () => {
    const db = new PGlite();
    databases.push(db);
    return db;
  };
  const withRules = (rules: EntityDefinition['rules']): EntityDefinition => ({ ...project, fields: { ...project.fields, ownerId: { type: 'uuid', references: 'User', nullable: true } }, rules });

  /**
   * A database as `before` made it, with a project in it, and the plan of the next generate from
   * `schema`: its one migration, not yet run.
   */
  const upgradeFrom = async (before: DatabaseModel, schema: Schema) => {
    const db = database();
    await db.exec(diffModels({ tables: [] }, before).statements.join('\n'));
    const [organizationId] = (await db.query<{ id: string }>(`INSERT INTO "Organization" ("name", "slug") VALUES ('Acme', 'acme') RETURNING "id"`)).rows.map((row) => row.id);
    await db.query(`INSERT INTO "Project" ("organizationId", "name") VALUES ($1, 'Kept')`, [organizationId]);
    const plan = planMigrations(schema, { files: ['0001_init.sql', 'schema-snapshot.json'], snapshot: before });
    return { db, plan, migration: plan.files.find((file) => file.ownership === 'migration')! };
  };

  it('turns it on with the first migration: the role, the scope functions, grants, and the policies of every tenant table', () => {
    const sql = initSql(schemaOf({ Project: project, Task: task }));
    expect(sql).toContain('CREATE ROLE "authstrap_app" NOLOGIN NOSUPERUSER NOBYPASSRLS;');
    expect(sql).toContain('CREATE OR REPLACE FUNCTION authstrap.organization_id() RETURNS uuid');
    for (const table of ['Project', 'Task']) {
      expect(sql).toContain(`ALTER TABLE "${table}" ENABLE ROW LEVEL SECURITY;\n\nALTER TABLE "${table}" FORCE ROW LEVEL SECURITY;`);
      expect(sql).toContain(`CREATE POLICY "authstrap_select" ON "${table}" FOR SELECT USING ("organizationId" = (SELECT authstrap.organization_id()));`);
    }
    // The auth tables are the scope's own source: no row-level security on them.
    expect(sql).not.toMatch(/ALTER TABLE "(User|account|session|verification|Organization|member)" ENABLE ROW LEVEL SECURITY/);
  });

  it('turns it on for a project made before it, in a migration of its own, which PostgreSQL runs over existing rows', async () => {
    const schema = schemaOf({ Project: project, Task: task });
    // A project whose last generate knew nothing of row-level security: its tables, and its snapshot, without it.
    const { access: _access, ...model } = databaseModel(schema);
    const before = { ...model, tables: model.tables.map(({ rowSecurity: _policies, ...table }) => table) };
    const { db, plan, migration } = await upgradeFrom(before, schema);
    expect(migration.path).toBe('migrations/0002_row_level_security.sql');
    await db.exec(migration.contents);
    const { rows } = await db.query<{ relname: string; relrowsecurity: boolean; relforcerowsecurity: boolean }>(
      `SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname IN ('Project', 'Task') ORDER BY relname`,
    );
    expect(rows).toEqual([
      { relname: 'Project', relrowsecurity: true, relforcerowsecurity: true },
      { relname: 'Task', relrowsecurity: true, relforcerowsecurity: true },
    ]);
    expect((await db.query('SELECT "name" FROM "Project"')).rows).toEqual([{ name: 'Kept' }]);
    // Generating again finds nothing left to do.
    const again = planMigrations(schema, { files: ['0001_init.sql', '0002_row_level_security.sql', 'schema-snapshot.json'], snapshot: JSON.parse(plan.files.find((file) => file.path === snapshotPath)!.contents) });
    expect(again.files.map((file) => file.path)).toEqual([snapshotPath]);
  });

  it('moves a project whose policies call the scope functions per row to ones that read them once per statement, in a migration PostgreSQL runs', async () => {
    const schema = schemaOf({ Project: withRules({ create: ['owner', 'admin'], update: ['owner', { ownerId: 'caller' }] }), Task: task });
    // The policies as authstrap 0.2.0 wrote them: the bare calls.
    const perRow = (condition: string | undefined) => condition?.replace(/\(SELECT (authstrap\.\w+\(\))\)/g, '$1');
    const now = databaseModel(schema);
    const before = {
      ...now,
      tables: now.tables.map((table) =>
        table.rowSecurity ? { ...table, rowSecurity: { ...table.rowSecurity, policies: table.rowSecurity.policies.map((policy) => ({ ...policy, using: perRow(policy.using), withCheck: perRow(policy.withCheck) })) } } : table,
      ),
    };
    expect(JSON.stringify(before)).not.toContain('(SELECT authstrap.');
    const { db, migration } = await upgradeFrom(before, schema);
    await db.exec(migration.contents);
    // Every policy of every table with row-level security, made again; nothing else.
    const policies = now.tables.flatMap((table) => (table.rowSecurity?.policies ?? []).map((policy) => `${table.name}.${policy.name}`));
    expect(migration.contents.match(/^CREATE POLICY/gm)).toHaveLength(policies.length);
    expect(migration.contents).not.toMatch(/CREATE TABLE|ALTER TABLE/);
    const { rows } = await db.query<{ tablename: string; policyname: string; qual: string | null; with_check: string | null }>(
      `SELECT tablename, policyname, qual, with_check FROM pg_policies WHERE schemaname = 'public' ORDER BY tablename, policyname`,
    );
    expect(rows.map((row) => `${row.tablename}.${row.policyname}`).sort()).toEqual(policies.sort());
    // PostgreSQL keeps each call as a sub-select (an initplan): none is left bare.
    for (const row of rows) expect(`${row.qual ?? ''} ${row.with_check ?? ''}`.replace(/SELECT authstrap\.\w+\(\)/g, '')).not.toMatch(/authstrap\.(organization_id|user_id|role|maintenance)\(\)/);
    expect((await db.query('SELECT "name" FROM "Project"')).rows).toEqual([{ name: 'Kept' }]);
  });

  it('changes the policies of a rule that changed, and only those, in a migration PostgreSQL runs', async () => {
    const v1 = schemaOf({ Project: withRules({ create: ['owner', 'admin'] }) });
    const v2 = schemaOf({ Project: withRules({ create: ['owner'], update: ['owner', { ownerId: 'caller' }] }) });
    const db = database();
    await db.exec(initSql(v1));
    const next = migrate(v1, v2);
    expect(next.path).toBe('migrations/0002_alter_project.sql');
    const statements = next.sql.split('\n\n').slice(1);
    expect(statements).toEqual([
      'DROP POLICY "authstrap_insert" ON "Project";',
      'DROP POLICY "authstrap_update" ON "Project";',
      `CREATE POLICY "authstrap_insert" ON "Project" FOR INSERT WITH CHECK ("organizationId" = (SELECT authstrap.organization_id()) AND ((SELECT authstrap.role()) IN ('owner')));`,
      `CREATE POLICY "authstrap_update" ON "Project" FOR UPDATE USING ("organizationId" = (SELECT authstrap.organization_id()) AND ((SELECT authstrap.role()) IN ('owner') OR "ownerId" = (SELECT authstrap.user_id()))) WITH CHECK ("organizationId" = (SELECT authstrap.organization_id()));\n`,
    ]);
    await db.exec(next.sql);
    const { rows } = await db.query<{ policyname: string; with_check: string | null }>(`SELECT policyname, with_check FROM pg_policies WHERE tablename = 'Project' AND policyname = 'authstrap_insert'`);
    expect(rows[0]!.with_check).toContain("'owner'::text");
    expect(rows[0]!.with_check).not.toContain('admin');
  });

  it("gives a project made before the service key's idempotency keys a migration of its own, in which they are unique and the service's alone", async () => {
    const schema = schemaOf({ Project: project, Task: task });
    const now = databaseModel(schema);
    // The table and functions as the previous version wrote them: a key always had an organization.
    const callerKey = (condition: string | undefined) => condition?.replace(/^\((.*?)\) OR \("organizationId" IS NULL .*\)$/, '$1');
    const before: DatabaseModel = {
      ...now,
      access: { ...now.access!, functions: now.access!.functions.filter((fn) => !fn.definition.includes('authstrap.service()')) },
      tables: now.tables.map((table) =>
        table.name !== 'authstrap_idempotency_key'
          ? table
          : {
              ...table,
              columns: table.columns.map((column) => (column.name === 'organizationId' ? { ...column, nullable: false } : column)),
              indexes: table.indexes.filter((index) => index.where === undefined),
              rowSecurity: { policies: table.rowSecurity!.policies.map((policy) => ({ ...policy, using: callerKey(policy.using), withCheck: callerKey(policy.withCheck) })) },
            },
      ),
    };
    const { db, migration } = await upgradeFrom(before, schema);
    expect(migration.path).toBe('migrations/0002_alter_authstrap_idempotency_key.sql');
    expect(migration.contents).toContain('ALTER TABLE "authstrap_idempotency_key" ALTER COLUMN "organizationId" DROP NOT NULL;');
    expect(migration.contents).toContain('CREATE UNIQUE INDEX "authstrap_idempotency_key_service_key_idx" ON "authstrap_idempotency_key" ("caller", "key") WHERE "organizationId" IS NULL;');
    await db.exec(migration.contents);

    /** A key inserted as a request of the service key (`authstrap.service` on) or of nobody. */
    const serviceKey = async (service: boolean) => {
      await db.exec(`BEGIN; SET LOCAL ROLE authstrap_app; SELECT set_config('authstrap.service', '${service ? 'on' : ''}', true);`);
      try {
        return await db.query(`INSERT INTO "authstrap_idempotency_key" ("organizationId", "caller", "key", "fingerprint", "expiresAt") VALUES (NULL, 'service', 'k1', 'f', now() + interval '1 hour')`);
      } finally {
        await db.exec('COMMIT');
      }
    };
    await expect(serviceKey(false)).rejects.toThrow(/row-level security/);
    await expect(serviceKey(true)).resolves.toMatchObject({ affectedRows: 1 });
    // A null organization is never equal to another, but the partial index holds the key once.
    await expect(serviceKey(true)).rejects.toThrow(/authstrap_idempotency_key_service_key_idx/);
  });

  it("gives a project made before a user's and an anonymous caller's idempotency keys their policies, in which each reaches only its own", async () => {
    const schema = schemaOf({ Project: project, Task: task });
    const now = databaseModel(schema);
    // The policies as the previous version wrote them: without an organization, only the service's keys.
    const serviceOnly = (condition: string | undefined) => condition?.replace(/ OR \("organizationId" IS NULL AND "caller" = 'user:'.*$/, '');
    const before: DatabaseModel = {
      ...now,
      tables: now.tables.map((table) =>
        table.name !== 'authstrap_idempotency_key'
          ? table
          : { ...table, rowSecurity: { policies: table.rowSecurity!.policies.map((policy) => ({ ...policy, using: serviceOnly(policy.using), withCheck: serviceOnly(policy.withCheck) })) } },
      ),
    };
    const { db, migration } = await upgradeFrom(before, schema);
    expect(migration.path).toBe('migrations/0002_alter_authstrap_idempotency_key.sql');
    expect(migration.contents).toContain(`"caller" = 'anonymous'`);
    await db.exec(migration.contents);
    const [first, second] = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'];

    /** Runs `sql` as a request of `as` (a user id, 'anonymous', or nobody) and commits. */
    const asCaller = async (as: string | undefined, sql: string) => {
      const settings = as === 'anonymous' ? `set_config('authstrap.anonymous', 'on', true)` : `set_config('authstrap.user_id', '${as ?? ''}', true)`;
      await db.exec(`BEGIN; SET LOCAL ROLE authstrap_app; SELECT ${settings};`);
      try {
        return await db.query(sql);
      } finally {
        await db.exec('COMMIT');
      }
    };
    const claim = (caller: string) => `INSERT INTO "authstrap_idempotency_key" ("organizationId", "caller", "key", "fingerprint", "expiresAt") VALUES (NULL, '${caller}', 'k1', 'f', now() + interval '1 hour')`;
    const count = `SELECT count(*)::int AS "n" FROM "authstrap_idempotency_key"`;
    await expect(asCaller(first, claim(`user:${first}`))).resolves.toMatchObject({ affectedRows: 1 });
    // Another user, nobody, or an anonymous request can neither take a user's key nor see it.
    await expect(asCaller(second, claim(`user:${first}`))).rejects.toThrow(/row-level security/);
    await expect(asCaller(undefined, claim('anonymous'))).rejects.toThrow(/row-level security/);
    expect((await asCaller(second, count)).rows).toEqual([{ n: 0 }]);
    expect((await asCaller('anonymous', count)).rows).toEqual([{ n: 0 }]);
    expect((await asCaller(first, count)).rows).toEqual([{ n: 1 }]);
    await expect(asCaller('anonymous', claim('anonymous'))).resolves.toMatchObject({ affectedRows: 1 });
    expect((await asCaller(first, count)).rows).toEqual([{ n: 1 }]);
    // One partial unique index holds every key without an organization once.
    await expect(asCaller(first, claim(`user:${first}`))).rejects.toThrow(/authstrap_idempotency_key_service_key_idx/);
  });

  it("adds a field rule's trigger, which refuses a role the write, and drops it with the rule", async () => {
    const guarded = schemaOf({ Project: withRules({ fields: { status: { write: ['owner'] } } }) });
    const db = database();
    await db.exec(initSql(guarded));
    const [organizationId] = (await db.query<{ id: string }>(`INSERT INTO "Organization" ("name", "slug") VALUES ('Acme', 'acme') RETURNING "id"`)).rows.map((row) => row.id);
    await db.exec(`CREATE ROLE tester; GRANT authstrap_app TO tester;`);
    const asRole = async (role: string, sql: string) => {
      await db.exec(`BEGIN; SET LOCAL ROLE authstrap_app; SELECT set_config('authstrap.organization_id', '${organizationId}', true), set_config('authstrap.role', '${role}', true);`);
      try {
        return await db.query(sql);
      } finally {
        await db.exec('ROLLBACK');
      }
    };
    await expect(asRole('member', `INSERT INTO "Project" ("organizationId", "name") VALUES ('${organizationId}', 'Default status')`)).resolves.toMatchObject({ affectedRows: 1 });
    await expect(asRole('member', `INSERT INTO "Project" ("organizationId", "name", "status") VALUES ('${organizationId}', 'Archived', 'archived')`)).rejects.toThrow('only owners may write "Project"."status"');
    await expect(asRole('owner', `INSERT INTO "Project" ("organizationId", "name", "status") VALUES ('${organizationId}', 'Archived', 'archived')`)).resolves.toMatchObject({ affectedRows: 1 });
    const dropped = migrate(guarded, schemaOf({ Project: withRules({}) }));
    expect(dropped.sql).toContain('DROP TRIGGER IF EXISTS "authstrap_field_rules" ON "Project";');
    await db.exec(dropped.sql);
    await expect(asRole('member', `INSERT INTO "Project" ("organizationId", "name", "status") VALUES ('${organizationId}', 'Archived', 'archived')`)).resolves.toMatchObject({ affectedRows: 1 });
  });
});
