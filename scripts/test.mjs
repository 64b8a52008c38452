// `npm test`: install and build (bootstrap), typecheck every package, then run every test once.
// Ends with one plain line, "Tests: N passed, N failed", whatever the reporter printed above.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { bootstrap, repoRoot, run } from './bootstrap.mjs';

bootstrap();
run('pnpm -r --workspace-concurrency=1 run typecheck');
// The example's hand-written tests are typechecked too (its own typecheck covers src/ only).
run('pnpm --dir examples/saas-backend exec tsc -p test/tsconfig.json');

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
