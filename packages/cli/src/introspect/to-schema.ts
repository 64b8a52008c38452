import { systemTables } from '../generate/system-tables.js';
import type { DatabaseModel } from '../generate/table-model.js';
import { builtinEntityNames } from '../schema/builtin.js';
import { camelCase, pascalCase } from '../schema/naming.js';
import type { EntityDefinition, FieldDefinition, FieldType, LiteralValue, OnDeleteAction } from '../schema/types.js';
import { reservedEntityNames } from '../schema/validate.js';
import type { Catalog, CatalogColumn, CatalogConstraint, CatalogTable } from './catalog.js';

/**
 * An existing database as an authstrap schema (`authstrap add-auth` on a database without
 * `authstrap.schema.ts`): one entity per table, mapped to that table and its columns, so that no
 * table or column is renamed. Tables that cannot be an entity (no single-column `id` key, a
 * required column of a type authstrap has no field type for) are left out, with the reason.
 * Pure: catalog in, schema text and notes out.
 */

export interface IntrospectedSchema {
  /** Entity name -> definition, in table-name order. */
  entities: [string, EntityDefinition][];
  /** Tables left out and columns not mapped, each with why. */
  notes: string[];
}

/** Tables the tool itself manages; finding one means the database is authstrap's already. */
export const authstrapTables = ['authstrap_migrations', ...systemTables.map((table) => table.name), ...builtinEntityNames];

const integerTypes = new Set(['int2', 'int4', 'int8']);
const fieldTypeOf: Record<string, FieldType> = {
  int2: 'integer', int4: 'integer', int8: 'integer',
  float4: 'number', float8: 'number', numeric: 'number',
  text: 'string', varchar: 'string', bpchar: 'string', citext: 'string', name: 'string',
  bool: 'boolean',
  timestamptz: 'datetime', timestamp: 'datetime', date: 'datetime',
  uuid: 'uuid',
  json: 'json', jsonb: 'json',
};
const timestampColumns = { createdAt: ['createdAt', 'created_at', 'inserted_at'], updatedAt: ['updatedAt', 'updated_at', 'modified_at'] } as const;
const systemFieldNames = new Set(['id', 'createdAt', 'updatedAt', 'organizationId']);
const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `users` -> `User`, `workshop_sessions` -> `WorkshopSession`, `addresses` -> `Address`, `status` stays. */
export function entityNameFor(table: string): string {
  const singular = table
    .replace(/ies$/i, 'y')
    .replace(/(ss|x|z|ch|sh)es$/i, '$1')
    .replace(/([^su])s$/i, '$1');
  const name = pascalCase(singular).replace(/[^A-Za-z0-9]/g, '');
  const safe = /^[A-Za-z]/.test(name) ? name : `Table${name}`;
  return reservedEntityNames.has(safe.toLowerCase()) ? `${safe}Record` : safe;
}

/** The single-column primary key named `id`, of a type an entity id can have; or why not. */
function keyOf(table: CatalogTable): { idType: 'uuid' | 'integer' } | { reason: string } {
  const primary = table.constraints.find((constraint) => constraint.kind === 'p');
  if (!primary) return { reason: 'it has no primary key' };
  if (primary.columns.length !== 1) return { reason: `its primary key has ${primary.columns.length} columns (${primary.columns.join(', ')}); an entity needs one "id" column` };
  const column = table.columns.find((candidate) => candidate.name === primary.columns[0])!;
  if (column.name !== 'id') return { reason: `its primary key is "${column.name}"; an entity's key column must be named "id"` };
  if (column.type === 'uuid') return { idType: 'uuid' };
  if (integerTypes.has(column.type)) return { idType: 'integer' };
  return { reason: `its "id" is of type ${column.type}; an entity id is a uuid or an integer` };
}

