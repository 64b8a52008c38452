import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl } from './support/check-cycle.js';
import { runCli } from './support/cli.js';
import { createResources, query, runCliAsync } from './support/example-copies.js';
import { addToOrganization, client, prepareScopedCopy, signUp, type Person } from './support/scoped-copies.js';

/**
 * The second wall: PostgreSQL's row-level security, generated from the schema, holds whatever the
 * application code does. A route of the user's own (src/extensions) that forgets the organization
 * filter still answers only the caller's organization's rows, and the same route with row-level
 * security switched off answers every organization's (so the test can fail); a statement with no
 * scope at all sees and writes nothing.
 */

const schema = fs.readFileSync(new URL('../../../examples/saas-backend/authstrap.schema.ts', import.meta.url), 'utf8');

describe.each(['postgres', 'embedded'] as const)('row-level security, %s database', (kind) => {
  const resources = createResources({ adminUrl, name: 'rls', backendEnv: { REQUIRE_EMAIL_VERIFICATION: 'false' } });
  let url: string;
  let databaseUrl: string;
  let serviceApiKey: string;
  let alice: Person;
  let bob: Person;
  const trusted = () => client(url, serviceApiKey);

  beforeAll(async () => {
    if (kind === 'postgres' && !adminUrl) return;
    const dir = resources.copyOfExample('ALLOWED_ORIGINS=http://localhost:5173\n');
    prepareScopedCopy(dir, schema);
    ({ url, databaseUrl, serviceApiKey } = await resources.startBackend(dir, kind === 'embedded' ? 'embedded' : undefined));
    alice = await signUp(url, 'alice@example.com');
    bob = await signUp(url, 'bob@example.com');
    await client(url, alice.token, alice.organizationId)('POST', '/Projects', { name: 'Alice plans' });
    await client(url, bob.token, bob.organizationId)('POST', '/Projects', { name: 'Bob plans' });
  }, 120_000);
  afterAll(() => resources.cleanup());

  // First: the test after it switches row-level security off on Project.
  it.runIf(adminUrl && kind === 'postgres')('leaves psql as the backend\'s role, with no settings, no tenant row to see or write', async () => {
    const psql = (...commands: string[]) =>
      spawnSync('psql', [databaseUrl, '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-c', 'SET ROLE authstrap_app', ...commands.flatMap((command) => ['-c', command])], { encoding: 'utf8' });
    const task = psql('SELECT count(*) FROM "Task"');
    expect(task.status, task.stderr).toBe(0);
    expect(task.stdout.trim().split('\n').at(-1)).toBe('0');
    expect(psql(`UPDATE "Task" SET "title" = 'x'`).stdout).toContain('UPDATE 0');
    expect(psql('DELETE FROM "Task"').stdout).toContain('DELETE 0');
    const insert = psql(`INSERT INTO "Task" ("organizationId", "projectId", "title") SELECT "organizationId", "id", 'planted' FROM "Project" LIMIT 1`);
    // It cannot even find a project to point at: nothing to insert, and a forged one is refused.
    expect(insert.stdout, insert.stderr).toContain('INSERT 0 0');
    const forged = psql(`INSERT INTO "Task" ("organizationId", "projectId", "title") VALUES ('${alice.organizationId}', gen_random_uuid(), 'planted')`);
    expect(forged.status).not.toBe(0);
    expect(forged.stderr).toContain('new row violates row-level security policy');
    // And it cannot switch the wall off: it owns no table and bypasses nothing.
    expect(psql('ALTER TABLE "Task" DISABLE ROW LEVEL SECURITY').stderr).toContain('must be owner of table Task');
    const [role] = await query<{ rolsuper: boolean; rolbypassrls: boolean }>(databaseUrl, `SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = 'authstrap_app'`);
    expect(role).toEqual({ rolsuper: false, rolbypassrls: false });
    expect((await query(databaseUrl, 'SELECT count(*)::int AS n FROM "Task"'))[0]).toEqual({ n: 0 });
  });

  it.runIf(kind === 'embedded' || adminUrl)("keeps a hand-written route without an organization filter to the caller's organization, and no further once switched off", async () => {
    const report = (person: Person) => client(url, person.token, person.organizationId)('GET', '/reports/projects');
    expect((await report(alice)).body).toEqual({ names: ['Alice plans'] });
    expect((await report(bob)).body).toEqual({ names: ['Bob plans'] });
    // Not a member: the scope stays empty, and the route is refused before it reads anything.
    expect((await client(url, alice.token, bob.organizationId)('GET', '/reports/projects')).status).toBe(403);

    // A statement with no scope (a script, a route that does not go through asCaller) sees no tenant rows and writes none.
    expect((await trusted()('GET', '/raw/Project')).body).toEqual({ rows: [] });
    const writes = (await trusted()('POST', '/raw/Project/write', { organizationId: alice.organizationId })).body;
    expect(writes).toEqual({ insert: { error: '42501' }, update: { rowCount: 0 }, delete: { rowCount: 0 } });
    expect((await trusted()('GET', '/test/rows/Project')).body.rows.map((row: { name: string }) => row.name).sort()).toEqual(['Alice plans', 'Bob plans']);

    // The same route with row-level security off: every organization's rows. Only the policies kept them apart.
    expect((await trusted()('POST', '/test/row-security/Project/off')).status).toBe(200);
    expect((await report(alice)).body).toEqual({ names: ['Alice plans', 'Bob plans'] });
  });
});

