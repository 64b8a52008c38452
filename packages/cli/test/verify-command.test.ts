import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl, verifyProject, type VerifyRun } from './support/check-cycle.js';
import { runCli, tempDir } from './support/cli.js';
import { countRows, createResources, runCliAsync, type Backend } from './support/example-copies.js';

/**
 * `authstrap verify` as a whole, against healthy copies of the example run as processes on
 * PostgreSQL: every check passes, nothing is left behind, settings are taken in the backend's
 * order, and what could not run is skipped, never passed. Each breakage is in its check's
 * test (test/checks/<check>.test.ts).
 */

const parse = (result: { stdout: string; output: string; status: number | null }): VerifyRun => {
  try {
    return { ...result, stderr: '', report: JSON.parse(result.stdout) };
  } catch {
    throw new Error(`verify printed no JSON (exit ${result.status}):\n${result.output}`);
  }
};

describe.runIf(adminUrl)('authstrap verify against healthy backends', () => {
  const resources = createResources({ adminUrl, name: 'verify' });
  let dir: string;
  let backend: Backend;
  let otherBackend: Backend;
  let otherDatabaseUrl: string;
  let strictDir: string;
  let strictBackend: Backend;
  beforeAll(async () => {
    dir = resources.copyOfExample('ALLOWED_ORIGINS=http://localhost:5173\n');
    strictDir = resources.copyOfExample('ALLOWED_ORIGINS=http://localhost:5173\nREQUIRE_EMAIL_VERIFICATION=true\n');
    [backend, otherBackend, otherDatabaseUrl, strictBackend] = await Promise.all([
      resources.startBackend(dir),
      resources.startBackend(resources.copyOfExample()),
      resources.createDatabase(),
      resources.startBackend(strictDir),
    ]);
  }, 90_000);
  afterAll(resources.cleanup, 60_000);

  it('in the project folder: every check runs and passes, exit 0, and no test row is left behind', async () => {
    expect(await countRows(backend.databaseUrl, ['User'])).toEqual({ User: 0 });
    const { status, report, output } = await verifyProject(dir, backend);
    expect(report.checks.filter((check) => check.status !== 'pass'), output).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.leftBehind).toBeUndefined();
    expect(status).toBe(0);
    // Alice, Bob, Carol and Dora, their accounts, sessions, organizations and records: all gone.
    expect(await countRows(backend.databaseUrl, ['User', 'account', 'session', 'member', 'Organization', 'Project', 'Task'])).toEqual({
      User: 0,
      account: 0,
      session: 0,
      member: 0,
      Organization: 0,
      Project: 0,
      Task: 0,
    });
  });

  it("against a backend that wants addresses confirmed (production's default): confirms its test users with the service key, and passes", async () => {
    const { status, report, output } = await verifyProject(strictDir, strictBackend);
    expect(report.checks.filter((check) => check.status !== 'pass'), output).toEqual([]);
    expect(status).toBe(0);
    expect(await countRows(strictBackend.databaseUrl, ['User'])).toEqual({ User: 0 });
  });

  it('outside the project (--url only): the project checks are skipped with the reason, never passed, in JSON and text', async () => {
    const cwd = resources.temporaryFolder('authstrap-verify-cwd-');
    const args = ['verify', '--url', backend.url, '--database-url', backend.databaseUrl, '--service-key', backend.serviceApiKey];
    const { status, report, output } = parse(await runCliAsync([...args, '--json'], cwd));
    const skipped = report.checks.filter((check) => check.status === 'skip');
    expect(skipped.map((check) => check.id), output).toEqual(['name-clash', 'id-field', 'module-wiring', 'cors-origin', 'loopback-hosts', 'adapter-version', 'sso-connections', 'credential-provider', 'nullability', 'not-null-rows', 'row-level-security', 'owned-upgrades']);
    for (const check of skipped) expect(check.message, check.id).toContain('the project was not examined: run verify in its folder, or pass --dir');
    expect(report.checks.filter((check) => check.status === 'fail'), output).toEqual([]);
    expect(status).toBe(0);
    const text = await runCliAsync(args, cwd);
    for (const check of skipped) {
      const line = text.stdout.split('\n').find((candidate) => candidate.includes(` ${check.title} — `))!;
      expect(line, check.id).toMatch(/^– /);
    }
    expect(text.stdout).toMatch(/\n14 passed, 0 failed, 12 skipped — /);
  });

  it("given another database than the backend's: fails the checks that read it, and removes the test users through the API", async () => {
    const cwd = resources.temporaryFolder('authstrap-verify-cwd-');
    const { status, report, output } = parse(await runCliAsync(['verify', '--json', '--url', otherBackend.url, '--database-url', otherDatabaseUrl, '--service-key', otherBackend.serviceApiKey], cwd));
    expect(report.checks.filter((check) => check.status === 'fail').map((check) => check.id), output).toEqual(['tables', 'credential-provider']);
    expect(report.checks.find((check) => check.id === 'tables')!.message).toContain('table "User" is missing');
    expect(status).toBe(1);
    expect(report.leftBehind, output).toBeUndefined();
    expect(await countRows(otherBackend.databaseUrl, ['User', 'account', 'member', 'Organization', 'Project'])).toEqual({ User: 0, account: 0, member: 0, Organization: 0, Project: 0 });
  });

  it('takes the URL and the database as the backend does: the environment over .env', async () => {
    // .env points at nothing; the environment at the backend and its database.
    const project = resources.copyOfExample(`AUTH_URL=http://localhost:1\nDATABASE_URL=postgresql://nobody@127.0.0.1:1/none\nALLOWED_ORIGINS=http://localhost:5173\n`);
    const env = { AUTH_URL: backend.url, DATABASE_URL: backend.databaseUrl, SERVICE_API_KEY: backend.serviceApiKey };
    const { status, report, output } = parse(await runCliAsync(['verify', '--json'], project, env));
    expect(report.url).toBe(backend.url);
    expect(report.checks.filter((check) => check.status !== 'pass'), output).toEqual([]);
    expect(status).toBe(0);
    // A flag wins over both.
    const flagged = parse(await runCliAsync(['verify', '--json', '--url', 'http://127.0.0.1:1'], project, env));
    expect(flagged.report.checks.find((check) => check.id === 'server-up')!.status).toBe('fail');
  });
});

describe('authstrap verify: usage', () => {
  it('says in --help where each setting comes from, in the order the backend takes them', () => {
    const help = runCli(['verify', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('Settings come in the order the backend takes them: a flag, then the process environment (AUTH_URL, PORT, DATABASE_URL, EMBEDDED_DB_DIR, SERVICE_API_KEY), then the .env of --dir.');
  });

  it('refuses --url not-a-url with exit 2, naming --url', () => {
    const cwd = tempDir('authstrap-verify-cwd-');
    try {
      const { status, stdout, stderr } = runCli(['verify', '--url', 'not-a-url'], cwd);
      expect(status).toBe(2);
      expect(stderr).toContain('--url');
      expect(stderr).toContain('not-a-url');
      expect(stdout).toBe('');
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('outside a project, without --url: exit 2, saying what to pass', () => {
    const cwd = tempDir('authstrap-verify-cwd-');
    try {
      fs.mkdirSync(path.join(cwd, 'empty'));
      const { status, stderr } = runCli(['verify', '--dir', 'empty'], cwd);
      expect(status).toBe(2);
      expect(stderr).toMatch(/empty is not an authstrap project \(no \.env, no authstrap\.schema\.ts\).*--dir.*--url/);
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });
});
