import { validateSchema } from '../schema/validate.js';
import { fail, pass, type Check } from './check.js';

/** The auth tables and their columns, from the same built-in definitions the generator uses. */
function expectedAuthTables(): Record<string, string[]> {
  const schema = validateSchema({ auth: true, entities: {} });
  return Object.fromEntries(schema.entities.map((entity) => [entity.table, entity.fields.map((field) => field.column)]));
}

/** The database has the auth tables with their columns, and no password on "User". */
export const tables: Check = {
  id: 'tables',
  title: 'Auth tables exist with their columns',
  probe: {
    needs: 'database',
    async run({ db }) {
      const rows = await db!.query<{ table_name: string; column_name: string }>(
        `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()`,
      );
      const columns = new Map<string, Set<string>>();
      for (const row of rows) columns.set(row.table_name, (columns.get(row.table_name) ?? new Set()).add(row.column_name));
      const expected = expectedAuthTables();
      const problems: string[] = [];
      for (const [table, wanted] of Object.entries(expected)) {
        const actual = columns.get(table);
        if (!actual) problems.push(`table "${table}" is missing`);
        else {
          const missing = wanted.filter((column) => !actual.has(column));
          if (missing.length) problems.push(`"${table}" lacks ${missing.join(', ')}`);
        }
      }
      if (columns.get('User')?.has('password')) problems.push('"User" has a password column: passwords belong in "account"');
      return problems.length ? fail(problems.join('; ')) : pass(Object.keys(expected).join(', '));
    },
  },
  advice: 'start the backend once to apply its migrations (check that --database-url is its database)',
};
