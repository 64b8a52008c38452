import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleDir, readTree, runCli, tempDir } from './support/cli.js';
import { verifyCheckIds } from './support/example-copies.js';

const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;
if (process.env.CI && !adminUrl) throw new Error('CI is set but AUTHSTRAP_TEST_POSTGRES_URL is not');

// An authstrap project that was generated with auth off, has run, and holds data; its names
// clash with the auth entities in several ways (`Account`, `users`).
const schemaBefore = `// Our app's model, before auth.
export default {
  auth: false, // no login yet
  entities: {
    /** Paying customers' billing accounts. */
    Account: {
      fields: {
        plan: { type: 'enum', values: ['free', 'pro'], default: 'free' }, // the tier
      },
    },
    users: { table: 'users', fields: { email: { type: 'string' } } },
    Invoice: {
      fields: {
        accountId: { type: 'uuid', references: 'Account' },
        amount: { type: 'integer' },
      },
    },
  },
};
`;

describe.runIf(adminUrl)('authstrap add-auth on an authstrap project with auth off', () => {
  const root = tempDir('authstrap-add-auth-');
  const dir = path.join(root, 'billing');
  const database = `authstrap_addauth_${process.pid}`;
  let databaseUrl: string;
  let db: pg.Client;
  const counts = async () =>
    (await db.query('SELECT (SELECT count(*) FROM "Account")::int AS accounts, (SELECT count(*) FROM users)::int AS users, (SELECT count(*) FROM "Invoice")::int AS invoices')).rows[0];

  /** Starts the project as `npm start` would, waits until it is ready, and stops it again: that applies its migrations. */
  async function runOnce() {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/index.ts'], { cwd: dir, env: { PATH: process.env.PATH, LOG_LEVEL: 'warn' }, stdio: 'ignore' });
    try {
      for (let attempt = 0; attempt < 150; attempt += 1) {
        if (await fetch('http://127.0.0.1:3988/ready').then((response) => response.ok, () => false)) return;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      throw new Error('the project did not start');
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }

  beforeAll(async () => {
    const url = new URL(adminUrl!);
    url.pathname = `/${database}`;
    databaseUrl = url.toString();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();

    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), schemaBefore);
    expect(runCli(['generate', dir]).status).toBe(0);
    fs.symlinkSync(path.join(exampleDir, 'node_modules'), path.join(dir, 'node_modules'));
    fs.writeFileSync(path.join(dir, '.env'), `PORT=3988\nHOST=127.0.0.1\nDATABASE_URL=${databaseUrl}\nBCRYPT_COST=4\nSERVICE_API_KEY=add-auth-test-key-0123456789abcdef012345\nALLOWED_ORIGINS=http://localhost:5173\n`);
    await runOnce();
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    await db.query(`INSERT INTO "Account" (plan) VALUES ('pro'), ('free'), ('free')`);
    await db.query(`INSERT INTO users (email) VALUES ('a@example.com'), ('b@example.com')`);
    await db.query(`INSERT INTO "Invoice" ("accountId", amount) SELECT id, 100 FROM "Account"`);
  }, 120_000);

  afterAll(async () => {
    await db?.end();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('--dry-run shows the schema diff and the migration, and changes no file and no row', async () => {
    const before = readTree(dir, ['node_modules']);
    const rows = await counts();
    const result = runCli(['add-auth', dir, '--dry-run']);
    expect(result.status, result.output).toBe(0);
    expect(result.stdout).toContain('-    Account: {');
    expect(result.stdout).toContain('+    AppAccount: {');
    expect(result.stdout).toContain(`ADD COLUMN "organizationId" uuid NOT NULL DEFAULT '00000000-0000-4000-8000-000000000001'::uuid`);
    expect(readTree(dir, ['node_modules'])).toEqual(before);
    expect(await counts()).toEqual(rows);
    expect((await db.query(`SELECT to_regclass('"User"') AS t`)).rows[0].t).toBeNull();
  });

  it('adds auth, keeps every row, keeps the app\'s own inserts working, and verifies', async () => {
    const rows = await counts();
    const result = runCli(['add-auth', dir]);
    expect(result.status, result.output).toBe(0);
    expect(result.stdout).toContain('Account clashes with an auth entity: renamed to AppAccount');
    expect(result.stdout).toContain(`\n${verifyCheckIds.length} passed, 0 failed\n`);
    expect(await counts()).toEqual(rows);

    // Existing rows went to the default organization; a plain insert (the old app's) still works.
    const orgs = await db.query('SELECT DISTINCT "organizationId" FROM "Account"');
    expect(orgs.rows).toEqual([{ organizationId: '00000000-0000-4000-8000-000000000001' }]);
    const inserted = await db.query(`INSERT INTO "Account" (plan) VALUES ('pro') RETURNING "organizationId"`);
    expect(inserted.rows[0].organizationId).toBe('00000000-0000-4000-8000-000000000001');
    await db.query(`INSERT INTO users (email) VALUES ('c@example.com')`);

    const schema = fs.readFileSync(path.join(dir, 'authstrap.schema.ts'), 'utf8');
    for (const comment of ["// Our app's model, before auth.", '// no login yet', "/** Paying customers' billing accounts. */", '// the tier']) expect(schema).toContain(comment);
    expect(schema).toContain("references: 'AppAccount'");
    expect(fs.existsSync(path.join(dir, 'src/generated/AppAccount/app-account.router.ts'))).toBe(true);
    expect(fs.existsSync(path.join(dir, 'src/generated/Account'))).toBe(false);
  }, 180_000); // add-auth, a build, the migrations and verify: 72 s on a 2-core machine at load 10

  it('a second run finds nothing to do and changes nothing', async () => {
    const before = readTree(dir, ['node_modules', '.authstrap']);
    const result = runCli(['add-auth', dir]);
    expect(result.status, result.output).toBe(0);
    expect(result.stdout).toContain('nothing to do');
    expect(readTree(dir, ['node_modules', '.authstrap'])).toEqual(before);
  });
});

describe('authstrap add-auth, mistakes', () => {
  it('refuses a malformed --rename with exit 2 naming the flag', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), schemaBefore);
    const result = runCli(['add-auth', dir, '--rename', 'Account->Billing']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--rename takes From=To');
  });
});
