import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'cli',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    // Some hooks remove a project that `npm install` filled (tens of thousands of files), which
    // took more than Vitest's default 10 s on a busy 2-core machine.
    hookTimeout: 60_000,
    // expect.poll gives up after 1 s by default: a sign-in's error reached the page later than that
    // on a loaded CI machine (the wrong-password alert in frontend-browser.test.ts, 2026-11-28).
    // A condition that never comes still fails, only later.
    expect: { poll: { timeout: 10_000 } },
  },
});
