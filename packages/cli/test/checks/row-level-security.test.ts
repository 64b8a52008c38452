import { describe, expect, it } from 'vitest';
import { rowLevelSecurity } from '../../src/checks/row-level-security.js';
import type { LiveRowSecurity } from '../../src/verify/row-security.js';
import type { ProjectSnapshot } from '../../src/checks/project-snapshot.js';
import { validateSchema } from '../../src/schema/validate.js';
import { describeRepairCycle } from '../support/check-cycle.js';
import { query } from '../support/example-copies.js';

/** Row-level security as pg_class and pg_policies have it, for the tenant tables of the example. */
const rowSecurityOf = (databaseUrl: string) =>
  query<{ table: string; enabled: boolean; forced: boolean; policies: string[] }>(
    databaseUrl,
    `SELECT c.relname AS "table", c.relrowsecurity AS "enabled", c.relforcerowsecurity AS "forced",
            coalesce(array_agg(p.policyname || ': ' || coalesce(p.qual, '') || ' / ' || coalesce(p.with_check, '') ORDER BY p.policyname) FILTER (WHERE p.policyname IS NOT NULL), '{}') AS "policies"
       FROM pg_class c LEFT JOIN pg_policies p ON p.tablename = c.relname AND p.schemaname = 'public'
      WHERE c.relname IN ('Project', 'Task') AND c.relnamespace = 'public'::regnamespace
      GROUP BY c.relname, c.relrowsecurity, c.relforcerowsecurity ORDER BY c.relname`,
  );

const switchedOff = 'row-level security switched off on Project and a policy of it dropped';
const openedUp = "a permissive policy of someone's own on Task, and one of authstrap's edited by hand";

const { stage } = describeRepairCycle('row-level-security', [
  {
    name: switchedOff,
    planShows: ['ALTER TABLE "Project" ENABLE ROW LEVEL SECURITY;', 'CREATE POLICY "authstrap_select" ON "Project" FOR SELECT USING ("organizationId" = (SELECT authstrap.organization_id()));'],
    async breakData(backend) {
      await query(backend.databaseUrl, 'ALTER TABLE "Project" NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY');
      await query(backend.databaseUrl, 'DROP POLICY "authstrap_select" ON "Project"');
    },
    rows: (backend) => rowSecurityOf(backend.databaseUrl),
  },
  {
    name: openedUp,
    planShows: ['DROP POLICY "everyone" ON "Task";', 'DROP POLICY IF EXISTS "authstrap_update" ON "Task";'],
    async breakData(backend) {
      await query(backend.databaseUrl, 'CREATE POLICY "everyone" ON "Task" USING (true)');
      await query(backend.databaseUrl, 'ALTER POLICY "authstrap_update" ON "Task" USING (true)');
    },
    rows: (backend) => rowSecurityOf(backend.databaseUrl),
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('row-level-security: the repairs', () => {
  it('put back exactly what a fresh database has', () => {
    for (const name of [switchedOff, openedUp]) {
      const after = stage(name, 'rowsAfterFirst') as Awaited<ReturnType<typeof rowSecurityOf>>;
      expect(after.map((table) => [table.table, table.enabled, table.forced, table.policies.length])).toEqual([
        ['Project', true, true, 5],
        ['Task', true, true, 5],
      ]);
    }
    expect((stage(openedUp, 'rowsAfterFirst') as { policies: string[] }[])[1]!.policies.join()).not.toContain('everyone');
  });

  it('names the table and what is wrong with it', () => {
    const message = (name: string) => stage(name, 'dryRunJson').report.checks.find((check) => check.id === 'row-level-security')!.message;
    expect(message(switchedOff)).toBe('Project: row-level security is off; Project: policy authstrap_select is missing');
    expect(message(openedUp)).toBe(
      "Task: policy authstrap_update is not the schema's (edited by hand?); Task: policy everyone is not the schema's and lets more rows through (permissive)",
    );
  });
});

describe('row-level-security: the role requests run as', () => {
  const schema = validateSchema({ entities: { Project: { fields: { name: { type: 'string' } } } } });
  const healthyTable = (table: string): LiveRowSecurity['tables'][number] => ({ table, exists: true, enabled: true, forced: true, policies: [], expected: [], guard: { source: null, triggered: false } });
  const snapshot = (rowSecurity: LiveRowSecurity, migrations = { files: ['0001_init.sql'], applied: ['0001_init.sql'] }): ProjectSnapshot =>
    ({ dir: '.', env: {}, files: {}, frontends: [], adapterPackages: [], schema, database: { wrongProviderAccounts: 0, columns: [], rowSecurity, migrations } }) as ProjectSnapshot;
  const role = { exists: true, superuser: false, bypassRls: false, owns: [] as string[] };
  const examine = (rowSecurity: LiveRowSecurity) => rowLevelSecurity.examine!(snapshot(rowSecurity), {});

  it('fails when it could bypass row-level security, and repairs what can be', () => {
    const bypassing = examine({ role: { ...role, bypassRls: true }, tables: [healthyTable('Project')] });
    expect(bypassing.status).toBe('fail');
    expect(bypassing.message).toContain('authstrap_app bypasses row-level security (BYPASSRLS)');
    expect(bypassing.repair?.sql).toContain('ALTER ROLE "authstrap_app" NOSUPERUSER NOBYPASSRLS');
    const owning = examine({ role: { ...role, owns: ['Project'] }, tables: [healthyTable('Project')] });
    expect(owning.message).toContain('authstrap_app owns Project, so it could switch row-level security off');
    expect(owning.repair?.sql).toContain('ALTER TABLE "Project" OWNER TO CURRENT_USER');
    // A missing role is the migrations' to make (they run at the backend's start), not fix's.
    const missing = examine({ role: { ...role, exists: false }, tables: [] });
    expect(missing).toMatchObject({ status: 'fail', message: 'the role authstrap_app does not exist (start the backend once: its migrations make it)' });
    expect(missing.repair).toBeUndefined();
  });

  it('puts a difference down to a migration not applied yet, and repairs nothing then', () => {
    const bypassing = { role: { ...role, bypassRls: true }, tables: [healthyTable('Project')] };
    const pending = rowLevelSecurity.examine!(snapshot(bypassing, { files: ['0001_init.sql', '0002_alter_project.sql'], applied: ['0001_init.sql'] }), {});
    expect(pending).toMatchObject({
      status: 'fail',
      message: "not the schema's yet: 1 migration not applied yet (migrations/0002_alter_project.sql): start the backend (it applies migrations as it starts), then check again",
    });
    expect(pending.repair).toBeUndefined();
    // Every migration run: the difference is the database's own, and fix puts it back.
    expect(examine(bypassing).repair?.sql).toContain('ALTER ROLE "authstrap_app" NOSUPERUSER NOBYPASSRLS');
  });

  it('says when the database was not looked at, never passing for it', () => {
    const result = rowLevelSecurity.examine!({ ...snapshot({ role, tables: [] }), database: undefined, databaseNote: 'held by another process' }, {});
    expect(result).toMatchObject({ status: 'skip', message: 'database not checked: held by another process' });
  });
});
