import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './support/cli.js';
import { listing, runCliProcess } from './support/setup.js';

/**
 * Every command, given wrong input, as the built CLI in a process: exit 1 or 2, a message naming
 * the flag or file to change, and never a stack trace. Nothing here needs PostgreSQL: the
 * "unreachable database" cases point at a port where nothing listens.
 */

const stackTrace = /\n\s+at /;
const unreachableDatabase = 'postgresql://someone:secret-password@127.0.0.1:1/nothing';

let root: string;
let busy: net.Server;
let busyPort: number;

beforeAll(async () => {
  root = tempDir('authstrap-cli-errors-');
  fs.mkdirSync(path.join(root, 'empty'));
  // An app that is not an authstrap project, whose .env names no database.
  fs.mkdirSync(path.join(root, 'shop'));
  fs.writeFileSync(path.join(root, 'shop/package.json'), '{ "name": "shop", "private": true }\n');
  fs.writeFileSync(path.join(root, 'shop/.env'), 'PORT=3000\n');
  // An app whose backend folder (shop2-auth, beside it) is taken already.
  fs.mkdirSync(path.join(root, 'shop2'));
  fs.writeFileSync(path.join(root, 'shop2/package.json'), '{ "name": "shop2", "private": true }\n');
  fs.mkdirSync(path.join(root, 'shop2-auth'));
  fs.writeFileSync(path.join(root, 'shop2-auth/notes.txt'), 'mine\n');
  // A project, written without installing or starting anything.
  const setup = runCliProcess(['setup', '--yes', '--project-name', 'proj', '--no-install', '--no-start'], { cwd: root });
  expect(setup.status, setup.output).toBe(0);
  // A port something else listens on.
  busy = net.createServer();
  await new Promise<void>((resolve) => busy.listen(0, resolve));
  busyPort = (busy.address() as net.AddressInfo).port;
}, 60_000);

