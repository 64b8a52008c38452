import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const repoRoot = path.resolve(import.meta.dirname, '../../../..');
export const cliPath = path.join(repoRoot, 'packages/cli/dist/cli.js');
export const exampleDir = path.join(repoRoot, 'examples/saas-backend');

/** Runs the built CLI as a user would, with no terminal attached. */
export function runCli(args: string[], cwd = repoRoot) {
  if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} is missing: build the CLI first (npm test does)`);
  const result = spawnSync(process.execPath, [cliPath, ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, output: result.stdout + result.stderr };
}

export function tempDir(prefix = 'authstrap-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Every file below `dir` with its contents, skipping the given top-level names. */
export function readTree(dir: string, skip: string[] = []): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (current: string) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      const relative = path.relative(dir, full).split(path.sep).join('/');
      if (skip.includes(relative)) continue;
      if (entry.isDirectory()) walk(full);
      else files.set(relative, fs.readFileSync(full, 'utf8'));
    }
  };
  walk(dir);
  return files;
}

/** Not generated: the example's own tests, and what running and building it leave behind. */
export const exampleHandWritten = ['test', 'vitest.config.ts', 'node_modules', '.data', '.env', 'dist'];

/**
 * The example's files (without dependencies, data, tests or .env) copied into `dir`, for the
 * commands that read a project without running it.
 */
export function copyExampleFiles(dir: string): string {
  fs.cpSync(exampleDir, dir, { recursive: true, filter: (source) => !/^(node_modules|\.data|test|\.env)(\/|$)/.test(path.relative(exampleDir, source)) });
  return dir;
}