/** A column default as a schema literal, when it is one (`'open'::text`, `0`, `true`, `now()`). */
function literalDefault(column: CatalogColumn, type: FieldType): LiteralValue | undefined {
  const sql = column.default?.replace(/^\((.*)\)$/, '$1');
  if (sql === undefined) return undefined;
  if (type === 'datetime' && /^(now\(\)|CURRENT_TIMESTAMP|transaction_timestamp\(\))$/i.test(sql)) return 'now';
  const text = /^'((?:[^']|'')*)'(::[\w ."]+)?$/.exec(sql);
  if (text && (type === 'string' || type === 'text' || type === 'enum')) return text[1]!.replace(/''/g, "'");
  if (type === 'boolean' && /^(true|false)$/.test(sql)) return sql === 'true';
  if (type === 'integer' && /^-?\d+$/.test(sql) && Number.isSafeInteger(Number(sql))) return Number(sql);
  if (type === 'number' && /^-?\d+(\.\d+)?(::[\w ]+)?$/.test(sql)) return Number.parseFloat(sql);
  return undefined;
}

/** `CHECK ((plan = ANY (ARRAY['free'::text, 'pro'::text])))` -> ['free', 'pro'] */
function checkedValues(check: CatalogConstraint): string[] | undefined {
  const match = /^CHECK \(\(\(?"?\w+"?\)?(?:::text)? = ANY \(\(?ARRAY\[(.*)\]\)?(?:::text\[\])?\)\)\)$/.exec(check.definition);
  if (!match) return undefined;
  const values = [...match[1]!.matchAll(/'((?:[^']|'')*)'::[\w ]+/g)].map((value) => value[1]!.replace(/''/g, "'"));
  return values.length > 0 ? values : undefined;
}

/** `CHECK ((capacity > 0))` -> 1, `CHECK ((amount >= 10))` -> 10 */
function checkedMinimum(check: CatalogConstraint): number | undefined {
  const match = /^CHECK \(\("?\w+"? (>=?) (-?\d+)\)\)$/.exec(check.definition);
  if (!match) return undefined;
  return Number(match[2]) + (match[1] === '>' ? 1 : 0);
}

const onDeleteOf = (action: NonNullable<CatalogConstraint['references']>['onDelete'], nullable: boolean): OnDeleteAction =>
  action === 'cascade' ? 'cascade' : action === 'set null' && nullable ? 'set null' : 'restrict';

