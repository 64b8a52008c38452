import { createHash } from 'node:crypto';
import type { Entity, Field, Schema } from '../schema/types.js';
import { evaluatedOnce, tenantPolicies, writeGuards } from './rules-sql.js';
import { literal, quote } from './sql-text.js';
import { eventFunctions, hasEvents, tableEvents } from './event-sql.js';
import { identityFunctions, identityTriggers } from './identity-sql.js';
import { operatorSearchStatements } from './operator-search-sql.js';
import { operatorFunctions } from './operator-sql.js';
import { systemFunctions, systemTables } from './system-tables.js';
import type { AccessModel, Column, Constraint, DatabaseModel, Index, Table } from './table-types.js';

// The model's types live in table-types.ts, below both this file and the SQL builders it uses
// (rules-sql.ts, system-tables.ts), so that they import no file that imports them.
export type { AccessModel, Column, Constraint, DatabaseModel, Index, Policy, Table, Trigger, WriteGuard } from './table-types.js';

/** Whether two indexes are the same index under possibly different names. */
export const sameIndex = (a: Index, b: Index) =>
  a.columns.join() === b.columns.join() &&
  !a.unique === !b.unique &&
  JSON.stringify(a.lowercase ?? false) === JSON.stringify(b.lowercase ?? false) &&
  a.method === b.method &&
  a.where === b.where;

export { literal, quote } from './sql-text.js';

