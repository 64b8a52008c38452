import { describe, expect, it } from 'vitest';
import { describeProbeBreakages } from '../support/check-cycle.js';
import { breakFile } from '../support/example-copies.js';

const name = 'sign-up inserts into a column that does not exist';

const { stage } = describeProbeBreakages('sign-up', [
  {
    name,
    breakFiles: (dir) => breakFile(dir, 'src/extensions/auth/auth.service.ts', 'INSERT INTO "User" ("email", "name", "image", "email_verified")', 'INSERT INTO "User" ("email", "name", "picture", "email_verified")'),
    fails: ['sign-up'],
    hint: "see the backend's log for the request that failed (its x-request-id)",
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('sign-up: the checks that need its users', () => {
  it('are skipped, saying so', () => {
    const checks = new Map(stage(name).verify.report.checks.map((result) => [result.id, result]));
    expect(checks.get('sign-up')!.message).toMatch(/^sign-up answered 500 /);
    for (const id of ['sign-in', 'session', 'auth-endpoints']) expect(checks.get(id), id).toMatchObject({ status: 'skip', message: 'needs a signed-up user' });
    expect(checks.get('tenant-isolation')).toMatchObject({ status: 'skip', message: 'needs two signed-up users' });
  });
});
