// `npm pack` / `npm publish` of packages/cli (prepack): builds dist/ first, so that the tarball
// never carries a stale CLI. Without TypeScript installed (a fresh clone), a dist/ that is there
// is packed as it is; with neither, one line says what to run. Never a stack trace.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = path.join(packageDir, 'node_modules/.bin/tsc');
const built = fs.existsSync(path.join(packageDir, 'dist/cli.js'));

if (fs.existsSync(tsc)) {
  try {
    execFileSync(tsc, ['-p', 'tsconfig.build.json'], { cwd: packageDir, stdio: 'inherit' });
  } catch {
    console.error('authstrap: the build failed (its errors are above); nothing was packed');
    process.exit(1);
  }
} else if (built) {
  console.error('authstrap: TypeScript is not installed here, so the dist/ that is there is packed as it is');
} else {
  console.error('authstrap: dist/ is missing and TypeScript is not installed: run `npm run bootstrap` at the repository root, then pack again');
  process.exit(1);
}
