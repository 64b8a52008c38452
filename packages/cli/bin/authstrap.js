#!/usr/bin/env node
// The `authstrap` command. A file kept in the repository, not the built dist/cli.js: an install of
// the workspace links every package's bin before anything is built, and pnpm warns ("Failed to
// create bin") about a bin whose file is not there yet. A published package always has dist/.
import fs from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!fs.existsSync(cli)) {
  console.error('authstrap: dist/ is missing: run `npm run bootstrap` at the repository root to build the CLI');
  process.exit(1);
}
await import(cli.href);
