// Makes a fresh clone ready to run with only Node and npm: gets pnpm (into .tools/ with npm when
// it is not installed), installs the workspace, builds the CLI and packs the adapter for it. Safe to run repeatedly.
import { execSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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

export function bootstrap() {
  ensurePnpm();
  const frozen = process.env.CI ? '--frozen-lockfile' : '';
  run(`pnpm install ${frozen} --prefer-offline --reporter=append-only`);
  run('pnpm --filter authstrap run build');
  // The adapter package, packed for `authstrap setup --frontend` (it is not on the registry yet).
  run('node packages/cli/scripts/vendor-adapter.mjs');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) bootstrap();
