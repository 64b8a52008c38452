import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { apiClient, createThrowawayDatabase, postgresAdminUrl, projectDir, signUp } from './support/backend.js';
import { spawnBackend, type BackendProcess } from './support/process.js';

/**
 * OpenTelemetry traces (src/observability/tracing.ts), switched on and off by the standard OTEL_*
 * variables, from a backend process to an OTLP/HTTP receiver on loopback, as a collector would
 * receive them.
 */

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  status?: { code?: number };
}

/** An OTLP/HTTP receiver: the bodies posted to /v1/traces, and the spans of the JSON ones. */
async function otlpReceiver() {
  const posts: { contentType: string; body: Buffer }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') posts.push({ contentType: req.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' });
      res.end(req.headers['content-type']?.includes('json') ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const spans = (): ReceivedSpan[] =>
    posts
      .filter((post) => post.contentType.includes('json'))
      .flatMap((post) => JSON.parse(post.body.toString()).resourceSpans)
      .flatMap((resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }) => resourceSpans.scopeSpans.flatMap((scope) => scope.spans))
      .map((span: Record<string, unknown>) => ({
        ...(span as unknown as ReceivedSpan),
        attributes: Object.fromEntries(
          (span.attributes as { key: string; value: Record<string, unknown> }[]).map(({ key, value }) => [key, (value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue) as string]),
        ),
      }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts, spans, close: () => new Promise((resolve) => server.close(resolve)) };
}

