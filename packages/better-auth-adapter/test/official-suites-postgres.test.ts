import { describe, it } from 'vitest';
import { postgresAdminUrl } from '../../../examples/saas-backend/test/support/backend.js';
import { officialSuites } from './support/official-suites.js';

// Better Auth's own adapter suites on PostgreSQL (see support/official-suites.ts). CI always has
// PostgreSQL (backend.js refuses to run CI without it); elsewhere this file says why it ran nothing.
if (postgresAdminUrl) await officialSuites('postgres');
else describe('Better Auth adapter suites on PostgreSQL', () => it.skip('AUTHSTRAP_TEST_POSTGRES_URL is not set', () => {}));
