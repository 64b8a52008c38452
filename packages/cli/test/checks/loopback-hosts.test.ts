import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeRepairCycle } from '../support/check-cycle.js';
import { copyExampleFiles, readTree, runCli, tempDir } from '../support/cli.js';
import { fixCheckIds } from '../support/example-copies.js';

// `loopback-hosts`: localhost mixed with 127.0.0.1 among the backend's AUTH_URL/ALLOWED_ORIGINS and
// a frontend's env files (the browser drops the session cookie between the two, so every request
// after sign-in is 401). `fix` repairs it, `verify` reports it; `setup` says so when it writes a
// backend beside such a frontend.

const { stage } = describeRepairCycle('loopback-hosts', [
  {
    name: 'a Vite frontend in web/ whose .env.local names the backend 127.0.0.1',
    planShows: ['--- a/web/.env.local', '+AUTHSTRAP_URL=http://localhost:3000'],
    breakFiles(dir) {
      fs.mkdirSync(path.join(dir, 'web'));
      fs.writeFileSync(path.join(dir, 'web/package.json'), JSON.stringify({ name: 'web', private: true, devDependencies: { vite: '^7.0.0' } }));
      fs.writeFileSync(path.join(dir, 'web/.env.local'), 'AUTHSTRAP_URL=http://127.0.0.1:3000\n');
    },
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('loopback-hosts: what verify says', () => {
  it('names the settings, and the repair', () => {
    const check = stage('a Vite frontend in web/ whose .env.local names the backend 127.0.0.1', 'verifyBefore').report.checks.find((result) => result.id === 'loopback-hosts')!;
    expect(check.message).toContain('localhost and 127.0.0.1 are mixed (localhost: ALLOWED_ORIGINS in .env; 127.0.0.1: AUTHSTRAP_URL in web/.env.local)');
    expect(check.fix).toBe('authstrap fix repairs it: use localhost in AUTHSTRAP_URL in web/.env.local');
  });
});

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
});

/** root/api: the example's files with `env` as its .env; root/<frontend>: the frontend's files. */
function project(env: string, frontend: { dir: string; files: Record<string, string> }): { root: string; dir: string } {
  const root = tempDir('authstrap-loopback-');
  roots.push(root);
  const dir = copyExampleFiles(path.join(root, 'api'));
  fs.writeFileSync(path.join(dir, '.env'), env);
  for (const [file, text] of Object.entries(frontend.files)) {
    fs.mkdirSync(path.dirname(path.join(root, frontend.dir, file)), { recursive: true });
    fs.writeFileSync(path.join(root, frontend.dir, file), text);
  }
  return { root, dir };
}

interface FixReport {
  ok: boolean;
  checks: { id: string; status: string; message: string; repaired?: boolean }[];
}
const fixJson = (args: string[]) => {
  const result = runCli(['fix', ...args, '--json']);
  return { ...result, report: JSON.parse(result.stdout) as FixReport };
};
const statuses = (report: FixReport) => report.checks.map((check) => [check.id, check.status]);
/** Without a database (these copies have none) its checks are skipped; every other one passes but `failing`. */
const expected = (...failing: string[]) =>
  fixCheckIds.map((id) => [id, failing.includes(id) ? 'fail' : ['sso-connections', 'credential-provider', 'nullability', 'not-null-rows', 'row-level-security'].includes(id) ? 'skip' : 'pass']);
const finding = (report: FixReport, id = 'loopback-hosts') => report.checks.find((check) => check.id === id)!;

const nextPackage = JSON.stringify({ name: 'web', private: true, dependencies: { next: '^15.0.0' } }, null, 2);

describe('loopback-hosts without a backend', () => {
  it('finds 127.0.0.1 mixed with localhost across the backend and a frontend beside it, --dry-run changes nothing, fix rewrites both files, a second fix is a no-op', () => {
    // A Next.js frontend in ../web (its dev server: http://localhost:3000); the backend on 4000.
    const { root, dir } = project('NODE_ENV=development\nPORT=4000\nAUTH_URL=http://127.0.0.1:4000\nALLOWED_ORIGINS=http://localhost:3000\n', {
      dir: 'web',
      files: {
        'package.json': nextPackage,
        '.env.local': 'BETTER_AUTH_URL=http://localhost:3000\nAUTHSTRAP_URL=http://127.0.0.1:4000\nNEXT_PUBLIC_AUTHSTRAP_URL=http://127.0.0.1:4000/\n',
        '.env': '# defaults; .env.local wins\nNEXT_PUBLIC_AUTHSTRAP_URL=https://api.example.com\n',
      },
    });
    const before = readTree(root, ['api/node_modules']);

    const dryRun = fixJson([dir, '--dry-run']);
    expect(dryRun.status, dryRun.output).toBe(1);
    expect(statuses(dryRun.report)).toEqual(expected('loopback-hosts'));
    expect(finding(dryRun.report).message).toBe(
      'localhost and 127.0.0.1 are mixed (localhost: ALLOWED_ORIGINS in .env, BETTER_AUTH_URL in ../web/.env.local; 127.0.0.1: AUTH_URL in .env, AUTHSTRAP_URL in ../web/.env.local, NEXT_PUBLIC_AUTHSTRAP_URL in ../web/.env.local): ' +
        'browsers treat them as different sites, so the session cookie set by one is not sent from a page on the other and every request after sign-in is 401; use localhost everywhere',
    );
    const text = runCli(['fix', dir, '--dry-run']);
    expect(text.status).toBe(1);
    expect(text.stdout).toContain('# loopback-hosts: use localhost in AUTH_URL in .env, AUTHSTRAP_URL in ../web/.env.local, NEXT_PUBLIC_AUTHSTRAP_URL in ../web/.env.local');
    expect(text.stdout).toContain('--- a/.env\n+++ b/.env');
    expect(text.stdout).toContain('-AUTH_URL=http://127.0.0.1:4000\n+AUTH_URL=http://localhost:4000');
    expect(text.stdout).toContain('--- a/../web/.env.local');
    expect(text.stdout).toContain('+NEXT_PUBLIC_AUTHSTRAP_URL=http://localhost:4000/');
    expect(text.stdout).toMatch(/✘ Local URLs use one name for this machine — localhost and 127\.0\.0\.1 are mixed/);
    expect(readTree(root, ['api/node_modules'])).toEqual(before);

    const fixed = fixJson([dir]);
    expect(fixed.status, fixed.output).toBe(0);
    expect(fixed.report.ok).toBe(true);
    expect(finding(fixed.report)).toMatchObject({ status: 'pass', repaired: true, message: expect.stringMatching(/^repaired: use localhost in AUTH_URL in \.env/) });
    expect(fixed.report.checks.filter((check) => check.repaired).map((check) => check.id)).toEqual(['loopback-hosts']);
    const after = readTree(root, ['api/node_modules']);
    expect(after.get('api/.env')).toBe('NODE_ENV=development\nPORT=4000\nAUTH_URL=http://localhost:4000\nALLOWED_ORIGINS=http://localhost:3000\n');
    expect(after.get('web/.env.local')).toBe('BETTER_AUTH_URL=http://localhost:3000\nAUTHSTRAP_URL=http://localhost:4000\nNEXT_PUBLIC_AUTHSTRAP_URL=http://localhost:4000/\n');
    // Nothing else changed: not the frontend's .env (no loopback host in it), not a file of the backend.
    expect([...after.keys()].filter((file) => after.get(file) !== before.get(file))).toEqual(['api/.env', 'web/.env.local']);

    const again = fixJson([dir]);
    expect(again.status, again.output).toBe(0);
    expect(finding(again.report)).toEqual({ id: 'loopback-hosts', title: 'Local URLs use one name for this machine', status: 'pass', message: expect.stringContaining('every local URL uses localhost') });
    expect(again.report.checks.some((check) => check.repaired)).toBe(false);
    expect(readTree(root, ['api/node_modules'])).toEqual(after);
  });

  it('lands together with cors-origin in one run when both change ALLOWED_ORIGINS', () => {
    // The Vite frontend runs on localhost:5200, which ALLOWED_ORIGINS lacks (cors-origin), and
    // 127.0.0.1:5173 there is mixed with AUTH_URL's localhost (loopback-hosts).
    const { dir } = project('AUTH_URL=http://localhost:3000\nALLOWED_ORIGINS=http://127.0.0.1:5173\n', {
      dir: 'api/web',
      files: { 'package.json': JSON.stringify({ name: 'web', private: true, devDependencies: { vite: '^7.0.0' } }), 'vite.config.ts': 'export default { server: { port: 5200 } };\n' },
    });
    const dryRun = fixJson([dir, '--dry-run']);
    expect(statuses(dryRun.report)).toEqual(expected('cors-origin', 'loopback-hosts'));
    const fixed = fixJson([dir]);
    expect(fixed.status, fixed.output).toBe(0);
    expect(fixed.report.checks.filter((check) => check.repaired).map((check) => check.id)).toEqual(['cors-origin', 'loopback-hosts']);
    expect(fs.readFileSync(path.join(dir, '.env'), 'utf8')).toBe('AUTH_URL=http://localhost:3000\nALLOWED_ORIGINS=http://localhost:5173,http://localhost:5200\n');
    expect(statuses(fixJson([dir]).report)).toEqual(expected());
  });

  it('passes, changing nothing, when every URL agrees (all 127.0.0.1 is one site too) or names real domains', () => {
    for (const env of ['AUTH_URL=http://127.0.0.1:3000\nALLOWED_ORIGINS=http://127.0.0.1:5173\n', 'AUTH_URL=https://api.example.com\nALLOWED_ORIGINS=https://app.example.com\n']) {
      const { root, dir } = project(env, { dir: 'elsewhere', files: {} });
      const before = readTree(root, ['api/node_modules']);
      const fixed = fixJson([dir]);
      expect(finding(fixed.report).status, fixed.output).toBe('pass');
      expect(fixed.status).toBe(0);
      expect(readTree(root, ['api/node_modules'])).toEqual(before);
    }
  });
});

describe('authstrap verify: loopback-hosts without a backend', () => {
  it('fails the check in the project folder, naming the settings and the repair, whether the backend answers or not', () => {
    const { dir } = project('AUTH_URL=http://127.0.0.1:1\nALLOWED_ORIGINS=http://localhost:5173\n', { dir: 'elsewhere', files: {} });
    const json = runCli(['verify', '--json', '--dir', dir]);
    const report = JSON.parse(json.stdout) as { ok: boolean; checks: { id: string; status: string; message: string; fix?: string }[] };
    expect(report.checks.find((check) => check.id === 'loopback-hosts')).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('localhost and 127.0.0.1 are mixed (localhost: ALLOWED_ORIGINS in .env; 127.0.0.1: AUTH_URL in .env)'),
      fix: 'authstrap fix repairs it: use localhost in AUTH_URL in .env',
    });
    // Nothing answers at AUTH_URL either.
    expect(report.checks.filter((check) => check.status === 'fail').map((check) => check.id)).toEqual(['server-up', 'loopback-hosts']);
    expect(json.status).toBe(1);

    const text = runCli(['verify', '--dir', dir]);
    expect(text.stdout).toMatch(/✘ Local URLs use one name for this machine — localhost and 127\.0\.0\.1 are mixed/);
    expect(text.stdout).toContain('→ authstrap fix repairs it: use localhost in AUTH_URL in .env');
  });

  it('passes it when the settings agree', () => {
    const { dir } = project('AUTH_URL=http://localhost:1\nALLOWED_ORIGINS=http://localhost:5173\n', { dir: 'elsewhere', files: {} });
    const report = JSON.parse(runCli(['verify', '--json', '--dir', dir]).stdout) as { checks: { id: string; status: string }[] };
    expect(report.checks.find((check) => check.id === 'loopback-hosts')!.status).toBe('pass');
  });
});

