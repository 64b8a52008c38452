import { defineConfig } from 'vitest/config';

// One test run for the whole repository: each project keeps its own config next to its code.
export default defineConfig({
  test: {
    projects: ['packages/cli', 'examples/saas-backend', 'packages/better-auth-adapter'],
  },
});
