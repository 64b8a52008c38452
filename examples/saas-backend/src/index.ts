/** The entry point (`npm start`): starts the backend and stops it cleanly on SIGTERM or Ctrl-C. */
import path from 'node:path';
import { ConfigError } from './config.js';
import { startServer, StartupError } from './server.js';

const projectDir = path.resolve(import.meta.dirname, '..');

try {
  const running = await startServer({ projectDir });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      running.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
} catch (error) {
  if (error instanceof ConfigError || error instanceof StartupError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}
