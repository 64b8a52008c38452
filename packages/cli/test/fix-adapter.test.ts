import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleDir, readTree, runCli, tempDir } from './support/cli.js';

// `adapter-version`: a frontend depending on an auth adapter older than 2.0.2 (which does not set
// providerId to 'credential': sign-up works, every sign-in fails). No database is involved.
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
});

/** A copy of the example (without dependencies or tests) with a Vite frontend in web/. */
function projectWithFrontend(dependencies: Record<string, string>, devDependencies: Record<string, string> = { vite: '^7.0.0' }): string {
  const root = tempDir('authstrap-adapter-');
  roots.push(root);
  const dir = path.join(root, 'api');
  fs.cpSync(exampleDir, dir, { recursive: true, filter: (source) => !/^(node_modules|\.data|test|\.env)(\/|$)/.test(path.relative(exampleDir, source)) });
  fs.writeFileSync(path.join(dir, '.env'), 'ALLOWED_ORIGINS=http://localhost:5173\n');
  fs.mkdirSync(path.join(dir, 'web'));
  fs.writeFileSync(path.join(dir, 'web/package.json'), `${JSON.stringify({ name: 'web', private: true, dependencies, devDependencies }, null, 2)}\n`);
  return dir;
}

const finding = (output: string) => (JSON.parse(output).checks as { id: string; status: string; message: string }[]).find((check) => check.id === 'adapter-version')!;

describe('authstrap fix: adapter-version', () => {
  it('finds an adapter older than 2.0.2, --dry-run changes nothing, fix raises it, a second fix is a no-op', () => {
    const dir = projectWithFrontend({ '@apso/better-auth-adapter': '^1.9.4', react: '^19.0.0' });
    const before = readTree(dir);

    const dryRun = runCli(['fix', dir, '--dry-run', '--json']);
    expect(dryRun.status).toBe(1);
    expect(finding(dryRun.stdout)).toMatchObject({ status: 'fail' });
    expect(finding(dryRun.stdout).message).toContain('@apso/better-auth-adapter@^1.9.4');
    expect(runCli(['fix', dir, '--dry-run']).stdout).toContain('+    "@apso/better-auth-adapter": "^2.0.2"');
    expect(readTree(dir)).toEqual(before);

    const fixed = runCli(['fix', dir, '--json']);
    expect(fixed.status, fixed.output).toBe(0);
    expect(finding(fixed.stdout)).toMatchObject({ status: 'pass', repaired: true });
    const packageJson = fs.readFileSync(path.join(dir, 'web/package.json'), 'utf8');
    expect(JSON.parse(packageJson).dependencies).toEqual({ '@apso/better-auth-adapter': '^2.0.2', react: '^19.0.0' });
    // Only that one line changed.
    const lines = (text: string) => text.split('\n');
    expect(lines(packageJson).filter((line, index) => line !== lines(before.get('web/package.json')!)[index])).toEqual(['    "@apso/better-auth-adapter": "^2.0.2",']);

    const again = runCli(['fix', dir, '--json']);
    expect(again.status).toBe(0);
    expect(finding(again.stdout)).toMatchObject({ status: 'pass' });
    expect(finding(again.stdout)).not.toHaveProperty('repaired');
    expect(fs.readFileSync(path.join(dir, 'web/package.json'), 'utf8')).toBe(packageJson);
  });

  it.each([
    ['^2.0.2', 'pass'],
    ['~2.1.0', 'pass'],
    ['>=3', 'pass'],
    ['2.0.1', 'fail'],
    ['~1.0.0', 'fail'],
    ['latest', 'warn'],
  ])('judges the range %s as %s', (range, status) => {
    const dir = projectWithFrontend({}, { vite: '^7.0.0', '@authstrap/better-auth-adapter': range });
    expect(finding(runCli(['fix', dir, '--dry-run', '--json']).stdout).status).toBe(status);
  });

  it('checks a package only by name: another is checked when named with --adapter-package', () => {
    // A name that merely looks like an adapter is not one this check knows.
    const dir = projectWithFrontend({ 'session-bridge': '1.2.0', '@acme/auth-adapter': '1.0.0' });
    expect(finding(runCli(['fix', dir, '--dry-run', '--json']).stdout)).toMatchObject({ status: 'pass' });
    const named = runCli(['fix', dir, '--dry-run', '--json', '--adapter-package', 'session-bridge']);
    expect(finding(named.stdout)).toMatchObject({ status: 'fail' });
    expect(finding(named.stdout).message).toContain('session-bridge@1.2.0');
  });
});