afterAll(() => {
  busy?.close();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

interface WrongInput {
  name: string;
  args: () => string[];
  /** The folder to run in, below the test's root. */
  cwd?: string;
  exit: 1 | 2;
  /** What the message must name: the flag or the file to change. */
  names: () => RegExp;
}

const cases: WrongInput[] = [
  // setup
  { name: 'setup: an unknown flag', args: () => ['setup', '--yes', '--bogus'], exit: 2, names: () => /--bogus/ },
  { name: 'setup: no --project-name without a terminal', args: () => ['setup', '--yes'], exit: 2, names: () => /--project-name/ },
  { name: 'setup: a malformed --project-name', args: () => ['setup', '--yes', '--project-name', 'Bad Name'], exit: 2, names: () => /--project-name/ },
  { name: 'setup: --backend-port abc', args: () => ['setup', '--yes', '--project-name', 'p1', '--backend-port', 'abc'], exit: 2, names: () => /--backend-port/ },
  { name: 'setup: --backend-port 0', args: () => ['setup', '--yes', '--project-name', 'p2', '--backend-port', '0'], exit: 2, names: () => /--backend-port/ },
  { name: 'setup: a --backend-port in use', args: () => ['setup', '--yes', '--project-name', 'p3', '--backend-port', String(busyPort)], exit: 2, names: () => new RegExp(`Port ${busyPort} is already in use.*--backend-port`) },
  { name: 'setup: --frontend-port abc', args: () => ['setup', '--yes', '--project-name', 'p4', '--frontend-port', 'abc'], exit: 2, names: () => /--frontend-port/ },
  { name: 'setup: --db mysql', args: () => ['setup', '--yes', '--project-name', 'p5', '--db', 'mysql'], exit: 2, names: () => /--db/ },
  { name: 'setup: a malformed --database-url', args: () => ['setup', '--yes', '--project-name', 'p6', '--database-url', 'mysql://localhost/x'], exit: 2, names: () => /--database-url/ },
  { name: 'setup: an unreachable database', args: () => ['setup', '--yes', '--project-name', 'p7', '--database-url', unreachableDatabase], exit: 1, names: () => /--database-url/ },
  { name: 'setup: --package-manager cargo', args: () => ['setup', '--yes', '--project-name', 'p8', '--package-manager', 'cargo'], exit: 2, names: () => /--package-manager/ },
  { name: 'setup: a --dir that is not empty', args: () => ['setup', '--yes', '--json', '--project-name', 'p9', '--dir', 'shop'], exit: 2, names: () => /shop is not empty.*--dir/ },
  // verify
  { name: 'verify: an unknown flag', args: () => ['verify', '--yes', '--bogus'], exit: 2, names: () => /--bogus/ },
  { name: 'verify: outside a project, without --url', args: () => ['verify', '--yes'], cwd: 'empty', exit: 2, names: () => /not an authstrap project \(no \.env, no authstrap\.schema\.ts\).*--dir.*--url/ },
  { name: 'verify: a --dir that does not exist', args: () => ['verify', '--dir', 'nowhere'], exit: 2, names: () => /--dir nowhere does not exist/ },
  { name: 'verify: a malformed --url', args: () => ['verify', '--url', 'ftp://example.com'], exit: 2, names: () => /--url/ },
  { name: 'verify: a malformed --database-url', args: () => ['verify', '--dir', 'proj', '--database-url', 'nope'], exit: 2, names: () => /--database-url/ },
  { name: 'verify: no backend and no embedded database yet (checks skipped, no folder made)', args: () => ['verify', '--dir', 'proj', '--url', 'http://127.0.0.1:1'], exit: 1, names: () => /embedded database in \.data\/pglite does not exist yet: start the backend once/ },
  { name: 'verify: nothing answers at --url', args: () => ['verify', '--json', '--url', 'http://127.0.0.1:1', '--database-url', unreachableDatabase], exit: 1, names: () => /http:\/\/127\.0\.0\.1:1/ },
  // generate
  { name: 'generate: an unknown flag', args: () => ['generate', 'proj', '--yes', '--bogus'], exit: 2, names: () => /--bogus/ },
  { name: 'generate: a folder that does not exist', args: () => ['generate', 'nowhere', '--yes', '--json'], exit: 1, names: () => /nowhere\/authstrap\.schema\.ts: not found/ },
  { name: 'generate: a folder without authstrap.schema.ts', args: () => ['generate', 'empty'], exit: 1, names: () => /empty\/authstrap\.schema\.ts: not found/ },
  // fix
  { name: 'fix: an unknown flag', args: () => ['fix', 'proj', '--yes', '--bogus'], exit: 2, names: () => /--bogus/ },
  { name: 'fix: a folder without authstrap.schema.ts', args: () => ['fix', 'empty', '--yes', '--json'], exit: 2, names: () => /empty has no authstrap\.schema\.ts/ },
  { name: 'fix: a malformed --database-url', args: () => ['fix', 'proj', '--database-url', 'nope'], exit: 2, names: () => /--database-url/ },
  { name: 'fix: an unreachable --database-url', args: () => ['fix', 'proj', '--database-url', unreachableDatabase], exit: 1, names: () => /--database-url/ },
  { name: 'fix: a --frontend folder that does not exist', args: () => ['fix', 'proj', '--frontend', 'nowhere'], exit: 2, names: () => /--frontend nowhere/ },
  // add-auth
  { name: 'add-auth: an unknown flag', args: () => ['add-auth', 'proj', '--yes', '--bogus'], exit: 2, names: () => /--bogus/ },
  { name: 'add-auth: a malformed --rename', args: () => ['add-auth', 'proj', '--yes', '--rename', 'Account'], exit: 2, names: () => /--rename/ },
  { name: 'add-auth: a --rename to a bad name', args: () => ['add-auth', 'proj', '--rename', 'Account=1x'], exit: 2, names: () => /--rename/ },
  { name: 'add-auth: a folder without a schema file and no database', args: () => ['add-auth', 'nowhere'], exit: 2, names: () => /authstrap\.schema\.ts.*--database-url/ },
  { name: 'add-auth: a malformed --database-url', args: () => ['add-auth', 'empty', '--database-url', 'nope'], exit: 2, names: () => /--database-url/ },
  { name: 'add-auth: an unreachable --database-url', args: () => ['add-auth', 'empty', '--json', '--database-url', unreachableDatabase], exit: 1, names: () => /--database-url/ },
  { name: 'add-auth: --backend-port abc', args: () => ['add-auth', 'empty', '--database-url', unreachableDatabase, '--backend-port', 'abc'], exit: 2, names: () => /--backend-port/ },
  { name: 'add-auth: a --backend-port in use', args: () => ['add-auth', 'empty', '--database-url', unreachableDatabase, '--backend-port', String(busyPort)], exit: 2, names: () => /--backend-port/ },
  { name: 'add-auth: in an app whose .env has no DATABASE_URL', args: () => ['add-auth', '--yes'], cwd: 'shop', exit: 2, names: () => /\.env has no DATABASE_URL.*--database-url/ },
  { name: 'add-auth: an app whose backend folder is taken', args: () => ['add-auth', 'shop2', '--database-url', unreachableDatabase], exit: 2, names: () => /shop2-auth.*is not empty/ },
  // no command
  { name: 'an unknown command', args: () => ['deploy', '--yes'], exit: 2, names: () => /unknown command 'deploy'/ },
];

describe('wrong input: a message naming what to change, exit 1 or 2, no stack trace', () => {
  it.each(cases)('$name', ({ args, cwd, exit, names }) => {
    const before = listing(root);
    const run = runCliProcess(args(), { cwd: path.join(root, cwd ?? ''), timeoutMs: 30_000 });
    expect(run.status, run.output).toBe(exit);
    expect(run.output).not.toMatch(stackTrace);
    expect(run.output).not.toContain('secret-password');
    expect(run.output.replace(/\n/g, ' ')).toMatch(names());
    // Wrong input writes nothing (verify --json never writes; setup refused before writing).
    expect(listing(root)).toEqual(before);
  });

  it('with --json, a failure is also one JSON document on stdout', () => {
    const run = runCliProcess(['fix', 'empty', '--json'], { cwd: root });
    expect(run.status).toBe(2);
    expect(JSON.parse(run.stdout)).toEqual({ ok: false, exitCode: 2, error: expect.stringContaining('has no authstrap.schema.ts') });
  });
});
