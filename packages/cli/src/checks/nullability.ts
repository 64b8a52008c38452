import { databaseModel, quote } from '../generate/table-model.js';
import { fail, pass, plural, type Check } from './check.js';
import { databaseUnchecked } from './database-unchecked.js';
import type { LiveColumn } from './project-snapshot.js';

const columnName = (column: LiveColumn) => `${column.table}.${column.column}`;

/**
 * Auth columns whose NOT NULL differs from the schema: a required column that is nullable, or
 * an optional one that is NOT NULL (OAuth accounts have no password, so sign-ups through them
 * fail). The repair sets or drops NOT NULL; it sets it only when no row is null.
 */
export const nullability: Check = {
  id: 'nullability',
  title: 'Auth columns have the right nullability',
  examine(project) {
    const unchecked = databaseUnchecked(project);
    if (unchecked) return unchecked;
    const live = project.database!.columns;
    const authTables = new Set(project.schema!.entities.filter((entity) => entity.builtin).map((entity) => entity.table));
    const sql: string[] = [];
    const repairable: string[] = [];
    const unrepairable: string[] = [];
    for (const table of databaseModel(project.schema!).tables.filter((candidate) => authTables.has(candidate.name))) {
      for (const column of table.columns) {
        // organizationId is the not-null-rows check's: it backfills before setting NOT NULL.
        if (column.name === 'organizationId') continue;
        const actual = live.find((candidate) => candidate.table === table.name && candidate.column === column.name);
        if (!actual || actual.nullable === column.nullable) continue;
        const target = `ALTER TABLE ${quote(table.name)} ALTER COLUMN ${quote(column.name)}`;
        if (column.nullable) {
          repairable.push(`${columnName(actual)} is NOT NULL but optional`);
          sql.push(`${target} DROP NOT NULL`);
        } else if (actual.nulls === 0) {
          repairable.push(`${columnName(actual)} is nullable but required`);
          sql.push(`${target} SET NOT NULL`);
        } else {
          unrepairable.push(`${columnName(actual)} is required but ${plural(actual.nulls, 'row has', 'rows have')} no value: fill ${actual.nulls === 1 ? 'it' : 'them'} in by hand, then run fix again`);
        }
      }
    }
    if (repairable.length === 0 && unrepairable.length === 0) return pass('the auth tables match the schema: required columns are NOT NULL, optional ones nullable');
    const message = [...repairable, ...unrepairable].join('; ');
    if (sql.length === 0) return fail(message);
    return { ...fail(message), repair: { summary: `change the nullability of ${plural(sql.length, 'column')}`, files: [], sql } };
  },
};
