import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl, verifyProject, type VerifyRun } from '../support/check-cycle.js';
import { createResources, type Backend } from '../support/example-copies.js';

/**
 * The service key is what a Better Auth adapter signs in to the backend with. verify takes it as
 * the backend does: --service-key, else SERVICE_API_KEY of the environment, else of .env.
 */
describe.runIf(adminUrl)('service-credential and where the service key comes from', () => {
  const resources = createResources({ adminUrl, name: 'servicekey' });
  let dir: string;
  let backend: Backend;
  const runs: Record<string, VerifyRun> = {};
  const wrongKey = 'not-the-backends-key-0123456789abcdef';
  const check = (run: VerifyRun) => run.report.checks.find((result) => result.id === 'service-credential')!;

  beforeAll(async () => {
    dir = resources.copyOfExample('ALLOWED_ORIGINS=http://localhost:5173\n');
    backend = await resources.startBackend(dir);
    const withDotEnv = (key: string) => fs.writeFileSync(path.join(dir, '.env'), `ALLOWED_ORIGINS=http://localhost:5173\nSERVICE_API_KEY=${key}\n`);
    // One at a time: each writes the .env it needs.
    runs.environmentOnly = await verifyProject(dir, backend, [], { SERVICE_API_KEY: backend.serviceApiKey });
    runs.wrongInEnvironment = await verifyProject(dir, backend, [], { SERVICE_API_KEY: wrongKey });
    withDotEnv(wrongKey);
    runs.environmentOverDotEnv = await verifyProject(dir, backend, [], { SERVICE_API_KEY: backend.serviceApiKey });
    runs.wrongInDotEnv = await verifyProject(dir, backend, [], {}, false);
    runs.flagOverEnvironment = await verifyProject(dir, backend, ['--service-key', backend.serviceApiKey], { SERVICE_API_KEY: wrongKey });
    runs.wrongFlag = await verifyProject(dir, backend, ['--service-key', wrongKey], { SERVICE_API_KEY: backend.serviceApiKey });
  }, 120_000);
  afterAll(resources.cleanup, 60_000);

  it.each(['environmentOnly', 'environmentOverDotEnv', 'flagOverEnvironment'])('%s: the right key is used, and every check passes', (name) => {
    const run = runs[name]!;
    expect(run.report.checks.filter((result) => result.status !== 'pass'), run.output).toEqual([]);
    expect(check(run).message).toBe("stored and read back with providerId 'credential' and the same bcrypt hash");
    expect(run.report.leftBehind).toBeUndefined();
    expect(run.status).toBe(0);
  });

  it.each([
    ['wrongInEnvironment', 'SERVICE_API_KEY in the environment'],
    ['wrongInDotEnv', 'SERVICE_API_KEY in .env'],
    ['wrongFlag', '--service-key'],
  ])('%s: a wrong key fails, naming where it came from and the key to pass', (name, source) => {
    const run = runs[name]!;
    expect(run.report.checks.filter((result) => result.status === 'fail').map((result) => result.id), run.output).toEqual(['service-credential']);
    expect(check(run)).toMatchObject({
      message: `the backend refused the service key (401): ${source} is not the backend's SERVICE_API_KEY`,
      fix: "pass the backend's key with --service-key, or set SERVICE_API_KEY",
    });
    expect(JSON.stringify(check(run))).not.toContain('adapter');
    expect(run.status).toBe(1);
  });
});
