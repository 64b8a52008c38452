import { describe, expect, it } from 'vitest';
import { describeRepairCycle } from '../support/check-cycle.js';
import { breakFile, query, runCliAsync, type CliResult } from '../support/example-copies.js';

const clashingEntities = `
    // Billing accounts: "Account" is an auth entity's name, in another case.
    Account: {
      fields: {
        plan: { type: 'string', default: 'free' },
      },
    },
    // Workshop sessions, served as /Sessions: the path of the auth sessions.
    Workshop: {
      plural: 'Sessions',
      fields: {
        title: { type: 'string' },
      },
    },
`;

const name = 'entities Account and Workshop (plural Sessions) next to the auth entities';

const { stage } = describeRepairCycle('name-clash', [
  {
    name,
    // Until the names are fixed the schema does not load, so the checks that need it cannot run.
    warnsWhileBroken: ['id-field', 'module-wiring', 'nullability', 'not-null-rows', 'row-level-security', 'owned-upgrades'],
    planShows: ['--- a/authstrap.schema.ts', '+++ b/src/generated/AppAccount/'],
    breakFiles: (dir) => breakFile(dir, 'authstrap.schema.ts', '  entities: {\n', `  entities: {${clashingEntities}`),
    async afterRepair(dir, backend, extra) {
      extra.generate = await runCliAsync(['generate', '--dry-run'], dir);
      extra.tables = (
        await query<{ name: string }>(backend.databaseUrl, `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('Account', 'Workshop', 'account', 'session') ORDER BY 1`)
      ).map((row) => row.name);
      // Signed out: mounted routes ask who is calling (401), unknown ones are 404.
      extra.statuses = Object.fromEntries(await Promise.all(['/app-accounts', '/app-workshops', '/sessions'].map(async (route) => [route, (await fetch(`${backend.url}${route}`)).status])));
    },
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('name-clash: the renames', () => {
  it('keep their tables and comments, leave generate nothing to do, and are served', () => {
    const schema = stage(name, 'treeAfterFirst').get('authstrap.schema.ts')!;
    expect(schema).toContain("    AppAccount: {\n      table: 'Account',\n");
    expect(schema).toContain("    AppWorkshop: {\n      table: 'Workshop',\n");
    expect(schema).not.toContain("plural: 'Sessions'");
    expect(schema).toContain('// Billing accounts: "Account" is an auth entity\'s name, in another case.');
    expect(schema).toContain('// Tenant-scoped (the default): every project belongs to one organization.');
    const generate = stage(name, 'extra').generate as CliResult;
    expect(generate.status, generate.output).toBe(0);
    expect(generate.output).toMatch(/up to date|nothing to (do|write)|no changes/i);
    expect(stage(name, 'extra').tables).toEqual(['Account', 'Workshop', 'account', 'session']);
    expect(stage(name, 'extra').statuses).toEqual({ '/app-accounts': 401, '/app-workshops': 401, '/sessions': 401 });
  });

  it('verify says why the schema does not load', () => {
    const check = stage(name, 'verifyBefore').report.checks.find((result) => result.id === 'name-clash')!;
    expect(check.message).toBe('Account (table "Account"), Workshop (table "Workshop") clash with the auth entities, so the schema does not load');
  });
});
