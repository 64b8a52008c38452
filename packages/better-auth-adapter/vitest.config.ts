import { defineProject } from 'vitest/config';

// Better Auth on the adapter, against the example backend started as a real server.
export default defineProject({
  test: {
    name: 'better-auth-adapter',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
