// Makes a fresh clone ready to run with only Node and npm: gets pnpm (into .tools/ with npm when
// it is not installed), installs the workspace, builds the CLI and packs the adapter for it. Safe
// to run repeatedly: each step is skipped when what it reads has not changed since it last ran
// (a hash of those files, kept in node_modules/.cache/), so a second run takes a moment.
import { execSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tarballName } from './release-plan.mjs';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const toolsDir = path.join(repoRoot, '.tools');
const pnpmMajor = '10';

export function run(command, options = {}) {
  execSync(command, { cwd: repoRoot, stdio: 'inherit', env: process.env, ...options });
}

function hasPnpm() {
  const probe = spawnSync('pnpm', ['--version'], { encoding: 'utf8', env: process.env });
  return probe.status === 0 && probe.stdout.trim().startsWith(`${pnpmMajor}.`);
}

/** Puts pnpm on PATH for this process and every command it starts. */
function ensurePnpm() {
  const localBin = path.join(toolsDir, 'node_modules', '.bin');
  process.env.PATH = `${localBin}${path.delimiter}${process.env.PATH}`;
  if (hasPnpm()) return;
  console.log(`Installing pnpm ${pnpmMajor} into .tools/ ...`);
  fs.mkdirSync(toolsDir, { recursive: true });
  run(`npm install --prefix "${toolsDir}" --no-audit --no-fund --loglevel=error pnpm@${pnpmMajor}`);
  if (!hasPnpm()) throw new Error('pnpm could not be installed; install it with `npm install -g pnpm@10` and retry');
}

const stampDir = path.join(repoRoot, 'node_modules/.cache/authstrap-bootstrap');

/** Every file below the given files and folders (node_modules and dist left out), sorted. */
function filesOf(entries) {
  const found = [];
  const walk = (entry) => {
    const full = path.join(repoRoot, entry);
    if (!fs.existsSync(full)) return;
    if (!fs.statSync(full).isDirectory()) return found.push(entry);
    for (const name of fs.readdirSync(full)) if (name !== 'node_modules' && name !== 'dist') walk(path.join(entry, name));
  };
  entries.forEach(walk);
  return found.sort();
}

/**
 * Runs `work` unless the files it reads are as they were when it last succeeded and what it
 * makes is still there; then records them. `label` says what is skipped.
 */
function unlessUpToDate(name, label, { reads, makes }, work) {
  const hash = createHash('sha256');
  for (const file of filesOf(reads)) hash.update(`${file}\0`).update(fs.readFileSync(path.join(repoRoot, file))).update('\0');
  const digest = hash.digest('hex');
  const stamp = path.join(stampDir, name);
  const made = makes.every((file) => fs.existsSync(path.join(repoRoot, file)));
  if (made && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === digest) {
    console.log(`${label}: up to date`);
    return;
  }
  work();
  fs.mkdirSync(stampDir, { recursive: true });
  fs.writeFileSync(stamp, digest);
}

const workspacePackages = ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', ...['packages', 'examples'].flatMap((group) => fs.readdirSync(path.join(repoRoot, group)).map((name) => path.join(group, name, 'package.json')))];

export function bootstrap() {
  ensurePnpm();
  const frozen = process.env.CI ? '--frozen-lockfile' : '';
  unlessUpToDate('install', 'Install', { reads: workspacePackages, makes: ['node_modules/.modules.yaml'] }, () => run(`pnpm install ${frozen} --prefer-offline --reporter=append-only`));
  unlessUpToDate('build-cli', 'Build of the CLI', { reads: ['tsconfig.base.json', 'packages/cli/package.json', 'packages/cli/tsconfig.build.json', 'packages/cli/src'], makes: ['packages/cli/dist/cli.js'] }, () =>
    run('pnpm --filter authstrap run build'),
  );
  // The adapter package, packed for `authstrap setup --frontend` (it is not on the registry yet).
  const adapter = JSON.parse(fs.readFileSync(path.join(repoRoot, 'packages/better-auth-adapter/package.json'), 'utf8'));
  const tarball = `packages/cli/vendor/${tarballName(adapter.name, adapter.version)}`;
  unlessUpToDate('vendor-adapter', 'The packed adapter', { reads: ['tsconfig.base.json', 'packages/better-auth-adapter'], makes: [tarball] }, () => run('node packages/cli/scripts/vendor-adapter.mjs'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) bootstrap();
