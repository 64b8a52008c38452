import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl, verifyProject, type VerifyRun } from './support/check-cycle.js';
import { exampleDir, repoRoot } from './support/cli.js';
import { createResources, healthyEnv, runCliAsync, type CliResult } from './support/example-copies.js';

/**
 * Upgrades from the previous release, as a team takes them: a project written by authstrap 0.2.0
 * (test/fixtures/project-0.2.0.tgz: the example as that release wrote it, at e1225c9, before
 * projects kept their bases), changed by its users, then `authstrap generate` of this version.
 * 0.2.0's templates that differ from today's are in templates/released-owned.json, so the merge
 * has its base. The three projects differ in where their users changed things:
 *   (a) extension points only: their own route in src/extensions/index.ts, their mail wording;
 *   (b) engine files away from this version's changes: a two-line exemption at the top of
 *       src/http/rate-limit.ts (this version adds a function further down), and a longer
 *       invitation lifetime in src/extensions/auth/invitations.ts, which this version moves to
 *       src/auth/invitations.ts (and changes its imports);
 *   (c) the same lines: their own route mounted in src/app.ts right where this version mounts
 *       /realtime.
 * (a) and (b) upgrade with no question; (c) gets conflict markers and is resolved as a person
 * would; all three then build, start and pass verify. Declining (c) instead is recorded, and quiet.
 */
const fixture = path.join(repoRoot, 'packages/cli/test/fixtures/project-0.2.0.tgz');
const read = (dir: string, file: string) => fs.readFileSync(path.join(dir, file), 'utf8');
const write = (dir: string, file: string, text: string) => fs.writeFileSync(path.join(dir, file), text);
const edit = (dir: string, file: string, from: string, to: string) => {
  const text = read(dir, file);
  if (!text.includes(from)) throw new Error(`${file} of the 0.2.0 fixture no longer contains ${JSON.stringify(from)}`);
  write(dir, file, text.replace(from, to));
};

const ownRoute = "  router.get('/status', (_req, res) => { res.json({ ok: true }); });\n";
const exemption = '// Ours: the status page polls without limits.\nexport const exemptPaths = ["/status"];\n';
const webhookMount = "  app.use('/webhook-endpoints', ...webhooksRouter({ config, db, auth, outbox, settings: config.webhooks }));\n";
const ourMount = "  app.use('/status-page', (_req, res) => { res.json({ ok: true }); });\n";
const realtimeMount = "  app.use('/realtime', realtimeRouter({ config, db, auth, streams }));\n";
const invitationLifetime = 'const invitationLifetimeMs = 7 * 24 * 60 * 60 * 1000;';
const ourInvitationLifetime = 'const invitationLifetimeMs = 14 * 24 * 60 * 60 * 1000;';

/** The project's typecheck (`tsc --noEmit`, what its build checks), with the example's TypeScript. */
function typecheck(dir: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(exampleDir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json', '--noEmit'], { cwd: dir, encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ ok: !error, output: error ? stdout + stderr : '' }),
    );
  });
}

interface Upgraded {
  dir: string;
  generate: CliResult;
  check: CliResult;
  ms: number;
}