/** PostgreSQL cuts names at 63 bytes; long ones keep a readable start and a stable hash. */
export function constraintName(table: string, columns: string[], suffix: string): string {
  const name = `${table}_${columns.join('_')}_${suffix}`;
  if (Buffer.byteLength(name) <= 63) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, 63 - hash.length - suffix.length - 2)}_${hash}_${suffix}`;
}

const sqlTypes: Record<Field['type'], string> = {
  string: 'text',
  text: 'text',
  integer: 'integer',
  number: 'double precision',
  boolean: 'boolean',
  datetime: 'timestamptz',
  uuid: 'uuid',
  enum: 'text',
  json: 'jsonb',
};

function defaultExpression(field: Field): string | undefined {
  if (field.name === 'id') return field.type === 'uuid' ? 'gen_random_uuid()' : undefined;
  if (field.name === 'createdAt' || field.name === 'updatedAt') return 'now()';
  const value = field.default;
  if (value === undefined || value === null) return undefined;
  switch (field.type) {
    case 'datetime':
      return value === 'now' ? 'now()' : `${literal(String(value))}::timestamptz`;
    case 'json':
      return `${literal(JSON.stringify(value))}::jsonb`;
    case 'uuid':
      return `${literal(String(value))}::uuid`;
    case 'boolean':
    case 'integer':
    case 'number':
      return String(value);
    default:
      return literal(String(value));
  }
}

function tableOf(entity: Entity, entities: Map<string, Entity>, referencedWithTenant: Set<string>): Table {
  const columnOf = (fieldName: string) => entity.fields.find((field) => field.name === fieldName)?.column ?? fieldName;
  const columns: Column[] = entity.fields.map((field) => ({
    name: field.column,
    type: sqlTypes[field.type],
    nullable: field.nullable,
    default: defaultExpression(field),
    ...(field.name === 'id' ? { primaryKey: true } : {}),
    ...(field.name === 'id' && field.type === 'integer' ? { identity: true } : {}),
  }));

  const constraints: Constraint[] = [];
  const dependsOn = new Set<string>();
  // In a tenant-scoped table "unique" means unique within the organization.
  const tenantPrefix = entity.tenantScoped ? ['organizationId'] : [];
  // A lowercased unique field (an e-mail address) is unique by lower(value), below: the trusted
  // server keeps the address as Better Auth sends it, the backend's own paths lowercase it.
  const caseInsensitive = (field: Field) => field.unique && field.lowercase && !entity.tenantScoped;
  const uniques = [
    ...entity.fields.filter((field) => field.unique && !caseInsensitive(field)).map((field) => [...tenantPrefix, field.column]),
    ...entity.uniqueTogether.map((fields) => fields.map(columnOf)),
  ];
  if (referencedWithTenant.has(entity.name)) uniques.push(['id', 'organizationId']);
  for (const unique of uniques) {
    constraints.push({ name: constraintName(entity.table, unique, 'key'), definition: `UNIQUE (${unique.map(quote).join(', ')})` });
  }

  for (const field of entity.fields) {
    if (field.type === 'enum' && field.values) {
      const allowed = field.values.map(literal).join(', ');
      constraints.push({ name: constraintName(entity.table, [field.column], 'check'), definition: `CHECK (${quote(field.column)} IN (${allowed}))` });
    }
    if (!field.references) continue;
    const target = entities.get(field.references.entity)!;
    dependsOn.add(target.table);
    // Between two tenant-scoped tables the key includes the organization, so a row can never
    // point at another organization's row, whatever the application code does.
    const withTenant = entity.tenantScoped && target.tenantScoped && !field.system;
    const from = withTenant ? [field.column, 'organizationId'] : [field.column];
    const to = withTenant ? ['id', 'organizationId'] : ['id'];
    // With the organization in the key, SET NULL must clear the reference column only (PostgreSQL 15+).
    const onDelete = field.references.onDelete === 'set null' && withTenant ? `SET NULL (${quote(field.column)})` : field.references.onDelete.toUpperCase();
    constraints.push({
      name: constraintName(entity.table, [field.column], 'fkey'),
      definition: `FOREIGN KEY (${from.map(quote).join(', ')}) REFERENCES ${quote(target.table)} (${to.map(quote).join(', ')}) ON DELETE ${onDelete}`,
    });
  }

  const indexes: Index[] = entity.fields
    .filter(caseInsensitive)
    .map((field) => ({ name: constraintName(entity.table, [field.column], 'lower_key'), columns: [field.column], unique: true, lowercase: true }));
  // Lists are filtered by organization and sorted by creation time (or by id, for a table without one).
  if (entity.tenantScoped) {
    const tenantIndex = ['organizationId', entity.fields.find((field) => field.name === 'createdAt')?.column ?? 'id'];
    indexes.push({ name: constraintName(entity.table, tenantIndex, 'idx'), columns: tenantIndex });
  }
  for (const fields of entity.indexes) {
    const indexColumns = fields.map(columnOf);
    indexes.push({ name: constraintName(entity.table, indexColumns, 'idx'), columns: indexColumns });
  }
  // Reference columns are indexed: nested lists filter by them and cascading deletes look them up.
  for (const field of entity.fields) {
    if (!field.references || field.system || indexes.some((index) => index.columns[0] === field.column)) continue;
    indexes.push({ name: constraintName(entity.table, [field.column], 'idx'), columns: [field.column] });
  }

  return { name: entity.table, columns, constraints, indexes, dependsOn: [...dependsOn].filter((name) => name !== entity.table).sort() };
}

/** The role the backend's requests run as (src/db/scope.ts: appRole). */
export const appRole = 'authstrap_app';

/** The functions the policies and the generated statements read the request's scope with. */
const scopeFunctions: AccessModel['functions'] = [
  ['organization_id', 'uuid', "NULLIF(current_setting('authstrap.organization_id', true), '')::uuid"],
  ['user_id', 'uuid', "NULLIF(current_setting('authstrap.user_id', true), '')::uuid"],
  ['role', 'text', "NULLIF(current_setting('authstrap.role', true), '')"],
  ['maintenance', 'boolean', "COALESCE(current_setting('authstrap.maintenance', true), '') = 'on'"],
  // The trusted server's request (the service key): its idempotency keys (src/idempotency/).
  ['service', 'boolean', "COALESCE(current_setting('authstrap.service', true), '') = 'on'"],
].map(([name, type, expression]) => ({
  name: name!,
  definition: `CREATE OR REPLACE FUNCTION authstrap.${name}() RETURNS ${type} LANGUAGE sql STABLE AS $$ SELECT ${expression} $$;`,
}));

/**
 * Whether a machine key's `permissions` (Better Auth's JSON: `{"Project":["list","read"]}`) grant
 * `operation` on `entity`. The key's statement (src/db/scope.ts, machineKeyStatement) scopes a
 * request only when this is true; JSON that does not parse grants nothing instead of failing.
 */
const keyAllows: AccessModel['functions'][number] = {
  name: 'key_allows',
  definition: `CREATE OR REPLACE FUNCTION authstrap.key_allows(permissions text, entity text, operation text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  granted jsonb;
BEGIN
  granted := permissions::jsonb -> entity;
  RETURN COALESCE(jsonb_typeof(granted) = 'array' AND granted ? operation, false);
EXCEPTION WHEN invalid_text_representation THEN
  RETURN false;
END $$;`,
};

export function databaseModel(schema: Schema): DatabaseModel {
  const entities = new Map(schema.entities.map((entity) => [entity.name, entity]));
  const referencedWithTenant = new Set<string>();
  for (const entity of schema.entities) {
    for (const field of entity.fields) {
      const target = field.references && entities.get(field.references.entity);
      if (target && entity.tenantScoped && target.tenantScoped && !field.system) referencedWithTenant.add(target.name);
    }
  }
  const entityTables = schema.entities.map((entity) => {
    const table = tableOf(entity, entities, referencedWithTenant);
    const events = hasEvents(entity, schema.auth) ? { events: tableEvents(entity) } : {};
    // Your own tenant-scoped tables; `member` is what the scope is made of, so it stays readable.
    if (!schema.auth || !entity.tenantScoped || entity.builtin) return { ...table, ...events };
    const guards = writeGuards(entity, table);
    return { ...table, rowSecurity: { policies: tenantPolicies(entity), ...(guards.length > 0 ? { writeGuards: guards } : {}) }, ...events };
  });
  if (!schema.auth) return { tables: entityTables };
  // The backend's own tables (the outbox) come with auth, whose flows write to them.
  // The event log and webhooks (event-sql.ts) come with it too.
  // The sign-in rule's triggers (identity-sql.ts) hold on `session` and `account` whoever writes them,
  // and an organization's invitations and machine keys go with it whoever deletes it.
  const withTriggers = (table: Table): Table => (identityTriggers[table.name] ? { ...table, triggers: identityTriggers[table.name] } : table);
  const tables = [...entityTables.map(withTriggers), ...systemTables].map(withPoliciesEvaluatedOnce);
  return { tables, access: { appRole, functions: [...scopeFunctions, keyAllows, ...eventFunctions, ...systemFunctions, ...identityFunctions(schema), ...operatorFunctions, ...operatorSearchStatements] } };
}

/** Every policy of a table with its scope functions read once per statement (rules-sql.ts, evaluatedOnce). */
function withPoliciesEvaluatedOnce(table: Table): Table {
  if (!table.rowSecurity) return table;
  const policies = table.rowSecurity.policies.map((policy) => ({
    ...policy,
    ...(policy.using !== undefined ? { using: evaluatedOnce(policy.using) } : {}),
    ...(policy.withCheck !== undefined ? { withCheck: evaluatedOnce(policy.withCheck) } : {}),
  }));
  return { ...table, rowSecurity: { ...table.rowSecurity, policies } };
}
