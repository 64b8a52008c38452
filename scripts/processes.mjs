// A generated backend started, waited for and stopped, as `npm run demo` and `npm run release` do.
import { spawn } from 'node:child_process';

/** `npm <args>` in a folder, in its own process group so that stopping it stops what it started. */
export function startNpm(cwd, args, { env = process.env, stdio = 'inherit' } = {}) {
  return spawn('npm', args, { cwd, stdio, detached: true, env });
}

export function stopProcessGroup(child) {
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    // gone already
  }
}

export async function waitForUrl(url, seconds) {
  for (let i = 0; i < seconds * 2; i++) {
    if (await fetch(url).then((response) => response.ok, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`${url} did not answer within ${seconds} s`);
}