describe.runIf(adminUrl)('an upgrade from authstrap 0.2.0, with the users\' edits', () => {
  const resources = createResources({ adminUrl, name: 'upgrade' });
  const projects = new Map<string, Upgraded>();

  /** The 0.2.0 project, unpacked and edited by `change`, then upgraded by this version's generate. */
  async function upgrade(name: string, change: (dir: string) => void): Promise<Upgraded> {
    const parent = resources.temporaryFolder(`authstrap-upgrade-${name}-`);
    execFileSync('tar', ['-xzf', fixture, '-C', parent]);
    const dir = path.join(parent, 'saas-backend');
    // This version's dependencies (the merged package.json asks for the same as the example's).
    fs.symlinkSync(path.join(exampleDir, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    write(dir, '.env', healthyEnv);
    change(dir);
    const started = performance.now();
    const generate = await runCliAsync(['generate', dir], dir);
    const ms = Math.round(performance.now() - started);
    const check = await runCliAsync(['generate', dir, '--check'], dir);
    return { dir, generate, check, ms };
  }

  beforeAll(async () => {
    const runs = await Promise.all([
      upgrade('a', (dir) => {
        edit(dir, 'src/extensions/index.ts', '  const router = Router();\n', `  const router = Router();\n${ownRoute}`);
        edit(dir, 'src/extensions/mail/messages.ts', 'Confirm your', 'Please confirm your');
      }),
      upgrade('b', (dir) => {
        write(dir, 'src/http/rate-limit.ts', exemption + read(dir, 'src/http/rate-limit.ts'));
        edit(dir, 'src/extensions/auth/invitations.ts', invitationLifetime, ourInvitationLifetime);
      }),
      upgrade('c', (dir) => edit(dir, 'src/app.ts', webhookMount, webhookMount + ourMount)),
      upgrade('c-declined', (dir) => edit(dir, 'src/app.ts', webhookMount, webhookMount + ourMount)),
    ]);
    for (const [name, run] of [['a', runs[0]], ['b', runs[1]], ['c', runs[2]], ['c-declined', runs[3]]] as const) {
      projects.set(name, run);
      // For the record (issue notes): what each upgrade wrote and said, and how long it took.
      const said = run.generate.stdout.split('\n').filter((line) => /files? written|^Note: (merged|this version)/.test(line));
      console.log(`upgrade (${name}): authstrap generate in ${run.ms} ms; ${said.join(' | ')}`);
    }
  }, 240_000);
  afterAll(resources.cleanup, 60_000);

  const project = (name: string) => projects.get(name)!;

  it('(a) edits in the extension points: upgraded with no question, the edits kept', () => {
    const { dir, generate, check } = project('a');
    expect(generate.status, generate.output).toBe(0);
    expect(generate.output).not.toMatch(/conflict|authstrap-new|not merged yet/);
    expect(read(dir, 'src/extensions/index.ts')).toContain(ownRoute);
    expect(read(dir, 'src/extensions/mail/messages.ts')).toContain('Please confirm your');
    expect(check.status, check.output).toBe(0);
  });

  it('(b) engine files changed away from this version\'s changes: merged with no question, both changes in, a moved one at its new path', () => {
    const { dir, generate, check } = project('b');
    expect(generate.status, generate.output).toBe(0);
    // package.json too: the project's own (its authstrap dependency is a link), and this version's dependencies changed.
    expect(generate.stdout).toContain('merged this version\'s changes into 3 files you changed (review them before you commit): package.json, src/auth/invitations.ts, src/http/rate-limit.ts');
    expect(read(dir, 'src/http/rate-limit.ts')).toBe(exemption + read(exampleDir, 'src/http/rate-limit.ts'));
    expect(fs.existsSync(path.join(dir, 'src/http/rate-limit.ts.authstrap-new'))).toBe(false);
    // The moved file: the user's lifetime in this version's file at its new path; the old one gone.
    expect(read(exampleDir, 'src/auth/invitations.ts')).toContain(invitationLifetime);
    expect(read(dir, 'src/auth/invitations.ts')).toBe(read(exampleDir, 'src/auth/invitations.ts').replace(invitationLifetime, ourInvitationLifetime));
    expect(generate.stdout).toContain('src/extensions/auth/invitations.ts -> src/auth/invitations.ts');
    expect(fs.existsSync(path.join(dir, 'src/extensions/auth/invitations.ts'))).toBe(false);
    expect(Object.keys(JSON.parse(read(dir, 'authstrap.files.json')).files).filter((file) => file.startsWith('src/extensions/auth/'))).toEqual([
      'src/extensions/auth/auth.decorator.ts',
      'src/extensions/auth/auth.service.ts',
    ]);
    expect(check.status, check.output).toBe(0);
  });

  it('(c) the same lines: a conflict with markers, named until it is resolved; then quiet', { timeout: 180_000 }, async () => {
    const { dir, generate, check } = project('c');
    expect(generate.status, generate.output).toBe(0);
    expect(generate.stdout).toContain('src/app.ts (1 conflict)');
    const app = read(dir, 'src/app.ts');
    // Theirs: every mount this version adds after the webhook endpoints', up to the live streams'.
    const thisVersion = read(exampleDir, 'src/app.ts');
    const added = thisVersion.slice(thisVersion.indexOf(webhookMount) + webhookMount.length, thisVersion.indexOf(realtimeMount) + realtimeMount.length);
    expect(added).toContain(realtimeMount);
    expect(app).toContain(`<<<<<<< yours: src/app.ts\n${ourMount}||||||| authstrap 0.2.0\n=======\n${added}>>>>>>> authstrap `);
    expect(check.status).toBe(1);
    expect(check.stderr).toContain('not merged yet: src/app.ts (merged with conflicts)');
    // The build refuses the markers, naming the file.
    const build = await typecheck(dir);
    expect(build.ok).toBe(false);
    expect(build.output).toMatch(/src\/app\.ts\(\d+,\d+\): error TS1185: Merge conflict marker encountered/);
    // Resolved as a person would: both mounts kept.
    write(dir, 'src/app.ts', app.replace(/<<<<<<< yours: src\/app\.ts\n([^]*?)\|\|\|\|\|\|\| authstrap 0\.2\.0\n=======\n([^]*?)>>>>>>> authstrap \S+\n/, '$1$2'));
    const resolved = await runCliAsync(['resolve', 'src/app.ts'], dir);
    expect(resolved.status, resolved.output).toBe(0);
    const after = await runCliAsync(['generate', dir, '--check'], dir);
    expect(after.status, after.output).toBe(0);
  });

  it('(c) declined instead: recorded with the version, and quiet from then on', async () => {
    const { dir } = project('c-declined');
    // Keep ours: the lines between <<<<<<< and |||||||.
    write(dir, 'src/app.ts', read(dir, 'src/app.ts').replace(/<<<<<<< yours: src\/app\.ts\n([^]*?)\|\|\|\|\|\|\| [^]*?>>>>>>> authstrap \S+\n/, '$1'));
    const declined = await runCliAsync(['decline', 'src/app.ts'], dir);
    expect(declined.status, declined.output).toBe(0);
    expect(JSON.parse(read(dir, 'authstrap.files.json')).files['src/app.ts']).toMatchObject({ declined: expect.any(String) });
    const check = await runCliAsync(['generate', dir, '--check'], dir);
    expect(check.status, check.output).toBe(0);
    expect(check.output).not.toContain('not merged yet');
    const fix = await runCliAsync(['fix', dir, '--dry-run', '--json'], dir);
    expect(JSON.parse(fix.stdout).checks.find((result: { id: string }) => result.id === 'owned-upgrades')).toMatchObject({ status: 'pass' });
  });

  describe('all three, once settled, build, start and pass verify', () => {
    const verified = new Map<string, VerifyRun>();
    const built = new Map<string, { ok: boolean; output: string }>();
    beforeAll(async () => {
      // One after another: three typechecks of the whole backend at once only make each slower.
      for (const name of ['a', 'b', 'c']) built.set(name, await typecheck(project(name).dir));
      await Promise.all(
        ['a', 'b', 'c'].map(async (name) => {
          const { dir } = project(name);
          verified.set(name, await verifyProject(dir, await resources.startBackend(dir)));
        }),
      );
    }, 480_000);

    it.each(['a', 'b', 'c'])('(%s) builds', (name) => {
      expect(built.get(name)).toEqual({ ok: true, output: '' });
    });

    it.each(['a', 'b', 'c'])('(%s) starts and passes verify', (name) => {
      const run = verified.get(name)!;
      expect(run.report.checks.filter((check) => check.status === 'fail'), run.output).toEqual([]);
      expect(run.status, run.output).toBe(0);
    });
  });
});
