import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { adapterVersion } from '../src/frontend/adapter-dependency.js';
import { readTree, tempDir } from './support/cli.js';
import { runCliProcess } from './support/setup.js';

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `authstrap setup --frontend` on an existing Next.js app (a create-next-app layout, in
 * fixtures/next-app): only the listed files change, `--dry-run` shows them and writes nothing,
 * a second run changes nothing, and what authstrap cannot build on is a usage error.
 */

const fixture = path.join(import.meta.dirname, 'fixtures/next-app');

/** The team console's files: the organization settings pages, the user's security page, and what they import. */
const consoleFiles = [
  'app/account/security/page.tsx',
  'app/settings/api-keys/page.tsx',
  'app/settings/audit-log/page.tsx',
  'app/settings/directory/page.tsx',
  'app/settings/domains/page.tsx',
  'app/settings/general/page.tsx',
  'app/settings/invitations/page.tsx',
  'app/settings/layout.tsx',
  'app/settings/members/page.tsx',
  'app/settings/page.tsx',
  'app/settings/sso/[id]/page.tsx',
  'app/settings/sso/page.tsx',
  'app/settings/webhooks/page.tsx',
  'components/account-security.tsx',
  'components/organization-provider.tsx',
  'components/settings/actor.ts',
  'components/settings/api-keys.tsx',
  'components/settings/audit-log.tsx',
  'components/settings/directory.tsx',
  'components/settings/domains.tsx',
  'components/settings/events-per-day-chart.tsx',
  'components/settings/general.tsx',
  'components/settings/invitations.tsx',
  'components/settings/members.tsx',
  'components/settings/refusal.tsx',
  'components/settings/settings-navigation.tsx',
  'components/settings/sso-setup-steps.tsx',
  'components/settings/sso.tsx',
  'components/settings/webhooks.tsx',
  'components/ui/action.tsx',
  'components/ui/card-table.tsx',
  'components/ui/confirm-dialog.tsx',
  'components/ui/copy-button.tsx',
  'components/ui/event-sentence.tsx',
  'components/ui/load.tsx',
  'components/ui/pager.tsx',
  'components/ui/save-file.ts',
  'components/ui/section-navigation.tsx',
  'components/ui/shown-once.tsx',
];

/** The files `setup --frontend` may write into an app whose source root is `root`: what connects it, and the console. */
const connectFiles = (root: string) =>
  [
    '.env.local',
    'package.json',
    `${root}lib/api.ts`,
    `${root}lib/auth-client.ts`,
    `${root}lib/auth.ts`,
    `${root}lib/authstrap-client.ts`,
    `${root}lib/impersonation.ts`,
    `${root}lib/session.ts`,
    `${root}app/api/auth/[...all]/route.ts`,
    ...consoleFiles.map((file) => `${root}${file}`),
  ].sort();

/** What changed between two snapshots of a folder: added, changed and removed paths. */
function changedPaths(before: Map<string, string>, after: Map<string, string>): string[] {
  const paths = new Set([...before.keys(), ...after.keys()]);
  return [...paths].filter((file) => before.get(file) !== after.get(file)).sort();
}