export function schemaFromCatalog(catalog: Catalog): IntrospectedSchema {
  const notes: string[] = [];
  const keyed = new Map<string, { table: CatalogTable; idType: 'uuid' | 'integer'; entity: string }>();

  for (const table of catalog.tables) {
    const key = keyOf(table);
    if ('reason' in key) {
      notes.push(`table "${table.name}" is not mapped: ${key.reason}. It stays as it is; the app keeps using it.`);
      continue;
    }
    let entity = entityNameFor(table.name);
    // Two tables may make one name (`user`, `users`); a name clashing with an auth entity is left
    // as it is, for the clash resolution that follows to rename it as it renames any other.
    for (let n = 2; [...keyed.values()].some((other) => other.entity.toLowerCase() === entity.toLowerCase()); n += 1) entity = `${entityNameFor(table.name)}${n}`;
    keyed.set(table.name, { table, idType: key.idType, entity });
  }

  const entities: [string, EntityDefinition][] = [];
  for (const { table, idType, entity } of keyed.values()) {
    const definition: EntityDefinition = { table: table.name, idType, fields: {} };
    const timestampColumn = (names: readonly string[]) =>
      table.columns.find((column) => names.includes(column.name) && (column.type === 'timestamptz' || column.type === 'timestamp'))?.name;
    const createdAt = timestampColumn(timestampColumns.createdAt);
    const updatedAt = timestampColumn(timestampColumns.updatedAt);
    if (createdAt !== 'createdAt') definition.createdAt = createdAt ?? false;
    if (updatedAt !== 'updatedAt') definition.updatedAt = updatedAt ?? false;
    if (table.comment) definition.description = table.comment;

    const singleColumn = (kind: CatalogConstraint['kind'], column: string) =>
      table.constraints.filter((constraint) => constraint.kind === kind && constraint.columns.length === 1 && constraint.columns[0] === column);
    const fieldNames = new Map<string, string>();
    let unmappable: string | undefined;

    for (const column of table.columns) {
      if (column.name === 'id' || column.name === createdAt || column.name === updatedAt) continue;
      const type: FieldType | undefined = column.category === 'enum' ? 'enum' : column.category === 'base' ? fieldTypeOf[column.type] : undefined;
      let name = camelCase(column.name);
      if (systemFieldNames.has(name)) name = `${name}Value`;
      if (!type || !identifier.test(column.name) || !identifier.test(name)) {
        const why = !type ? `its type ${column.type} has no authstrap field type` : 'its name is not a plain SQL identifier';
        if (!column.nullable && column.default === null) {
          unmappable = `its required column "${column.name}" cannot be mapped (${why}), so the API could not create rows`;
          break;
        }
        notes.push(`column "${table.name}"."${column.name}" is not mapped (${why}); the API leaves it to its default.`);
        continue;
      }
      const field: FieldDefinition = { type };
      if (name !== column.name) field.column = column.name;
      if (column.nullable) field.nullable = true;
      if (column.category === 'enum') field.values = column.enumValues ?? [];
      for (const check of singleColumn('c', column.name)) {
        const values = type === 'string' ? checkedValues(check) : undefined;
        if (values) {
          field.type = 'enum';
          field.values = values;
        }
        const minimum = type === 'integer' || type === 'number' ? checkedMinimum(check) : undefined;
        if (minimum !== undefined) field.min = minimum;
      }
      if (field.type === 'string' && column.maxLength !== null) field.maxLength = column.maxLength;
      const fallback = literalDefault(column, field.type);
      if (fallback !== undefined && (field.type !== 'enum' || field.values!.includes(String(fallback)))) field.default = fallback;
      if (singleColumn('u', column.name).length > 0) field.unique = true;

      const reference = singleColumn('f', column.name)[0]?.references;
      const target = reference && reference.columns.length === 1 && reference.columns[0] === 'id' ? keyed.get(reference.table) : undefined;
      if (target && target.idType === field.type) {
        field.references = target.entity;
        field.onDelete = onDeleteOf(reference!.onDelete, column.nullable);
      }
      if (column.comment) field.description = column.comment;
      definition.fields[name] = field;
      fieldNames.set(column.name, name);
    }
    if (unmappable) {
      notes.push(`table "${table.name}" is not mapped: ${unmappable}. It stays as it is; the app keeps using it.`);
      continue;
    }

    const fieldsOf = (columns: string[]) => (columns.every((column) => fieldNames.has(column)) ? columns.map((column) => fieldNames.get(column)!) : undefined);
    const uniqueTogether = table.constraints
      .filter((constraint) => constraint.kind === 'u' && constraint.columns.length > 1)
      .map((constraint) => fieldsOf(constraint.columns))
      .filter((fields) => fields !== undefined);
    if (uniqueTogether.length > 0) definition.uniqueTogether = uniqueTogether;
    const indexes = table.indexes
      .filter((index) => !index.unique && !index.special && index.columns.length > 0)
      .map((index) => fieldsOf(index.columns))
      .filter((fields) => fields !== undefined);
    if (indexes.length > 0) definition.indexes = indexes;
    entities.push([entity, definition]);
  }

  // A reference to a table that turned out unmappable is a plain column.
  const mapped = new Set(entities.map(([name]) => name));
  for (const [, definition] of entities) {
    for (const field of Object.values(definition.fields)) {
      if (field.references && !mapped.has(field.references)) {
        delete field.references;
        delete field.onDelete;
      }
    }
  }
  return { entities, notes };
}

const literal = (value: unknown): string =>
  typeof value === 'string' ? `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'` : JSON.stringify(value);

