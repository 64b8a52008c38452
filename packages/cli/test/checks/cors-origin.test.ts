import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeRepairCycle } from '../support/check-cycle.js';
import { copyExampleFiles, readTree, runCli, tempDir } from '../support/cli.js';
import type { Backend } from '../support/example-copies.js';

/** A browser's CORS preflight for a credentialed sign-in: the Access-Control-Allow-Origin it gets. */
async function preflight(backend: Backend, origin: string): Promise<string | null> {
  const response = await fetch(`${backend.url}/api/auth/sign-in/email`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  });
  return response.headers.get('access-control-allow-origin');
}

/** A Vite frontend in `folder` on `port` (no port: Vite's default, 5173). */
function viteFrontend(dir: string, folder: string, port?: number) {
  fs.mkdirSync(path.join(dir, folder));
  fs.writeFileSync(path.join(dir, folder, 'package.json'), JSON.stringify({ name: folder, private: true, devDependencies: { vite: '^6.0.0' } }, null, 2));
  if (port) fs.writeFileSync(path.join(dir, folder, 'vite.config.ts'), `import { defineConfig } from 'vite';\n\nexport default defineConfig({ server: { port: ${port} } });\n`);
}

async function recordPreflights(_dir: string, backend: Backend, extra: Record<string, unknown>) {
  extra.preflight = await preflight(backend, 'http://localhost:5200');
  extra.preflightOther = await preflight(backend, 'http://localhost:5999');
}

/**
 * Every .env shape the backend accepts, each with the frontend on 5200 missing: the repair must
 * set the line the backend reads (the last one), keep the line's shape, and add only what is
 * missing as the backend compares origins (a trailing slash is the same origin).
 */
const shapes = [
  {
    name: 'a Vite frontend in web/ on port 5200, which ALLOWED_ORIGINS lacks',
    dotEnv: 'ALLOWED_ORIGINS=http://localhost:5173\n',
    repaired: 'ALLOWED_ORIGINS=http://localhost:5173,http://localhost:5200\n',
  },
  {
    name: 'ALLOWED_ORIGINS twice: the backend reads the second, which lacks the frontend',
    dotEnv: 'ALLOWED_ORIGINS=http://localhost:5200\nAUTH_URL=http://localhost:3000\nALLOWED_ORIGINS=http://localhost:5173\n',
    repaired: '# ALLOWED_ORIGINS=http://localhost:5200\nAUTH_URL=http://localhost:3000\nALLOWED_ORIGINS=http://localhost:5173,http://localhost:5200\n',
  },
  {
    name: 'export ALLOWED_ORIGINS=, spaces around =',
    dotEnv: 'export ALLOWED_ORIGINS = http://localhost:5173\n',
    repaired: 'export ALLOWED_ORIGINS = http://localhost:5173,http://localhost:5200\n',
  },
  {
    name: 'ALLOWED_ORIGINS quoted, with a comment after it',
    dotEnv: 'ALLOWED_ORIGINS="http://localhost:5173" # the web app\n',
    repaired: 'ALLOWED_ORIGINS="http://localhost:5173,http://localhost:5200" # the web app\n',
  },
  {
    name: "a trailing slash on web/'s origin (the backend normalises it), and frontend/ on 5200 missing",
    dotEnv: 'ALLOWED_ORIGINS=http://localhost:5173/ # web\n',
    repaired: 'ALLOWED_ORIGINS=http://localhost:5173/,http://localhost:5200 # web\n',
    folder: 'frontend',
    alsoWeb: true,
  },
];

const { stage } = describeRepairCycle(
  'cors-origin',
  shapes.map((shape) => ({
    name: shape.name,
    dotEnv: shape.dotEnv,
    planShows: ['--- a/.env', `+${shape.repaired.trimEnd().split('\n').at(-1)}`],
    breakFiles(dir: string) {
      viteFrontend(dir, shape.folder ?? 'web', 5200);
      if (shape.alsoWeb) viteFrontend(dir, 'web');
    },
    afterRepair: recordPreflights,
  })),
);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('cors-origin: the repair', () => {
  it.each(shapes)('$name: the line the backend reads gets the frontend, in its own shape, and a preflight from it is allowed (and only from it)', (shape) => {
    expect(stage(shape.name, 'verifyBefore').report.checks.find((result) => result.id === 'cors-origin')!.message).toBe('the frontend origin http://localhost:5200 is not in ALLOWED_ORIGINS');
    expect(stage(shape.name, 'treeAfterFirst').get('.env')).toBe(shape.repaired);
    expect(stage(shape.name, 'extra').preflight).toBe('http://localhost:5200');
    expect(stage(shape.name, 'extra').preflightOther).toBeNull();
  });
});

