import path from 'node:path';
import chalk from 'chalk';
import { CliError } from '../cli-error.js';
import { buildBackend, logDir, startBackend } from '../setup/steps.js';
import { formatCheck, step, summarizeChecks } from '../ui/report.js';
import type { DatabaseTarget } from '../verify/database.js';
import { runVerify, type VerifyReport } from '../verify/index.js';

/**
 * Builds a project's backend and starts it (which applies its migrations), runs `authstrap
 * verify` against it (the project examined as `fix` does) and stops it: the last steps of
 * `setup` and `add-auth`. The backend is stopped before the database checks, because an
 * embedded database belongs to the process that has it open.
 */
export async function startAndVerify(options: {
  dir: string;
  backendPort: number;
  database: DatabaseTarget;
  /** SERVICE_API_KEY of the project's .env, which the started backend uses. */
  serviceKey?: string;
  stepTitle: string;
  failure: string;
}): Promise<VerifyReport> {
  await step('Build the backend (tsc)', async () => ({ value: undefined, result: await buildBackend(options.dir) }));
  const backend = await step(options.stepTitle, async () => {
    const { backend, migrations } = await startBackend(options);
    return { value: backend, result: `${backend.url}, ${migrations}` };
  });
  let stopped = false;
  const stop = async () => {
    if (!stopped) await backend.stop();
    stopped = true;
  };
  try {
    console.log(chalk.bold('\nVerifying'));
    const report = await runVerify({
      url: backend.url,
      projectDir: options.dir,
      database: options.database,
      serviceKey: options.serviceKey ? { value: options.serviceKey, source: 'SERVICE_API_KEY in .env' } : undefined,
      beforeDatabaseChecks: stop,
    });
    for (const result of report.checks) console.log(formatCheck(result));
    console.log(`${summarizeChecks(report.checks)}\n`);
    if (!report.ok) throw new CliError(`${options.failure}; the backend's log is in ${path.join(options.dir, logDir, 'backend.log')}`, 1);
    return report;
  } finally {
    await stop();
  }
}
