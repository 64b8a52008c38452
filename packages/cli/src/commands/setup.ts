import fs from 'node:fs';
import path from 'node:path';
import chalk from 'chalk';
import { CliError } from '../cli-error.js';
import { authstrapDependency } from '../setup/authstrap-dependency.js';
import { askForMissing } from '../setup/prompts.js';
import { resolveSetupSettings, type SetupFlags, type SetupSettings } from '../setup/options.js';
import {
  checkNode,
  checkPortFree,
  checkPostgresReachable,
  checkTargetFolder,
  ensureDatabase,
  installDependencies,
  writeProject,
} from '../setup/steps.js';
import { printJson } from '../ui/output.js';
import { step } from '../ui/report.js';
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

    if (settings.install) {
      await step(`Install dependencies (${settings.packageManager})`, async () => ({ value: undefined, result: await installDependencies(settings) }));
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
  console.log(`${chalk.green('Created')} ${settings.projectName} in ${relative}`);
  console.log(`  database  ${database}`);
  console.log(`  API docs  http://localhost:${settings.backendPort}/api/docs`);
  // Without node_modules (--no-install) `npm start` alone fails: say to install first.
  const install = fs.existsSync(path.join(settings.dir, 'node_modules')) ? '' : `${settings.packageManager} install && `;
  console.log(`\nStart it:  ${chalk.cyan(`cd ${relative} && ${install}${settings.packageManager} start`)}`);
}
