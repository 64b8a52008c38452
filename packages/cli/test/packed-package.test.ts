import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packPackage, runCommand } from '../../../scripts/packed-package.mjs';
import { projectVersionProblems, tarballName } from '../../../scripts/release-plan.mjs';
import { cliPath, repoRoot, tempDir } from './support/cli.js';
import { verifyCheckIds } from './support/example-copies.js';
import { freePort, userEnv } from './support/setup.js';

/**
 * authstrap as a user gets it: `npm pack` of packages/cli, the tarball installed with npm into an
 * empty folder outside the repository, and `npx authstrap setup` there, down to a passing verify.
 * Needs the npm registry (the tarball's dependencies and the new backend's). The repository is
 * never touched: the pack runs on a copy of the package (its prepack copies templates/ into it).
 */

const packageDir = path.join(repoRoot, 'packages/cli');
const minutes = (count: number) => count * 60_000;

const run = (command: string, args: string[], cwd: string, timeoutMs: number) => runCommand(command, args, { cwd, env: userEnv(), timeoutMs });
// The adapter this CLI vendors: the one in the repository (the release keeps the two together).
const adapterPackage = JSON.parse(fs.readFileSync(path.join(repoRoot, 'packages/better-auth-adapter/package.json'), 'utf8')) as { name: string; version: string };
const vendoredAdapter = `vendor/${tarballName(adapterPackage.name, adapterPackage.version)}`;

