// `npm test`: install and build (bootstrap, which skips what is up to date), typecheck every
// package, then run every test once. Given test files (`npm test -- path/to/file.test.ts`), it
// runs those and skips the workspace typecheck, so that one file takes seconds.
// Ends with one plain line, "Tests: N passed, N failed", whatever the reporter printed above.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { bootstrap, repoRoot, run } from './bootstrap.mjs';

// Test files or folders among the arguments (vitest's other arguments are flags, or filters that
// are not paths: those still get the typecheck).
const someFiles = process.argv.slice(2).some((arg) => !arg.startsWith('-') && fs.existsSync(path.resolve(arg)));

bootstrap();
if (!someFiles) {
  run('pnpm -r --workspace-concurrency=1 run typecheck');
  // The example's hand-written tests are typechecked too (its own typecheck covers src/ only).
  run('pnpm --dir examples/saas-backend exec tsc -p test/tsconfig.json');
}

const resultsFile = path.join(os.tmpdir(), `authstrap-vitest-${process.pid}.json`);
const vitest = spawnSync(
  'pnpm',
  ['exec', 'vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${resultsFile}`, ...process.argv.slice(2)],
  { cwd: repoRoot, stdio: 'inherit', shell: process.platform === 'win32' },
);

let summary = 'Tests: no results were written';
if (fs.existsSync(resultsFile)) {
  const results = JSON.parse(fs.readFileSync(resultsFile, 'utf8'));
  fs.rmSync(resultsFile);
  summary = `Tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed`;
  if (results.numPendingTests) summary += `, ${results.numPendingTests} skipped`;
}
console.log(summary);
process.exit(vitest.status ?? 1);
