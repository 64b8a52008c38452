import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyExampleFiles, runCli, tempDir } from '../support/cli.js';
import { fixCheckIds, freePort } from '../support/example-copies.js';

describe('server-up: nothing listens at the URL', () => {
  const roots: string[] = [];
  afterAll(() => {
    for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
  });

  it('fails server-up with how to start it, skips every other probe with the reason, and still examines the project', async () => {
    const root = tempDir('authstrap-serverup-');
    roots.push(root);
    const dir = copyExampleFiles(path.join(root, 'api'));
    fs.writeFileSync(path.join(dir, '.env'), 'ALLOWED_ORIGINS=http://localhost:5173\n');
    const url = `http://127.0.0.1:${await freePort()}`;
    const run = runCli(['verify', '--json', '--dir', dir, '--url', url], root);
    const report = JSON.parse(run.stdout) as { ok: boolean; checks: { id: string; status: string; message: string; fix?: string }[] };
    const byId = new Map(report.checks.map((check) => [check.id, check]));
    expect(byId.get('server-up'), run.output).toMatchObject({ status: 'fail', message: expect.stringMatching(/ECONNREFUSED|fetch failed/), fix: 'start it: npm start (in the project folder), or pass its address with --url' });
    for (const id of ['database-connected', 'api-docs', 'sign-up', 'sign-in', 'session', 'auth-endpoints', 'tenant-isolation', 'service-credential']) {
      expect(byId.get(id), id).toMatchObject({ status: 'skip', message: `the server at ${url} does not answer` });
    }
    // Examined and passed; probed, it would have said more: a skip, never a pass.
    expect(byId.get('module-wiring')).toMatchObject({ status: 'skip', message: `src/app.ts mounts generatedRouter, and src/generated matches the schema; the server at ${url} does not answer` });
    for (const id of ['name-clash', 'cors-origin', 'loopback-hosts', 'adapter-version']) expect(byId.get(id)!.status, id).toBe('pass');
    expect(report.checks.filter((check) => check.status === 'fail').map((check) => check.id)).toEqual(['server-up']);
    expect(run.status).toBe(1);
    // fix finds nothing wrong either.
    const fix = JSON.parse(runCli(['fix', dir, '--dry-run', '--json'], root).stdout) as { checks: { id: string; status: string }[] };
    expect(fix.checks.map((check) => check.id)).toEqual(fixCheckIds);
    expect(fix.checks.filter((check) => check.status === 'fail')).toEqual([]);
  });
});
