// `npm run demo`: the quick start's main job. Installs and builds authstrap, then runs
// `authstrap setup` non-interactively on the embedded database into ./demo-backend: it writes
// the project, installs it, starts it, verifies it and stops it. Then the demo starts it again
// and keeps it running until Ctrl-C. With --check it stops after setup's verification;
// --skip-install skips authstrap's own install and build (the test suite has done both).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { bootstrap, repoRoot, run } from './bootstrap.mjs';

const checkOnly = process.argv.includes('--check');
const skipInstall = process.argv.includes('--skip-install');
const port = process.env.DEMO_PORT ?? '3000';
const dir = path.resolve(process.env.DEMO_DIR ?? path.join(repoRoot, 'demo-backend'));

if (!skipInstall) bootstrap();

// A second run writes over the first demo's files (keeping its data) instead of refusing.
const force = fs.existsSync(dir) ? ['--force'] : [];
run(
  [
    'node packages/cli/dist/cli.js setup --yes --db embedded',
    `--project-name demo-backend --dir "${dir}" --backend-port ${port} --package-manager npm`,
    ...force,
  ].join(' '),
);

if (!checkOnly) {
  console.log(`\nStarting it again: http://localhost:${port} (API docs at /api/docs). Ctrl-C stops it.\n`);
  const server = spawn('npm', ['start'], { cwd: dir, stdio: 'inherit', env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' } });
  process.on('SIGINT', () => server.kill('SIGINT'));
  server.on('exit', (code) => process.exit(code ?? 0));
}
