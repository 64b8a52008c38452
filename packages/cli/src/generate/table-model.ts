import { createHash } from 'node:crypto';
import type { Entity, Field, Schema } from '../schema/types.js';

/**
 * The database as the schema describes it: tables, columns and named constraints. Migrations
 * are the difference between two of these, so everything here is plain, sorted data.
 */
export interface Column {
  name: string;
  type: string;
  nullable: boolean;
  /** A SQL expression. */
  default?: string;
  primaryKey?: boolean;
}

export interface Constraint {
  name: string;
  /** The SQL after `CONSTRAINT "name"`. */
  definition: string;
}

export interface Index {
  name: string;
  columns: string[];
}

export interface Table {
  name: string;
  columns: Column[];
  constraints: Constraint[];
  indexes: Index[];
  /** Tables this one has foreign keys to (for ordering CREATE TABLE). */
  dependsOn: string[];
}

export interface DatabaseModel {
  tables: Table[];
}

export const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;
export const literal = (value: string) => `'${value.replace(/'/g, "''")}'`;

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
  if (field.name === 'id') return 'gen_random_uuid()';
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
  }));

  const constraints: Constraint[] = [];
  const dependsOn = new Set<string>();
  // In a tenant-scoped table "unique" means unique within the organization.
  const tenantPrefix = entity.tenantScoped ? ['organizationId'] : [];
  const uniques = [
    ...entity.fields.filter((field) => field.unique).map((field) => [...tenantPrefix, field.column]),
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
    constraints.push({
      name: constraintName(entity.table, [field.column], 'fkey'),
      definition:
        `FOREIGN KEY (${from.map(quote).join(', ')}) REFERENCES ${quote(target.table)} (${to.map(quote).join(', ')}) ` +
        `ON DELETE ${field.references.onDelete.toUpperCase()}`,
    });
  }

  const indexes: Index[] = [];
  if (entity.tenantScoped) indexes.push({ name: constraintName(entity.table, ['organizationId', 'createdAt'], 'idx'), columns: ['organizationId', 'createdAt'] });
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

export function databaseModel(schema: Schema): DatabaseModel {
  const entities = new Map(schema.entities.map((entity) => [entity.name, entity]));
  const referencedWithTenant = new Set<string>();
  for (const entity of schema.entities) {
    for (const field of entity.fields) {
      const target = field.references && entities.get(field.references.entity);
      if (target && entity.tenantScoped && target.tenantScoped && !field.system) referencedWithTenant.add(target.name);
    }
  }
  return { tables: schema.entities.map((entity) => tableOf(entity, entities, referencedWithTenant)) };
}
