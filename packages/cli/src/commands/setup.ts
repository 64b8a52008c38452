import fs from 'node:fs';
import path from 'node:path';
import chalk from 'chalk';
import { CliError } from '../cli-error.js';
import { askForMissing } from '../setup/prompts.js';
import { resolveSetupSettings, type SetupFlags, type SetupSettings } from '../setup/options.js';
import {
  checkNode,
  checkPortFree,
  checkPostgresReachable,
  checkTargetFolder,
  ensureDatabase,
  installDependencies,
  logDir,
  startBackend,
  writeProject,
  type RunningBackend,
} from '../setup/steps.js';
import { formatCheck, step, summarizeChecks } from '../ui/report.js';
import { runVerify } from '../verify/index.js';
import { maskPassword, readProjectEnv } from '../project/env-file.js';

/**
 * `authstrap setup`: ask (or read flags) -> check -> write the project -> install -> database
 * -> start -> verify -> stop -> say how to start it again. Nothing is written before the checks
 * pass; a failure after that says what is left in the folder.
 */
export async function setupCommand(flags: SetupFlags): Promise<void> {
  const interactive = flags.yes !== true && process.stdin.isTTY === true;
  const answered = interactive ? await askForMissing(flags) : flags;
  const settings = resolveSetupSettings(answered, { cwd: process.cwd(), userAgent: process.env.npm_config_user_agent });

  // Setup only starts the backend when its dependencies are there (installed now, or already in
  // the folder); without them the backend port is never used, so a busy port must not fail
  // `--no-install` (it did, whenever something else was on port 3000).
  const willStart = settings.start && (settings.install || fs.existsSync(path.join(settings.dir, 'node_modules')));
  await step('Check Node, the folder and the database', async () => {
    const found = [checkNode(), checkTargetFolder(settings)];
    if (willStart) await checkPortFree(settings.backendPort);
    if (settings.database.kind === 'postgres') found.push(await checkPostgresReachable(settings.database.url));
    return { value: undefined, result: found.join(', ') };
  });

  let written = false;
  try {
    await step('Write the project', async () => {
      written = true;
      return { value: undefined, result: writeProject(settings) };
    });

    if (settings.install) {
      await step(`Install dependencies (${settings.packageManager})`, async () => ({ value: undefined, result: await installDependencies(settings) }));
    }
    await step('Prepare the database', async () => ({
      value: undefined,
      result: settings.database.kind === 'postgres' ? await ensureDatabase(settings.database.url) : 'embedded PostgreSQL in .data/pglite',
    }));

    const canStart = fs.existsSync(path.join(settings.dir, 'node_modules'));
    if (settings.start && !canStart) console.log(chalk.yellow('– Start and verify skipped: dependencies are not installed (--no-install)'));
    if (settings.start && canStart) await startAndVerify(settings);
  } catch (error) {
    if (written && error instanceof CliError) {
      throw new CliError(`${error.message}\nThe project files are in ${settings.dir}, but setup did not finish; fix the cause and run setup again with --force, or delete the folder.`, error.exitCode);
    }
    throw error;
  }

  printNextSteps(settings);
}

async function startAndVerify(settings: SetupSettings) {
  const backend = await step('Start the backend and apply migrations', async () => {
    const { backend, migrations } = await startBackend(settings);
    return { value: backend, result: `${backend.url}, ${migrations}` };
  });
  let stopped = false;
  const stop = async (running: RunningBackend) => {
    if (!stopped) await running.stop();
    stopped = true;
  };
  try {
    console.log(chalk.bold('\nVerifying'));
    const env = readProjectEnv(settings.dir);
    const report = await runVerify({
      url: backend.url,
      database: settings.database.kind === 'postgres' ? { kind: 'postgres', url: settings.database.url } : { kind: 'embedded', dir: path.join(settings.dir, '.data/pglite') },
      serviceKey: env.SERVICE_API_KEY,
      // The embedded database belongs to the backend while it runs: stop it first.
      beforeDatabaseChecks: () => stop(backend),
      onResult: (result) => console.log(formatCheck(result)),
    });
    console.log(`${summarizeChecks(report.checks)}\n`);
    if (!report.ok) throw new CliError(`Verification failed; the backend's log is in ${path.join(settings.dir, logDir, 'backend.log')}`, 1);
  } finally {
    await stop(backend);
  }
}

function printNextSteps(settings: SetupSettings) {
  const relative = path.relative(process.cwd(), settings.dir) || '.';
  const database = settings.database.kind === 'postgres' ? maskPassword(settings.database.url) : 'embedded (.data/pglite)';
  console.log(`${chalk.green('Created')} ${settings.projectName} in ${relative}`);
  console.log(`  database  ${database}`);
  console.log(`  API docs  http://localhost:${settings.backendPort}/api/docs`);
  // Without node_modules (--no-install) `npm start` alone fails: say to install first.
  const install = fs.existsSync(path.join(settings.dir, 'node_modules')) ? '' : `${settings.packageManager} install && `;
  console.log(`\nStart it:  ${chalk.cyan(`cd ${relative} && ${install}${settings.packageManager} start`)}`);
}
