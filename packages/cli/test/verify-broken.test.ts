import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './support/cli.js';
import { breakFile, countRows, createResources, freePort, query, runCliAsync, type Backend } from './support/example-copies.js';

/**
 * `authstrap verify` against real backends run as processes: the example project copied and
 * broken in one place each, on a fresh PostgreSQL database each. Verify must name exactly the
 * checks that the breakage fails, and pass everything on an unbroken copy.
 */

const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;

const allChecks = [
  'server-up',
  'database-connected',
  'api-docs',
  'sign-up',
  'sign-in',
  'session',
  'auth-endpoints',
  'tenant-isolation',
  'service-credential',
  'tables',
  'credential-account',
];
const httpChecks = allChecks.slice(0, 9);
const databaseChecks = allChecks.slice(9);

interface CheckResult {
  id: string;
  status: 'pass' | 'fail' | 'skip';
  message: string;
  fix?: string;
}
interface VerifyReport {
  ok: boolean;
  url: string;
  checks: CheckResult[];
  leftBehind?: string;
}

const { createDatabase, temporaryFolder, copyOfExample, startBackend: startOn, cleanup } = createResources({ adminUrl, name: 'verify' });
/** One argument only: it is given to Array#map, whose index must not become a database URL. */
const startBackend = (dir: string) => startOn(dir);

async function verify(backend: Backend, extraArgs: string[] = [], databaseUrl = backend.databaseUrl) {
  // An empty folder: no .env of anyone's leaks into the run.
  const cwd = temporaryFolder('authstrap-verify-cwd-');
  // With the backend's service key, as a project's .env gives it (the adapter check needs it).
  const serviceKey = extraArgs.includes('--service-key') ? [] : ['--service-key', backend.serviceApiKey];
  const result = await runCliAsync(['verify', '--json', '--url', backend.url, '--database-url', databaseUrl, ...serviceKey, ...extraArgs], cwd);
  let report: VerifyReport;
  try {
    report = JSON.parse(result.stdout);
  } catch {
    throw new Error(`verify printed no JSON (exit ${result.status}):\n${result.output}`);
  }
  return { ...result, report };
}

const idsWith = (report: VerifyReport, status: CheckResult['status']) =>
  report.checks
    .filter((check) => check.status === status)
    .map((check) => check.id)
    .sort();

