import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, startBackend, type TestBackend } from './support/backend.js';

/** The Redocly CLI the workspace pins (package.json), run with node. */
function redoclyCli(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve('@redocly/cli/package.json');
  const { bin } = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  return path.join(path.dirname(manifestPath), typeof bin === 'string' ? bin : bin.redocly);
}

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}

/**
 * The warnings docs/decisions.md ("The OpenAPI document and Redocly's recommended rules") keeps,
 * by rule and place. Any other problem fails.
 */
const decidedWarnings = [
  // The server is AUTH_URL: http://localhost:<port> in development and in these tests.
  'no-server-example.com #/servers/0/url',
  // A project grants no license until its owner names one in package.json (UNLICENSED).
  'info-license-strict #/info/license',
  // The probes answer 200 or 503, never a 4xx.
  'operation-4xx-response #/paths/~1health/get/responses',
  'operation-4xx-response #/paths/~1ready/get/responses',
  // Single sign-on's browser routes succeed with a 303 (to the identity provider, back to the app), never a 2xx.
  'operation-2xx-response #/paths/~1api~1auth~1sso~1start/get/responses',
  'operation-2xx-response #/paths/~1api~1auth~1sso~1{connectionId}~1oidc~1callback/get/responses',
  'operation-2xx-response #/paths/~1api~1auth~1sso~1{connectionId}~1saml~1acs/post/responses',
];

type Operation = { operationId?: string; security?: Record<string, string[]>[]; responses: Record<string, unknown> };

describe('the OpenAPI document the example serves', () => {
  let backend: TestBackend;
  let document: { paths: Record<string, Record<string, Operation>>; security: Record<string, string[]>[] };
  let folder: string;

  beforeAll(async () => {
    backend = await startBackend('embedded');
    document = (await apiClient(backend.url)('GET', '/api/docs/openapi.json')).body;
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-openapi-'));
  });
  afterAll(async () => {
    await backend?.stop();
    if (folder) fs.rmSync(folder, { recursive: true, force: true });
  });

  it("passes Redocly CLI's recommended rules: no errors, and only the warnings docs/decisions.md keeps", () => {
    const file = path.join(folder, 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(document));
    const lint = spawnSync(process.execPath, [redoclyCli(), 'lint', file, '--extends=recommended', '--format=json', '--max-problems=1000'], {
      encoding: 'utf8',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      timeout: 120_000,
    });
    // The JSON report is on stdout; banners and progress on stderr.
    const report = JSON.parse(lint.stdout.slice(lint.stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: LintProblem[] };
    const problems = report.problems.map((problem) => `${problem.ruleId} ${problem.location[0]?.pointer ?? ''}`);
    expect(report.problems.filter((problem) => problem.severity === 'error').map((problem) => `${problem.ruleId} ${problem.location[0]?.pointer}: ${problem.message}`)).toEqual([]);
    expect(problems.sort()).toEqual([...decidedWarnings].sort());
  });

  it('names every operation once, as the typed client names it', () => {
    const operations = Object.values(document.paths).flatMap((item) => Object.values(item));
    const ids = operations.map((operation) => operation.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id)), ids.filter((id) => !id || !/^[a-z][A-Za-z]+$/.test(id)).join(', ')).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // client.projects.list() -> listProjects, client.auth.signIn() -> signIn, and so on.
    expect(document.paths['/Projects']!.get!.operationId).toBe('listProjects');
    expect(document.paths['/Projects/{id}']!.patch!.operationId).toBe('updateProject');
    expect(document.paths['/Projects/{projectId}/Tasks']!.post!.operationId).toBe('createProjectTask');
    expect(document.paths['/api/auth/sign-in/email']!.post!.operationId).toBe('signIn');
    expect(document.paths['/api/auth/organization/set-active']!.post!.operationId).toBe('setActiveOrganization');
  });

  it('lists the error envelope for 401 wherever a caller is needed, 429 wherever a limit counts, and 500 everywhere', () => {
    const probes = new Set(['/health', '/ready']);
    for (const [route, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${route}`;
        const security = operation.security ?? document.security;
        const needsCaller = security.length > 0 && security.every((requirement) => Object.keys(requirement).length > 0);
        if (needsCaller) expect(operation.responses, where).toHaveProperty('401');
        if (!probes.has(route)) expect(operation.responses, where).toHaveProperty('429');
        expect(operation.responses, where).toHaveProperty('500');
        for (const [status, answer] of Object.entries(operation.responses)) {
          if (Number(status) >= 400) expect(JSON.stringify(answer), `${where} ${status}`).toMatch(/ErrorEnvelope|#\/components\/responses\//);
        }
      }
    }
    // What Stoplight Prism found undocumented (issue 43).
    expect(Object.keys(document.paths['/Users']!.get!.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '429', '500']));
    // The probes and the docs are in the document.
    for (const route of ['/health', '/ready', '/api/docs', '/api/docs/openapi.json']) expect(document.paths, route).toHaveProperty(route);
  });
});