describe('cors-origin without a backend', () => {
  const roots: string[] = [];
  afterAll(() => {
    for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
  });
  /** root/saas-backend: the example's files with `env` as .env. */
  function project(env: string): { root: string; dir: string } {
    const root = tempDir('authstrap-cors-');
    roots.push(root);
    const dir = copyExampleFiles(path.join(root, 'saas-backend'));
    fs.writeFileSync(path.join(dir, '.env'), env);
    return { root, dir };
  }

  it('"*" (which browsers refuse with cookies, and the backend too) is replaced by the frontend\'s origin', () => {
    const { dir } = project('ALLOWED_ORIGINS=*\n');
    fs.mkdirSync(path.join(dir, 'web'));
    fs.writeFileSync(path.join(dir, 'web/package.json'), JSON.stringify({ name: 'web', private: true, devDependencies: { vite: '^6.0.0' } }));
    const dryRun = JSON.parse(runCli(['fix', dir, '--dry-run', '--json']).stdout).checks.find((check: { id: string }) => check.id === 'cors-origin');
    expect(dryRun).toMatchObject({ status: 'fail', message: '"*" cannot be used with cookies (browsers refuse credentials for a wildcard); the frontend origin http://localhost:5173 is not in ALLOWED_ORIGINS' });
    expect(runCli(['fix', dir]).status).toBe(0);
    expect(fs.readFileSync(path.join(dir, '.env'), 'utf8')).toBe('ALLOWED_ORIGINS=http://localhost:5173\n');
  });

  it('a trailing slash names the origin the backend allows: cors-origin passes, and fix changes nothing', () => {
    const { dir } = project('ALLOWED_ORIGINS=http://localhost:5173/\n');
    viteFrontend(dir, 'web');
    const before = readTree(dir);
    const cors = JSON.parse(runCli(['fix', dir, '--json']).stdout).checks.find((check: { id: string }) => check.id === 'cors-origin');
    expect(cors).toEqual(expect.objectContaining({ status: 'pass', message: 'ALLOWED_ORIGINS=http://localhost:5173/ (frontends: web)' }));
    expect(cors).not.toHaveProperty('repaired');
    expect(readTree(dir)).toEqual(before);
  });

  it('a frontend named with --frontend is found relative to where fix runs, and its origin added to the existing one', () => {
    const { root, dir } = project('ALLOWED_ORIGINS=http://localhost:5173\n');
    const frontend = path.join(root, 'elsewhere/my-ui');
    fs.mkdirSync(frontend, { recursive: true });
    fs.writeFileSync(path.join(frontend, 'package.json'), JSON.stringify({ name: 'my-ui', private: true, devDependencies: { vite: '^6.0.0' } }));
    fs.writeFileSync(path.join(frontend, 'vite.config.ts'), 'export default { server: { port: 5300, strictPort: true } };\n');
    const cors = (args: string[]) => (JSON.parse(runCli(['fix', 'saas-backend', '--json', ...args], root).stdout).checks as { id: string; status: string }[]).find((check) => check.id === 'cors-origin')!;

    // Without --frontend it is not found: nothing to repair.
    expect(cors(['--dry-run']).status).toBe('pass');
    const before = readTree(root);
    expect(cors(['--dry-run', '--frontend', 'elsewhere/my-ui']).status).toBe('fail');
    expect(readTree(root)).toEqual(before);
    expect(cors(['--frontend', 'elsewhere/my-ui'])).toMatchObject({ status: 'pass', repaired: true });
    expect(fs.readFileSync(path.join(dir, '.env'), 'utf8')).toBe('ALLOWED_ORIGINS=http://localhost:5173,http://localhost:5300\n');
    expect(cors(['--frontend', 'elsewhere/my-ui'])).not.toHaveProperty('repaired');
  });
});
