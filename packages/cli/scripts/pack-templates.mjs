// `npm pack` / `npm publish` of packages/cli: the CLI reads its templates from the repository's
// top-level templates/ folder, which is outside this package. prepack copies them into
// packages/cli/templates/ (gitignored) so that the tarball carries them, and the repository's
// docs/ into packages/cli/docs/ (a generated project points at node_modules/authstrap/docs);
// postpack removes the copies again, so that a checkout never renders from a stale copy (the CLI
// prefers its own).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const copies = ['templates', 'docs'].map((name) => ({ source: path.resolve(packageDir, '../..', name), target: path.join(packageDir, name) }));

if (process.argv[2] === 'remove') {
  for (const { target } of copies) fs.rmSync(target, { recursive: true, force: true });
} else {
  if (!fs.existsSync(path.join(copies[0].source, 'backend'))) {
    console.error(`authstrap: no templates at ${copies[0].source}: pack authstrap from its repository`);
    process.exit(1);
  }
  for (const { source, target } of copies) {
    fs.rmSync(target, { recursive: true, force: true });
    fs.cpSync(source, target, { recursive: true });
  }
}
