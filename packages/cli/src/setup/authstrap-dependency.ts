import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { version } from '../version.js';

/**
 * How a new project's package.json asks for authstrap (its `generate`, `verify` and `fix`
 * scripts run it). Normally the CLI came from the registry and the project pins that version.
 * A CLI that did not (a checkout of this repository, a packed tarball, a pre-release) has a
 * version the registry does not know, so `npm install` in the new project would fail: the
 * project then links the very CLI that wrote it, `file:<its folder>`. That link breaks if the
 * folder goes away (an npx cache that is cleaned); `npm install authstrap@<version> -D` mends it.
 */

/** The folder of the running authstrap package: `dist/setup/` is two levels below it. */
export const cliPackageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A package inside a `node_modules` folder was installed by a package manager; anything else is a checkout. */
export const isInstalledPackage = (packageDir: string) => packageDir.split(path.sep).includes('node_modules');

/**
 * The dependency spec. `published` is whether the registry has this exact version: `undefined`
 * when that could not be found out (offline, no npm), in which case the version is kept and
 * the install says what is wrong.
 */
export function chooseAuthstrapDependency(cli: { version: string; packageDir: string; published: boolean | undefined }): string {
  return cli.published === false ? `file:${cli.packageDir}` : cli.version;
}

/** Asks the registry (as the user's npm is configured) whether it has `name@version`. */
export async function isPublished(packageVersion: string, name = 'authstrap', timeoutMs = 15_000): Promise<boolean | undefined> {
  const result = await execa('npm', ['view', `${name}@${packageVersion}`, 'version', '--json'], { reject: false, timeout: timeoutMs, all: true });
  if (result.exitCode === 0) return result.stdout.trim() !== ''; // an unknown version of a known package prints nothing
  return /\bE404\b/.test(result.all ?? '') ? false : undefined;
}

/** The spec for this CLI; asks the registry only when the CLI was installed by a package manager. */
export async function authstrapDependency(): Promise<{ spec: string; note: string }> {
  const published = isInstalledPackage(cliPackageDir) ? await isPublished(version) : false;
  const spec = chooseAuthstrapDependency({ version, packageDir: cliPackageDir, published });
  const note = spec === version ? `authstrap ${version}` : `authstrap ${version} is not on the registry: the project links ${cliPackageDir}`;
  return { spec, note };
}
