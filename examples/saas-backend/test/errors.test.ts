import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds, signUp, startBackend, type Api, type TestBackend } from './support/backend.js';

describe.each(databaseKinds)('errors and protocol on the %s database', (kind) => {
  let backend: TestBackend;
  let api: Api;
  let org: string;

  beforeAll(async () => {
    backend = await startBackend(kind, { BODY_LIMIT: '2kb' });
    const owner = await signUp(backend.url, 'errors@example.com');
    api = owner.api;
    org = owner.organizationId;
  });
  afterAll(() => backend?.stop());

  it('answers malformed JSON with 400 BAD_REQUEST and stores nothing', async () => {
    const response = await api('POST', '/Projects', { organizationId: org, rawBody: '{"name": "half' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ success: false, error: { code: 'BAD_REQUEST', message: 'Malformed JSON in request body' } });
    expect((await api('GET', '/Projects', { organizationId: org })).body.meta.total).toBe(0);
  });

  it('answers a body that fails the schema with 422 and a message per field', async () => {
    const response = await api('POST', '/Projects', {
      organizationId: org,
      body: { name: 'x', status: 'paused', description: 42, owner: 'me' },
    });
    expect(response.status).toBe(422);
    expect(response.body.success).toBe(false);
    expect(response.body.error.code).toBe('VALIDATION_ERROR');
    expect(Object.keys(response.body.error.details).sort()).toEqual(['description', 'name', 'owner', 'status']);
    for (const message of Object.values(response.body.error.details)) expect(typeof message).toBe('string');
  });

  it('refuses wrong JSON types: an array, a string, null values for required fields', async () => {
    for (const rawBody of ['[]', '"text"', '{"name": null}', '{"name": ["a", "b"]}']) {
      const response = await api('POST', '/Projects', { organizationId: org, rawBody });
      expect([400, 422], rawBody).toContain(response.status);
      expect(response.body.success).toBe(false);
    }
  });

  it('refuses a body that is not JSON with 400', async () => {
    const response = await api('POST', '/Projects', { organizationId: org, rawBody: 'name=Apollo', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(response.status).toBe(400);
    expect(response.body.error.message).toContain('application/json');
  });

  it('answers a body over the limit with 413 PAYLOAD_TOO_LARGE', async () => {
    const response = await api('POST', '/Projects', { organizationId: org, body: { name: 'big', description: 'x'.repeat(4000) } });
    expect(response.status).toBe(413);
    expect(response.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('answers a duplicate unique value with 409 CONFLICT', async () => {
    expect((await api('POST', '/organizations', { body: { name: 'First', slug: 'taken' } })).status).toBe(201);
    const response = await api('POST', '/organizations', { body: { name: 'Again', slug: 'taken' } });
    expect(response.status).toBe(409);
    expect(response.body.error).toEqual({ code: 'CONFLICT', message: 'A record with the same slug already exists' });
  });

  it('answers an unknown route with 404 in the error envelope', async () => {
    const response = await api('GET', '/nothing-here');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('NOT_FOUND');
  });

  it('puts x-request-id on every response, keeping a plain one sent by the client', async () => {
    for (const path of ['/health', '/Projects', '/nothing-here', '/api/docs/openapi.json']) {
      const response = await api('GET', path);
      expect(response.headers.get('x-request-id'), path).toMatch(/^[0-9a-f-]{36}$/);
    }
    const kept = await api('GET', '/health', { headers: { 'x-request-id': 'trace-123' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-123');
    const replaced = await api('GET', '/health', { headers: { 'x-request-id': 'bad id with spaces <script>' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('puts the security headers on every response, and no ETag or X-Powered-By', async () => {
    for (const path of ['/health', '/Projects', '/nothing-here', '/api/docs/openapi.json', '/api/docs/']) {
      const { headers } = await api('GET', path);
      expect(headers.get('content-security-policy'), path).toContain("default-src 'self'");
      expect(headers.get('content-security-policy'), path).not.toContain('upgrade-insecure-requests');
      expect(headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(headers.get('x-frame-options'), path).toBe('SAMEORIGIN');
      // HTTPS-only hints are for production, where HTTPS is served.
      expect(headers.get('strict-transport-security'), path).toBeNull();
      expect(headers.get('cross-origin-opener-policy'), path).toBe('same-origin');
      expect(headers.get('vary'), path).toContain('Origin');
      expect(headers.get('x-powered-by'), path).toBeNull();
      expect(headers.get('etag'), path).toBeNull();
    }
  });

  it('answers health and readiness', async () => {
    expect((await api('GET', '/health')).body).toEqual({ success: true, data: { status: 'ok' } });
    expect((await api('GET', '/ready')).body).toEqual({ success: true, data: { status: 'ready', database: kind } });
  });

  it('serves the OpenAPI 3.1 document and the docs page', async () => {
    const document = (await api('GET', '/api/docs/openapi.json')).body;
    expect(document.openapi).toBe('3.1.0');
    for (const path of ['/Users', '/accounts', '/sessions', '/Projects', '/Projects/{id}', '/Projects/{projectId}/Tasks']) {
      expect(document.paths, path).toHaveProperty([path]);
    }
    // The document comes from the same zod schemas as validation: name is required, with its limits.
    const createInput = document.components.schemas.ProjectCreateInput;
    expect(createInput.required).toEqual(['name']);
    expect(createInput.properties.name).toMatchObject({ type: 'string', minLength: 2, maxLength: 200 });
    expect(createInput.properties.status.enum).toEqual(['active', 'archived']);
    expect(JSON.stringify(document.components.schemas.account)).not.toContain('password');

    const page = await api('GET', '/api/docs/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.body).toContain('swagger-ui');
    // Every script the page loads is served from here, so it works offline under the CSP.
    for (const [, src] of String(page.body).matchAll(/<script src="([^"]+)"/g)) {
      expect(src, src).not.toMatch(/^https?:/);
      expect((await fetch(new URL(src!, `${backend.url}/api/docs/`))).status, src).toBe(200);
    }
  });

  // Last in this file: it breaks the table on purpose.
  it('answers an internal failure with 500 and a generic message that reveals no SQL or stack', async () => {
    await backend.running.db.asOwner((tx) => tx.query('ALTER TABLE "Project" RENAME COLUMN "description" TO "gone"'));
    const response = await api('GET', '/Projects', { organizationId: org });
    expect(response.status).toBe(500);
    expect(response.body.success).toBe(false);
    expect(response.body.error.code).toBe('INTERNAL_ERROR');
    const requestId = response.headers.get('x-request-id');
    expect(response.body.error.message).toBe(`Internal server error (request id ${requestId})`);
    const text = JSON.stringify(response.body).toLowerCase();
    for (const leak of ['select', 'description', 'column', 'does not exist', 'at ', '.ts', 'pg']) expect(text).not.toContain(leak);
  });
});
