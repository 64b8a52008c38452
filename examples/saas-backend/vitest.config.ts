import { defineProject } from 'vitest/config';

// Hand-written tests of the example backend (not generated): they run it as a real server
// on the embedded database and, when AUTHSTRAP_TEST_POSTGRES_URL is set, on PostgreSQL too.
export default defineProject({
  test: {
    name: 'saas-backend',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll's default 1 s is too short on a loaded CI machine (see packages/cli/vitest.config.ts).
    expect: { poll: { timeout: 10_000 } },
  },
});
