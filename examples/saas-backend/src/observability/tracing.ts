import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import path from 'node:path';
import type { Request, RequestHandler } from 'express';
import { defaultTextMapGetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingSettings } from '../config.js';
import { hasSqlState, type Database, type Queryable, type QueryResult } from '../db/database.js';
import type { Statement } from '../db/sql.js';
import { unmatchedRoute } from '../http/route-template.js';

/**
 * OpenTelemetry traces, switched on by the standard OTEL_* variables (config.ts, tracingSettings):
 * a span per request (named by its method and route template) and one per SQL statement the
 * request sends, both with the request's id (`authstrap.request_id`), exported over OTLP/HTTP
 * (OTEL_EXPORTER_OTLP_ENDPOINT, ..._HEADERS, ..._PROTOCOL) or to the console. A request that
 * carries a W3C `traceparent` continues that trace. server.ts imports this module only when traces
 * are on; off, nothing of OpenTelemetry is loaded and nothing is done per request.
 *
 * Nothing secret goes into a span: a request's path without its query string (links carry tokens
 * there), never a header, a body or a cookie; a statement's SQL text, whose values are always
 * parameters, never the parameters; a failed statement's SQLSTATE, never PostgreSQL's message
 * (which may quote a value).
 *
 * The tracer provider is this server's own, not the process-wide global one: the backend's spans
 * go to its exporter whatever else in the process registers (and two backends in one test process
 * do not mix their spans). Parent and child are linked through an AsyncLocalStorage of the
 * backend's own, so no global context manager is installed either.
 */
export interface Tracing {
  /** Middleware, after the request logger (which gives the request its id): the request's span. */
  requests: RequestHandler;
  /** Which route a request matched, as its template (http/route-template.ts), once the routes are mounted. */
  routeOf: (req: Request) => string;
  /** `db`, with a span for each statement (and transaction) sent while serving a request. */
  traced(db: Database): Database;
  /** Sends the spans still buffered (at most 2 s), then stops. */
  shutdown(): Promise<void>;
}

/** What the statements of a request need to know about it. */
interface RequestScope {
  context: Context;
  requestId: string;
}

