import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import type { FileWrite } from '../generate/apply.js';
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

/**
 * The path a dependency spec points at (`file:`, `link:` or a bare path, as npm writes them for a
 * folder or a tarball), resolved against the project; undefined for a version range, a tag, a git
 * or URL spec.
 */
export function dependencyPath(spec: string, projectDir: string): string | undefined {
  const bare = spec.replace(/^(file|link):/, '');
  if (bare === spec && !/^(\.{1,2}\/|\/|~\/)/.test(spec)) return undefined;
  return path.resolve(projectDir, bare.replace(/^~(?=\/)/, process.env.HOME ?? '~'));
}

/** What an upgrade changes for the project's own authstrap dependency. */
export interface DependencyUpgrade {
  /** package.json as it becomes, when it changes. */
  packageJson?: string;
  /** A tarball outside the project, kept inside it from now on (`to` is relative to the project). */
  copy?: { from: string; to: string };
  note?: string;
}

/**
 * What an upgrade does with the project's own authstrap dependency (`devDependencies.authstrap`,
 * or `dependencies.authstrap`). Installing a new authstrap from a tarball or a folder
 * (`npm install -D ../authstrap-0.2.0.tgz`) leaves a path outside the project in package.json,
 * which another clone or CI cannot install. The project then asks for this CLI's version when
 * the registry has it; otherwise a tarball is kept inside the project (vendor/) and package.json
 * points at that copy; a folder elsewhere can only be named in a note. package.json is edited in
 * place (nothing else in it changes). A version range, a path inside the project, setup's link to
 * this very CLI, a git or URL spec are left alone. Pure: `published` is whether the registry has
 * this version (see isPublished).
 */
export function planAuthstrapDependency(
  packageJsonText: string,
  projectDir: string,
  cli: { version: string; packageDir: string; published: boolean | undefined },
): DependencyUpgrade {
  let packageJson: { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  try {
    packageJson = JSON.parse(packageJsonText);
  } catch {
    return {};
  }
  const field = packageJson.devDependencies?.authstrap !== undefined ? 'devDependencies' : 'dependencies';
  const spec = packageJson[field]?.authstrap;
  if (typeof spec !== 'string') return {};
  const target = dependencyPath(spec, projectDir);
  if (target === undefined || !path.relative(projectDir, target).startsWith('..')) return {};
  // The link setup made to this very CLI while its version is not on the registry (see above).
  if (target === cli.packageDir) return {};
  const entry = `"authstrap": ${JSON.stringify(spec)}`;
  const outside = `package.json asked for authstrap at ${spec}, outside the project, which another clone or CI cannot install`;
  const edit = (newSpec: string) => packageJsonText.replace(entry, `"authstrap": ${JSON.stringify(newSpec)}`);
  const editable = packageJsonText.split(entry).length === 2;
  if (editable && cli.published === true) {
    return { packageJson: edit(cli.version), note: `${outside}: it now asks for ${cli.version} from the registry (run your package manager's install)` };
  }
  const upgradeLater = `once authstrap ${cli.version} is on the registry, \`npm install -D authstrap@${cli.version}\``;
  if (editable && target.endsWith('.tgz')) {
    const kept = `vendor/${path.basename(target)}`;
    return {
      packageJson: edit(`file:${kept}`),
      copy: { from: target, to: kept },
      note: `${outside}: the tarball is now kept in the project, ${kept}, and package.json points at it (commit both; ${upgradeLater} replaces it)`,
    };
  }
  return { note: `${outside}: ${upgradeLater} mends it (or keep its tarball inside the project and point package.json at that)` };
}

/**
 * planAuthstrapDependency for a project folder, as the writes that carry it out; asks the
 * registry only when package.json points outside the project, and only from an installed CLI.
 */
export async function authstrapDependencyWrites(projectDir: string): Promise<{ writes: FileWrite[]; note?: string }> {
  let text: string;
  try {
    text = fs.readFileSync(path.join(projectDir, 'package.json'), 'utf8');
  } catch {
    return { writes: [] };
  }
  const cli = { version, packageDir: cliPackageDir };
  if (planAuthstrapDependency(text, projectDir, { ...cli, published: undefined }).note === undefined) return { writes: [] };
  const published = isInstalledPackage(cliPackageDir) ? await isPublished(version) : false;
  const upgrade = planAuthstrapDependency(text, projectDir, { ...cli, published });
  if (upgrade.copy && !fs.existsSync(upgrade.copy.from)) return { writes: [], note: `package.json asks for authstrap at ${upgrade.copy.from}, which is gone: run \`npm install -D authstrap@${version}\`` };
  const writes: FileWrite[] = [];
  if (upgrade.copy) writes.push({ path: upgrade.copy.to, action: 'create', contents: fs.readFileSync(upgrade.copy.from).toString('base64'), encoding: 'base64' });
  if (upgrade.packageJson !== undefined) writes.push({ path: 'package.json', action: 'update', contents: upgrade.packageJson });
  return { writes, note: upgrade.note };
}