describe('setup --frontend on an existing Next.js app', () => {
  let workspace: string;
  let backendDir: string;
  let webDir: string;
  const run = (...args: string[]) => runCliProcess(['setup', ...args], { cwd: backendDir, timeoutMs: 60_000 });

  beforeEach(() => {
    workspace = tempDir('authstrap-next-');
    const created = runCliProcess(['setup', '--yes', '--no-install', '--db', 'embedded', '--project-name', 'api'], { cwd: workspace });
    expect(created.status, created.output).toBe(0);
    backendDir = path.join(workspace, 'api');
    webDir = path.join(workspace, 'web');
    fs.cpSync(fixture, webDir, { recursive: true });
    fs.renameSync(path.join(webDir, '_gitignore'), path.join(webDir, '.gitignore'));
  });

  it('--dry-run prints the diff of every file it would write and writes nothing', () => {
    const web = readTree(webDir);
    const backend = readTree(backendDir);
    const result = run('--frontend', '../web', '--dry-run');
    expect(result.status, result.output).toBe(0);
    for (const file of connectFiles('src/').filter((file) => file !== 'src/lib/authstrap-client.ts')) expect(result.output).toContain(`b/../web/${file}`);
    expect(result.output).toContain('+ ../web/src/lib/authstrap-client.ts (the typed client');
    expect(result.output).toContain('+ALLOWED_ORIGINS=http://localhost:5173,http://localhost:3001');
    expect(result.output).toContain('"../web/src/lib/authstrap-client.ts"');
    expect(result.output).toMatch(new RegExp(`dry run: ${10 + consoleFiles.length} changes not written`));
    expect(changedPaths(web, readTree(webDir))).toEqual([]);
    expect(changedPaths(backend, readTree(backendDir))).toEqual([]);
  });

  it('changes only the listed files, keeps what was there, and a second run is a no-op', () => {
    const web = readTree(webDir);
    const backend = readTree(backendDir);
    const result = run('--frontend', '../web', '--no-install');
    expect(result.status, result.output).toBe(0);

    expect(changedPaths(web, readTree(webDir))).toEqual(connectFiles('src/'));
    expect(changedPaths(backend, readTree(backendDir))).toEqual(['.env', 'package.json']);

    // .env.local keeps the app's own setting and gains the backend's address and secrets.
    const envLocal = fs.readFileSync(path.join(webDir, '.env.local'), 'utf8');
    expect(envLocal.startsWith(web.get('.env.local')!)).toBe(true);
    const backendEnv = fs.readFileSync(path.join(backendDir, '.env'), 'utf8');
    const secret = (name: string) => new RegExp(`^${name}=(.+)$`, 'm').exec(backendEnv)![1];
    expect(envLocal).toContain(`AUTH_SECRET=${secret('AUTH_SECRET')}\n`);
    expect(envLocal).toContain(`SERVICE_API_KEY=${secret('SERVICE_API_KEY')}\n`);
    expect(envLocal).toContain('AUTHSTRAP_URL=http://localhost:3000\n');
    expect(envLocal).toContain('BETTER_AUTH_URL=http://localhost:3001\n');

    // package.json: Better Auth and the adapter added, the rest as it was.
    const packageJson = JSON.parse(fs.readFileSync(path.join(webDir, 'package.json'), 'utf8'));
    const original = JSON.parse(web.get('package.json')!);
    expect(packageJson.dependencies).toEqual({ ...original.dependencies, 'better-auth': expect.any(String), '@radix-ui/react-alert-dialog': expect.any(String), '@authstrap/better-auth-adapter': expect.stringMatching(new RegExp(`^(\\^${escaped(adapterVersion)}|file:.*authstrap-better-auth-adapter-${escaped(adapterVersion)}\\.tgz)$`)) });
    expect({ ...packageJson, dependencies: undefined }).toEqual({ ...original, dependencies: undefined });

    // The typed client is the backend's, and the route handler reaches lib/auth.ts.
    expect(fs.readFileSync(path.join(webDir, 'src/lib/authstrap-client.ts'), 'utf8')).toBe(fs.readFileSync(path.join(backendDir, 'client/authstrap-client.ts'), 'utf8'));
    const route = path.join(webDir, 'src/app/api/auth/[...all]/route.ts');
    const imported = /from '(\.[^']+)'/.exec(fs.readFileSync(route, 'utf8').split('\n').find((line) => line.includes('lib/auth'))!)![1]!;
    expect(fs.existsSync(`${path.resolve(path.dirname(route), imported)}.ts`)).toBe(true);
    expect(fs.readFileSync(path.join(backendDir, '.env'), 'utf8')).toMatch(/^ALLOWED_ORIGINS=http:\/\/localhost:5173,http:\/\/localhost:3001$/m);

    const afterFirst = readTree(webDir);
    const backendAfterFirst = readTree(backendDir);
    const again = run('--frontend', '../web', '--no-install');
    expect(again.status, again.output).toBe(0);
    expect(again.output).toContain('Nothing to change: the frontend is connected.');
    expect(changedPaths(afterFirst, readTree(webDir))).toEqual([]);
    expect(changedPaths(backendAfterFirst, readTree(backendDir))).toEqual([]);
    expect(run('--frontend', '../web', '--dry-run').output).toContain('Nothing to change');

    // fix finds the app (through package.json's authstrap.clients too) and has nothing to say about it.
    const fix = runCliProcess(['fix', '--json'], { cwd: backendDir, timeoutMs: 60_000 });
    const report = JSON.parse(fix.stdout) as { checks: { id: string; status: string; message: string }[] };
    // Nothing fails or warns; the database checks are skipped (the embedded database does not exist yet).
    expect(report.checks.filter((check) => check.status === 'fail' || check.status === 'warn'), fix.output).toEqual([]);
    expect(report.checks.filter((check) => check.status === 'skip').map((check) => check.id)).toEqual(['sso-connections', 'credential-provider', 'nullability', 'not-null-rows', 'row-level-security']);
    expect(report.checks.find((check) => check.id === 'cors-origin')!.message).toContain('(frontends: ../web)');
    expect(report.checks.find((check) => check.id === 'adapter-version')!.message).toContain('2.0.2 or newer');
  });

  it('fix finds an app that is not in a usual folder through authstrap.clients, at its dev port', () => {
    fs.renameSync(webDir, path.join(workspace, 'storefront'));
    const result = runCliProcess(['setup', '--frontend', '../storefront', '--no-install', '--frontend-port', '3005'], { cwd: backendDir, timeoutMs: 60_000 });
    expect(result.status, result.output).toBe(0);
    const packageFile = path.join(workspace, 'storefront/package.json');
    fs.writeFileSync(packageFile, fs.readFileSync(packageFile, 'utf8').replaceAll('--port 3001', '--port 3005'));
    const fix = runCliProcess(['fix', '--json'], { cwd: backendDir, timeoutMs: 60_000 });
    const cors = (JSON.parse(fix.stdout) as { checks: { id: string; status: string; message: string }[] }).checks.find((check) => check.id === 'cors-origin')!;
    expect(cors).toMatchObject({ status: 'pass', message: expect.stringContaining('http://localhost:3005 (frontends: ../storefront)') });
  });

  it("keeps a file of the user's own with an auth file's name, and says so", () => {
    const mine = "// my own Better Auth setup\nexport const auth = {};\n";
    fs.mkdirSync(path.join(webDir, 'src/lib'), { recursive: true });
    fs.writeFileSync(path.join(webDir, 'src/lib/auth.ts'), mine);
    const result = run('--frontend', '../web', '--no-install');
    expect(result.status, result.output).toBe(0);
    expect(result.output).toContain('web/src/lib/auth.ts exists and differs');
    expect(fs.readFileSync(path.join(webDir, 'src/lib/auth.ts'), 'utf8')).toBe(mine);
  });

  it('connects an app without src/: the files go next to app/', () => {
    fs.renameSync(path.join(webDir, 'src/app'), path.join(webDir, 'app'));
    fs.rmSync(path.join(webDir, 'src'), { recursive: true });
    const before = readTree(webDir);
    const result = run('--frontend', '../web', '--no-install');
    expect(result.status, result.output).toBe(0);
    expect(changedPaths(before, readTree(webDir))).toEqual(connectFiles(''));
  });

  it('the backend keeps the copy of the typed client in step: generate rewrites it after a schema change', () => {
    expect(run('--frontend', '../web', '--no-install').status).toBe(0);
    const schemaFile = path.join(backendDir, 'authstrap.schema.ts');
    fs.writeFileSync(schemaFile, fs.readFileSync(schemaFile, 'utf8').replace("status: { type: 'enum'", "budget: { type: 'integer', nullable: true },\n        status: { type: 'enum'"));
    const generated = runCliProcess(['generate'], { cwd: backendDir });
    expect(generated.status, generated.output).toBe(0);
    expect(generated.output).toContain('web/src/lib/authstrap-client.ts');
    expect(fs.readFileSync(path.join(webDir, 'src/lib/authstrap-client.ts'), 'utf8')).toContain('budget');
  });

  it('refuses what it cannot build on, naming --frontend, and writes nothing', () => {
    const backend = readTree(backendDir);
    const cases: [string, () => void, RegExp][] = [
      ['not a Next.js app', () => fs.writeFileSync(path.join(webDir, 'package.json'), '{ "name": "plain", "dependencies": { "vite": "^7.0.0" } }\n'), /--frontend \S*web is not a Next\.js app/],
      ['Pages Router only', () => fs.renameSync(path.join(webDir, 'src/app'), path.join(webDir, 'src/pages')), /has no App Router folder/],
      ['a broken package.json', () => fs.writeFileSync(path.join(webDir, 'package.json'), '{ "name": '), /package\.json is not valid JSON/],
      ['a folder of something else', () => fs.rmSync(path.join(webDir, 'package.json')), /is not empty and has no package\.json/],
    ];
    for (const [name, breakIt, message] of cases) {
      fs.rmSync(webDir, { recursive: true });
      fs.cpSync(fixture, webDir, { recursive: true });
      breakIt();
      const web = readTree(webDir);
      const result = run('--frontend', '../web', '--no-install');
      expect(result.status, `${name}: ${result.output}`).toBe(2);
      expect(result.output, name).toMatch(message);
      expect(result.output, name).not.toMatch(/\n\s+at /);
      expect(changedPaths(web, readTree(webDir)), name).toEqual([]);
    }
    expect(changedPaths(backend, readTree(backendDir))).toEqual([]);

    const dryRunAlone = runCliProcess(['setup', '--yes', '--project-name', 'other', '--dry-run'], { cwd: workspace });
    expect(dryRunAlone.status).toBe(2);
    expect(dryRunAlone.output).toContain('--dry-run previews connecting a frontend');
  });
});
