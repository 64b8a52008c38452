import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultOrganization } from '../src/generate/migration.js';
import { exampleDir, readTree, repoRoot } from './support/cli.js';
import { countRows, createResources, freePort, query, runCliAsync, verifyCheckIds, type Backend } from './support/example-copies.js';

const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;
if (process.env.CI && !adminUrl) throw new Error('CI is set but AUTHSTRAP_TEST_POSTGRES_URL is not');

// The second kind of existing backend: examples/legacy-backend, an Express + pg app with its own
// tables and rows and no authstrap.schema.ts. add-auth reads its database into a schema and writes
// a new backend beside it.
const legacyDir = path.join(repoRoot, 'examples/legacy-backend');
const legacyTables = ['users', 'accounts', 'invoices', 'sessions', 'session_attendees'];

describe.runIf(adminUrl)('authstrap add-auth on a database without a schema file (examples/legacy-backend)', () => {
  const resources = createResources({ adminUrl, name: 'legacy' });
  let databaseUrl: string;
  let dir: string;
  let countsBefore: Record<string, number>;
  let legacyUrl: string;

  /** The legacy app itself, as its README starts it. */
  async function startLegacyApp(): Promise<{ url: string; stop: () => Promise<void> }> {
    const port = await freePort();
    const child = spawn(process.execPath, ['src/server.js'], { cwd: legacyDir, env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, PORT: String(port) }, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const url = `http://127.0.0.1:${port}`;
    for (let attempt = 0; attempt < 100; attempt += 1) {
      if (await fetch(`${url}/health`).then((response) => response.ok, () => false)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { url, stop: async () => void (child.kill('SIGTERM'), await exited) };
  }

  beforeAll(async () => {
    databaseUrl = await resources.createDatabase();
    const load = spawnSync(process.execPath, ['scripts/load.mjs', '--database-url', databaseUrl], { cwd: legacyDir, encoding: 'utf8' });
    expect(load.status, load.stderr).toBe(0);
    countsBefore = await countRows(databaseUrl, legacyTables);
    // The new backend's folder: its dependencies are the example's (an install would take minutes).
    dir = path.join(resources.temporaryFolder('authstrap-legacy-'), 'legacy-auth');
    fs.mkdirSync(dir);
    fs.symlinkSync(path.join(exampleDir, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  }, 60_000);
  afterAll(() => resources.cleanup(), 60_000);

  it('--dry-run shows the schema read from the database and the migration, and changes nothing', async () => {
    const tablesBefore = await query<{ table_name: string }>(databaseUrl, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1");
    const run = await runCliAsync(['add-auth', dir, '--database-url', databaseUrl, '--dry-run'], repoRoot);
    expect(run.status, run.output).toBe(0);
    expect(run.stdout).toContain("table: 'accounts'");
    expect(run.stdout).toMatch(/table "session_attendees" is not mapped: its primary key has 2 columns/);
    expect(run.stdout).toMatch(/ALTER TABLE "users" ADD COLUMN "organizationId" uuid NOT NULL DEFAULT/);
    expect(run.stdout).toContain('(dry run: nothing changed)');
    expect(fs.readdirSync(dir)).toEqual(['node_modules']);
    expect(await query(databaseUrl, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")).toEqual(tablesBefore);
    expect(await countRows(databaseUrl, legacyTables)).toEqual(countsBefore);
  }, 60_000);

  it('writes a backend beside the app, migrates the shared database and passes verify', async () => {
    const port = await freePort();
    const run = await runCliAsync(['add-auth', dir, '--database-url', databaseUrl, '--backend-port', String(port)], repoRoot);
    expect(run.status, run.output).toBe(0);
    expect(run.output).toMatch(/Account clashes with an auth entity: renamed to AppAccount \(keeps its table "accounts"\)/);
    expect(run.output).toMatch(/User clashes with an auth entity: renamed to AppUser \(keeps its table "users"\)/);
    expect(run.output).toMatch(/Session clashes with an auth entity: renamed to AppSession \(keeps its table "sessions"\)/);
    expect(run.output).toMatch(/Organizations cannot see each other/);
    expect(run.output).toContain(`\n${verifyCheckIds.length} passed, 0 failed\n`);

    // Every row is still there, and every row of a mapped table is in the default organization.
    expect(await countRows(databaseUrl, legacyTables)).toEqual(countsBefore);
    for (const table of ['users', 'accounts', 'invoices', 'sessions']) {
      const organizations = await query<{ organizationId: string }>(databaseUrl, `SELECT DISTINCT "organizationId" FROM ${table}`);
      expect(organizations).toEqual([{ organizationId: defaultOrganization.id }]);
    }
    // The schema file names the tables as they are; its comments are still there after the renames.
    const schema = fs.readFileSync(path.join(dir, 'authstrap.schema.ts'), 'utf8');
    expect(schema).toMatch(/^\/\/ Read from the database /);
    expect(schema).toContain('// Note: table "session_attendees" is not mapped');
    expect(schema).toMatch(/AppUser: \{\n\s+table: 'users',\n\s+idType: 'integer',\n\s+createdAt: 'created_at',/);
    expect(schema).toContain("references: 'AppAccount'");
  }, 120_000);

  it("the app's own inserts and reads still work on the shared database", async () => {
    const legacy = await startLegacyApp();
    try {
      const created = await fetch(`${legacy.url}/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'after-auth@example.com', full_name: 'After Auth' }) });
      expect(created.status).toBe(201);
      const again = await fetch(`${legacy.url}/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'after-auth@example.com' }) });
      expect(again.status).toBe(409);
      const session = await fetch(`${legacy.url}/workshop-sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'After auth', starts_at: '2030-01-01T10:00:00Z', capacity: 5, host_user_id: 1 }),
      });
      expect(session.status).toBe(201);
      expect((await fetch(`${legacy.url}/accounts`)).status).toBe(200);
    } finally {
      await legacy.stop();
    }
    const [row] = await query<{ organizationId: string }>(databaseUrl, `SELECT "organizationId" FROM users WHERE email = 'after-auth@example.com'`);
    expect(row!.organizationId).toBe(defaultOrganization.id);
  }, 60_000);

  describe('the new API over the existing tables', () => {
    let backend: Backend;
    let headers: Record<string, string>;
    const api = async (method: string, route: string, body?: unknown) => {
      const response = await fetch(`${backend.url}${route}`, { method, headers: { ...headers, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: response.status, body: response.status === 204 ? undefined : await response.json() };
    };

    beforeAll(async () => {
      backend = await resources.startBackend(dir, databaseUrl);
      headers = {};
      const signUp = await api('POST', '/api/auth/sign-up/email', { email: `owner-${Date.now()}@example.com`, password: 'a long enough password', name: 'Owner' });
      expect(signUp.status).toBe(201);
      headers = { authorization: `Bearer ${signUp.body.data.token}` };
      const session = await api('GET', '/api/auth/get-session');
      headers['x-organization-id'] = session.body.data.organizations[0].id;
    }, 60_000);

    it('numbers new rows, reads them by number, and keeps the default organization’s rows out of sight', async () => {
      const created = await api('POST', '/app-users', { email: 'api@example.com', fullName: 'From the API' });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.data).toMatchObject({ email: 'api@example.com', fullName: 'From the API' });
      expect(Number.isInteger(created.body.data.id)).toBe(true);
      expect((await api('GET', `/app-users/${created.body.data.id}`)).body.data.email).toBe('api@example.com');
      // Row 1 exists, in the default organization: not this one's.
      expect((await api('GET', '/app-users/1')).status).toBe(404);
      expect((await api('GET', '/app-users/not-a-number')).status).toBe(404);
      expect((await api('GET', '/app-users/0')).status).toBe(404);
      const list = await api('GET', '/app-users');
      expect(list.body.meta.total).toBe(1);

      // Callers never choose a numbered id.
      expect((await api('POST', '/app-users', { id: 999, email: 'chosen@example.com' })).status).toBe(422);
      // Another organization's account cannot be referenced.
      expect((await api('POST', '/invoices', { accountId: 1, amountCents: 100 })).status).toBe(422);
      const account = await api('POST', '/app-accounts', { plan: 'pro', userId: created.body.data.id });
      expect(account.status, JSON.stringify(account.body)).toBe(201);
      const invoice = await api('POST', '/invoices', { accountId: account.body.data.id, amountCents: 250 });
      expect(invoice.status, JSON.stringify(invoice.body)).toBe(201);
      expect(invoice.body.data).toMatchObject({ status: 'open', amountCents: 250 });
      expect((await api('PATCH', `/invoices/${invoice.body.data.id}`, { status: 'paid' })).body.data.status).toBe('paid');
      // An empty PATCH on a table without updatedAt still answers with the record, unchanged.
      const unchanged = await api('PATCH', `/invoices/${invoice.body.data.id}`, {});
      expect(unchanged.status).toBe(200);
      expect(unchanged.body.data).toMatchObject({ id: invoice.body.data.id, status: 'paid', amountCents: 250 });
      // invoices has no creation time: lists sort by id, and createdAfter is refused by name.
      expect((await api('GET', '/invoices')).body.data.map((row: { id: number }) => row.id)).toEqual([invoice.body.data.id]);
      const filtered = await api('GET', '/invoices?createdAfter=2020-01-01');
      expect(filtered.status).toBe(400);
      expect(filtered.body.error.details).toHaveProperty('createdAfter');
      expect((await api('DELETE', `/invoices/${invoice.body.data.id}`)).status).toBe(204);
    });
  });

  it('a second run finds nothing to do and changes no file', async () => {
    const before = readTree(dir, ['node_modules', '.authstrap']);
    const run = await runCliAsync(['add-auth', dir], repoRoot);
    expect(run.status, run.output).toBe(0);
    expect(run.stdout).toMatch(/auth is already there; nothing to do/);
    expect(readTree(dir, ['node_modules', '.authstrap'])).toEqual(before);
  }, 60_000);
});

describe('authstrap add-auth without a schema file: mistakes get a message naming what to change', () => {
  const resources = createResources({ adminUrl, name: 'legacy-usage' });
  afterAll(() => resources.cleanup());

  it('no schema file and no --database-url: exit 2 naming the file and the flag', async () => {
    const dir = resources.temporaryFolder('authstrap-legacy-usage-');
    const run = await runCliAsync(['add-auth', dir], repoRoot);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('has no authstrap.schema.ts');
    expect(run.stderr).toMatch(/--database-url postgresql:\/\//);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('an app whose backend folder beside it is taken: exit 2 naming that folder, nothing written', async () => {
    const root = resources.temporaryFolder('authstrap-legacy-usage-');
    fs.cpSync(legacyDir, path.join(root, 'shop'), { recursive: true, filter: (source) => !source.includes('node_modules') });
    fs.mkdirSync(path.join(root, 'shop-auth'));
    fs.writeFileSync(path.join(root, 'shop-auth/notes.txt'), 'mine\n');
    const before = readTree(root);
    const run = await runCliAsync(['add-auth', '--database-url', 'postgresql://postgres@127.0.0.1:1/none'], path.join(root, 'shop'));
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/\.\.\/shop-auth, where the backend of \. goes, exists and is not empty/);
    expect(readTree(root)).toEqual(before);
  });

  it('a database that cannot be reached: exit 1, the password masked', async () => {
    const dir = resources.temporaryFolder('authstrap-legacy-usage-');
    const run = await runCliAsync(['add-auth', dir, '--database-url', 'postgresql://someone:secret-password@127.0.0.1:1/nothing'], repoRoot);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/Cannot read the database at postgresql:\/\/someone:\*+@127\.0\.0\.1:1\/nothing/);
    expect(run.output).not.toContain('secret-password');
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

describe.runIf(adminUrl)("authstrap add-auth in an existing app's folder (a copy of examples/legacy-backend with a .env)", () => {
  const resources = createResources({ adminUrl, name: 'legacy_app' });
  let databaseUrl: string;
  let root: string;
  let appDir: string;

  beforeAll(async () => {
    databaseUrl = await resources.createDatabase();
    const load = spawnSync(process.execPath, ['scripts/load.mjs', '--database-url', databaseUrl], { cwd: legacyDir, encoding: 'utf8' });
    expect(load.status, load.stderr).toBe(0);
    root = resources.temporaryFolder('authstrap-legacy-app-');
    appDir = path.join(root, 'shop');
    fs.cpSync(legacyDir, appDir, { recursive: true, filter: (source) => !source.includes('node_modules') });
    // The app listens on 3000 and names its database in its own .env, as apps do.
    fs.writeFileSync(path.join(appDir, '.env'), `PORT=3000\nDATABASE_URL=${databaseUrl}\n`);
  }, 60_000);
  afterAll(() => resources.cleanup(), 60_000);

  it('reads DATABASE_URL from the app\'s .env, writes the backend into ../shop-auth and says so', async () => {
    const appBefore = readTree(appDir);
    const run = await runCliAsync(['add-auth', '--no-install', '--json'], appDir);
    expect(run.status, run.output).toBe(0);
    const backendDir = path.join(root, 'shop-auth');
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, dir: backendDir, outcome: 'applied', migration: expect.stringMatching(/^migrations\/.+\.sql$/) });
    expect(run.stderr).toContain('The new backend is in ../shop-auth, beside the app in .;');
    expect(run.stderr).toContain('Next: cd ../shop-auth && npm install && npm start');

    expect(readTree(appDir)).toEqual(appBefore);
    expect(fs.readFileSync(path.join(backendDir, 'authstrap.schema.ts'), 'utf8')).toContain("table: 'accounts'");
    const env = fs.readFileSync(path.join(backendDir, '.env'), 'utf8');
    expect(env).toContain(`DATABASE_URL=${databaseUrl}\n`);
    // The app has 3000; the backend beside it takes the next port, and its README says which.
    expect(env).toContain('PORT=3001\n');
    expect(fs.readFileSync(path.join(backendDir, 'README.md'), 'utf8')).toContain('http://localhost:3001');
  }, 60_000);

  it('a second run in the app\'s folder finds the backend beside it, with nothing to do', async () => {
    const backendDir = path.join(root, 'shop-auth');
    const before = readTree(backendDir);
    const run = await runCliAsync(['add-auth'], appDir);
    expect(run.status, run.output).toBe(0);
    expect(run.stdout).toContain('. is an app; its authstrap backend is ../shop-auth');
    expect(run.stdout).toMatch(/auth is already there; nothing to do/);
    expect(readTree(backendDir)).toEqual(before);
  }, 60_000);
});
