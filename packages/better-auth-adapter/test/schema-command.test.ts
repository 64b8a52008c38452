import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * `authstrap-better-auth-schema`, the built bin, as a process: it loads an app's Better Auth
 * config (TypeScript) and writes what the adapter's createSchema makes of it.
 */
const bin = path.resolve(import.meta.dirname, '../dist/schema-command.js');
const app = path.resolve(import.meta.dirname, 'fixtures/app');
const run = (args: string[], cwd = app) =>
  promisify(execFile)(process.execPath, [bin, ...args], { cwd, timeout: 60_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );

describe('authstrap-better-auth-schema', () => {
  it("finds lib/auth.ts, loads it and writes its tables as authstrap entities where it is told", async () => {
    const output = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-schema-')), 'backend', 'better-auth.schema.json');
    const answer = await run(['--output', output]);
    expect(answer.stderr).toBe('');
    expect(answer.code).toBe(0);
    expect(answer.stdout).toContain(`Wrote ${output}`);
    expect(answer.stdout).toContain('npx authstrap generate');
    const written = JSON.parse(fs.readFileSync(output, 'utf8'));
    expect(Object.keys(written.entities).sort()).toEqual(['User', 'twoFactor']);
    expect(Object.keys(written.entities.User.fields).sort()).toEqual(['displayUsername', 'plan', 'twoFactorEnabled', 'username']);
    expect(written.entities.twoFactor).toMatchObject({ serviceOnly: true, fields: { userId: { type: 'uuid', references: 'User' } } });
  });

  it('names the flag or the file when something is wrong, in one line', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-schema-'));
    const none = await run([], empty);
    expect(none.code).toBe(2);
    expect(none.stderr.trim()).toMatch(/^authstrap-better-auth-schema: No Better Auth config found \(looked for lib\/auth\.ts, .*\): pass --config <file>$/);
    const missing = await run(['--config', 'nope.ts']);
    expect(missing.stderr.trim()).toBe('authstrap-better-auth-schema: --config nope.ts: no such file');
    fs.writeFileSync(path.join(empty, 'auth.ts'), 'export const auth = { options: { database: {} } };\n');
    const notOurs = await run([], empty);
    expect(notOurs.stderr.trim()).toBe('authstrap-better-auth-schema: --config auth.ts: its database is not authstrapAdapter({ ... })');
    fs.writeFileSync(path.join(empty, 'broken.ts'), "throw new Error('AUTHSTRAP_URL is not set');\n");
    const broken = await run(['--config', 'broken.ts'], empty);
    expect(broken.code).toBe(2);
    expect(broken.stderr.trim()).toBe('authstrap-better-auth-schema: --config broken.ts could not be loaded: AUTHSTRAP_URL is not set');
    const unknown = await run(['--out', 'x.json']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.split('\n').filter(Boolean)).toHaveLength(1);
  });
});
