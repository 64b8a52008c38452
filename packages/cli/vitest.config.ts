import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'cli',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    // Some hooks remove a project that `npm install` filled (tens of thousands of files), which
    // took more than Vitest's default 10 s on a busy 2-core machine.
    hookTimeout: 60_000,
  },
});
