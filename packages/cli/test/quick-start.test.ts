import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot, tempDir } from './support/cli.js';
import { verifyCheckIds } from './support/example-copies.js';

// The README's main command, `npm run demo`, minus authstrap's own install and build (which
// `npm test` has done): setup into a fresh folder on the embedded database, verified.
describe('the quick start', () => {
  const parent = tempDir('authstrap-demo-');
  afterAll(() => fs.rmSync(parent, { recursive: true, force: true }));

  it('creates, installs, starts and verifies a backend on the embedded database', () => {
    const port = String(20_000 + (process.pid % 20_000));
    const dir = path.join(parent, 'demo-backend');
    const result = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/demo.mjs'), '--check', '--skip-install'], {
      cwd: repoRoot,
      encoding: 'utf8',
      env: { ...process.env, DEMO_PORT: port, DEMO_DIR: dir },
      timeout: 240_000,
    });
    const output = result.stdout + result.stderr;
    expect(result.status, output).toBe(0);
    expect(output).toContain(`\n${verifyCheckIds.length} passed, 0 failed\n`);
    expect(output).toContain('Created demo-backend');
    expect(fs.existsSync(path.join(dir, '.data/pglite'))).toBe(true);
  }, 300_000);
});