const objectLiteral = (entries: [string, unknown][]): string =>
  `{ ${entries.map(([key, value]) => `${key}: ${Array.isArray(value) ? `[${value.map((item) => (Array.isArray(item) ? `[${item.map(literal).join(', ')}]` : literal(item))).join(', ')}]` : literal(value)}`).join(', ')} }`;

/** The schema file for an introspected database: written once, then the user's to edit. */
export function printSchema(introspected: IntrospectedSchema, source: string): string {
  const lines = [
    `// Read from the database ${source} by \`authstrap add-auth\`.`,
    '// Each entity maps to an existing table ("table") and each field to its column ("column"),',
    '// so nothing in the database is renamed. From here on this file is yours: change it and run',
    '// `authstrap generate` to get the code and the migration.',
    ...introspected.notes.map((note) => `// Note: ${note}`),
    'export default {',
    '  auth: false,',
    '  entities: {',
  ];
  for (const [name, definition] of introspected.entities) {
    lines.push(`    ${name}: {`);
    for (const key of ['table', 'idType', 'createdAt', 'updatedAt', 'description'] as const) {
      if (definition[key] !== undefined) lines.push(`      ${key}: ${literal(definition[key])},`);
    }
    lines.push('      fields: {');
    for (const [fieldName, field] of Object.entries(definition.fields)) lines.push(`        ${fieldName}: ${objectLiteral(Object.entries(field))},`);
    lines.push('      },');
    for (const key of ['uniqueTogether', 'indexes'] as const) {
      if (definition[key]) lines.push(`      ${key}: [${definition[key]!.map((fields) => `[${fields.map(literal).join(', ')}]`).join(', ')}],`);
    }
    lines.push('    },');
  }
  lines.push('  },', '};', '');
  return lines.join('\n');
}

/** `UNIQUE ("a", "b")`, `FOREIGN KEY ("a") REFERENCES ...`, `CHECK ("a" IN ...)` -> its kind and columns. */
function constraintShape(definition: string): { kind: 'u' | 'f' | 'c'; columns: string[] } | undefined {
  const unquote = (list: string) => list.split(', ').map((column) => column.replace(/^"|"$/g, '').replace(/""/g, '"'));
  const unique = /^UNIQUE \(([^)]*)\)/.exec(definition);
  if (unique) return { kind: 'u', columns: unquote(unique[1]!) };
  const foreign = /^FOREIGN KEY \(([^)]*)\)/.exec(definition);
  if (foreign) return { kind: 'f', columns: unquote(foreign[1]!) };
  const check = /^CHECK \("((?:[^"]|"")+)"/.exec(definition);
  if (check) return { kind: 'c', columns: [check[1]!.replace(/""/g, '"')] };
  return undefined;
}

/**
 * The starting point of the first migration: the database as the introspected schema describes
 * it, with the constraint and index names the database really has. A constraint or index the
 * model expects but the database lacks is left out, so the migration adds it; one the database
 * names differently keeps its real name, so the migration can drop it when it must change.
 */
export function baselineModel(model: DatabaseModel, catalog: Catalog): DatabaseModel {
  const sameColumns = (a: string[], b: string[]) => a.length === b.length && a.every((column, index) => column === b[index]);
  return {
    tables: model.tables.map((table) => {
      const live = catalog.tables.find((candidate) => candidate.name === table.name)!;
      const constraints = table.constraints.flatMap((constraint) => {
        const shape = constraintShape(constraint.definition);
        const match = shape && live.constraints.find((candidate) => candidate.kind === shape.kind && sameColumns(candidate.columns, shape.columns));
        return match ? [{ ...constraint, name: match.name }] : [];
      });
      const indexes = table.indexes.flatMap((index) => {
        const match = live.indexes.find((candidate) => !candidate.special && sameColumns(candidate.columns, index.columns));
        return match ? [{ ...index, name: match.name }] : [];
      });
      return { ...table, constraints, indexes };
    }),
  };
}
