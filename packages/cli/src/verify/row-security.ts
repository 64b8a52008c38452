import { guardFunctionName, policySql } from '../generate/migration.js';
import { databaseModel, type Table } from '../generate/table-model.js';
import type { Schema } from '../schema/types.js';
import type { DatabaseProbe } from './database.js';

/**
 * What a database holds of row-level security, read for the row-level-security check (in
 * `fix` and `verify`) and for `generate --check`. A reader only: the judging is the check's
 * (checks/row-level-security.ts), so that the project snapshot can read it without importing the
 * checks.
 */

/** A policy as PostgreSQL keeps it (pg_policies): its expressions in PostgreSQL's own words. */
export interface LivePolicy {
  name: string;
  command: string;
  permissive: boolean;
  roles: string[];
  using: string | null;
  withCheck: string | null;
}

export interface LiveRowSecurity {
  role: { exists: boolean; superuser: boolean; bypassRls: boolean; owns: string[] };
  tables: {
    table: string;
    /** False for a table the migrations have not made yet (the tables check's concern). */
    exists: boolean;
    enabled: boolean;
    forced: boolean;
    policies: LivePolicy[];
    /** The schema's policies for it as PostgreSQL writes them back (made, read and rolled back). */
    expected: LivePolicy[];
    /** The body of its field-rule trigger function, and whether the trigger is there. */
    guard: { source: string | null; triggered: boolean };
  }[];
  /** Why the expected policies could not be worked out (the user may not create policies). */
  note?: string;
}

/** The tenant tables of the schema's own: the ones the schema gives row-level security. */
export const securedTables = (schema: Schema): Table[] => databaseModel(schema).tables.filter((table) => table.rowSecurity);

const livePolicies = (db: DatabaseProbe, tables: string[], prefix = '') =>
  db.query<LivePolicy & { table: string }>(
    `SELECT tablename AS "table", policyname AS "name", cmd AS "command", permissive = 'PERMISSIVE' AS "permissive", roles::text[] AS "roles", qual AS "using", with_check AS "withCheck"
       FROM pg_policies WHERE schemaname = current_schema() AND tablename = ANY($1::text[]) AND policyname LIKE $2 ORDER BY tablename, policyname`,
    [tables, `${prefix}%`],
  );

/**
 * What the database holds of row-level security, and the schema's policies as PostgreSQL would
 * write them: made under other names in a transaction that is rolled back (so two spellings of the
 * same condition compare equal), with a short lock timeout, since making a policy locks its table.
 */
export async function readRowSecurity(db: DatabaseProbe, schema: Schema): Promise<LiveRowSecurity | undefined> {
  const model = databaseModel(schema);
  if (!model.access) return undefined;
  const secured = securedTables(schema);
  const names = secured.map((table) => table.name);
  const [role] = await db.query<{ exists: boolean; superuser: boolean; bypassRls: boolean; owns: string[] }>(
    `SELECT r.oid IS NOT NULL AS "exists", coalesce(r.rolsuper, false) AS "superuser", coalesce(r.rolbypassrls, false) AS "bypassRls",
            coalesce((SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_class c WHERE c.relowner = r.oid AND c.relkind = 'r' AND c.relnamespace = to_regnamespace(current_schema())), '{}') AS "owns"
       FROM (SELECT $1::name AS name) wanted LEFT JOIN pg_roles r ON r.rolname = wanted.name`,
    [model.access.appRole],
  );
  const flags = await db.query<{ table: string; enabled: boolean; forced: boolean }>(
    `SELECT relname AS "table", relrowsecurity AS "enabled", relforcerowsecurity AS "forced" FROM pg_class
      WHERE relnamespace = to_regnamespace(current_schema()) AND relkind = 'r' AND relname = ANY($1::text[])`,
    [names],
  );
  const policies = await livePolicies(db, names);
  const guards = await db.query<{ table: string; source: string | null; triggered: boolean }>(
    `SELECT t.name AS "table", p.prosrc AS "source",
            EXISTS (SELECT FROM pg_trigger g WHERE g.tgname = 'authstrap_field_rules' AND g.tgrelid = to_regclass(quote_ident(t.name)) AND g.tgfoid = p.oid) AS "triggered"
       FROM unnest($1::text[], $2::text[]) AS t(name, function) LEFT JOIN pg_proc p ON p.oid = to_regprocedure(t.function || '()')`,
    [names, names.map(guardFunctionName)],
  );

  const expected: (LivePolicy & { table: string })[] = [];
  let note: string | undefined;
  try {
    await db.query('BEGIN');
    await db.query(`SET LOCAL lock_timeout = '2s'`);
    const present = new Set(flags.map((flag) => flag.table));
    for (const table of secured.filter((candidate) => present.has(candidate.name))) {
      for (const policy of table.rowSecurity!.policies) await db.query(policySql(table.name, { ...policy, name: `authstrap_expected_${policy.name}` }));
    }
    expected.push(...(await livePolicies(db, names, 'authstrap\\_expected\\_')).map((policy) => ({ ...policy, name: policy.name.slice('authstrap_expected_'.length) })));
  } catch (error) {
    note = `the policies the schema gives could not be compared: ${(error as Error).message}`;
  } finally {
    await db.query('ROLLBACK').catch(() => {});
  }

  return {
    role: role ?? { exists: false, superuser: false, bypassRls: false, owns: [] },
    tables: secured.map((table) => {
      const flag = flags.find((candidate) => candidate.table === table.name);
      const guard = guards.find((candidate) => candidate.table === table.name);
      const strip = ({ table: _table, ...policy }: LivePolicy & { table: string }) => policy;
      return {
        table: table.name,
        exists: flag !== undefined,
        enabled: flag?.enabled ?? false,
        forced: flag?.forced ?? false,
        policies: policies.filter((policy) => policy.table === table.name).map(strip),
        expected: expected.filter((policy) => policy.table === table.name).map(strip),
        guard: { source: guard?.source ?? null, triggered: guard?.triggered ?? false },
      };
    }),
    ...(note ? { note } : {}),
  };
}
