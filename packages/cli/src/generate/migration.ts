import { quote, type Column, type Constraint, type DatabaseModel, type Table } from './table-model.js';

/**
 * What changed between the schema of the last migration and the current one, as SQL. Changes
 * that could lose data (a dropped table or column, a changed type) are refused unless the caller
 * allows drops, so that `authstrap generate` never writes a destructive migration by surprise.
 */
export interface MigrationPlan {
  statements: string[];
  /** Short words for the file name: `create_project_task`, `alter_project`. */
  summary: string;
  problems: string[];
}

export interface DiffOptions {
  allowDrop?: boolean;
}

function columnDefinition(column: Column): string {
  let sql = `${quote(column.name)} ${column.type}`;
  if (column.primaryKey) sql += ' PRIMARY KEY';
  else if (!column.nullable) sql += ' NOT NULL';
  if (column.default !== undefined) sql += ` DEFAULT ${column.default}`;
  return sql;
}

function createTable(table: Table): string[] {
  const lines = [
    ...table.columns.map(columnDefinition),
    ...table.constraints.map((constraint) => `CONSTRAINT ${quote(constraint.name)} ${constraint.definition}`),
  ];
  return [
    `CREATE TABLE ${quote(table.name)} (\n  ${lines.join(',\n  ')}\n);`,
    ...table.indexes.map(createIndex(table)),
  ];
}

const createIndex = (table: Table) => (index: Table['indexes'][number]) =>
  `CREATE INDEX ${quote(index.name)} ON ${quote(table.name)} (${index.columns.map(quote).join(', ')});`;

/** New tables in an order where every referenced table comes first (cycles keep schema order). */
function creationOrder(tables: Table[], existing: Set<string>): Table[] {
  const ordered: Table[] = [];
  const placed = new Set(existing);
  const pending = [...tables];
  while (pending.length > 0) {
    const index = pending.findIndex((table) => table.dependsOn.every((name) => placed.has(name) || !pending.some((other) => other.name === name)));
    const [next] = pending.splice(index === -1 ? 0 : index, 1);
    ordered.push(next!);
    placed.add(next!.name);
  }
  return ordered;
}

export function diffModels(previous: DatabaseModel, next: DatabaseModel, options: DiffOptions = {}): MigrationPlan {
  const problems: string[] = [];
  const before = new Map(previous.tables.map((table) => [table.name, table]));
  const after = new Map(next.tables.map((table) => [table.name, table]));
  const created = next.tables.filter((table) => !before.has(table.name));
  const removed = previous.tables.filter((table) => !after.has(table.name));
  const altered = new Set<string>();

  const changes: TableChanges[] = [];
  for (const table of next.tables) {
    const old = before.get(table.name);
    if (!old) continue;
    const change = alterTable(old, table, options, problems);
    if (change.dropForeignKeys.length + change.statements.length + change.addForeignKeys.length > 0) altered.add(table.name);
    changes.push(change);
  }

  const drops: string[] = [];
  for (const table of removed) {
    if (!options.allowDrop) {
      problems.push(`table "${table.name}" is no longer in the schema; dropping it would delete its rows. Put it back, or run \`authstrap generate --allow-drop\` to drop it.`);
    } else {
      altered.add(table.name);
    }
  }
  // Referencing tables are dropped before the tables they reference.
  if (options.allowDrop) for (const table of creationOrder(removed, new Set()).reverse()) drops.push(`DROP TABLE ${quote(table.name)};`);

  // A new table whose foreign key points at a table created later (a cycle) gets that key afterwards.
  const creates: string[] = [];
  const deferred: string[] = [];
  const available = new Set(previous.tables.map((table) => table.name));
  for (const table of creationOrder(created, available)) {
    const ready = { ...table, constraints: table.constraints.filter((constraint) => !referencesMissing(constraint.definition, available, table.name)) };
    creates.push(...createTable(ready));
    for (const constraint of table.constraints.filter((c) => !ready.constraints.includes(c))) {
      deferred.push(`ALTER TABLE ${quote(table.name)} ADD CONSTRAINT ${quote(constraint.name)} ${constraint.definition};`);
    }
    available.add(table.name);
  }

  // Foreign keys depend on other tables, so they are dropped first and added last: a dropped
  // table may still point at a unique key that goes away, and a new table may point at a unique
  // key that an existing table only gets in this migration, or be pointed at by one.
  const statements = [
    ...changes.flatMap((change) => change.dropForeignKeys),
    ...drops,
    ...changes.flatMap((change) => change.statements),
    ...creates,
    ...deferred,
    // Several tables may need the default organization; it is created once.
    ...new Set(changes.flatMap((change) => change.addForeignKeys)),
  ];

  const summaryParts = [
    ...(created.length ? ['create', ...created.map((table) => table.name)] : []),
    ...(altered.size ? ['alter', ...altered] : []),
  ];
  const summary = summaryParts.join('_').toLowerCase().replace(/[^a-z0-9_]/g, '').slice(0, 60) || 'change';
  return { statements, summary, problems };
}

function referencesMissing(definition: string, available: Set<string>, self: string): boolean {
  const match = /REFERENCES "((?:[^"]|"")+)"/.exec(definition);
  if (!match) return false;
  const target = match[1]!.replace(/""/g, '"');
  return target !== self && !available.has(target);
}

