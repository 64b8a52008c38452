import { describe, expect, it } from 'vitest';
import { describeProbeBreakages } from '../support/check-cycle.js';
import { breakFile } from '../support/example-copies.js';

const name = 'src/app.ts without the docs';

const { stage } = describeProbeBreakages('api-docs', [
  {
    name,
    breakFiles: (dir) => breakFile(dir, 'src/app.ts', "  app.use('/api/docs', docsRouter(document));\n"),
    fails: ['api-docs'],
    hint: "src/app.ts must mount docsRouter at /api/docs (setup's app.ts does; compare with a new project's)",
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('api-docs: the probes that read the document', () => {
  it('say they could not, and never pass for it', () => {
    const checks = new Map(stage(name).verify.report.checks.map((result) => [result.id, result]));
    expect(checks.get('api-docs')!.message).toBe('GET /api/docs answered 404');
    expect(checks.get('module-wiring')).toMatchObject({ status: 'skip', message: expect.stringContaining('the backend serves no OpenAPI document') });
    expect(checks.get('id-field')).toMatchObject({ status: 'skip', message: expect.stringContaining('the backend serves no OpenAPI document') });
    expect(checks.get('tenant-isolation')).toMatchObject({ status: 'warn', message: 'checked /Users; no other collection: the backend serves no OpenAPI document (/api/docs/openapi.json) listing them' });
  });
});
