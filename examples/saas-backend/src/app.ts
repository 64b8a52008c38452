import fs from 'node:fs';
import path from 'node:path';
import express, { type Express } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { extensionRouter } from './extensions/index.js';
import { generatedRouter } from './generated/index.js';
import { buildOpenApiDocument } from './generated/openapi.js';
import { sendData, sendError } from './http/envelope.js';
import { errorHandler, unknownRoute } from './http/errors.js';
import { requestLogger } from './logger.js';
import { docsRouter } from './openapi/docs.js';

export interface AppDependencies {
  config: Config;
  db: Database;
  logger: Logger;
}

/**
 * The whole HTTP pipeline, in the order a request meets it:
 * request id + log -> security headers -> health -> docs -> JSON body -> your routes
 * (src/extensions) -> generated routes (each behind its guards) -> 404 -> error envelope.
 */
export function createApp({ config, db, logger }: AppDependencies): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);

  app.use(requestLogger(logger));
  app.use(
    helmet({
      contentSecurityPolicy: {
        // Everything the docs page needs is served from here; nothing is loaded from elsewhere.
        directives: { 'upgrade-insecure-requests': config.nodeEnv === 'production' ? [] : null },
      },
      // Telling browsers to insist on HTTPS only makes sense where HTTPS is served.
      strictTransportSecurity: config.nodeEnv === 'production',
    }),
  );

  app.get('/health', (_req, res) => sendData(res, { status: 'ok' }));
  app.get('/ready', async (_req, res) => {
    try {
      await db.query('SELECT 1');
      sendData(res, { status: 'ready', database: db.kind });
    } catch {
      sendError(res, 503, 'SERVICE_UNAVAILABLE', 'The database is not reachable');
    }
  });
  const { name, version } = JSON.parse(fs.readFileSync(path.join(config.projectDir, 'package.json'), 'utf8'));
  app.use('/api/docs', docsRouter(buildOpenApiDocument({ title: `${name} API`, version, serverUrl: config.authUrl })));

  app.use(express.json({ limit: config.bodyLimit }));
  app.use(extensionRouter({ config, db }));
  app.use(generatedRouter({ db }));

  app.use(unknownRoute);
  app.use(errorHandler);
  return app;
}
