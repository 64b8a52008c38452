import { defaultOrganization } from '../generate/migration.js';
import { databaseModel, literal, quote, type Table } from '../generate/table-model.js';
import { fail, pass, plural, type Check } from './check.js';
import { databaseUnchecked } from './database-unchecked.js';

/**
 * Tenant-scoped rows without an organization (`organizationId` nullable in the live database, as
 * a hand migration or an app of its own leaves it): invisible to every member, and a NOT NULL
 * violation waiting for the next migration. The repair moves them into the default organization,
 * then sets NOT NULL, and a DEFAULT so that such an app's inserts keep working.
 */
export const notNullRows: Check = {
  id: 'not-null-rows',
  title: 'Tenant-scoped rows all have an organization',
  examine(project) {
    const unchecked = databaseUnchecked(project);
    if (unchecked) return unchecked;
    const live = project.database!.columns;
    // Every table whose organizationId the schema requires: the tenant-scoped ones, and member.
    const tables = parentsFirst(databaseModel(project.schema!).tables.filter((table) => table.columns.some((column) => column.name === 'organizationId' && !column.nullable)));
    const problems: string[] = [];
    const sql: string[] = [];
    let orphans = 0;
    for (const table of tables) {
      const actual = live.find((candidate) => candidate.table === table.name && candidate.column === 'organizationId');
      if (!actual?.nullable) continue;
      const target = `ALTER TABLE ${quote(table.name)} ALTER COLUMN "organizationId"`;
      problems.push(`${table.name}.organizationId is nullable${actual.nulls ? ` and ${plural(actual.nulls, 'row has', 'rows have')} no organization (invisible to every member)` : ''}`);
      if (actual.nulls > 0) sql.push(`UPDATE ${quote(table.name)} SET "organizationId" = ${literal(defaultOrganization.id)}::uuid WHERE "organizationId" IS NULL`);
      sql.push(`${target} SET NOT NULL`);
      // So that an app of its own that inserts without an organization keeps working.
      if (actual.default === null) sql.push(`${target} SET DEFAULT ${literal(defaultOrganization.id)}::uuid`);
      orphans += actual.nulls;
    }
    if (problems.length === 0) return pass('every tenant-scoped table has organizationId NOT NULL');
    if (orphans > 0) {
      sql.unshift(
        `INSERT INTO "Organization" ("id", "name", "slug") VALUES (${literal(defaultOrganization.id)}::uuid, ${literal(defaultOrganization.name)}, ${literal(defaultOrganization.slug)}) ON CONFLICT DO NOTHING`,
      );
    }
    const summary = `${orphans ? `move ${plural(orphans, 'row')} into "${defaultOrganization.name}" (id ${defaultOrganization.id}), then ` : ''}make organizationId NOT NULL in ${plural(problems.length, 'table')}`;
    return { ...fail(problems.join('; ')), repair: { summary, files: [], sql } };
  },
};

/** Tables in an order where every table comes after the tables it references (parents are backfilled first). */
function parentsFirst(tables: Table[]): Table[] {
  const ordered: Table[] = [];
  const visit = (table: Table, seen: Set<string>) => {
    if (ordered.includes(table) || seen.has(table.name)) return;
    seen.add(table.name);
    for (const name of table.dependsOn) {
      const parent = tables.find((candidate) => candidate.name === name);
      if (parent) visit(parent, seen);
    }
    ordered.push(table);
  };
  for (const table of tables) visit(table, new Set());
  return ordered;
}
