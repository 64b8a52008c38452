// Packs @authstrap/better-auth-adapter into packages/cli/vendor/ (gitignored), so that
// `authstrap setup --frontend` can install it while the adapter is not on the registry: from a
// checkout, and from the CLI's own tarball (prepack runs this too). Builds the adapter first.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const cliDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const adapterDir = path.resolve(cliDir, '../better-auth-adapter');
const vendorDir = path.join(cliDir, 'vendor');

const tsc = path.join(adapterDir, 'node_modules/.bin/tsc');
if (!fs.existsSync(tsc)) {
  // A copy of this package outside the repository (a pack from a copy), or a clone not installed
  // yet, keeps what was vendored; without it, one line says what to run (never a stack trace).
  const vendored = fs.existsSync(vendorDir) ? fs.readdirSync(vendorDir).filter((name) => name.endsWith('.tgz')) : [];
  const why = fs.existsSync(path.join(adapterDir, 'package.json')) ? `the adapter at ${adapterDir} is not installed` : `no adapter package at ${adapterDir}`;
  if (vendored.length === 0) {
    console.error(`authstrap: ${why} and nothing is vendored in ${vendorDir}: run \`npm run bootstrap\` at the repository root, then pack again`);
    process.exit(1);
  }
  console.log(`${why}: keeping ${vendored.join(', ')}`);
  process.exit(0);
}
execFileSync(tsc, ['-p', 'tsconfig.build.json'], { cwd: adapterDir, stdio: 'inherit' });
fs.rmSync(vendorDir, { recursive: true, force: true });
fs.mkdirSync(vendorDir, { recursive: true });
// Not a dry run even under `npm pack --dry-run` of the CLI (npm hands its flags down as npm_config_*).
execFileSync('npm', ['pack', '--silent', '--pack-destination', vendorDir], { cwd: adapterDir, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, npm_config_dry_run: '' } });
console.log(`vendored ${fs.readdirSync(vendorDir).join(', ')} into ${path.relative(process.cwd(), vendorDir) || '.'}`);
