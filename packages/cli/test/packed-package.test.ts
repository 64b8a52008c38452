import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath, repoRoot, tempDir } from './support/cli.js';
import { verifyCheckIds } from './support/example-copies.js';
import { freePort, stripAnsi, userEnv } from './support/setup.js';

/**
 * authstrap as a user gets it: `npm pack` of packages/cli, the tarball installed with npm into an
 * empty folder outside the repository, and `npx authstrap setup` there, down to a passing verify.
 * Needs the npm registry (the tarball's dependencies and the new backend's). The repository is
 * never touched: the pack runs on a copy of the package (its prepack copies templates/ into it).
 */

const packageDir = path.join(repoRoot, 'packages/cli');
const minutes = (count: number) => count * 60_000;

function run(command: string, args: string[], cwd: string, timeoutMs: number) {
  const result = spawnSync(command, args, { cwd, env: userEnv(), encoding: 'utf8', timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 });
  const output = stripAnsi(`${result.stdout ?? ''}${result.stderr ?? ''}`) + (result.error ? `\n[${result.error.message}]` : '');
  return { status: result.status, stdout: result.stdout ?? '', output };
}

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
    for (const entry of ['package.json', 'dist', 'scripts', 'vendor', 'README.md', 'LICENSE', 'src', 'test']) {
      fs.cpSync(path.join(packageDir, entry), path.join(copy, entry), { recursive: true });
    }
    fs.mkdirSync(path.join(root, 'pack'));
    const pack = run('npm', ['pack', '--json', '--pack-destination', path.join(root, 'pack')], copy, minutes(2));
    expect(pack.status, pack.output).toBe(0);
    const [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as { filename: string; files: { path: string }[] }[];
    tarball = path.join(root, 'pack', packed!.filename);
    packedFiles = packed!.files.map((file) => file.path);
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
    expect(packedFiles).toContain('README.md');
    expect(packedFiles).toContain('LICENSE');
    expect(packedFiles).toContain('templates/backend/project/package.json.hbs');
    expect(packedFiles).toContain('templates/backend/starter/authstrap.schema.ts');
    expect(packedFiles).toContain('templates/client/authstrap-client.ts.hbs');
    expect(packedFiles).toContain('templates/frontend/auth/lib/auth.ts');
    // The schema file a project starts with points at this page.
    expect(packedFiles).toContain('docs/schema.md');
    expect(packedFiles).toContain('vendor/authstrap-better-auth-adapter-2.0.2.tgz');
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
    // authstrap@0.1.0 is not on the registry: the project links the CLI that wrote it.
    expect(packageJson.devDependencies.authstrap).toBe(`file:${installedCli}`);
    expect(packageJsonText).not.toMatch(/workspace:|wt-cli|packages\/cli/);
    expect(fs.readFileSync(path.join(project, 'README.md'), 'utf8')).toContain(`http://localhost:${port}`);

    // The project's own script runs the linked CLI, with the templates from the tarball.
    const generate = run('npm', ['run', 'generate'], project, minutes(1));
    expect(generate.status, generate.output).toBe(0);
    expect(generate.output).toContain('up to date with authstrap.schema.ts');

    // A frontend for it: the adapter comes from the tarball's own vendor/ (it is not on the registry).
    const frontend = run('npx', ['authstrap', 'setup', '--frontend', '../web', '--no-install'], project, minutes(2));
    expect(frontend.status, frontend.output).toBe(0);
    const adapter = JSON.parse(fs.readFileSync(path.join(userDir, 'web/package.json'), 'utf8')).dependencies['@authstrap/better-auth-adapter'];
    expect(adapter).toBe(`file:${path.join(installedCli, 'vendor/authstrap-better-auth-adapter-2.0.2.tgz')}`);
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
