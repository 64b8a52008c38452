import fs from 'node:fs';
import path from 'node:path';
import chalk from 'chalk';
import { CliError } from '../cli-error.js';
import { authstrapDependency } from '../setup/authstrap-dependency.js';
import { askForMissing } from '../setup/prompts.js';
import { frontendDirOf, parsePort, resolveSetupSettings, type PackageManager, type SetupFlags, type SetupSettings } from '../setup/options.js';
import { inspectFrontendFolder } from '../frontend/existing-app.js';
import { applyFrontendSetup, describeFrontendPlan, planFrontendSetup, type FrontendSetupPlan } from '../frontend/steps.js';
import { loadFrontendTemplates } from '../frontend/templates.js';
import { packageNameFor } from '../generate/index.js';
import { schemaFileName } from '../schema/index.js';
import {
  checkNode,
  checkPortFree,
  checkPostgresReachable,
  checkTargetFolder,
  ensureDatabase,
  installDependencies,
  logDir,
  writeProject,
} from '../setup/steps.js';
import { printJson } from '../ui/output.js';
import { formatCheck, step } from '../ui/report.js';
import { examineLoopbackHosts, loopbackHostsCheck } from '../checks/loopback-hosts.js';
import { readUrlSettings } from '../checks/project-snapshot.js';
import { repairHint } from '../checks/verdict.js';
import type { VerifyReport } from '../verify/index.js';
import { projectDatabase } from '../project/database.js';
import { maskPassword, readProjectEnv } from '../project/env-file.js';
import { startAndVerify } from '../project/start-and-verify.js';

/**
 * `authstrap setup`: ask (or read flags) -> check -> write the project -> install -> database
 * -> start -> verify -> stop -> say how to start it again. Nothing is written before the checks
 * pass; a failure after that says what is left in the folder.
 */
