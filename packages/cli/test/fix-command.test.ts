import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyExampleFiles, runCli, tempDir } from './support/cli.js';
import { fixCheckIds } from './support/example-copies.js';

/**
 * `authstrap fix` as a command: what it prints, and how it refuses bad usage. Each check's
 * breakages, repairs and agreement with verify are in test/checks/<check>.test.ts. Nothing
 * here needs PostgreSQL: the copies have no database, so the checks that read one are skipped.
 */

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
});

/** The example's files, without a database, with a healthy .env. */
function project(): string {
  const root = tempDir('authstrap-fix-');
  roots.push(root);
  const dir = copyExampleFiles(path.join(root, 'api'));
  fs.writeFileSync(path.join(dir, '.env'), 'ALLOWED_ORIGINS=http://localhost:5173\n');
  return dir;
}

const databaseChecks = ['sso-connections', 'credential-provider', 'nullability', 'not-null-rows', 'row-level-security'];
const titles = { 'sso-connections': 'Single sign-on connections can sign people in', 'credential-provider': "Password accounts have providerId 'credential'", nullability: 'Auth columns have the right nullability', 'not-null-rows': 'Tenant-scoped rows all have an organization', 'row-level-security': 'Row-level security holds on every tenant table' } as Record<string, string>;
const lineOf = (stdout: string, title: string) => stdout.split('\n').find((line) => line.includes(` ${title} — `)) ?? '';

describe('authstrap fix: what it prints', () => {
  it('a check that could not run is skipped with its reason, never passed: in the text and in --json', () => {
    const dir = project();
    const json = runCli(['fix', dir, '--json']);
    const report = JSON.parse(json.stdout) as { ok: boolean; checks: { id: string; status: string; message: string }[] };
    expect(report.checks.map((check) => [check.id, check.status])).toEqual(fixCheckIds.map((id) => [id, databaseChecks.includes(id) ? 'skip' : 'pass']));
    for (const check of report.checks.filter((candidate) => databaseChecks.includes(candidate.id))) expect(check.message, check.id).toContain('the embedded database does not exist yet');
    expect(report.ok).toBe(true);
    expect(json.status).toBe(0);

    for (const args of [[], ['--dry-run']]) {
      const text = runCli(['fix', dir, ...args]);
      for (const id of databaseChecks) {
        expect(lineOf(text.stdout, titles[id]!), `${id} ${args}`).toMatch(/^– /);
        expect(lineOf(text.stdout, titles[id]!)).toContain('the embedded database does not exist yet');
      }
      expect(text.stdout).not.toMatch(/✔ (Password accounts|Auth columns|Tenant-scoped rows)/);
      // One last line, said once.
      expect(text.stdout.trimEnd().split('\n').at(-1)).toBe('Nothing to repair (5 checks skipped, see above)');
      expect(text.stdout.match(/[Nn]othing (left )?to repair/g)).toHaveLength(1);
      expect(text.status).toBe(0);
    }
  });

  it('says once what it found in a dry run, and once what it repaired', () => {
    const dir = project();
    const app = path.join(dir, 'src/app.ts');
    fs.writeFileSync(app, fs.readFileSync(app, 'utf8').replace('  app.use(generatedRouter(', '  // app.use(generatedRouter('));
    const dryRun = runCli(['fix', dir, '--dry-run']);
    expect(dryRun.stdout).toMatch(/^Plan \(nothing changed, --dry-run\):\n\n# module-wiring: write 1 file \(src\/app\.ts\)\n/);
    expect(dryRun.stdout).toMatch(/✘ Every generated router is mounted and up to date — src\/app\.ts does not mount generatedRouter\n/);
    expect(dryRun.stdout.trimEnd().split('\n').at(-1)).toBe('1 problem found (dry run: nothing changed; run without --dry-run to repair) (5 checks skipped, see above)');
    expect(dryRun.stdout).not.toMatch(/[Nn]othing (left )?to repair/);
    expect(dryRun.status).toBe(1);

    const fixed = runCli(['fix', dir]);
    expect(fixed.stdout).toMatch(/✔ Every generated router is mounted and up to date — repaired: write 1 file \(src\/app\.ts\)\n/);
    expect(fixed.stdout.trimEnd().split('\n').at(-1)).toBe('Repaired 1; nothing left to repair (5 checks skipped, see above)');
    expect(fixed.stdout.match(/[Nn]othing (left )?to repair/g)).toHaveLength(1);
    expect(fixed.status).toBe(0);
  });
});

describe('authstrap fix and verify: a frontend folder that cannot be read', () => {
  it('is passed over (its package.json does not parse), not a crash', () => {
    const dir = project();
    fs.mkdirSync(path.join(dir, 'web'));
    fs.writeFileSync(path.join(dir, 'web/package.json'), '{ "name": "web", ');
    const fix = runCli(['fix', dir, '--json']);
    expect(fix.status, fix.output).toBe(0);
    expect(JSON.parse(fix.stdout).ok).toBe(true);
    const verify = runCli(['verify', '--json', '--dir', dir, '--url', 'http://127.0.0.1:1']);
    expect(verify.output).not.toContain('failed unexpectedly');
    expect(JSON.parse(verify.stdout).checks.find((check: { id: string }) => check.id === 'cors-origin').status).toBe('pass');
  });
});

describe('authstrap fix: bad usage', () => {
  it('in a folder without authstrap.schema.ts: exit 2, naming the file, changing nothing', () => {
    const dir = tempDir('authstrap-fix-empty-');
    try {
      fs.writeFileSync(path.join(dir, '.env'), 'ALLOWED_ORIGINS=*\n');
      const { status, stdout, stderr } = runCli(['fix'], dir);
      expect(status).toBe(2);
      expect(stderr).toContain('authstrap.schema.ts');
      expect(stdout).toBe('');
      expect(fs.readdirSync(dir)).toEqual(['.env']);
      expect(fs.readFileSync(path.join(dir, '.env'), 'utf8')).toBe('ALLOWED_ORIGINS=*\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an unknown option: exit 2, naming it', () => {
    const dir = tempDir('authstrap-fix-empty-');
    try {
      const { status, stderr } = runCli(['fix', '--frobnicate'], dir);
      expect(status).toBe(2);
      expect(stderr).toContain('--frobnicate');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
