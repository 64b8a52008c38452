import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeRepairCycle } from '../support/check-cycle.js';
import { copyExampleFiles, runCli, tempDir } from '../support/cli.js';

// A frontend depending on an auth adapter older than 2.0.2 (which does not set providerId to
// 'credential': sign-up works, every sign-in fails).

const webPackage = (dependencies: Record<string, string>, devDependencies: Record<string, string> = { vite: '^7.0.0' }) =>
  `${JSON.stringify({ name: 'web', private: true, dependencies, devDependencies }, null, 2)}\n`;

function addFrontend(dir: string, packageJson: string) {
  fs.mkdirSync(path.join(dir, 'web'));
  fs.writeFileSync(path.join(dir, 'web/package.json'), packageJson);
}

const oldAdapter = webPackage({ '@apso/better-auth-adapter': '^1.9.4', react: '^19.0.0' });

const { stage } = describeRepairCycle('adapter-version', [
  {
    name: 'a Vite frontend in web/ on @apso/better-auth-adapter ^1.9.4',
    planShows: ['--- a/web/package.json', '+    "@apso/better-auth-adapter": "^2.0.2"'],
    breakFiles: (dir) => addFrontend(dir, oldAdapter),
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('adapter-version: the repair', () => {
  it('changes that one line of web/package.json', () => {
    const packageJson = stage('a Vite frontend in web/ on @apso/better-auth-adapter ^1.9.4', 'treeAfterFirst').get('web/package.json')!;
    expect(JSON.parse(packageJson).dependencies).toEqual({ '@apso/better-auth-adapter': '^2.0.2', react: '^19.0.0' });
    const lines = (text: string) => text.split('\n');
    expect(lines(packageJson).filter((line, index) => line !== lines(oldAdapter)[index])).toEqual(['    "@apso/better-auth-adapter": "^2.0.2",']);
  });
});

describe('adapter-version: which ranges and packages', () => {
  const roots: string[] = [];
  afterAll(() => {
    for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
  });
  /** The example's files with a Vite frontend in web/; no database, no backend. */
  function projectWithFrontend(packageJson: string): string {
    const root = tempDir('authstrap-adapter-');
    roots.push(root);
    const dir = copyExampleFiles(path.join(root, 'api'));
    fs.writeFileSync(path.join(dir, '.env'), 'ALLOWED_ORIGINS=http://localhost:5173\n');
    addFrontend(dir, packageJson);
    return dir;
  }
  const finding = (output: string) => (JSON.parse(output).checks as { id: string; status: string; message: string }[]).find((check) => check.id === 'adapter-version')!;

  it.each([
    ['^2.0.2', 'pass'],
    ['~2.1.0', 'pass'],
    ['>=3', 'pass'],
    ['file:../vendor/authstrap-better-auth-adapter-2.0.2.tgz', 'pass'],
    ['2.0.1', 'fail'],
    ['~1.0.0', 'fail'],
    ['latest', 'warn'],
  ])('judges the range %s as %s', (range, status) => {
    const dir = projectWithFrontend(webPackage({}, { vite: '^7.0.0', '@authstrap/better-auth-adapter': range }));
    expect(finding(runCli(['fix', dir, '--dry-run', '--json']).stdout).status).toBe(status);
  });

  it('checks a package only by name: another is checked when named with --adapter-package', () => {
    // A name that merely looks like an adapter is not one this check knows.
    const dir = projectWithFrontend(webPackage({ 'session-bridge': '1.2.0', '@acme/auth-adapter': '1.0.0' }));
    expect(finding(runCli(['fix', dir, '--dry-run', '--json']).stdout)).toMatchObject({ status: 'pass' });
    const named = runCli(['fix', dir, '--dry-run', '--json', '--adapter-package', 'session-bridge']);
    expect(finding(named.stdout)).toMatchObject({ status: 'fail' });
    expect(finding(named.stdout).message).toContain('session-bridge@1.2.0');
  });
});
