import { roles, type Entity, type OperationRule, type Role, type RuleOperation } from '../schema/types.js';
import { literal, quote } from './sql-text.js';
import type { Policy, Table, WriteGuard } from './table-types.js';

/**
 * An entity's rules as SQL: the conditions its generated statements add (the first wall) and the
 * ones its row-level security policies hold (the second), both from the one rule. They read the
 * request's scope through the functions of the `authstrap` schema (src/db/scope.ts).
 */

/** The caller's organization, as every statement and policy of a tenant table starts. */
export const inCallersOrganization = '"organizationId" = authstrap.organization_id()';

/**
 * A policy's condition with each scope function read once per statement: `(SELECT authstrap.role())`
 * is evaluated once (an initplan), where the bare call, STABLE as it is, runs again for every row
 * the policy filters. Counting 100,000 events of an organization took 48 ms against 80 ms
 * (bench/README.md, "Row-level security's functions once per statement"). The generated
 * statements keep the bare calls: there PostgreSQL inlines them into the index condition.
 */
export const evaluatedOnce = (condition: string): string => condition.replace(/authstrap\.(organization_id|user_id|role|maintenance|service)\(\)/g, '(SELECT authstrap.$1())');

/** `authstrap.role() IN ('owner', 'admin')`; undefined for every role (no condition), FALSE for none. */
export function roleCondition(allowed: readonly Role[]): string | undefined {
  if (roles.every((role) => allowed.includes(role))) return undefined;
  if (allowed.length === 0) return 'FALSE';
  return `authstrap.role() IN (${allowed.map(literal).join(', ')})`;
}

/** A field's column, by the field's name. */
export type ColumnOf = (field: string) => string;
export const columnsOf = (entity: Entity): ColumnOf => (field) => entity.fields.find((candidate) => candidate.name === field)?.column ?? field;

/**
 * Who may do an operation, as SQL on the row (`"assigneeId"` names the row's column) or, for a
 * row being created, on its values (`valueOf` gives each field's SQL); undefined when everyone may.
 */
export function ruleCondition(rule: OperationRule, valueOf: (field: string) => string): string | undefined {
  const byRole = roleCondition(rule.roles);
  if (byRole === undefined) return undefined;
  const byRow = rule.callerFields.map((fields) => fields.map((field) => `${valueOf(field)} = authstrap.user_id()`).join(' AND '));
  const ways = [...(byRole === 'FALSE' ? [] : [byRole]), ...byRow];
  if (ways.length === 0) return 'FALSE';
  return ways.length === 1 ? ways[0]! : ways.map((way) => (way.includes(' AND ') ? `(${way})` : way)).join(' OR ');
}

/** The condition of an operation on existing rows: the caller's organization, and the rule when there is one. */
export function rowCondition(entity: Entity, operation: Exclude<RuleOperation, 'create'>): string {
  const rule = entity.rules?.operations[operation];
  const column = columnsOf(entity);
  const allowed = rule && ruleCondition(rule, (field) => quote(column(field)));
  return allowed === undefined ? inCallersOrganization : `${inCallersOrganization} AND (${allowed})`;
}

/**
 * The fields some roles may not write (or read), with the condition that the caller's role may:
 * `{ budget: "authstrap.role() IN ('owner')" }`.
 */
function fieldConditions(entity: Entity, access: 'read' | 'write'): Record<string, string> {
  const conditions: Record<string, string> = {};
  for (const rule of entity.rules?.fields ?? []) {
    const condition = roleCondition(rule[access]);
    if (condition !== undefined) conditions[rule.field] = condition;
  }
  return conditions;
}
export const fieldWriters = (entity: Entity) => fieldConditions(entity, 'write');
export const fieldReaders = (entity: Entity) => fieldConditions(entity, 'read');

/**
 * The policies of one tenant-scoped table, from its rules: each command reaches the rows of the
 * request's organization only, and only as the rules allow (SELECT: who may list or read; INSERT:
 * who may create, on the new row's values; UPDATE and DELETE: who may, on the existing row). The
 * tables' owner may reach every row in a maintenance transaction (`authstrap.maintenance` on:
 * data fixes, backfills), but only then; except on a table of an app of its own (one add-auth
 * found, `table:` in the schema), where that app, logged in as the tables' owner as before, keeps
 * reaching every row: the backend beside it acts as `authstrap_app`, which the policies hold.
 */
export function tenantPolicies(entity: Entity): Policy[] {
  const column = columnsOf(entity);
  const onRow = (field: string) => quote(column(field));
  const within = (condition: string | undefined) => (condition === undefined ? inCallersOrganization : `${inCallersOrganization} AND (${condition})`);
  const rules = entity.rules?.operations;
  const seeing = rules && [ruleCondition(rules.list, onRow), ruleCondition(rules.read, onRow)];
  // Who may list or who may read: either may see the row (the generated statements tell them apart).
  const see = !seeing || seeing.includes(undefined) ? undefined : seeing[0] === seeing[1] ? seeing[0] : `(${seeing[0]}) OR (${seeing[1]})`;
  return [
    { name: 'authstrap_select', command: 'SELECT', using: within(see) },
    { name: 'authstrap_insert', command: 'INSERT', withCheck: within(rules && ruleCondition(rules.create, onRow)) },
    // The organization of a row never changes; who may change it is decided on the row as it was.
    { name: 'authstrap_update', command: 'UPDATE', using: within(rules && ruleCondition(rules.update, onRow)), withCheck: inCallersOrganization },
    { name: 'authstrap_delete', command: 'DELETE', using: within(rules && ruleCondition(rules.delete, onRow)) },
    entity.existingTable
      ? { name: 'authstrap_existing_app', command: 'ALL', to: 'CURRENT_USER', using: 'true', withCheck: 'true' }
      : { name: 'authstrap_maintenance', command: 'ALL', to: 'CURRENT_USER', using: 'authstrap.maintenance()', withCheck: 'authstrap.maintenance()' },
  ];
}

/** The columns of an entity's field rules that some roles may not write (checked by a trigger). */
export function writeGuards(entity: Entity, table: Table): WriteGuard[] {
  const column = columnsOf(entity);
  return (entity.rules?.fields ?? [])
    .filter((rule) => roleCondition(rule.write) !== undefined)
    .map((rule) => {
      const name = column(rule.field);
      return { column: name, roles: [...rule.write], insertDefault: table.columns.find((candidate) => candidate.name === name)?.default ?? 'NULL' };
    });
}
