import { describe, expect, it } from 'vitest';
import { operators } from '../../src/checks/operators.js';
import { probeContext } from '../../src/checks/probe-context.js';
import { openDatabase } from '../../src/verify/database.js';
import { httpClient } from '../../src/verify/http.js';
import { adminUrl } from '../support/check-cycle.js';
import { createResources, query } from '../support/example-copies.js';

/** The `operators` check on a database of its own: none is fine in development, a warning in production; one passes. */
describe.runIf(adminUrl)('operators: the count of operators', () => {
  it('passes one, and warns only in production when there is none', async () => {
    const resources = createResources({ adminUrl, name: 'operators_check' });
    try {
      const url = await resources.createDatabase();
      const run = async (nodeEnv?: string) => {
        const db = await openDatabase({ kind: 'postgres', url });
        try {
          return await operators.probe!.run({ ...probeContext(httpClient('http://127.0.0.1:1'), undefined, nodeEnv), db });
        } finally {
          await db.close();
        }
      };
      expect((await run()).status).toBe('skip');
      await query(url, `CREATE TABLE "authstrap_operator" ("userId" uuid PRIMARY KEY, "grantedBy" text NOT NULL, "grantedAt" timestamptz NOT NULL DEFAULT now())`);
      expect(await run()).toMatchObject({ status: 'pass', message: expect.stringContaining('no operator yet') });
      expect(await run('production')).toMatchObject({ status: 'warn', message: expect.stringContaining('authstrap operator grant <email>') });
      await query(url, `INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES (gen_random_uuid(), 'command line')`);
      expect(await run('production')).toEqual({ status: 'pass', message: '1 operator' });
    } finally {
      await resources.cleanup();
    }
  });
});
