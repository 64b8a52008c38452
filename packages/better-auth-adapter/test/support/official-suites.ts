import { randomUUID } from 'node:crypto';
import { authFlowTestSuite, caseInsensitiveTestSuite, joinsTestSuite, normalTestSuite, testAdapter, transactionsTestSuite, uuidTestSuite } from '@better-auth/test-utils/adapter';
import { serviceApiKey, type DatabaseKind } from '../../../../examples/saas-backend/test/support/backend.js';
import { AuthstrapRequestError, authstrapAdapter } from '../../src/index.js';
import { schemaFollowingBackend } from './schema-following-backend.js';

/**
 * Better Auth's own adapter suites (@better-auth/test-utils) through the adapter, against a copy of
 * the example backend started as a real server: normal, auth-flow, uuid, case-insensitive, joins
 * (with `advanced.database.joins` where that suite sets it) and transactions, none disabled. The
 * suites' `runMigrations` makes the backend's schema follow Better Auth's options, as a project
 * using the adapter does: createSchema's better-auth.schema.json, `authstrap generate`, a restart
 * (support/schema-following-backend.ts). Number-id is out of scope (every id here is a uuid).
 */
/** Registers the suites against a backend on `kind`'s database (one test file per kind: they run in parallel). */
export async function officialSuites(kind: DatabaseKind): Promise<void> {
  const backend = schemaFollowingBackend(kind);
  const { execute } = await testAdapter({
    // Rebuilt before every test, after the first migration has started the backend.
    adapter: () => (options) => {
      const adapter = authstrapAdapter({ baseUrl: backend.url ?? 'http://127.0.0.1:9', serviceKey: serviceApiKey, personalOrganization: false })(options);
      // The suites' clean-up empties every model the current options name, also models whose
      // tests changed the options without migrating: those have no table, so nothing to delete.
      const deleteMany: typeof adapter.deleteMany = (query) =>
        adapter.deleteMany(query).catch((error) => {
          if (error instanceof AuthstrapRequestError && error.status === 404) return 0;
          throw error;
        });
      return { ...adapter, deleteMany };
    },
    // createSchema's file, `authstrap generate` and a restart, whenever the options' tables change.
    runMigrations: (options) => backend.migrate(options),
    onFinish: () => {
      console.info(`[measured] ${kind}: the backend's schema was generated ${backend.generations} times for Better Auth's options`);
      return backend.stop();
    },
    // The helpers' records get uuids, as the backend's ids are.
    customIdGenerator: () => randomUUID(),
    prefixTests: `${kind} database`,
    tests: [
      normalTestSuite(),
      authFlowTestSuite(),
      uuidTestSuite(),
      caseInsensitiveTestSuite(),
      joinsTestSuite(),
      transactionsTestSuite(),
    ],
  });
  execute();
}
