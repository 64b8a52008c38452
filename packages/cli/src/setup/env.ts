import { randomBytes } from 'node:crypto';
import type { SetupSettings } from './options.js';

/** A random string of exactly `length` URL-safe characters. */
export const randomSecret = (length: number) => randomBytes(Math.ceil((length * 3) / 4)).toString('base64url').slice(0, length);

/**
 * The project's `.env` (with fresh secrets) and `.env.example` (the same keys, no secrets).
 * `secrets` is passed in so that this stays a pure function.
 */
export function renderEnvFiles(settings: Pick<SetupSettings, 'backendPort' | 'frontendPort' | 'database'>, secrets: { authSecret: string; serviceApiKey: string }) {
  const database =
    settings.database.kind === 'postgres'
      ? `DATABASE_URL=${settings.database.url}`
      : '# No DATABASE_URL: the embedded PostgreSQL keeps its data in .data/pglite (EMBEDDED_DB_DIR).\n# DATABASE_URL=postgresql://user:password@localhost:5432/database';
  const lines = (authSecret: string, serviceApiKey: string, databaseLines: string) =>
    [
      '# Read at startup; variables already set in the environment win over this file.',
      'NODE_ENV=development',
      `PORT=${settings.backendPort}`,
      databaseLines,
      '# 32 random characters; production refuses to start without one.',
      `AUTH_SECRET=${authSecret}`,
      `AUTH_URL=http://localhost:${settings.backendPort}`,
      '# The browser origins allowed to call this backend with cookies, comma-separated.',
      `ALLOWED_ORIGINS=http://localhost:${settings.frontendPort}`,
      '# A trusted server authenticates with Authorization: Bearer <SERVICE_API_KEY>.',
      `SERVICE_API_KEY=${serviceApiKey}`,
      '# Optional: BCRYPT_COST=12, REDIS_URL=redis://localhost:6379, TRUST_PROXY=0, LOG_LEVEL=info, BODY_LIMIT=100kb',
      '',
    ].join('\n');
  return {
    env: lines(secrets.authSecret, secrets.serviceApiKey, database),
    example: lines('', '', settings.database.kind === 'postgres' ? '# DATABASE_URL=postgresql://user:password@localhost:5432/database' : database),
  };
}