describe.runIf(adminUrl)('authstrap verify against running backends', () => {
  const backends: Record<'healthy' | 'emptyProviderId' | 'listIgnoresTenant' | 'missingTable' | 'wrongDatabase', Backend> = {} as never;
  /** An empty database that is not the one the `wrongDatabase` backend uses. */
  let otherDatabaseUrl: string;

  beforeAll(async () => {
    const healthy = copyOfExample();

    const emptyProviderId = copyOfExample();
    breakFile(
      emptyProviderId,
      'src/extensions/auth/auth.service.ts',
      `VALUES ($1, $2, 'credential', $3)`,
      `VALUES ($1, $2, '', $3)`,
    );

    const listIgnoresTenant = copyOfExample();
    breakFile(
      listIgnoresTenant,
      'src/generated/Project/project.repository.ts',
      // The list route's read (PostgreSQL writes its JSON: listJson).
      'return listJson(db, projectListSpec, query, { organizationId });',
      'return listJson(db, projectListSpec, query, {});',
    );

    const missingTable = copyOfExample();
    const wrongDatabase = copyOfExample();

    const [started, other] = await Promise.all([
      Promise.all([healthy, emptyProviderId, listIgnoresTenant, missingTable, wrongDatabase].map(startBackend)),
      createDatabase(),
    ]);
    [backends.healthy, backends.emptyProviderId, backends.listIgnoresTenant, backends.missingTable, backends.wrongDatabase] = started as [Backend, Backend, Backend, Backend, Backend];
    otherDatabaseUrl = other;
    // After its migrations ran: the table goes missing under a running backend.
    await query(backends.missingTable.databaseUrl, 'DROP TABLE "verification"');
  }, 90_000);

  // Processes first (they hold connections), then databases and folders.
  afterAll(cleanup, 60_000);

  it.concurrent('passes every check on a healthy backend, exit 0, and leaves no test users behind', async () => {
    const backend = backends.healthy;
    expect(await countRows(backend.databaseUrl, ['User'])).toEqual({ User: 0 });

    const { status, report, output } = await verify(backend);
    expect(report.checks.map((check) => [check.id, check.status]), output).toEqual(allChecks.map((id) => [id, 'pass']));
    expect(report.ok).toBe(true);
    expect(report.leftBehind).toBeUndefined();
    expect(status).toBe(0);

    // Alice, Bob and Carol, their accounts, sessions, organizations and the Project: all gone.
    expect(await countRows(backend.databaseUrl, ['User', 'account', 'session', 'member', 'Organization', 'Project'])).toEqual({
      User: 0,
      account: 0,
      session: 0,
      member: 0,
      Organization: 0,
      Project: 0,
    });
  });

  it.concurrent("sign-up storing providerId '' fails exactly sign-in and credential-account, exit 1", async () => {
    const { status, report, output } = await verify(backends.emptyProviderId);
    expect(idsWith(report, 'fail'), output).toEqual(['credential-account', 'sign-in']);
    expect(idsWith(report, 'skip')).toEqual([]);
    // Sign-up itself answers 201: the account is stored, only under the wrong provider.
    expect(report.checks.find((check) => check.id === 'sign-up')?.status).toBe('pass');
    const credential = report.checks.find((check) => check.id === 'credential-account')!;
    expect(credential.message).toContain(`account.providerId is ""`);
    expect(credential.fix).toContain('credential-provider');
    expect(report.checks.find((check) => check.id === 'sign-in')!.message).toContain('the right password answered 401');
    expect(report.ok).toBe(false);
    expect(status).toBe(1);
    expect(await countRows(backends.emptyProviderId.databaseUrl, ['User', 'Organization'])).toEqual({ User: 0, Organization: 0 });
  });

  it.concurrent('a list that ignores the tenant fails exactly tenant-isolation, exit 1', async () => {
    const { status, report, output } = await verify(backends.listIgnoresTenant);
    expect(idsWith(report, 'fail'), output).toEqual(['tenant-isolation']);
    expect(idsWith(report, 'skip')).toEqual([]);
    expect(report.checks.find((check) => check.id === 'tenant-isolation')!.message).toBe("GET /Projects in Bob's organization lists Alice's record");
    expect(report.ok).toBe(false);
    expect(status).toBe(1);
  });

  it.concurrent('a missing verification table fails tables and sign-up, exit 1', async () => {
    const { status, report, output } = await verify(backends.missingTable);
    // Sign-up writes the link that confirms the address to `verification`: it fails too, and the
    // checks that need a signed-up user do not run.
    expect(idsWith(report, 'fail'), output).toEqual(['sign-up', 'tables']);
    expect(idsWith(report, 'skip')).toEqual(['auth-endpoints', 'credential-account', 'session', 'sign-in', 'tenant-isolation']);
    expect(report.checks.find((check) => check.id === 'tables')!.message).toBe('table "verification" is missing');
    expect(report.ok).toBe(false);
    expect(status).toBe(1);
  });

  it.concurrent("given another database than the backend's, fails its checks and still removes the test users through the API", async () => {
    const backend = backends.wrongDatabase;
    const { status, report, output } = await verify(backend, ['--service-key', backend.serviceApiKey], otherDatabaseUrl);
    expect(idsWith(report, 'fail'), output).toEqual(['credential-account', 'tables']);
    expect(report.checks.find((check) => check.id === 'tables')!.message).toContain('table "User" is missing');
    expect(status).toBe(1);
    // Nothing could be deleted in the database verify read: the API removed it all instead.
    expect(report.leftBehind, output).toBeUndefined();
    expect(await countRows(backend.databaseUrl, ['User', 'account', 'member', 'Organization', 'Project'])).toEqual({
      User: 0,
      account: 0,
      member: 0,
      Organization: 0,
      Project: 0,
    });
  });
});

describe('authstrap verify without a backend', () => {
  it('fails server-up and skips the other HTTP checks when nothing listens, exit 1', async () => {
    const cwd = tempDir('authstrap-verify-cwd-');
    try {
      const port = await freePort();
      const { status, stdout, output } = await runCliAsync(['verify', '--json', '--url', `http://127.0.0.1:${port}`], cwd);
      const report: VerifyReport = JSON.parse(stdout);
      expect(report.checks.map((check) => check.id), output).toEqual(allChecks);
      const byId = new Map(report.checks.map((check) => [check.id, check]));
      expect(byId.get('server-up')!.status).toBe('fail');
      expect(byId.get('server-up')!.message).toMatch(/ECONNREFUSED|fetch failed/);
      for (const id of httpChecks.slice(1)) expect(byId.get(id)!.status, id).toBe('skip');
      // No --database-url and no project here: nothing to read, so nothing failed there either.
      for (const id of databaseChecks) expect(byId.get(id)!.status, id).toBe('skip');
      expect(report.ok).toBe(false);
      expect(status).toBe(1);
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('refuses --url not-a-url with exit 2, naming --url', async () => {
    const cwd = tempDir('authstrap-verify-cwd-');
    try {
      const { status, stdout, stderr } = await runCliAsync(['verify', '--url', 'not-a-url'], cwd);
      expect(status).toBe(2);
      expect(stderr).toContain('--url');
      expect(stderr).toContain('not-a-url');
      expect(stdout).toBe('');
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });
});
