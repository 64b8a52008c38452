// `npm run demo`: the quick start's main job. Installs and builds authstrap, then runs
// `authstrap setup` non-interactively on the embedded database into ./demo-backend: it writes
// the project, installs it, starts it, verifies it and stops it. Then the demo starts it again
// and keeps it running until Ctrl-C. With --check it stops after setup's verification;
// --skip-install skips authstrap's own install and build (the test suite has done both).
// With --frontend, setup also writes a Next.js app into ./demo-web (`setup --frontend`), and the
// demo runs both: with --check, until `authstrap verify --frontend` has signed up through the app.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { bootstrap, repoRoot, run } from './bootstrap.mjs';
import { startNpm, stopProcessGroup as stop, waitForUrl as waitFor } from './processes.mjs';

const checkOnly = process.argv.includes('--check');
const skipInstall = process.argv.includes('--skip-install');
const withFrontend = process.argv.includes('--frontend');
const port = process.env.DEMO_PORT ?? '3000';
const frontendPort = process.env.DEMO_FRONTEND_PORT ?? '3001';
const dir = path.resolve(process.env.DEMO_DIR ?? path.join(repoRoot, 'demo-backend'));
const frontendDir = path.resolve(process.env.DEMO_FRONTEND_DIR ?? path.join(repoRoot, 'demo-web'));

if (!skipInstall) bootstrap();

// A second run writes over the first demo's files (keeping its data) instead of refusing; the
// frontend is then an existing Next.js app, which setup connects again (new secrets included).
const force = fs.existsSync(dir) ? ['--force'] : [];
const frontend = withFrontend ? [`--frontend "${frontendDir}" --frontend-port ${frontendPort}`] : [];
run(
  [
    'node packages/cli/dist/cli.js setup --yes --db embedded',
    `--project-name demo-backend --dir "${dir}" --backend-port ${port} --package-manager npm`,
    ...frontend,
    ...force,
  ].join(' '),
);

const logLevel = process.env.LOG_LEVEL ?? (checkOnly ? 'error' : 'warn');
const start = (cwd, args) => startNpm(cwd, args, { env: { ...process.env, LOG_LEVEL: logLevel } });

if (withFrontend || !checkOnly) {
  const servers = [start(dir, ['start'])];
  if (withFrontend) servers.push(start(frontendDir, ['run', 'dev']));
  const stopAll = () => servers.forEach(stop);
  process.on('SIGINT', stopAll);
  process.on('SIGTERM', stopAll);
  await waitFor(`http://localhost:${port}/ready`, 60);
  if (withFrontend) await waitFor(`http://localhost:${frontendPort}/sign-in`, 180);
  if (checkOnly) {
    // The frontend on the checklist: its page, a sign-up and a sign-in through it, accepted by the backend.
    const verify = spawnSync('node', ['packages/cli/dist/cli.js', 'verify', '--dir', dir, '--frontend', `http://localhost:${frontendPort}`], { cwd: repoRoot, stdio: 'inherit' });
    stopAll();
    process.exit(verify.status ?? 1);
  }
  console.log(`\nRunning: the API on http://localhost:${port} (docs at /api/docs)${withFrontend ? `, the app on http://localhost:${frontendPort}` : ''}. Ctrl-C stops it.\n`);
  servers[0].on('exit', (code) => {
    stopAll();
    process.exit(code ?? 0);
  });
}
