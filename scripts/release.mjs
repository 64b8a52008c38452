// `npm run release`: turns the pending changesets into versions and CHANGELOG.md entries
// (`changeset version`), brings what carries the versions along (the adapter version new frontends
// ask for, the example project), builds, packs authstrap and @authstrap/better-auth-adapter into
// release/, and checks the two tarballs as a user gets them: installed into an empty folder outside
// the repository, `authstrap setup` there on the embedded database, the project's own
// `authstrap --version`, record and README, then `authstrap verify` against the started backend.
// `--check` does all of it but the version bump (CI). Publishing stays outside this repository:
// the last lines say what to run. docs/releasing.md is the whole process.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { bootstrap, repoRoot, run } from './bootstrap.mjs';
import { packPackage, runCommand, userEnv } from './packed-package.mjs';
import { startNpm, stopProcessGroup, waitForUrl } from './processes.mjs';
import { parseReleaseArgs, pendingChangesets, projectVersionProblems, tarballName, withAdapterVersion } from './release-plan.mjs';

const cliDir = path.join(repoRoot, 'packages/cli');
const adapterDir = path.join(repoRoot, 'packages/better-auth-adapter');
const adapterDependencyFile = path.join(cliDir, 'src/frontend/adapter-dependency.ts');
const releaseDir = path.join(repoRoot, 'release');
const minutes = (count) => count * 60_000;
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

let options;
try {
  options = parseReleaseArgs(process.argv.slice(2));
} catch (error) {
  console.error(error.message);
  process.exit(2);
}

/** Ends the release with a message; thrown, so that a started backend is stopped and the check's folder removed on the way out. */
class ReleaseFailure extends Error {}
function fail(message) {
  throw new ReleaseFailure(message);
}

function step(title) {
  console.log(`\n== ${title}`);
}