export async function setupCommand(flags: SetupFlags): Promise<void> {
  // `setup --frontend` in an existing backend's folder connects (or creates) only the frontend.
  const existingBackend = flags.frontend !== undefined && flags.projectName === undefined ? backendFolder(flags.dir ?? '.') : undefined;
  if (existingBackend) return frontendOnly(existingBackend, flags);

  // --json output is for scripts: prompts would land in it, so it asks nothing, like --yes.
  const interactive = flags.yes !== true && flags.json !== true && process.stdin.isTTY === true;
  const answered = interactive ? await askForMissing(flags) : flags;
  const settings = resolveSetupSettings(answered, { cwd: process.cwd(), userAgent: process.env.npm_config_user_agent });

  // Setup only starts the backend when its dependencies are there (installed now, or already in
  // the folder); without them the backend port is never used, so a busy port must not fail
  // `--no-install` (it did, whenever something else was on port 3000).
  const willStart = settings.start && (settings.install || fs.existsSync(path.join(settings.dir, 'node_modules')));
  const authstrap = await step('Check Node, the folder and the database', async () => {
    const found = [checkNode(), checkTargetFolder(settings)];
    // A frontend folder authstrap cannot build on stops setup before anything is written.
    if (settings.frontendDir) found.push(`frontend ${inspectFrontendFolder(settings.frontendDir, loadFrontendTemplates()).kind === 'new' ? 'new' : 'Next.js app'} in ${settings.frontendDir}`);
    if (willStart) await checkPortFree(settings.backendPort);
    if (settings.database.kind === 'postgres') found.push(await checkPostgresReachable(settings.database.url));
    const dependency = await authstrapDependency();
    found.push(dependency.note);
    return { value: dependency.spec, result: found.join(', ') };
  });

  let written = false;
  let verified: VerifyReport | undefined;
  try {
    await step('Write the project', async () => {
      written = true;
      return { value: undefined, result: writeProject(settings, authstrap) };
    });

    const frontend = settings.frontendDir
      ? await step('Write the frontend', async () => {
          const plan = await planFrontendSetup({ backendDir: settings.dir, frontendDir: settings.frontendDir!, port: settings.frontendPort });
          const written = applyFrontendSetup(plan, settings.dir);
          return { value: plan, result: `${plan.kind === 'new' ? 'a new Next.js app' : 'the Next.js app connected'}: ${written.length} files` };
        })
      : undefined;

    if (settings.install) {
      await step(`Install dependencies (${settings.packageManager})`, async () => ({ value: undefined, result: await installDependencies(settings) }));
      if (frontend) await installFrontend(frontend, settings.dir, settings.packageManager);
    }
    await step('Prepare the database', async () => ({
      value: undefined,
      result: settings.database.kind === 'postgres' ? await ensureDatabase(settings.database.url) : 'embedded PostgreSQL in .data/pglite',
    }));

    const canStart = fs.existsSync(path.join(settings.dir, 'node_modules'));
    if (settings.start && !canStart) console.log(chalk.yellow('– Start and verify skipped: dependencies are not installed (--no-install)'));
    if (settings.start && canStart) {
      verified = await startAndVerify({
        dir: settings.dir,
        backendPort: settings.backendPort,
        database: projectDatabase(settings.dir, {}, settings.database.kind === 'postgres' ? settings.database.url : undefined),
        serviceKey: readProjectEnv(settings.dir).SERVICE_API_KEY,
        stepTitle: 'Start the backend and apply migrations',
        failure: 'Verification failed',
      });
    }
  } catch (error) {
    if (written && error instanceof CliError) {
      throw new CliError(`${error.message}\nThe project files are in ${settings.dir}, but setup did not finish; fix the cause and run setup again with --force, or delete the folder.`, error.exitCode);
    }
    throw error;
  }

  printNextSteps(settings);
  if (settings.frontendDir) printFrontendNextSteps(settings.frontendDir, settings.frontendPort, settings.packageManager);
  // Verify examined the project, loopback-hosts included; without it, that one check still runs.
  const loopback = verified ? undefined : loopbackHostsLine(settings.dir, settings.frontendDir ? [settings.frontendDir] : []);
  if (loopback) console.log(`\n${loopback}`);
  if (flags.json) {
    printJson({
      ok: true,
      projectName: settings.projectName,
      dir: settings.dir,
      backendPort: settings.backendPort,
      frontendPort: settings.frontendPort,
      database: settings.database.kind === 'postgres' ? maskPassword(settings.database.url) : 'embedded',
      installed: fs.existsSync(path.join(settings.dir, 'node_modules')),
      checks: verified?.checks ?? [],
    });
  }
}

function printNextSteps(settings: SetupSettings) {
  const relative = path.relative(process.cwd(), settings.dir) || '.';
  const database = settings.database.kind === 'postgres' ? maskPassword(settings.database.url) : 'embedded (.data/pglite)';
  // "Created api", or "Created api in ../apps/api" when the folder is not named after it.
  const where = relative === settings.projectName ? '' : relative === '.' ? ' in this folder' : ` in ${relative}`;
  console.log(`${chalk.green('Created')} ${settings.projectName}${where}`);
  console.log(`  database  ${database}`);
  console.log(`  API docs  http://localhost:${settings.backendPort}/api/docs`);
  console.log(`  CORS      http://localhost:${settings.frontendPort} (ALLOWED_ORIGINS in .env; --frontend-port)`);
  // Without node_modules (--no-install) `npm start` alone fails: say to install first.
  const install = fs.existsSync(path.join(settings.dir, 'node_modules')) ? '' : `${settings.packageManager} install && `;
  console.log(`\nStart it:  ${chalk.cyan(`cd ${relative} && ${install}${settings.packageManager} start`)}`);
}

/** The backend folder `--dir` (or the current folder) is, when it holds an authstrap schema. */
function backendFolder(dir: string): string | undefined {
  const resolved = path.resolve(dir);
  return fs.existsSync(path.join(resolved, schemaFileName)) ? resolved : undefined;
}

