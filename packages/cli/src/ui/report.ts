import chalk from 'chalk';
import ora from 'ora';
import type { CheckResult } from '../checks/check.js';

/** Progress and results for people: spinners on a terminal, plain lines in logs and CI. */

const symbols = { pass: chalk.green('✔'), warn: chalk.yellow('⚠'), fail: chalk.red('✘'), skip: chalk.yellow('–') } as const;

export function formatCheck(result: CheckResult): string {
  const line = `${symbols[result.status]} ${result.title} ${chalk.dim(`— ${result.message}`)}`;
  return (result.status === 'fail' || result.status === 'warn') && result.fix ? `${line}\n    ${chalk.cyan('→')} ${result.fix}` : line;
}

export function summarizeChecks(results: CheckResult[]): string {
  const count = (status: CheckResult['status']) => results.filter((result) => result.status === status).length;
  const parts = [`${count('pass')} passed`, `${count('fail')} failed`];
  if (count('skip')) parts.push(`${count('skip')} skipped`);
  if (count('warn')) parts.push(`${count('warn')} warning${count('warn') === 1 ? '' : 's'}`);
  const limited = results.filter((result) => result.rateLimited).length;
  // The plain "N passed, N failed" stays first and alone on its part of the line: CI reads it.
  if (limited) return chalk.yellow(`${parts.join(', ')} (${limited} rate limited by the backend: run verify again later, nothing was found broken)`);
  return count('fail') ? chalk.red(parts.join(', ')) : chalk.green(parts.join(', '));
}

/**
 * The last line of `fix`: what is left, or that nothing is, and how many checks could not run
 * (those are listed above it, each with its reason).
 */
export function summarizeFix(report: { dryRun: boolean; checks: CheckResult[] }): string {
  const count = (select: (result: CheckResult) => boolean) => report.checks.filter(select).length;
  const [left, repaired, skipped] = [count((result) => result.status === 'fail'), count((result) => result.repaired === true), count((result) => result.status === 'skip')];
  const notRun = skipped ? ` (${skipped} check${skipped === 1 ? '' : 's'} skipped, see above)` : '';
  const problems = `${left} problem${left === 1 ? '' : 's'}`;
  if (left) return chalk.red(report.dryRun ? `${problems} found (dry run: nothing changed; run without --dry-run to repair)${notRun}` : `${problems} left${notRun}`);
  return chalk.green(`${repaired ? `Repaired ${repaired}; nothing left to repair` : 'Nothing to repair'}${notRun}`);
}

/**
 * Runs one step of a longer job with a spinner (or a plain line when output is not a
 * terminal). `work` returns the one-line result shown after the title.
 */
export async function step<T>(title: string, work: () => Promise<{ value: T; result: string }>): Promise<T> {
  const interactive = process.stdout.isTTY === true;
  const spinner = interactive ? ora({ text: title }).start() : undefined;
  const started = Date.now();
  try {
    const { value, result } = await work();
    const line = `${title} ${chalk.dim(`— ${result} (${((Date.now() - started) / 1000).toFixed(1)}s)`)}`;
    if (spinner) spinner.succeed(line);
    else console.log(`${symbols.pass} ${line}`);
    return value;
  } catch (error) {
    if (spinner) spinner.fail(title);
    else console.log(`${symbols.fail} ${title}`);
    throw error;
  }
}