/** `changeset version`, then what follows the new versions: the CLI's adapter version, the install, the example. */
function version() {
  const pending = pendingChangesets(fs.readdirSync(path.join(repoRoot, '.changeset')));
  if (pending.length === 0) fail('no pending changesets in .changeset/: nothing to release (write one with `pnpm changeset`; `--check` packs and checks without a release)');
  // The templates of the release before this one: an upgrade of a project written by it that
  // kept no base of its own merges from them (templates/released-owned.json).
  const previous = readJson(path.join(cliDir, 'package.json')).version;
  const previousCommit = runCommand('git', ['log', '-1', '--format=%H', `-S"version": "${previous}"`, '--', 'packages/cli/package.json'], { cwd: repoRoot }).stdout.trim();
  if (previousCommit) {
    step(`The owned files' templates of authstrap ${previous} (${previousCommit.slice(0, 7)})`);
    run(`node scripts/record-released-templates.mjs ${previous} ${previousCommit}`);
  }
  step(`Versions from ${pending.length} changeset${pending.length === 1 ? '' : 's'}`);
  run('pnpm changeset version');
  const adapterVersion = readJson(path.join(adapterDir, 'package.json')).version;
  fs.writeFileSync(adapterDependencyFile, withAdapterVersion(fs.readFileSync(adapterDependencyFile, 'utf8'), adapterVersion));
  // The new versions: installed, the CLI rebuilt and the adapter vendored again (bootstrap sees the changes).
  bootstrap();
  step('The example, as this version writes it');
  run('node scripts/refresh-example.mjs');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Runs a command in the check's folder; a failure ends the release with its output. */
function mustRun(command, args, cwd, timeoutMs) {
  const result = runCommand(command, args, { cwd, env: userEnv(), timeoutMs });
  if (result.status !== 0) fail(`\`${command} ${args.join(' ')}\` in ${cwd} failed:\n${result.output}`);
  return result;
}

/** Both tarballs installed into an empty folder outside the repository, a project set up and verified there. */
async function checkTarballs({ cli, adapter }, versions) {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-release-'));
  try {
    step(`Install both tarballs into ${userDir}`);
    mustRun('npm', ['install', '--no-audit', '--no-fund', cli, adapter], userDir, minutes(5));
    mustRun('node', ['--input-type=module', '-e', "await import('@authstrap/better-auth-adapter')"], userDir, minutes(1));
    const installedCli = mustRun('npx', ['authstrap', '--version'], userDir, minutes(1)).stdout.trim();
    if (installedCli !== versions.cli) fail(`the installed authstrap says ${installedCli}, not ${versions.cli}`);

    step('authstrap setup on the embedded database');
    const port = await freePort();
    const setup = mustRun('npx', ['authstrap', 'setup', '--yes', '--db', 'embedded', '--project-name', 'demo', '--backend-port', String(port), '--package-manager', 'npm'], userDir, minutes(8));
    console.log(setup.output.trim().split('\n').slice(-8).join('\n'));
    const project = path.join(userDir, 'demo');
    const problems = projectVersionProblems(versions.cli, {
      versionOutput: mustRun('npx', ['authstrap', '--version'], project, minutes(1)).stdout,
      record: fs.readFileSync(path.join(project, 'authstrap.files.json'), 'utf8'),
      readme: fs.readFileSync(path.join(project, 'README.md'), 'utf8'),
    });
    if (problems.length > 0) fail(`the project does not say which authstrap wrote it:\n  - ${problems.join('\n  - ')}`);

    step('authstrap verify against the started backend');
    const backend = startNpm(project, ['start'], { env: userEnv({ LOG_LEVEL: 'error' }), stdio: 'ignore' });
    try {
      await waitForUrl(`http://localhost:${port}/ready`, 60);
      const verify = runCommand('npx', ['authstrap', 'verify'], { cwd: project, env: userEnv(), timeoutMs: minutes(3) });
      console.log(verify.output.trim().split('\n').slice(-1)[0]);
      if (verify.status !== 0) fail(`authstrap verify failed:\n${verify.output}`);
    } finally {
      stopProcessGroup(backend);
    }
  } finally {
    if (options.keep) console.log(`(kept ${userDir})`);
    else fs.rmSync(userDir, { recursive: true, force: true });
  }
}

try {
  await release();
} catch (error) {
  if (!(error instanceof ReleaseFailure)) throw error;
  console.error(`\nrelease: ${error.message}`);
  process.exit(1);
}

async function release() {
  bootstrap();
  if (!options.check) version();

  const versions = { cli: readJson(path.join(cliDir, 'package.json')).version, adapter: readJson(path.join(adapterDir, 'package.json')).version };
  step(`Pack authstrap ${versions.cli} and @authstrap/better-auth-adapter ${versions.adapter} into release/`);
  fs.rmSync(releaseDir, { recursive: true, force: true });
  run('pnpm --filter @authstrap/better-auth-adapter run build');
  const adapter = packPackage(adapterDir, releaseDir, { env: userEnv() });
  // The CLI's prepack builds it, copies templates/ and docs/ in and vendors the adapter it was released with.
  const cli = packPackage(cliDir, releaseDir, { env: userEnv() });
  for (const [packed, name, packageVersion] of [[adapter, '@authstrap/better-auth-adapter', versions.adapter], [cli, 'authstrap', versions.cli]]) {
    if (path.basename(packed.tarball) !== tarballName(name, packageVersion)) fail(`${packed.tarball} is not ${tarballName(name, packageVersion)}`);
  }
  const vendored = `vendor/${tarballName('@authstrap/better-auth-adapter', versions.adapter)}`;
  if (!cli.files.includes(vendored)) fail(`the authstrap tarball does not carry ${vendored}`);
  if (!cli.files.includes('CHANGELOG.md') || !adapter.files.includes('CHANGELOG.md')) fail('a tarball does not carry its CHANGELOG.md');

  await checkTarballs({ cli: cli.tarball, adapter: adapter.tarball }, versions);

  const relative = (file) => path.relative(process.cwd(), file);
  const next = options.check
    ? ['(--check: versions unchanged)']
    : [
        `Next: review \`git diff\` (versions, CHANGELOG.md, the example) and commit it as "Release authstrap ${versions.cli}, @authstrap/better-auth-adapter ${versions.adapter}";`,
        `tag it (\`pnpm changeset tag\`: authstrap@${versions.cli}, @authstrap/better-auth-adapter@${versions.adapter}); publish from outside this script, the adapter first:`,
        `  npm publish ${relative(adapter.tarball)} --access public`,
        `  npm publish ${relative(cli.tarball)}`,
      ];
  console.log(
    [`\nauthstrap ${versions.cli} and @authstrap/better-auth-adapter ${versions.adapter}: packed and checked.`, `  ${relative(adapter.tarball)}`, `  ${relative(cli.tarball)}`, ...next].join('\n'),
  );
}
