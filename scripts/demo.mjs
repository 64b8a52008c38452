// `npm run demo`: the quick start's main job. Installs and builds, then starts the example
// backend (examples/saas-backend) on the embedded database, walks a few requests through it to
// show that it works, and keeps it running until Ctrl-C. With --check it stops after the walk;
// --skip-install skips the install and build (the test suite uses it, having done both).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { bootstrap, repoRoot, run } from './bootstrap.mjs';

const checkOnly = process.argv.includes('--check');
const skipInstall = process.argv.includes('--skip-install');
const port = process.env.PORT ?? '3000';
const exampleDir = path.join(repoRoot, 'examples/saas-backend');

if (!skipInstall) bootstrap();
run('node packages/cli/dist/cli.js generate examples/saas-backend --check');

const server = spawn(process.execPath, ['--import', 'tsx', 'src/index.ts'], {
  cwd: exampleDir,
  // Access logs would bury the checklist; the backend still logs warnings and errors.
  env: { LOG_LEVEL: 'error', ...process.env, PORT: port, HOST: '127.0.0.1' },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const exited = new Promise((resolve) => server.once('exit', resolve));
const base = `http://127.0.0.1:${port}`;

async function request(method, pathname, { body, token, organizationId } = {}) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (organizationId) headers['x-organization-id'] = organizationId;
  const response = await fetch(base + pathname, { method, headers, body: body && JSON.stringify(body) });
  return { status: response.status, body: response.status === 204 ? undefined : await response.json() };
}

async function signUp(name) {
  const email = `${name.toLowerCase()}-${randomBytes(3).toString('hex')}@example.com`;
  const response = await request('POST', '/api/auth/sign-up/email', { body: { email, name, password: 'demo-password-123' } });
  check(`POST /api/auth/sign-up/email (${name})`, response.status === 201, email);
  const { token } = response.body.data;
  const session = await request('GET', '/api/auth/get-session', { token });
  return { email, token, organizationId: session.body.data.organizations[0].id };
}

async function waitForReady() {
  for (let attempt = 0; attempt < 120; attempt += 1) {
    if (server.exitCode !== null) throw new Error('the backend exited; see its output above');
    try {
      if ((await fetch(`${base}/ready`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('the backend did not become ready within 30 s');
}

function check(label, ok, detail = '') {
  console.log(`${ok ? '✔' : '✘'} ${label}${detail ? `  ${detail}` : ''}`);
  if (!ok) throw new Error(`demo check failed: ${label}`);
}

try {
  await waitForReady();
  console.log(`\nChecking ${base} ...`);
  check('GET /health', (await request('GET', '/health')).status === 200);
  const ada = await signUp('Ada');
  const signIn = await request('POST', '/api/auth/sign-in/email', { body: { email: ada.email, password: 'demo-password-123' } });
  check('POST /api/auth/sign-in/email', signIn.status === 200);
  const wrong = await request('POST', '/api/auth/sign-in/email', { body: { email: ada.email, password: 'not-the-password' } });
  check('a wrong password is refused with 401', wrong.status === 401);
  const asAda = { token: ada.token, organizationId: ada.organizationId };
  const project = await request('POST', '/Projects', { ...asAda, body: { name: 'Demo project' } });
  check("POST /Projects in Ada's organization", project.status === 201);
  const task = await request('POST', `/Projects/${project.body.data.id}/Tasks`, { ...asAda, body: { title: 'Try the API' } });
  check('POST /Projects/:projectId/Tasks', task.status === 201);
  const list = await request('GET', '/Projects?limit=5', asAda);
  check('GET /Projects lists it, with meta', list.status === 200 && list.body.meta.total >= 1, JSON.stringify(list.body.meta));
  const grace = await signUp('Grace');
  const isolated = await request('GET', `/Projects/${project.body.data.id}`, { token: grace.token, organizationId: grace.organizationId });
  check("another tenant gets 404 for Ada's project", isolated.status === 404);
  const intruding = await request('GET', '/Projects', { token: grace.token, organizationId: ada.organizationId });
  check("naming Ada's organization gets 403", intruding.status === 403);
  check('GET /api/docs/openapi.json', (await request('GET', '/api/docs/openapi.json')).status === 200);

  if (checkOnly) {
    server.kill('SIGTERM');
    await exited;
  } else {
    console.log(`\nThe example backend runs at ${base} (API docs: ${base}/api/docs). Ctrl-C stops it.`);
    console.log(`Try: curl -H 'authorization: Bearer ${ada.token}' -H 'x-organization-id: ${ada.organizationId}' '${base}/Projects'`);
    process.on('SIGINT', () => server.kill('SIGTERM'));
    process.exitCode = (await exited) ?? 0;
  }
} catch (error) {
  console.error(`\n${error.message}`);
  server.kill('SIGTERM');
  await exited;
  process.exit(1);
}
