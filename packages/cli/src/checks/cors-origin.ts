import path from 'node:path';
import { allowedOrigins, allowsOrigin } from '../project/allowed-origins.js';
import { withEnvValue } from '../project/env-file.js';
import { fail, pass, warn, type Check } from './check.js';

/**
 * CORS that does not let the frontend in: `ALLOWED_ORIGINS` with `*` (browsers refuse
 * credentials for a wildcard, and the backend refuses it too), with an entry the backend refuses
 * to start with (a path, a query), or without the dev-server origin of a frontend found beside
 * the project. Origins are compared as the backend compares them (allowed-origins.ts), so
 * `http://localhost:5173/` allows `http://localhost:5173`. The repair rewrites the ALLOWED_ORIGINS
 * line the backend reads (the last one) in .env.
 */
export const corsOrigin: Check = {
  id: 'cors-origin',
  title: 'CORS allows the frontend',
  examine(project) {
    const envFile = project.files['.env'] ?? '';
    if (!envFile) return warn('no .env: ALLOWED_ORIGINS is not set, so no browser origin may call the API');
    const allowed = allowedOrigins(project.env);
    const wanted = [...new Set(project.frontends.map((frontend) => frontend.origin))];
    const missing = wanted.filter((origin) => !allowsOrigin(allowed, origin));
    const refused = allowed.filter((item) => item.origin === undefined).map((item) => item.entry);
    if (refused.length === 0 && missing.length === 0) {
      if (allowed.length === 0 && wanted.length === 0) return warn('ALLOWED_ORIGINS is empty and no frontend was found: browsers cannot call the API with cookies');
      const frontends = project.frontends.map((frontend) => path.relative(project.dir, frontend.dir) || '.');
      return pass(`ALLOWED_ORIGINS=${allowed.map((item) => item.entry).join(',')}${frontends.length ? ` (frontends: ${frontends.join(', ')})` : ''}`);
    }
    const fixed = [...allowed.filter((item) => item.origin !== undefined).map((item) => item.entry), ...missing].join(',');
    const notOrigins = refused.filter((entry) => entry !== '*');
    const reasons = [
      ...(refused.includes('*') ? ['"*" cannot be used with cookies (browsers refuse credentials for a wildcard)'] : []),
      ...(notOrigins.length ? [`${notOrigins.map((entry) => JSON.stringify(entry)).join(', ')} in ALLOWED_ORIGINS ${notOrigins.length === 1 ? 'is not an origin' : 'are not origins'} like http://localhost:5173 (scheme, host and port only), so the backend does not start`] : []),
      ...(missing.length ? [`the frontend origin ${missing.join(', ')} is not in ALLOWED_ORIGINS`] : []),
    ].join('; ');
    const after = withEnvValue(envFile, 'ALLOWED_ORIGINS', fixed);
    if (after === undefined) return fail(`${reasons}; set ALLOWED_ORIGINS=${fixed} in .env by hand (no one-line edit of .env gives the backend that value)`);
    return { ...fail(reasons), repair: { summary: `ALLOWED_ORIGINS=${fixed} in .env`, files: [{ path: '.env', before: envFile, after }], sql: [] } };
  },
};
