import { describe, expect, it } from 'vitest';
import { describeProbeBreakages } from '../support/check-cycle.js';
import { breakFile } from '../support/example-copies.js';

const name = 'an extension route of its own answers GET /sessions with 500';

const { stage } = describeProbeBreakages('auth-endpoints', [
  {
    name,
    // Extensions are mounted before the generated routes, so they can replace one.
    breakFiles: (dir) =>
      breakFile(
        dir,
        'src/extensions/index.ts',
        '  const router = Router();\n',
        "  const router = Router();\n  router.get('/sessions', (_req, res) => {\n    res.status(500).json({ success: false, error: { code: 'INTERNAL_ERROR', message: 'broken on purpose' } });\n  });\n",
      ),
    fails: ['auth-endpoints'],
    // module-wiring finds every router mounted: the hint names no check.
    hint: "see the backend's log for the request that failed (its x-request-id)",
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('auth-endpoints: the message', () => {
  it('names the endpoint and its answer', () => {
    expect(stage(name).verify.report.checks.find((result) => result.id === 'auth-endpoints')!.message).toBe('GET /sessions answered 500 broken on purpose');
  });
});
