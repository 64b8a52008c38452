import { describe, expect, it } from 'vitest';
import { describeProbeBreakages } from '../support/check-cycle.js';
import { breakFile } from '../support/example-copies.js';

const { stage } = describeProbeBreakages('database-connected', [
  {
    name: '/ready fails its query',
    breakFiles: (dir) => breakFile(dir, 'src/app.ts', `'SELECT pg_is_in_recovery() AS "standby"'`, `'SELECT * FROM "no such table"'`),
    waitFor: '/health',
    fails: ['database-connected'],
    hint: "check DATABASE_URL (the backend's environment, then its .env) and that the database server runs",
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('database-connected: the message', () => {
  it("names /ready's answer", () => {
    const check = stage('/ready fails its query').verify.report.checks.find((result) => result.id === 'database-connected')!;
    expect(check.message).toBe('GET /ready answered 503 The database is not reachable');
  });
});
