import os from 'node:os';
import { defineConfig } from 'vitest/config';

// One test run for the whole repository: each project keeps its own config next to its code.
export default defineConfig({
  test: {
    projects: ['packages/cli', 'examples/saas-backend', 'packages/better-auth-adapter'],
    // Vitest's default is one worker fewer than the cores: on a 2-core machine, one test file at a
    // time. Most of a file's time is spent waiting on the processes it starts (backends, npm, tsc,
    // Chromium) and on PostgreSQL, so one worker per core (at least 2) keeps the machine busy: the
    // suite took 635 s instead of 965 s on a 2-core CI machine (2026-11-25).
    maxWorkers: Math.max(2, os.availableParallelism()),
  },
});