const started: BackendProcess[] = [];
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const backend of started.splice(0)) {
    backend.child.kill('SIGTERM');
    await backend.exited;
  }
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiverAndBackend(env: Record<string, string>) {
  const receiver = await otlpReceiver();
  cleanups.push(receiver.close);
  // Spans are sent every 50 ms rather than every 5 s, so the test need not wait.
  const backend = spawnBackend({ EMBEDDED_DB_DIR: 'memory://', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50', ...env });
  started.push(backend);
  return { receiver, backend, url: await backend.listening };
}

async function until<T>(read: () => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`no ${what} within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the OTEL_* variables', () => {
  it('turn traces on with an exporter or an OTLP endpoint, and off by default, with none or with the SDK disabled', () => {
    const tracing = (env: Record<string, string>) => loadConfig(env, projectDir).tracing;
    expect(tracing({})).toBeUndefined();
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({ exporters: ['otlp'], protocol: 'http/protobuf' });
    expect(tracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toEqual({ exporters: ['otlp'], protocol: 'http/json' });
    expect(tracing({ OTEL_TRACES_EXPORTER: 'console, otlp' })).toEqual({ exporters: ['console', 'otlp'], protocol: 'http/protobuf' });
    expect(tracing({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBeUndefined();
    expect(tracing({ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' })).toBeUndefined();
  });

  it('refuse what this backend cannot do, naming the variable', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, projectDir)).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/protobuf or http\/json \(gRPC is not built in\)/);
    expect(() => loadConfig({ OTEL_TRACES_EXPORTER: 'zipkin' }, projectDir)).toThrow(/OTEL_TRACES_EXPORTER: must be otlp, console or none/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, projectDir)).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT: must be a URL/);
  });
});

describe('traces', () => {
  it('are a span per request and one per SQL statement, in one trace, with the request id, and nothing secret', async () => {
    const { receiver, url } = await receiverAndBackend({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'traced-api' });
    const password = 'correct horse battery staple';
    const signUpResponse = await apiClient(url)('POST', '/api/auth/sign-up/email', {
      body: { email: 'traced@example.com', name: 'Traced', password },
      headers: { 'x-request-id': 'trace-sign-up' },
    });
    expect(signUpResponse.status).toBe(201);
    const { token } = signUpResponse.body.data;
    const organizationId = (await apiClient(url)('GET', '/api/auth/get-session', { token })).body.data.organizations[0].id;
    const api = apiClient(url, { token, organizationId });
    expect((await api('GET', '/Projects?limit=5&search=secret-search-term', { headers: { 'x-request-id': 'trace-list' } })).status).toBe(200);

    const list = await until(() => receiver.spans().find((span) => span.attributes['authstrap.request_id'] === 'trace-list' && span.kind === 2), 'span of GET /Projects');
    expect(list).toMatchObject({ name: 'GET /Projects', attributes: { 'http.request.method': 'GET', 'http.route': '/Projects', 'http.response.status_code': 200, 'url.path': '/Projects' } });
    expect(list.parentSpanId ?? '').toBe('');
    // Its statement: a child in the same trace, with the SQL text and the request id.
    const statements = await until(() => {
      const found = receiver.spans().filter((span) => span.parentSpanId === list.spanId);
      return found.length > 0 ? found : undefined;
    }, 'statement span of GET /Projects');
    for (const statement of statements) {
      expect(statement).toMatchObject({ traceId: list.traceId, kind: 3, attributes: { 'db.system.name': 'postgresql', 'authstrap.request_id': 'trace-list' } });
    }
    // One round trip: the caller's session (which scopes the transaction) and then the list itself.
    const texts = statements.map((statement) => String(statement.attributes['db.query.text']));
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/FROM "session"/);
    expect(texts[1]).toMatch(/FROM "Project"/);

    // Sign-up runs a transaction: its statements are children of the transaction's span.
    const signUpSpan = await until(() => receiver.spans().find((span) => span.attributes['authstrap.request_id'] === 'trace-sign-up' && span.kind === 2), 'span of sign-up');
    expect(signUpSpan.name).toBe('POST /api/auth/sign-up/email');
    const transaction = await until(() => receiver.spans().find((span) => span.parentSpanId === signUpSpan.spanId && span.name === 'transaction'), 'transaction span');
    const inTransaction = await until(() => {
      const found = receiver.spans().filter((span) => span.parentSpanId === transaction.spanId);
      return found.some((span) => span.name === 'INSERT') ? found : undefined;
    }, 'statements of the transaction');
    expect(inTransaction.every((span) => span.attributes['authstrap.request_id'] === 'trace-sign-up')).toBe(true);

    // No password, token, address or query string in any span; the service is named as asked.
    const exported = receiver.posts.map((post) => post.body.toString()).join('\n');
    for (const secret of [password, token, 'traced@example.com', 'secret-search-term']) expect(exported).not.toContain(secret);
    expect(exported).toContain('"traced-api"');
  });

  it('continue the trace of a W3C traceparent header', async () => {
    const { receiver, url } = await receiverAndBackend({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentId = '00f067aa0ba902b7';
    await fetch(`${url}/health`, { headers: { traceparent: `00-${traceId}-${parentId}-01`, 'x-request-id': 'trace-parent' } });
    const span = await until(() => receiver.spans().find((candidate) => candidate.attributes['authstrap.request_id'] === 'trace-parent'), 'span of /health');
    expect(span).toMatchObject({ traceId, parentSpanId: parentId, name: 'GET /health' });
  });

  it('go out as protobuf by default (OTLP over HTTP), and the last ones leave when the backend stops', async () => {
    const { receiver, backend, url } = await receiverAndBackend({ OTEL_BSP_SCHEDULE_DELAY: '60000' });
    await fetch(`${url}/health`);
    expect(receiver.posts).toHaveLength(0);
    backend.child.kill('SIGTERM');
    expect(await backend.exited).toBe(0);
    expect(receiver.posts.length).toBeGreaterThan(0);
    expect(receiver.posts.every((post) => post.contentType === 'application/x-protobuf' && post.body.length > 0)).toBe(true);
  });

  it.runIf(postgresAdminUrl)('name the database of the statements on PostgreSQL', async () => {
    const database = await createThrowawayDatabase();
    cleanups.push(database.drop);
    const { receiver, url } = await receiverAndBackend({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', DATABASE_URL: database.url });
    await fetch(`${url}/ready`, { headers: { 'x-request-id': 'trace-ready' } });
    const statement = await until(() => receiver.spans().find((span) => span.attributes['authstrap.request_id'] === 'trace-ready' && span.kind === 3), 'statement of /ready');
    expect(statement.attributes['db.namespace']).toBe(new URL(database.url).pathname.slice(1));
  });

  for (const [what, env] of [
    ['OTEL_SDK_DISABLED=true', { OTEL_SDK_DISABLED: 'true' }],
    ['OTEL_TRACES_EXPORTER=none', { OTEL_TRACES_EXPORTER: 'none' }],
  ] as const) {
    it(`are not made with ${what}, even with an endpoint set`, async () => {
      const { receiver, backend, url } = await receiverAndBackend(env);
      await signUp(url, `untraced-${Object.keys(env)[0]!.toLowerCase()}@example.com`);
      backend.child.kill('SIGTERM');
      expect(await backend.exited).toBe(0);
      expect(receiver.posts).toEqual([]);
    });
  }
});

describe('off by default', () => {
  /** The modules a backend process imported while it started and served a request. */
  async function modulesLoaded(env: Record<string, string>): Promise<string> {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-modules-')), 'loaded.txt');
    cleanups.push(async () => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
    const backend = spawnBackend({ EMBEDDED_DB_DIR: 'memory://', LOADED_MODULES_FILE: file, ...env }, projectDir, ['--import', './test/support/loaded-modules.mjs']);
    started.push(backend);
    await signUp(await backend.listening, `modules-${Object.keys(env).length}@example.com`);
    return fs.readFileSync(file, 'utf8');
  }

  it('loads neither OpenTelemetry nor prom-client unless traces or metrics are asked for', async () => {
    const off = await modulesLoaded({});
    // The hook saw the backend's own modules ...
    expect(off).toMatch(/src\/server\.ts/);
    // ... and none of these (pnpm's folder names may mention a package; its own folder is what counts).
    expect(off).not.toMatch(/node_modules\/@opentelemetry\/|node_modules\/prom-client\/|src\/observability\//);

    const on = await modulesLoaded({ OTEL_TRACES_EXPORTER: 'console', METRICS_TOKEN: 'test-metrics-token-0123456789abcdef0123456789' });
    expect(on).toMatch(/node_modules\/@opentelemetry\/sdk-trace-base\//);
    expect(on).toMatch(/node_modules\/prom-client\//);
  });
});
