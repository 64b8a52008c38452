import fs from 'node:fs';
import path from 'node:path';
import { CliError } from '../cli-error.js';
import { cliPackageDir, isInstalledPackage, isPublished } from '../setup/authstrap-dependency.js';
import { adapterPackageName } from './plan.js';

/**
 * How a frontend's package.json asks for `@authstrap/better-auth-adapter`. The version is the one
 * this CLI was built and tested with (a test holds it to packages/better-auth-adapter). When the
 * registry does not have it (a checkout, a packed CLI, a pre-release), the frontend installs the
 * packed copy this CLI carries in vendor/ (`scripts/vendor-adapter.mjs` makes it): a tarball, not
 * a link, so Next's bundler sees an ordinary package inside the app.
 */
export const adapterVersion = '2.1.0';

export const vendoredAdapter = path.join(cliPackageDir, 'vendor', `authstrap-better-auth-adapter-${adapterVersion}.tgz`);

export async function adapterDependency(): Promise<{ spec: string; note: string }> {
  const published = isInstalledPackage(cliPackageDir) ? await isPublished(adapterVersion, adapterPackageName) : false;
  if (published !== false) return { spec: `^${adapterVersion}`, note: `${adapterPackageName} ${adapterVersion}` };
  if (!fs.existsSync(vendoredAdapter)) {
    throw new CliError(
      `${adapterPackageName}@${adapterVersion} is not on the registry and this authstrap has no packed copy (${vendoredAdapter}): in authstrap's repository, run \`node scripts/bootstrap.mjs\``,
      1,
    );
  }
  return { spec: `file:${vendoredAdapter}`, note: `${adapterPackageName} ${adapterVersion} is not on the registry: the frontend installs ${vendoredAdapter}` };
}
