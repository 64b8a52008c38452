import fs from 'node:fs';
import path from 'node:path';
import { CliError } from '../cli-error.js';
import { existingAppPaths, type ExistingApp } from './plan.js';
import type { FrontendTemplates } from './templates.js';

/** The folder `--frontend` names: new (missing or empty), or a Next.js app to connect. */
export type FrontendFolder = { kind: 'new' } | { kind: 'next'; app: ExistingApp };

const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');

/**
 * Reads the folder and says what it is; anything authstrap cannot build on is a usage error
 * naming --frontend and what to change.
 */
export function inspectFrontendFolder(dir: string, templates: FrontendTemplates): FrontendFolder {
  if (!fs.existsSync(dir)) return { kind: 'new' };
  if (!fs.statSync(dir).isDirectory()) throw new CliError(`--frontend ${dir} is a file: name a new folder or a Next.js app`, 2);
  const entries = fs.readdirSync(dir);
  if (entries.length === 0) return { kind: 'new' };

  const packageJsonFile = path.join(dir, 'package.json');
  if (!fs.existsSync(packageJsonFile)) {
    throw new CliError(`--frontend ${dir} is not empty and has no package.json: name a new folder, or a Next.js app to connect`, 2);
  }
  const packageJsonText = read(packageJsonFile);
  let packageJson: { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  try {
    packageJson = JSON.parse(packageJsonText);
  } catch (error) {
    throw new CliError(`${packageJsonFile} is not valid JSON (${(error as Error).message}): fix it, then run setup --frontend again`, 2);
  }
  if (!packageJson.dependencies?.next && !packageJson.devDependencies?.next) {
    throw new CliError(`--frontend ${dir} is not a Next.js app (no "next" in its package.json): name a new folder, or a Next.js app`, 2);
  }
  const sourceRoot = fs.existsSync(path.join(dir, 'src/app')) ? 'src' : fs.existsSync(path.join(dir, 'app')) ? '' : undefined;
  if (sourceRoot === undefined) {
    throw new CliError(
      `--frontend ${dir} has no App Router folder (app/ or src/app/): authstrap connects App Router apps (its sign-in routes are app/api/auth/[...all]/route.ts)`,
      2,
    );
  }
  const files = Object.fromEntries(existingAppPaths(templates, sourceRoot).map((file) => [file, read(path.join(dir, file))]));
  return { kind: 'next', app: { sourceRoot, packageJsonText, files } };
}
