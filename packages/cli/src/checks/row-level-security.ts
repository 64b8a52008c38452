import { guardFunctionName, policySql, writeGuardStatements } from '../generate/migration.js';
import { databaseModel, quote, type Policy, type Table } from '../generate/table-model.js';
import type { Schema } from '../schema/types.js';
import { securedTables, type LivePolicy, type LiveRowSecurity } from '../verify/row-security.js';
import { fail, pass, plural, skip, warn, type Check, type Finding } from './check.js';
import { databaseUnchecked } from './database-unchecked.js';
import { pendingMigrationsNote } from '../generate/check-causes.js';

/**
 * The second wall between tenants: every tenant table of the schema's own has row-level security
 * enabled and forced, with exactly the policies (and field-rule trigger) its rules give it, and
 * the role the backend's requests run as (`authstrap_app`) can bypass none of it: not a
 * superuser, no BYPASSRLS, owner of no table. A table that lost its policies, got one of
 * someone's own that lets more rows through, or had row-level security switched off, is repaired
 * by putting back what the schema says. `authstrap generate --check` asks the same question.
 */

/**
 * A live policy is the schema's: the same command and expressions, for the same roles; a policy
 * for the migrating user (the tables' owner) may name another user than the one who checks, but
 * one user only, never everyone (`public`) or the role requests run as.
 */
const isTheSchemas = (live: LivePolicy, wanted: LivePolicy, ownersOnly: boolean, appRole: string) =>
  live.command === wanted.command &&
  live.permissive === wanted.permissive &&
  live.using === wanted.using &&
  live.withCheck === wanted.withCheck &&
  (ownersOnly ? live.roles.length === 1 && live.roles[0] !== 'public' && live.roles[0] !== appRole : live.roles.join() === wanted.roles.join());

/** What is wrong with one table's row-level security, and the SQL that puts it back. */
function tableProblems(live: LiveRowSecurity['tables'][number], table: Table, appRole: string): { problems: string[]; sql: string[] } {
  const problems: string[] = [];
  const name = quote(table.name);
  if (!live.enabled) problems.push(`${table.name}: row-level security is off`);
  else if (!live.forced) problems.push(`${table.name}: row-level security is not forced (its owner is not held to it)`);
  const expected = table.rowSecurity!.policies;
  let policiesWrong = false;
  for (const policy of expected) {
    const found = live.policies.find((candidate) => candidate.name === policy.name);
    const wanted = live.expected.find((candidate) => candidate.name === policy.name);
    if (!found) {
      problems.push(`${table.name}: policy ${policy.name} is missing`);
      policiesWrong = true;
    } else if (wanted && !isTheSchemas(found, wanted, policy.to === 'CURRENT_USER', appRole)) {
      problems.push(`${table.name}: policy ${policy.name} is not the schema's (edited by hand?)`);
      policiesWrong = true;
    }
  }
  // A permissive policy of someone's own is OR-ed with ours: it lets rows through that ours keep out.
  const extra = live.policies.filter((policy) => !expected.some((candidate) => candidate.name === policy.name));
  for (const policy of extra.filter((candidate) => candidate.permissive)) problems.push(`${table.name}: policy ${policy.name} is not the schema's and lets more rows through (permissive)`);
  const guards = table.rowSecurity!.writeGuards ?? [];
  const guardWanted = guards.length > 0 ? writeGuardStatements(table.name, guards) : [];
  const guardWrong = guards.length > 0 ? !live.guard.triggered || !guardWanted[0]!.includes(`$$${live.guard.source}$$`) : live.guard.triggered;
  if (guardWrong) problems.push(guards.length > 0 ? `${table.name}: the trigger of its field rules is missing or changed` : `${table.name}: a field-rule trigger the schema no longer has`);

  const sql: string[] = [];
  if (!live.enabled || !live.forced) sql.push(`ALTER TABLE ${name} ENABLE ROW LEVEL SECURITY`, `ALTER TABLE ${name} FORCE ROW LEVEL SECURITY`);
  for (const policy of extra.filter((candidate) => candidate.permissive)) sql.push(`DROP POLICY ${quote(policy.name)} ON ${name}`);
  if (policiesWrong) {
    for (const policy of expected) sql.push(`DROP POLICY IF EXISTS ${quote(policy.name)} ON ${name}`, policySql(table.name, policy).replace(/;$/, ''));
  }
  if (guardWrong) sql.push(...(guards.length > 0 ? guardWanted : [`DROP TRIGGER IF EXISTS "authstrap_field_rules" ON ${name}`]).map((statement) => statement.replace(/;$/, '')));
  return { problems, sql };
}

export const rowLevelSecurity: Check = {
  id: 'row-level-security',
  title: 'Row-level security holds on every tenant table',
  examine(project) {
    const unchecked = databaseUnchecked(project);
    if (unchecked) return unchecked;
    const live = project.database!.rowSecurity;
    if (!live) return skip('not checked: the schema has no auth, so no tenant tables');
    const finding = examineRowSecurity(project.schema!, live);
    // A migration not run yet brings the schema's policies: a difference is put down to it, and
    // nothing is repaired now (the migration would drop and make them again anyway).
    const pending = finding.status === 'fail' ? pendingMigrationsNote(project.database!.migrations.files, project.database!.migrations.applied) : undefined;
    return pending === undefined ? finding : { ...fail(`not the schema's yet: ${pending}`), fix: 'start the backend once, so that it applies its migrations; then run this again' };
  },
};

/** The verdict on what readRowSecurity found, against what `schema` gives (pure; `generate --check` asks it too). */
export function examineRowSecurity(schema: Schema, live: LiveRowSecurity): Finding {
  const problems: string[] = [];
  const sql: string[] = [];
  const appRole = databaseModel(schema).access!.appRole;
  if (!live.role.exists) problems.push(`the role ${appRole} does not exist (start the backend once: its migrations make it)`);
  if (live.role.superuser || live.role.bypassRls) {
    problems.push(`${appRole} bypasses row-level security (${live.role.superuser ? 'a superuser' : 'BYPASSRLS'})`);
    sql.push(`ALTER ROLE ${quote(appRole)} NOSUPERUSER NOBYPASSRLS`);
  }
  for (const table of securedTables(schema)) {
    if (live.role.owns.includes(table.name)) {
      problems.push(`${appRole} owns ${table.name}, so it could switch row-level security off`);
      sql.push(`ALTER TABLE ${quote(table.name)} OWNER TO CURRENT_USER`);
    }
    const liveTable = live.tables.find((candidate) => candidate.table === table.name);
    if (!liveTable?.exists) continue;
    const found = tableProblems(liveTable, table, appRole);
    problems.push(...found.problems);
    sql.push(...found.sql);
  }
  const tables = live.tables.filter((table) => table.exists).length;
  const missing = live.tables.filter((table) => !table.exists).map((table) => table.table);
  // A table the migrations have not made yet gets its policies with it when they run.
  const notYet = missing.length > 0 ? ` (${missing.join(', ')}: not created yet; the migration that makes ${missing.length === 1 ? 'it' : 'them'} brings the policies)` : '';
  if (problems.length === 0) {
    if (live.note) return warn(`enabled and forced on ${plural(tables, 'tenant table')}${notYet}; ${live.note}`);
    return pass(`enabled and forced on ${plural(tables, 'tenant table')}, with the schema's policies${notYet}; ${appRole} bypasses none of it`);
  }
  const message = problems.join('; ');
  if (sql.length === 0) return fail(message);
  return { ...fail(message), repair: { summary: `put back row-level security as the schema has it (${plural(sql.length, 'statement')})`, files: [], sql } };
}