describe('the packed authstrap package', () => {
  let root: string;
  let tarball: string;
  let packedFiles: string[];
  let userDir: string;

  beforeAll(() => {
    if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} is missing: build the CLI first (pnpm --filter authstrap run build)`);
    root = tempDir('authstrap-packed-');
    // A copy shaped like the repository (templates/ two levels above the package), so that the
    // package's own prepack runs as it would on a publish. src/ and test/ are copied too: the
    // tarball must leave them out by itself.
    const copy = path.join(root, 'repo/packages/cli');
    fs.cpSync(path.join(repoRoot, 'templates'), path.join(root, 'repo/templates'), { recursive: true });
    fs.cpSync(path.join(repoRoot, 'docs'), path.join(root, 'repo/docs'), { recursive: true });
    // vendor/ holds the packed adapter (bootstrap made it); without the adapter's sources beside
    // the copy, prepack keeps it.
    for (const entry of ['package.json', 'bin', 'dist', 'scripts', 'vendor', 'README.md', 'LICENSE', 'CHANGELOG.md', 'src', 'test']) {
      fs.cpSync(path.join(packageDir, entry), path.join(copy, entry), { recursive: true });
    }
    ({ tarball, files: packedFiles } = packPackage(copy, path.join(root, 'pack'), { env: userEnv(), timeoutMs: minutes(2) }));
    // postpack removed the templates and docs it copied in.
    expect(fs.existsSync(path.join(copy, 'templates'))).toBe(false);
    expect(fs.existsSync(path.join(copy, 'docs'))).toBe(false);

    userDir = path.join(root, 'user');
    fs.mkdirSync(userDir);
  }, minutes(3));

  afterAll(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('carries the templates, the docs, the README, the LICENSE and the built CLI, and no tests or sources', () => {
    expect(fs.existsSync(tarball)).toBe(true);
    expect(packedFiles).toContain('dist/cli.js');
    expect(packedFiles).toContain('bin/authstrap.js');
    expect(packedFiles).toContain('README.md');
    expect(packedFiles).toContain('CHANGELOG.md');
    expect(packedFiles).toContain('LICENSE');
    expect(packedFiles).toContain('templates/backend/project/package.json.hbs');
    expect(packedFiles).toContain('templates/backend/starter/authstrap.schema.ts');
    expect(packedFiles).toContain('templates/client/authstrap-client.ts.hbs');
    // The owned templates of earlier releases: the merge base of an upgrade from them (docs/upgrading.md).
    expect(packedFiles).toContain('templates/released-owned.json');
    expect(packedFiles).toContain('templates/frontend/auth/lib/auth.ts');
    // The schema file a project starts with points at this page.
    expect(packedFiles).toContain('docs/schema.md');
    expect(packedFiles).toContain(vendoredAdapter);
    expect(packedFiles.filter((file) => /(^|\/)test\/|\.test\.[cm]?[jt]s$/.test(file))).toEqual([]);
    expect(packedFiles.filter((file) => file.startsWith('src/') || file.startsWith('scripts/'))).toEqual([]);
  });

  it('installs into an empty folder outside the repository, and `npx authstrap setup` ends in a passing verify', async () => {
    const install = run('npm', ['install', '--no-audit', '--no-fund', tarball], userDir, minutes(5));
    expect(install.status, install.output).toBe(0);
    const installedCli = fs.realpathSync(path.join(userDir, 'node_modules/authstrap'));
    expect(path.relative(repoRoot, installedCli).startsWith('..')).toBe(true);

    const port = await freePort();
    const setup = run('npx', ['authstrap', 'setup', '--yes', '--db', 'embedded', '--project-name', 'demo', '--backend-port', String(port), '--package-manager', 'npm'], userDir, minutes(5));
    expect(setup.status, setup.output).toBe(0);
    expect(setup.output).toContain(`\n${verifyCheckIds.length} passed, 0 failed\n`);

    const project = path.join(userDir, 'demo');
    const packageJsonText = fs.readFileSync(path.join(project, 'package.json'), 'utf8');
    const packageJson = JSON.parse(packageJsonText);
    // This version of authstrap is not on the registry: the project links the CLI that wrote it.
    expect(packageJson.devDependencies.authstrap).toBe(`file:${installedCli}`);
    expect(packageJsonText).not.toMatch(/workspace:|wt-cli|packages\/cli/);
    expect(fs.readFileSync(path.join(project, 'README.md'), 'utf8')).toContain(`http://localhost:${port}`);
    // The project says which authstrap wrote it: its own `authstrap --version`, its record, its README.
    const projectVersion = run('npx', ['authstrap', '--version'], project, minutes(1));
    expect(projectVersion.status, projectVersion.output).toBe(0);
    const cliVersion = JSON.parse(fs.readFileSync(path.join(installedCli, 'package.json'), 'utf8')).version;
    const read = (file: string) => fs.readFileSync(path.join(project, file), 'utf8');
    expect(projectVersionProblems(cliVersion, { versionOutput: projectVersion.stdout, record: read('authstrap.files.json'), readme: read('README.md') })).toEqual([]);

    // The project's own script runs the linked CLI, with the templates from the tarball.
    const generate = run('npm', ['run', 'generate'], project, minutes(1));
    expect(generate.status, generate.output).toBe(0);
    expect(generate.output).toContain('up to date with authstrap.schema.ts');

    // A frontend for it: the adapter comes from the tarball's own vendor/ (it is not on the registry).
    const frontend = run('npx', ['authstrap', 'setup', '--frontend', '../web', '--no-install'], project, minutes(2));
    expect(frontend.status, frontend.output).toBe(0);
    const adapter = JSON.parse(fs.readFileSync(path.join(userDir, 'web/package.json'), 'utf8')).dependencies['@authstrap/better-auth-adapter'];
    expect(adapter).toBe(`file:${path.join(installedCli, vendoredAdapter)}`);
    expect(fs.existsSync(adapter.slice('file:'.length))).toBe(true);
    expect(fs.existsSync(path.join(userDir, 'web/src/lib/authstrap-client.ts'))).toBe(true);
  }, minutes(12));
});

describe('npm pack in a fresh clone (nothing installed or built)', () => {
  let root: string;
  afterAll(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('says in one line what to run, without a stack trace', () => {
    root = tempDir('authstrap-fresh-clone-');
    const clone = path.join(root, 'repo');
    fs.cpSync(path.join(repoRoot, 'templates'), path.join(clone, 'templates'), { recursive: true });
    for (const [dir, entries] of [
      ['packages/cli', ['package.json', 'scripts', 'src', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'LICENSE']],
      ['packages/better-auth-adapter', ['package.json', 'src', 'tsconfig.json', 'tsconfig.build.json']],
    ] as const) {
      for (const entry of entries) fs.cpSync(path.join(repoRoot, dir, entry), path.join(clone, dir, entry), { recursive: true });
    }
    const pack = run('npm', ['pack', '--dry-run'], path.join(clone, 'packages/cli'), minutes(1));
    expect(pack.status).not.toBe(0);
    expect(pack.output).toContain('authstrap: dist/ is missing and TypeScript is not installed: run `npm run bootstrap` at the repository root, then pack again');
    expect(pack.output).not.toMatch(/\n\s+at /);
  });
});
