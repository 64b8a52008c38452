// `npm pack` / `npm publish` of packages/cli: the CLI reads its templates from the repository's
// top-level templates/ folder, which is outside this package. prepack copies them into
// packages/cli/templates/ (gitignored) so that the tarball carries them; postpack removes the
// copy again, so that a checkout never renders from a stale copy (the CLI prefers its own).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const source = path.resolve(packageDir, '../../templates');
const target = path.join(packageDir, 'templates');

if (process.argv[2] === 'remove') {
  fs.rmSync(target, { recursive: true, force: true });
} else {
  if (!fs.existsSync(path.join(source, 'backend'))) {
    console.error(`authstrap: no templates at ${source}: pack authstrap from its repository`);
    process.exit(1);
  }
  fs.rmSync(target, { recursive: true, force: true });
  fs.cpSync(source, target, { recursive: true });
}
