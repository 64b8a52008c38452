import path from 'node:path';
import { fail, pass, warn, type Check, type FileChange } from './check.js';
import type { ProjectSnapshot } from './project-snapshot.js';

/**
 * A frontend depending on a Better Auth adapter older than 2.0.2: those do not set providerId to
 * 'credential', so sign-up works and every sign-in fails. The repair raises the range to ^2.0.2
 * in that package.json (the frontend is then reinstalled by hand).
 */
export const adapterVersion: Check = {
  id: 'adapter-version',
  title: 'The auth adapter is 2.0.2 or newer',
  examine(project) {
    const old: { frontend: ProjectSnapshot['frontends'][number]; name: string; range: string }[] = [];
    const unreadable: string[] = [];
    let seen = 0;
    for (const frontend of project.frontends) {
      for (const field of ['dependencies', 'devDependencies'] as const) {
        for (const [name, range] of Object.entries<string>(frontend.packageJson[field] ?? {})) {
          if (!knownAdapterPackages.includes(name) && !project.adapterPackages.includes(name)) continue;
          seen += 1;
          const version = lowestVersion(range);
          if (!version) unreadable.push(`${name}@${range}`);
          else if (compareVersions(version, minimum) < 0) old.push({ frontend, name, range });
        }
      }
    }
    if (old.length === 0) {
      if (unreadable.length) return warn(`cannot tell the version of ${unreadable.join(', ')}; it must be 2.0.2 or newer`);
      return pass(seen ? 'every auth adapter allows only 2.0.2 or newer' : `no known auth adapter (${knownAdapterPackages.join(', ')}) in the frontends (name another with --adapter-package)`);
    }
    // One write per package.json, with every old adapter in it raised; the rest of the file as it was.
    const files: FileChange[] = [];
    for (const frontend of new Set(old.map((entry) => entry.frontend))) {
      let after = frontend.packageJsonText;
      for (const entry of old.filter((candidate) => candidate.frontend === frontend)) {
        after = after.replace(`${JSON.stringify(entry.name)}: ${JSON.stringify(entry.range)}`, `${JSON.stringify(entry.name)}: "^2.0.2"`);
      }
      files.push({ path: path.relative(project.dir, path.join(frontend.dir, 'package.json')), before: frontend.packageJsonText, after });
    }
    return {
      ...fail(`${old.map((entry) => `${entry.name}@${entry.range}`).join(', ')}: versions before 2.0.2 do not set providerId to 'credential', so sign-in fails after sign-up`),
      repair: { summary: `require ^2.0.2 in ${files.map((file) => file.path).join(', ')} (then reinstall the frontend)`, files, sql: [] },
    };
  },
};

const minimum = [2, 0, 2];

/**
 * The Better Auth adapters this check knows: authstrap's own, and the one the spec's 2.0.2 rule
 * was written for (whose releases before 2.0.1 wrote `provider`/`providerAccountId` instead of
 * `providerId`/`accountId`, and 2.0.1 still left providerId unset for passwords). Another
 * package is checked when it is named with --adapter-package.
 */
const knownAdapterPackages = ['@authstrap/better-auth-adapter', '@apso/better-auth-adapter'];

/** The lowest version a range allows: `^1.9.0` -> [1, 9, 0]; `latest`, `*` or a URL -> undefined. */
function lowestVersion(range: string): number[] | undefined {
  // A packed tarball (`file:.../authstrap-better-auth-adapter-2.0.2.tgz`, as setup --frontend installs it) names its version.
  const tarball = /^file:.*-(\d+)\.(\d+)\.(\d+)\.tgz$/.exec(range.trim());
  if (tarball) return [Number(tarball[1]), Number(tarball[2]), Number(tarball[3])];
  const match = /^\s*(?:[\^~]|>=|=)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(range);
  return match ? [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)] : undefined;
}

function compareVersions(a: number[], b: number[]): number {
  for (let index = 0; index < 3; index += 1) if (a[index] !== b[index]) return a[index]! - b[index]!;
  return 0;
}
