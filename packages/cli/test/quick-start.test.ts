import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/cli.js';

// The README's main command, `npm run demo`, minus the install and build `npm test` has done.
describe('the quick start', () => {
  it('starts the example backend on the embedded database and walks requests through it', () => {
    const port = String(20_000 + (process.pid % 20_000));
    const result = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/demo.mjs'), '--check', '--skip-install'], {
      cwd: repoRoot,
      encoding: 'utf8',
      env: { ...process.env, PORT: port, EMBEDDED_DB_DIR: 'memory://', BCRYPT_COST: '4' },
      timeout: 120_000,
    });
    const output = result.stdout + result.stderr;
    expect(result.status, output).toBe(0);
    expect(output).toContain('✔ POST /Projects/:projectId/Tasks');
    expect(output).toContain("✔ another tenant gets 404 for Ada's project");
    expect(output).toContain("✔ naming Ada's organization gets 403");
    expect(output).not.toContain('✘');
  });
});