interface TableChanges {
  dropForeignKeys: string[];
  /** Other constraints and indexes dropped, columns changed, constraints and indexes added. */
  statements: string[];
  addForeignKeys: string[];
}

const isForeignKey = (constraint: Constraint) => constraint.definition.startsWith('FOREIGN KEY');

/**
 * Where the rows of a table that becomes tenant-scoped go (authstrap add-auth). A fixed id, so
 * that the migration reads the same on every machine and can be applied to any copy of the data.
 */
export const defaultOrganization = { id: '00000000-0000-4000-8000-000000000001', name: 'Default organization', slug: 'default' };
const literalUuid = (id: string) => `'${id}'::uuid`;
// Runs with the foreign keys, after the Organization table is created in the same migration.
const createDefaultOrganization =
  `INSERT INTO "Organization" ("id", "name", "slug") VALUES (${literalUuid(defaultOrganization.id)}, '${defaultOrganization.name}', '${defaultOrganization.slug}') ON CONFLICT DO NOTHING;`;

function alterTable(old: Table, table: Table, options: DiffOptions, problems: string[]): TableChanges {
  const name = quote(table.name);
  const dropForeignKeys: string[] = [];
  const dropConstraints: string[] = [];
  const changes: string[] = [];
  const addConstraints: string[] = [];
  const addForeignKeys: string[] = [];

  const oldConstraints = new Map(old.constraints.map((constraint) => [constraint.name, constraint]));
  const newConstraints = new Map(table.constraints.map((constraint) => [constraint.name, constraint]));
  for (const constraint of old.constraints) {
    const replacement = newConstraints.get(constraint.name);
    if (!replacement || replacement.definition !== constraint.definition) {
      (isForeignKey(constraint) ? dropForeignKeys : dropConstraints).push(`ALTER TABLE ${name} DROP CONSTRAINT ${quote(constraint.name)};`);
    }
  }
  for (const constraint of table.constraints) {
    const previous = oldConstraints.get(constraint.name);
    if (!previous || previous.definition !== constraint.definition) {
      (isForeignKey(constraint) ? addForeignKeys : addConstraints).push(`ALTER TABLE ${name} ADD CONSTRAINT ${quote(constraint.name)} ${constraint.definition};`);
    }
  }

  const oldIndexes = new Map(old.indexes.map((index) => [index.name, index]));
  const newIndexes = new Map(table.indexes.map((index) => [index.name, index]));
  for (const index of old.indexes) {
    if (!newIndexes.has(index.name) || newIndexes.get(index.name)!.columns.join() !== index.columns.join()) {
      dropConstraints.push(`DROP INDEX ${quote(index.name)};`);
    }
  }
  for (const index of table.indexes) {
    if (!oldIndexes.has(index.name) || oldIndexes.get(index.name)!.columns.join() !== index.columns.join()) {
      addConstraints.push(createIndex(table)(index));
    }
  }

  const oldColumns = new Map(old.columns.map((column) => [column.name, column]));
  const newColumns = new Map(table.columns.map((column) => [column.name, column]));
  for (const column of table.columns) {
    const previous = oldColumns.get(column.name);
    const where = `column "${table.name}"."${column.name}"`;
    if (!previous) {
      if (column.name === 'organizationId' && !column.nullable && column.default === undefined) {
        // An existing table becomes tenant-scoped: its rows go to the default organization,
        // and the column keeps that default so the existing app's own inserts still work.
        changes.push(`ALTER TABLE ${name} ADD COLUMN ${quote(column.name)} ${column.type} NOT NULL DEFAULT ${literalUuid(defaultOrganization.id)};`);
        addForeignKeys.unshift(createDefaultOrganization);
        continue;
      }
      if (!column.nullable && column.default === undefined) {
        problems.push(`${where} is new and required, but rows that already exist have no value for it. Give the field a "default", or make it "nullable".`);
        continue;
      }
      changes.push(`ALTER TABLE ${name} ADD COLUMN ${columnDefinition(column)};`);
      continue;
    }
    if (previous.type !== column.type) {
      problems.push(`${where} changes type from ${previous.type} to ${column.type}; authstrap does not convert data by itself. Write that migration by hand, or keep the old type.`);
      continue;
    }
    if (previous.default !== column.default) {
      changes.push(
        column.default === undefined
          ? `ALTER TABLE ${name} ALTER COLUMN ${quote(column.name)} DROP DEFAULT;`
          : `ALTER TABLE ${name} ALTER COLUMN ${quote(column.name)} SET DEFAULT ${column.default};`,
      );
    }
    if (previous.nullable !== column.nullable && !column.primaryKey) {
      changes.push(`ALTER TABLE ${name} ALTER COLUMN ${quote(column.name)} ${column.nullable ? 'DROP' : 'SET'} NOT NULL;`);
    }
  }
  for (const column of old.columns) {
    if (newColumns.has(column.name)) continue;
    if (!options.allowDrop) {
      problems.push(`column "${table.name}"."${column.name}" is no longer in the schema; dropping it would delete its data. Put the field back, or run \`authstrap generate --allow-drop\`.`);
    } else {
      changes.push(`ALTER TABLE ${name} DROP COLUMN ${quote(column.name)};`);
    }
  }

  return { dropForeignKeys, statements: [...dropConstraints, ...changes, ...addConstraints], addForeignKeys };
}