/** The package manager an existing app uses, by its lockfile. */
function packageManagerOf(dir: string, fallback: PackageManager): PackageManager {
  const lockfiles: [string, PackageManager][] = [['pnpm-lock.yaml', 'pnpm'], ['yarn.lock', 'yarn'], ['bun.lockb', 'bun'], ['bun.lock', 'bun'], ['package-lock.json', 'npm']];
  return lockfiles.find(([file]) => fs.existsSync(path.join(dir, file)))?.[1] ?? fallback;
}

async function installFrontend(plan: FrontendSetupPlan, backendDir: string, fallback: PackageManager) {
  const packageManager = packageManagerOf(plan.frontendDir, fallback);
  // The log goes to the backend's .authstrap/: nothing else is written into the user's app.
  const logFile = path.join(backendDir, logDir, 'frontend-install.log');
  await step(`Install the frontend's dependencies (${packageManager})`, async () => ({ value: undefined, result: await installDependencies({ dir: plan.frontendDir, packageManager }, logFile) }));
}

/**
 * `authstrap setup --frontend <dir>` in an existing backend: plan, then print (`--dry-run`) or
 * write, install and say how to start it. A second run finds nothing to change.
 */
async function frontendOnly(backendDir: string, flags: SetupFlags): Promise<void> {
  const port = parsePort('--frontend-port', flags.frontendPort, 3001);
  const frontendDir = frontendDirOf(flags.frontend, backendDir, packageNameFor(backendDir), process.cwd())!;
  const plan = await step('Plan the frontend', async () => {
    const planned = await planFrontendSetup({ backendDir, frontendDir, port });
    return { value: planned, result: `${planned.kind === 'new' ? 'a new Next.js app' : 'an existing Next.js app'} in ${frontendDir}; ${planned.notes.join('; ')}` };
  });
  const upToDate = plan.changes.length === 0 && fs.existsSync(plan.clientPath);
  if (flags.dryRun) {
    if (!upToDate) console.log(describeFrontendPlan(plan));
    console.log(upToDate ? 'Nothing to change: the frontend is connected.' : `\n(dry run: ${plan.changes.length} change${plan.changes.length === 1 ? '' : 's'} not written)`);
    return;
  }
  if (upToDate) {
    console.log('Nothing to change: the frontend is connected.');
  } else {
    await step('Write the frontend', async () => ({ value: undefined, result: `${applyFrontendSetup(plan, backendDir).length} files` }));
    for (const file of plan.kept) console.log(chalk.yellow(`– ${path.relative(process.cwd(), file)} exists and differs from authstrap's version: left as it is`));
    if (flags.install !== false) await installFrontend(plan, backendDir, (flags.packageManager as PackageManager | undefined) ?? 'npm');
  }
  printFrontendNextSteps(frontendDir, port, packageManagerOf(frontendDir, 'npm'));
  const loopback = loopbackHostsLine(backendDir, [frontendDir]);
  if (loopback) console.log(`\n${loopback}`);
}

/**
 * localhost mixed with 127.0.0.1 (in .env or a frontend's env files) breaks sign-in in browsers:
 * the loopback-hosts check of `fix` on the backend and its frontends, as a line when it fails.
 */
function loopbackHostsLine(backendDir: string, frontendDirs: string[]): string | undefined {
  const { backend, frontends } = readUrlSettings(backendDir, frontendDirs);
  const finding = examineLoopbackHosts(backend, frontends);
  if (finding.status === 'pass') return undefined;
  return formatCheck({ id: loopbackHostsCheck.id, title: loopbackHostsCheck.title, ...finding, ...(finding.repair ? { fix: repairHint(finding.repair.summary) } : {}) });
}

function printFrontendNextSteps(frontendDir: string, port: number, packageManager: PackageManager) {
  const relative = path.relative(process.cwd(), frontendDir).startsWith('../..') ? frontendDir : path.relative(process.cwd(), frontendDir) || '.';
  console.log(`\n${chalk.green('Frontend')} in ${relative}: http://localhost:${port} (start the backend first)`);
  console.log(`Start it:  ${chalk.cyan(`cd ${relative} && ${packageManager} run dev${fs.existsSync(path.join(frontendDir, 'node_modules')) ? '' : ' (after installing)'}`)}`);
}
