import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createApp } from './app.js';
import { loadConfig, maskUrlPassword, type Config } from './config.js';
import { openDatabase, type Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { createRateLimits, type RateLimits } from './http/rate-limit.js';
import { createLogger } from './logger.js';

export interface RunningServer {
  url: string;
  config: Config;
  db: Database;
  server: Server;
  /** Stops taking requests, lets in-flight ones finish, then closes the database. */
  stop(): Promise<void>;
}

/** A startup problem the user can fix: printed as one message, without a stack trace. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/**
 * Starts the backend: configuration, database, migrations, HTTP. `env` defaults to the process
 * environment plus the project's `.env` (variables already set win over the file).
 */
export async function startServer(options: { projectDir: string; env?: NodeJS.ProcessEnv }): Promise<RunningServer> {
  const { projectDir } = options;
  const env = options.env ?? loadEnvFile(projectDir);
  const config = loadConfig(env, projectDir);
  const logger = createLogger(config);

  let db: Database;
  try {
    db = await openDatabase(config);
    await db.query('SELECT 1');
  } catch (error) {
    const [where, setting] = config.databaseUrl
      ? [maskUrlPassword(config.databaseUrl), 'DATABASE_URL']
      : [`the embedded database in ${config.embeddedDbDir}`, 'EMBEDDED_DB_DIR'];
    throw new StartupError(`Cannot connect to ${where}: ${(error as Error).message}. Check ${setting} in .env.`);
  }

  try {
    const report = await migrate(db, path.join(projectDir, 'migrations'));
    if (report.applied.length > 0) logger.info({ applied: report.applied }, 'migrations applied');
  } catch (error) {
    await db.close();
    throw new StartupError((error as Error).message);
  }

  let rateLimits: RateLimits;
  try {
    rateLimits = await createRateLimits(config, logger);
  } catch (error) {
    await db.close();
    throw new StartupError(`Cannot connect to Redis at ${maskUrlPassword(config.redisUrl ?? '')}: ${(error as Error).message}. Check REDIS_URL in .env.`);
  }

  const app = createApp({ config, db, logger, rateLimits });
  const server = await new Promise<Server>((resolve, reject) => {
    const listening = app.listen(config.port, config.host, () => resolve(listening));
    listening.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'EADDRINUSE'
          ? new StartupError(`Port ${config.port} is already in use. Stop the other process or set PORT in .env.`)
          : error,
      );
    });
  }).catch(async (error) => {
    await rateLimits.close();
    await db.close();
    throw error;
  });

  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host}:${port}`;
  logger.info({ url, database: db.kind }, `listening on ${url}`);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections with no request in flight would hold `close` open; end them now.
      server.closeIdleConnections();
      const deadline = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      deadline.unref();
      await closed;
      clearTimeout(deadline);
      await rateLimits.close();
      await db.close();
    })());

  return { url, config, db, server, stop };
}

function loadEnvFile(projectDir: string): NodeJS.ProcessEnv {
  const envFile = path.join(projectDir, '.env');
  if (fs.existsSync(envFile)) process.loadEnvFile(envFile);
  return process.env;
}
