// authstrap's packages as a user gets them: `npm pack` of a package, and commands run in a folder
// outside the repository with a bounded time. Shared by `npm run release` (scripts/release.mjs)
// and packages/cli/test/packed-package.test.ts.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ansi = /\x1b\[[0-?]*[ -/]*[@-~]/g;

/** The variables a backend reads from its .env: set in our environment, they would win over it. */
const backendVariables = ['PORT', 'DATABASE_URL', 'EMBEDDED_DB_DIR', 'AUTH_SECRET', 'AUTH_URL', 'ALLOWED_ORIGINS', 'SERVICE_API_KEY', 'BCRYPT_COST', 'REDIS_URL', 'TRUST_PROXY', 'LOG_LEVEL', 'BODY_LIMIT'];

/**
 * The environment of a user's shell: without what npm and pnpm (npm_config_user_agent would make
 * setup pick pnpm), vitest (NODE_ENV=test would win over the project's .env) and colour forcing add.
 */
export function userEnv(extra = {}) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^(npm|pnpm)_/i.test(key) || /^VITEST/.test(key) || ['NODE_ENV', 'TEST', 'FORCE_COLOR', 'NO_COLOR', 'NODE_OPTIONS', 'TMUX', 'TMUX_PANE', 'CI', ...backendVariables].includes(key)) {
      delete env[key];
    }
  }
  return { ...env, ...extra };
}

/** A command's exit status, its stdout, and stdout with stderr as one readable text. */
export function runCommand(command, args, { cwd, env = process.env, timeoutMs }) {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.replace(ansi, '') + (result.error ? `\n[${result.error.message}]` : '');
  return { status: result.status, stdout: result.stdout ?? '', output };
}

/**
 * `npm pack` of the package in `dir` (its prepack and postpack scripts run) into `destination`:
 * the tarball's path and the files it carries. Throws with npm's output when it fails.
 */
export function packPackage(dir, destination, { env, timeoutMs = 180_000 } = {}) {
  fs.mkdirSync(destination, { recursive: true });
  const pack = runCommand('npm', ['pack', '--json', '--pack-destination', destination], { cwd: dir, env, timeoutMs });
  if (pack.status !== 0) throw new Error(`npm pack in ${dir} failed:\n${pack.output}`);
  // A prepack script prints before npm's JSON.
  const [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('[')));
  return { tarball: path.join(destination, packed.filename), files: packed.files.map((file) => file.path) };
}
