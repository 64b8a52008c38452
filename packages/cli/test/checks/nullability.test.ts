import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { describeRepairCycle } from '../support/check-cycle.js';
import { fixJson, query, type CliResult, type FixReport } from '../support/example-copies.js';

/** Nullability of some columns, as information_schema has it. */
const nullability = (databaseUrl: string, columns: [string, string][]) => async () =>
  Object.fromEntries(
    await Promise.all(
      columns.map(async ([table, column]) => {
        const [row] = await query<{ is_nullable: string }>(
          databaseUrl,
          `SELECT is_nullable FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND column_name = $2`,
          [table, column],
        );
        return [`${table}.${column}`, row?.is_nullable ?? 'missing'];
      }),
    ),
  );

const columns: [string, string][] = [['account', 'password'], ['User', 'email'], ['User', 'name']];
const name = 'account.password made NOT NULL, User.email made nullable';

const { stage } = describeRepairCycle('nullability', [
  {
    name,
    planShows: ['ALTER TABLE "account" ALTER COLUMN "password" DROP NOT NULL;', 'ALTER TABLE "User" ALTER COLUMN "email" SET NOT NULL;'],
    async breakData(backend) {
      await query(backend.databaseUrl, `ALTER TABLE "account" ALTER COLUMN "password" SET NOT NULL`);
      await query(backend.databaseUrl, `ALTER TABLE "User" ALTER COLUMN "email" DROP NOT NULL`);
    },
    rows: (backend) => nullability(backend.databaseUrl, columns)(),
    async afterRepair(dir, backend, extra) {
      // A required column with a NULL in it: reported with the count, not repaired (that would need a value).
      await query(backend.databaseUrl, `ALTER TABLE "User" ALTER COLUMN "name" DROP NOT NULL`);
      await query(backend.databaseUrl, `INSERT INTO "User" ("name", "email") VALUES (NULL, $1)`, [`nameless-${randomBytes(4).toString('hex')}@example.com`]);
      extra.withNullsBefore = await nullability(backend.databaseUrl, columns)();
      extra.withNulls = await fixJson(['--database-url', backend.databaseUrl], dir);
      extra.withNullsAfter = await nullability(backend.databaseUrl, columns)();
      // Put back for the verify that follows.
      await query(backend.databaseUrl, `DELETE FROM "User" WHERE "name" IS NULL`);
      await query(backend.databaseUrl, `ALTER TABLE "User" ALTER COLUMN "name" SET NOT NULL`);
    },
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('nullability: the repair', () => {
  it('leaves the columns as a fresh database has them', () => {
    expect(stage(name, 'rowsBefore')).toEqual({ 'account.password': 'NO', 'User.email': 'YES', 'User.name': 'NO' });
    expect(stage(name, 'rowsAfterFirst')).toEqual({ 'account.password': 'YES', 'User.email': 'NO', 'User.name': 'NO' });
  });

  it('reports a required column with NULL rows with the count and leaves it alone (exit 1)', () => {
    const result = stage(name, 'extra').withNulls as CliResult & { report: FixReport };
    expect(result.status, result.output).toBe(1);
    expect(result.report.ok).toBe(false);
    const finding = result.report.checks.find((check) => check.id === 'nullability')!;
    expect(finding.status).toBe('fail');
    expect(finding.repaired).toBeUndefined();
    expect(finding.message).toContain('User.name is required but 1 row has no value');
    expect(stage(name, 'extra').withNullsAfter).toEqual(stage(name, 'extra').withNullsBefore);
  });
});
