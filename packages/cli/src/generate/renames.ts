import type { Schema } from '../schema/types.js';
import { quote, type DatabaseModel, type Table } from './table-model.js';

/**
 * Renames asked for in the schema (`renamedFrom`), as table and column names. A migration renames
 * in place so that rows and values stay where they are; the diff then sees the old snapshot as
 * if it had always used the new names.
 */
export interface Rename {
  from: string;
  to: string;
}

export interface Renames {
  tables: Rename[];
  /** `table` is the table's new name: columns are renamed after tables. */
  columns: (Rename & { table: string })[];
}

/** The renames a schema asks for: every entity and field with `renamedFrom`. */
export function schemaRenames(schema: Schema): Renames {
  const renames: Renames = { tables: [], columns: [] };
  for (const entity of schema.entities) {
    if (entity.renamedFrom !== undefined) renames.tables.push({ from: entity.renamedFrom, to: entity.table });
    for (const field of entity.fields) {
      if (field.renamedFrom !== undefined) renames.columns.push({ table: entity.table, from: field.renamedFrom, to: field.column });
    }
  }
  return renames;
}

export interface RenamedModel {
  /** The model with the new names, as PostgreSQL will have it after `statements`. */
  model: DatabaseModel;
  statements: string[];
  /** The new names of the tables renamed or with a column renamed. */
  changedTables: string[];
}

/** PostgreSQL's name for a table's primary key when it chose it (`<table>_pkey`, if it fits). */
const primaryKeyName = (table: string) => `${table}_pkey`;
const fitsIdentifier = (name: string) => Buffer.byteLength(name) <= 63;

/**
 * Applies renames to a snapshot, with the SQL that does the same to the database. A rename whose
 * old name is no longer there, or whose new name is already taken, has been applied before (a
 * `renamedFrom` left in the schema file) and is skipped: running generate again changes nothing.
 * Constraint and index names are left as they are: the diff renames those it finds unchanged.
 */
export function applyRenames(model: DatabaseModel, renames: Renames): RenamedModel {
  const statements: string[] = [];
  const changedTables: string[] = [];
  const tableNames = new Map<string, string>();
  const present = new Set(model.tables.map((table) => table.name));
  for (const { from, to } of renames.tables) {
    if (!present.has(from) || present.has(to)) continue;
    tableNames.set(from, to);
    present.delete(from);
    present.add(to);
    statements.push(`ALTER TABLE ${quote(from)} RENAME TO ${quote(to)};`);
    // The primary key's index is named after the table by PostgreSQL; it follows, as in a new table.
    if (fitsIdentifier(primaryKeyName(from)) && fitsIdentifier(primaryKeyName(to))) {
      statements.push(`ALTER INDEX IF EXISTS ${quote(primaryKeyName(from))} RENAME TO ${quote(primaryKeyName(to))};`);
    }
  }

  const tables = model.tables.map((table): Table => {
    const name = tableNames.get(table.name) ?? table.name;
    const columnNames = new Set(table.columns.map((column) => column.name));
    const columnRenames = new Map<string, string>();
    for (const { from, to } of renames.columns.filter((rename) => rename.table === name)) {
      if (!columnNames.has(from) || columnNames.has(to)) continue;
      columnRenames.set(from, to);
      columnNames.delete(from);
      columnNames.add(to);
      statements.push(`ALTER TABLE ${quote(name)} RENAME COLUMN ${quote(from)} TO ${quote(to)};`);
    }
    if (name !== table.name || columnRenames.size > 0) changedTables.push(name);
    if (name === table.name && columnRenames.size === 0 && !table.constraints.some((c) => referencedTable(c.definition, tableNames))) return table;
    return {
      name,
      columns: table.columns.map((column) => ({ ...column, name: columnRenames.get(column.name) ?? column.name })),
      constraints: table.constraints.map((constraint) => ({
        name: constraint.name,
        definition: renameInDefinition(constraint.definition, columnRenames, tableNames),
      })),
      // The same index over the renamed columns: unique, lower(), its method and its condition kept.
      indexes: table.indexes.map((index) => ({
        ...index,
        columns: index.columns.map((column) => columnRenames.get(column) ?? column),
        ...(index.where === undefined ? {} : { where: renameInDefinition(index.where, columnRenames, tableNames) }),
      })),
      dependsOn: table.dependsOn.map((other) => tableNames.get(other) ?? other).sort(),
      // PostgreSQL keeps a table's policies through its renames (their text is compared afterwards).
      ...(table.rowSecurity ? { rowSecurity: table.rowSecurity } : {}),
      // So are its triggers: the events trigger is made again only if its arguments change.
      ...(table.events ? { events: table.events } : {}),
    };
  });
  return { model: { ...model, tables }, statements, changedTables };
}

const referencedTable = (definition: string, tableNames: Map<string, string>) =>
  [...definition.matchAll(/REFERENCES "((?:[^"]|"")+)"/g)].some((match) => tableNames.has(match[1]!.replace(/""/g, '"')));

/**
 * A constraint's SQL as PostgreSQL keeps it after renames: the quoted name after REFERENCES is a
 * table, every other quoted name a column of the constraint's own table (the referenced columns
 * are `id` and `organizationId`, which are never renamed). Enum values, single-quoted, stay.
 */
export function renameInDefinition(definition: string, columns: Map<string, string>, tables: Map<string, string>): string {
  let afterReferences = false;
  return definition.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\bREFERENCES\b/g, (token) => {
    if (token === 'REFERENCES') {
      afterReferences = true;
      return token;
    }
    if (!token.startsWith('"')) return token;
    const renames = afterReferences ? tables : columns;
    afterReferences = false;
    const renamed = renames.get(token.slice(1, -1).replace(/""/g, '"'));
    return renamed === undefined ? token : quote(renamed);
  });
}
