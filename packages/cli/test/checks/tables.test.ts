import { describe, expect, it } from 'vitest';
import { describeProbeBreakages } from '../support/check-cycle.js';
import { query } from '../support/example-copies.js';

const name = 'the verification table dropped under a running backend';

const { stage } = describeProbeBreakages('tables', [
  {
    name,
    breakData: async (backend) => void (await query(backend.databaseUrl, 'DROP TABLE "verification"')),
    // Sign-up writes the link that confirms the address to `verification`: it fails too.
    fails: ['sign-up', 'tables'],
    hint: 'start the backend once to apply its migrations (check that --database-url is its database)',
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('tables: the message', () => {
  it('names the table', () => {
    expect(stage(name).verify.report.checks.find((result) => result.id === 'tables')!.message).toBe('table "verification" is missing');
  });
});
