import path from 'node:path';
import { allowedOrigins, withEnvValue } from '../project/env-file.js';
import { fail, pass, warn, type Check } from './check.js';

/**
 * CORS that does not let the frontend in: `ALLOWED_ORIGINS` with `*` (browsers refuse
 * credentials for a wildcard), or without the dev-server origin of a frontend found beside the
 * project. The repair rewrites ALLOWED_ORIGINS in .env.
 */
export const corsOrigin: Check = {
  id: 'cors-origin',
  title: 'CORS allows the frontend',
  examine(project) {
    const envFile = project.files['.env'] ?? '';
    if (!envFile) return warn('no .env: ALLOWED_ORIGINS is not set, so no browser origin may call the API');
    const origins = allowedOrigins(project.env);
    const wanted = [...new Set(project.frontends.map((frontend) => frontend.origin))];
    const missing = wanted.filter((origin) => !origins.includes(origin));
    const wildcard = origins.includes('*');
    if (!wildcard && missing.length === 0) {
      if (origins.length === 0 && wanted.length === 0) return warn('ALLOWED_ORIGINS is empty and no frontend was found: browsers cannot call the API with cookies');
      const frontends = project.frontends.map((frontend) => path.relative(project.dir, frontend.dir) || '.');
      return pass(`ALLOWED_ORIGINS=${origins.join(',')}${frontends.length ? ` (frontends: ${frontends.join(', ')})` : ''}`);
    }
    const fixed = [...origins.filter((origin) => origin !== '*'), ...missing].join(',');
    const reasons = [
      ...(wildcard ? ['"*" cannot be used with cookies (browsers refuse credentials for a wildcard)'] : []),
      ...(missing.length ? [`the frontend origin ${missing.join(', ')} is not in ALLOWED_ORIGINS`] : []),
    ];
    return {
      ...fail(reasons.join('; ')),
      repair: { summary: `ALLOWED_ORIGINS=${fixed} in .env`, files: [{ path: '.env', before: envFile, after: withEnvValue(envFile, 'ALLOWED_ORIGINS', fixed) }], sql: [] },
    };
  },
};
