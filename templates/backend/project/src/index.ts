/**
 * The entry point: `npm start` runs it compiled (`npm run build` first), `npm run dev` with tsx.
 * Starts the backend and stops it cleanly on SIGTERM or Ctrl-C.
 */
// First, so that V8 runs everything after it with these settings.
import './v8-flags.js';
import path from 'node:path';
import { ConfigError } from './config.js';
import { startServer, StartupError } from './server.js';

const projectDir = path.resolve(import.meta.dirname, '..');

try {
  const running = await startServer({ projectDir });
  const stop = () => {
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, stop);
  if (process.env.npm_lifecycle_event) stopWhenOrphaned(stop);
} catch (error) {
  if (error instanceof ConfigError || error instanceof StartupError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}

/**
 * `npm start` runs this under a shell, and a SIGTERM to npm ends npm and that shell but not
 * always this process (dash does not pass signals on): the port would stay taken by a server
 * nobody can stop. So when started by an npm script, the server stops once the process that
 * started it is gone, as it would have on the signal.
 */
function stopWhenOrphaned(stop: () => void): void {
  const parent = process.ppid;
  const parentGone = () => {
    if (process.ppid !== parent) return true;
    try {
      process.kill(parent, 0);
      return false;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ESRCH';
    }
  };
  const watch = setInterval(() => {
    if (!parentGone()) return;
    clearInterval(watch);
    stop();
  }, 500);
  watch.unref();
}