export async function startTracing(settings: TracingSettings, { projectDir, databaseUrl }: { projectDir: string; databaseUrl?: string }): Promise<Tracing> {
  const exporters = await Promise.all(settings.exporters.map((name) => exporter(name, settings.protocol)));
  const { name: packageName, version } = JSON.parse(fs.readFileSync(path.join(projectDir, 'package.json'), 'utf8')) as { name: string; version: string };
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the package's name and version.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': packageName, 'service.version': version }))
    .merge(detectResources({ detectors: [envDetector] }));
  // The sampler (OTEL_TRACES_SAMPLER) and the batching (OTEL_BSP_*) come from the environment too.
  const provider = new BasicTracerProvider({ resource, spanProcessors: exporters.map((each) => new BatchSpanProcessor(each)) });
  const tracer = provider.getTracer(packageName, version);
  const propagator = new W3CTraceContextPropagator();
  const scopes = new AsyncLocalStorage<RequestScope>();

  const tracing: Tracing = {
    routeOf: () => unmatchedRoute,
    requests(req, res, next) {
      const parent = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
      const span = tracer.startSpan(req.method, { kind: SpanKind.SERVER }, parent);
      // A request the sampler leaves out (OTEL_TRACES_SAMPLER) gets no statement spans either, so
      // nothing has to follow it: no attributes, no listener, and no AsyncLocalStorage, whose
      // hooks, once any request uses it, cost every promise of the process something.
      if (!span.isRecording()) return next();
      span.setAttributes({ 'http.request.method': req.method, 'url.path': req.path, 'authstrap.request_id': req.id });
      res.once('close', () => {
        const route = tracing.routeOf(req);
        span.updateName(`${req.method} ${route}`);
        span.setAttribute('http.route', route);
        span.setAttribute('http.response.status_code', res.statusCode);
        if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        if (!res.writableFinished) span.setAttribute('authstrap.aborted', true);
        span.end();
      });
      scopes.run({ context: trace.setSpan(parent, span), requestId: req.id }, next);
    },
    // The database's name (`db.namespace`); the embedded one has none worth giving.
    traced: (db) => tracedDatabase(db, tracer, scopes, databaseUrl ? decodeURIComponent(new URL(databaseUrl).pathname.slice(1)) : undefined),
    async shutdown() {
      await Promise.race([provider.shutdown(), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    },
  };
  return tracing;
}

async function exporter(name: 'otlp' | 'console', protocol: TracingSettings['protocol']): Promise<SpanExporter> {
  if (name === 'console') return new ConsoleSpanExporter();
  // Each reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT and _COMPRESSION itself.
  const { OTLPTraceExporter } =
    protocol === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter();
}

/** The statement's first word (SELECT, INSERT, WITH, ...): its span's name and `db.operation.name`. */
function operationOf(text: string): string {
  return /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'SQL';
}

function tracedDatabase(db: Database, tracer: Tracer, scopes: AsyncLocalStorage<RequestScope>, namespace: string | undefined): Database {
  const inSpan = async <T>(name: string, attributes: Record<string, string>, parent: Context, requestId: string, work: (span: Span) => Promise<T>): Promise<T> => {
    const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'authstrap.request_id': requestId, ...attributes, ...(namespace ? { 'db.namespace': namespace } : {}) } }, parent);
    try {
      return await work(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      if (hasSqlState(error)) span.setAttribute('db.response.status_code', error.code);
      else span.setAttribute('error.type', (error as Error)?.name ?? 'Error');
      throw error;
    } finally {
      span.end();
    }
  };

  /** Statements of `queryable`, each in a span under the scope's context (the request's, or its transaction's). */
  const statements = (queryable: Queryable, scope: () => RequestScope | undefined): Queryable => ({
    query<Row>(text: string, params?: unknown[]): Promise<QueryResult<Row>> {
      const current = scope();
      if (!current) return queryable.query<Row>(text, params);
      const operation = operationOf(text);
      return inSpan(operation, { 'db.operation.name': operation, 'db.query.text': text }, current.context, current.requestId, async (span) => {
        const result = await queryable.query<Row>(text, params);
        span.setAttribute('db.response.returned_rows', result.rows.length);
        return result;
      });
    },
  });

  return {
    kind: db.kind,
    query: statements(db, () => scopes.getStore()).query,
    transaction(work) {
      const current = scopes.getStore();
      if (!current) return db.transaction(work);
      return inSpan('transaction', {}, current.context, current.requestId, (span) => {
        const inTransaction = { context: trace.setSpan(current.context, span), requestId: current.requestId };
        return db.transaction((tx) => work(statements(tx, () => inTransaction)));
      });
    },
    async pipeline(sent) {
      const current = scopes.getStore();
      if (!current) return db.pipeline(sent);
      // One round trip, several statements: a span for each, all as long as the round trip.
      const spans = sent.map(({ text }) => {
        const operation = operationOf(text);
        return tracer.startSpan(operation, { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'authstrap.request_id': current.requestId, 'db.operation.name': operation, 'db.query.text': text, ...(namespace ? { 'db.namespace': namespace } : {}) } }, current.context);
      });
      try {
        const outcome = await db.pipeline(sent);
        outcome.results.forEach((result, index) => spans[index]!.setAttribute('db.response.returned_rows', result.rows.length));
        const failed = outcome.error !== undefined ? spans[outcome.results.length] : undefined;
        if (failed) {
          failed.setStatus({ code: SpanStatusCode.ERROR });
          if (hasSqlState(outcome.error)) failed.setAttribute('db.response.status_code', outcome.error.code);
        }
        return outcome;
      } catch (error) {
        for (const span of spans) span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        for (const span of spans) span.end();
      }
    },
    begin: (async (first?: Statement[]) => {
      const held = first === undefined ? await db.begin() : await db.begin(first);
      return { ...held, query: statements(held, () => scopes.getStore()).query };
    }) as Database['begin'],
    asOwner: (work) => db.asOwner((tx) => work(statements(tx, () => scopes.getStore()))),
    actAs: (role) => db.actAs(role),
    // Migrations run before any request: nothing to trace.
    withConnection: (work) => db.withConnection(work),
    poolStats: db.poolStats && (() => db.poolStats!()),
    timelineStats: db.timelineStats && (() => db.timelineStats!()),
    close: () => db.close(),
  };
}
