import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { describeRepairCycle } from '../support/check-cycle.js';
import { readTree } from '../support/cli.js';
import { query, runCliAsync, type CliResult } from '../support/example-copies.js';

const defaultOrganizationId = '00000000-0000-4000-8000-000000000001';
const name = 'Project.organizationId made nullable, and a project inserted without one';

const column = async (databaseUrl: string, table: string) => {
  const [row] = await query<{ is_nullable: string; column_default: string | null }>(
    databaseUrl,
    `SELECT is_nullable, column_default FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND column_name = 'organizationId'`,
    [table],
  );
  return `${row!.is_nullable} ${row!.column_default ?? ''}`.trim();
};

const { stage } = describeRepairCycle('not-null-rows', [
  {
    name,
    planShows: ['INSERT INTO "Organization"', `UPDATE "Project" SET "organizationId" = '${defaultOrganizationId}'::uuid WHERE "organizationId" IS NULL;`, 'ALTER TABLE "Project" ALTER COLUMN "organizationId" SET NOT NULL;'],
    async breakData(backend) {
      // What a hand migration and an app of its own leave behind.
      await query(backend.databaseUrl, `ALTER TABLE "Project" ALTER COLUMN "organizationId" DROP NOT NULL`);
      await query(backend.databaseUrl, `INSERT INTO "Project" ("name") VALUES ('Legacy project')`);
    },
    rows: async (backend) => ({
      column: await column(backend.databaseUrl, 'Project'),
      projects: await query(backend.databaseUrl, `SELECT "name", "organizationId"::text AS "organizationId" FROM "Project" ORDER BY "name"`),
      organizations: await query(backend.databaseUrl, `SELECT "id"::text AS id, "name" FROM "Organization" ORDER BY "name"`),
    }),
    async afterRepair(dir, backend, extra) {
      // The other app's insert, still without an organization, now lands in the default one.
      await query(backend.databaseUrl, `INSERT INTO "Project" ("name") VALUES ('Inserted after the fix')`);
      extra.afterInsert = await query(backend.databaseUrl, `SELECT "organizationId"::text AS "organizationId" FROM "Project" WHERE "name" = 'Inserted after the fix'`);
      // Two memberships without an organization for one user: moved into the default organization
      // together, they would break UNIQUE (organizationId, userId). fix says so and changes nothing.
      await query(backend.databaseUrl, `ALTER TABLE "member" ALTER COLUMN "organizationId" DROP NOT NULL`);
      const [twice] = await query<{ id: string }>(backend.databaseUrl, `INSERT INTO "User" ("name", "email") VALUES ('Twice', $1) RETURNING "id"`, [`twice-${randomBytes(4).toString('hex')}@example.com`]);
      await query(backend.databaseUrl, `INSERT INTO "member" ("userId", "role", "organizationId") VALUES ($1, 'member', NULL), ($1, 'admin', NULL)`, [twice!.id]);
      const members = async () => ({
        column: await column(backend.databaseUrl, 'member'),
        orphans: await query(backend.databaseUrl, `SELECT "role" FROM "member" WHERE "organizationId" IS NULL ORDER BY "role"`),
        files: readTree(dir, ['node_modules', '.data']),
      });
      extra.collisionBefore = await members();
      extra.collision = await runCliAsync(['fix', '--database-url', backend.databaseUrl], dir);
      extra.collisionAfter = await members();
      // Put back for the verify that follows.
      await query(backend.databaseUrl, `DELETE FROM "User" WHERE "id" = $1`, [twice!.id]);
      await query(backend.databaseUrl, `ALTER TABLE "member" ALTER COLUMN "organizationId" SET NOT NULL`);
    },
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('not-null-rows: the repair', () => {
  it('moves the orphan project into the default organization, loses no row, and inserts without one keep working', () => {
    expect(stage(name, 'dryRunJson').report.checks.find((finding) => finding.id === 'not-null-rows')!.message).toContain('1 row has no organization');
    expect(stage(name, 'rowsBefore')).toEqual({ column: 'YES', projects: [{ name: 'Legacy project', organizationId: null }], organizations: [] });
    expect(stage(name, 'rowsAfterFirst')).toEqual({
      column: `NO '${defaultOrganizationId}'::uuid`,
      projects: [{ name: 'Legacy project', organizationId: defaultOrganizationId }],
      organizations: [{ id: defaultOrganizationId, name: 'Default organization' }],
    });
    expect(stage(name, 'extra').afterInsert).toEqual([{ organizationId: defaultOrganizationId }]);
  });

  it('reports a backfill that would break a unique key, and changes nothing', () => {
    const collision = stage(name, 'extra').collision as CliResult;
    expect(collision.status).toBe(1);
    expect(collision.stderr).toMatch(/The repairs could not be applied, so nothing was changed/);
    expect(collision.stderr).toMatch(/member_organizationId_userId_key/);
    expect(collision.stderr).toMatch(/Give one of them another value \(or an organization\) by hand, then run fix again/);
    expect(collision.stderr).not.toMatch(/\n\s+at /);
    const before = stage(name, 'extra').collisionBefore as { orphans: unknown[] };
    expect(before.orphans).toHaveLength(2);
    expect(stage(name, 'extra').collisionAfter).toEqual(before);
  });
});