/** `generate --check` compares the database's policies with the schema's; `fix` puts them back. */
describe.each(['postgres', 'embedded'] as const)('policies edited in the database by hand, %s database', (kind) => {
  const resources = createResources({ adminUrl, name: 'rlscheck' });
  let dir: string;
  let editPolicy: (sql: string) => Promise<void>;

  beforeAll(async () => {
    if (kind === 'postgres' && !adminUrl) return;
    if (kind === 'postgres') {
      const databaseUrl = await resources.createDatabase();
      dir = resources.copyOfExample(`ALLOWED_ORIGINS=http://localhost:5173\nDATABASE_URL=${databaseUrl}\n`);
      const backend = await resources.startBackend(dir, databaseUrl);
      await backend.stop();
      editPolicy = async (sql) => void (await query(databaseUrl, sql));
    } else {
      // On disk, so that the CLI (and this test) can open the folder once the backend has stopped.
      dir = resources.copyOfExample('ALLOWED_ORIGINS=http://localhost:5173\nEMBEDDED_DB_DIR=.data/pglite\n');
      const backend = await resources.startBackend(dir, 'embedded');
      await backend.stop();
      editPolicy = async (sql) => {
        const db = await PGlite.create(path.join(dir, '.data/pglite'));
        await db.exec(sql);
        await db.close();
      };
    }
  }, 120_000);
  afterAll(() => resources.cleanup());

  it.runIf(kind === 'embedded' || adminUrl)('fails generate --check naming the policy, until fix puts it back', async () => {
    const clean = runCli(['generate', '--check'], dir);
    expect(clean.status, clean.output).toBe(0);
    await editPolicy(`ALTER POLICY "authstrap_select" ON "Project" USING (true)`);
    const drifted = runCli(['generate', '--check', '--json'], dir);
    expect(drifted.status, drifted.output).toBe(1);
    expect(JSON.parse(drifted.stdout)).toMatchObject({ ok: false, upToDate: true, database: { ok: false, message: "Project: policy authstrap_select is not the schema's (edited by hand?)" } });
    const fixed = await runCliAsync(['fix'], dir);
    expect(fixed.status, fixed.output).toBe(0);
    expect(runCli(['generate', '--check'], dir).status).toBe(0);
  });
});

/**
 * After a schema change or an upgrade, the new migration replaces policies only when the backend
 * starts: until then `generate --check` names that migration and the step that applies it, rather
 * than sending the user to `fix` for policies nobody edited.
 */
describe.each(['postgres', 'embedded'] as const)('a migration not applied yet, %s database', (kind) => {
  const resources = createResources({ adminUrl, name: 'rlspending' });
  let dir: string;
  let database: string;

  beforeAll(async () => {
    if (kind === 'postgres' && !adminUrl) return;
    database = kind === 'postgres' ? await resources.createDatabase() : 'embedded';
    dir = resources.copyOfExample(`ALLOWED_ORIGINS=http://localhost:5173\n${kind === 'postgres' ? `DATABASE_URL=${database}` : 'EMBEDDED_DB_DIR=.data/pglite'}\n`);
    await (await resources.startBackend(dir, database)).stop();
    // Only owners may delete a project now: the policy authstrap_delete changes.
    const schemaFile = path.join(dir, 'authstrap.schema.ts');
    const projectEnd = "      },\n    },\n    // Also reachable as /Projects/:projectId/Tasks.";
    const source = fs.readFileSync(schemaFile, 'utf8');
    expect(source).toContain(projectEnd);
    fs.writeFileSync(schemaFile, source.replace(projectEnd, `      },\n      rules: { delete: ['owner'] },\n    },\n    // Also reachable as /Projects/:projectId/Tasks.`));
    const generated = runCli(['generate'], dir);
    expect(generated.status, generated.output).toBe(0);
  }, 120_000);
  afterAll(() => resources.cleanup());

  it.runIf(kind === 'embedded' || adminUrl)('fails generate --check naming the pending migration, and passes once the backend has applied it', async () => {
    const migration = fs.readdirSync(path.join(dir, 'migrations')).filter((name) => name.endsWith('.sql')).at(-1);
    expect(migration).toMatch(/^0002_/);
    const pending = `1 migration not applied yet (migrations/${migration}): start the backend (it applies migrations as it starts), then check again`;
    const json = runCli(['generate', '--check', '--json'], dir);
    expect(json.status, json.output).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, upToDate: true, database: { ok: false, message: pending } });
    const text = runCli(['generate', '--check'], dir);
    expect(text.status).toBe(1);
    expect(text.stderr).toContain(`The database's row-level security is not the schema's yet: ${pending}.`);
    expect(text.output).not.toContain('authstrap fix');

    await (await resources.startBackend(dir, database)).stop();
    const applied = runCli(['generate', '--check'], dir);
    expect(applied.status, applied.output).toBe(0);
  });
});
