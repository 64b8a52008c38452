import { afterAll, describe, expect, it } from 'vitest';
import { createResources, runCliAsync, type Backend } from './support/example-copies.js';

/**
 * `authstrap verify` against a backend with the spec's own rate limits (10 an hour under
 * /api/auth): with the service key its probes are not counted, so it passes run after run; without
 * it, a 429 is reported as "rate limited, retry after N s", never as a broken check with a repair.
 */

const adminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;

interface Report {
  ok: boolean;
  checks: { id: string; status: string; message: string; fix?: string; rateLimited?: true }[];
}

describe.runIf(adminUrl)('authstrap verify and the rate limits', () => {
  // Blank values: the backend's defaults (10 an hour under /api/auth, 100 per 15 minutes under /api).
  const resources = createResources({ adminUrl, name: 'verifylimits', backendEnv: { RATE_LIMIT_AUTH_MAX: '', RATE_LIMIT_API_MAX: '' } });
  afterAll(resources.cleanup, 60_000);

  /** A copy of the example with a healthy .env (so that every check of verify can pass). */
  const copy = () => resources.copyOfExample('ALLOWED_ORIGINS=http://localhost:5173\n');

  async function verify(dir: string, backend: Backend, withServiceKey: boolean) {
    const args = ['verify', '--json', '--dir', dir, '--url', backend.url, '--database-url', backend.databaseUrl];
    if (withServiceKey) args.push('--service-key', backend.serviceApiKey);
    const result = await runCliAsync(args, dir);
    return { ...result, report: JSON.parse(result.stdout) as Report };
  }

  it('passes five times in a row with the service key, at the default limits', { timeout: 180_000 }, async () => {
    const dir = copy();
    const backend = await resources.startBackend(dir);
    for (let run = 1; run <= 5; run++) {
      const { status, report, output } = await verify(dir, backend, true);
      expect(report.checks.filter((check) => check.status !== 'pass'), `run ${run}: ${output}`).toEqual([]);
      expect(status).toBe(0);
    }
  });

  it('without the service key, reports a 429 as rate limited with the time to retry, and suggests no repair', { timeout: 180_000 }, async () => {
    const dir = copy();
    const backend = await resources.startBackend(dir);
    let limited: Awaited<ReturnType<typeof verify>> | undefined;
    for (let run = 1; run <= 4 && !limited; run++) {
      const result = await verify(dir, backend, false);
      if (result.report.checks.some((check) => check.rateLimited)) limited = result;
      else expect(result.status, result.output).toBe(0);
    }
    expect(limited, 'the auth limit of 10 an hour was never reached').toBeDefined();
    const { status, report } = limited!;
    expect(status).toBe(1);
    expect(report.ok).toBe(false);
    for (const check of report.checks.filter((candidate) => candidate.rateLimited)) {
      expect(check.status).toBe('skip');
      expect(check.message).toMatch(/^rate limited by the backend \(429\), retry after \d+ s$/);
      expect(check.fix).toBeUndefined();
    }
    // Nothing is reported broken because of the limit.
    expect(report.checks.filter((check) => check.status === 'fail')).toEqual([]);
  });
});
