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

if (!fs.existsSync(path.join(adapterDir, 'package.json'))) {
  // A copy of this package outside the repository (a pack from a copy) keeps what was vendored.
  const vendored = fs.existsSync(vendorDir) ? fs.readdirSync(vendorDir).filter((name) => name.endsWith('.tgz')) : [];
  if (vendored.length === 0) throw new Error(`No adapter package at ${adapterDir} and nothing in ${vendorDir}: vendor it from authstrap's repository`);
  console.log(`no adapter package at ${adapterDir}: keeping ${vendored.join(', ')}`);
  process.exit(0);
}
const tsc = path.join(adapterDir, 'node_modules/.bin/tsc');
execFileSync(tsc, ['-p', 'tsconfig.build.json'], { cwd: adapterDir, stdio: 'inherit' });
fs.rmSync(vendorDir, { recursive: true, force: true });
fs.mkdirSync(vendorDir, { recursive: true });
execFileSync('npm', ['pack', '--silent', '--pack-destination', vendorDir], { cwd: adapterDir, stdio: ['ignore', 'ignore', 'inherit'] });
console.log(`vendored ${fs.readdirSync(vendorDir).join(', ')} into ${path.relative(process.cwd(), vendorDir) || '.'}`);