describe('authstrap setup: loopback-hosts', () => {
  /** Setup without install (so without start) beside a Next.js frontend whose .env.local says `env`. */
  function setupBeside(env: string) {
    const root = tempDir('authstrap-loopback-setup-');
    roots.push(root);
    fs.mkdirSync(path.join(root, 'web'));
    fs.writeFileSync(path.join(root, 'web/package.json'), nextPackage);
    fs.writeFileSync(path.join(root, 'web/.env.local'), env);
    return runCli(['setup', '--project-name', 'api', '--yes', '--no-install', '--db', 'embedded', '--dir', 'api'], root);
  }

  it('ends with the check failed when the frontend beside the new backend uses 127.0.0.1', () => {
    const result = setupBeside('NEXT_PUBLIC_AUTHSTRAP_URL=http://127.0.0.1:3000\n');
    expect(result.status, result.output).toBe(0);
    expect(result.stdout).toContain('✘ Local URLs use one name for this machine — localhost and 127.0.0.1 are mixed (localhost: AUTH_URL in .env, ALLOWED_ORIGINS in .env; 127.0.0.1: NEXT_PUBLIC_AUTHSTRAP_URL in ../web/.env.local)');
    expect(result.stdout).toContain('→ authstrap fix repairs it: use localhost in NEXT_PUBLIC_AUTHSTRAP_URL in ../web/.env.local');
  });

  it('says nothing of it when the frontend uses localhost too', () => {
    const result = setupBeside('NEXT_PUBLIC_AUTHSTRAP_URL=http://localhost:3000\n');
    expect(result.status, result.output).toBe(0);
    expect(result.output).not.toContain('Local URLs');
    expect(result.output).not.toMatch(/[⚠✘]/);
  });
});
