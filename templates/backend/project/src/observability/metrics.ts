import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { collectDefaultMetrics, Registry, type Metric } from 'prom-client';
import { databaseTimeouts, unconfirmedCommits, type Database } from '../db/database.js';
import { sendError } from '../http/envelope.js';
import { unmatchedRoute } from '../http/route-template.js';
import type { RateLimits } from '../http/rate-limit.js';
import type { Outbox } from '../outbox/outbox.js';

/**
 * Prometheus metrics, served at GET /metrics to a scraper that sends `Authorization: Bearer
 * <METRICS_TOKEN>` (loaded only when METRICS_TOKEN is set; docs/observability.md lists the metrics).
 * What the parts of the backend count they keep as plain numbers (the pool, the limits, the
 * outbox); they are read when Prometheus scrapes. A request costs one call from the request
 * logger, which adds no object and no closure to the request (bench/README.md measured it).
 */
export interface Metrics {
  /** One answered request: called by the request logger when the response closes. */
  requestEnded(req: Request, status: number, milliseconds: number): void;
  /** Which route a request matched, as its template (http/route-template.ts), once the routes are mounted. */
  routeOf: (req: Request) => string;
  /** GET /metrics. */
  endpoint: RequestHandler;
}

export function createMetrics({ token, db, rateLimits, outbox }: { token: string; db: Database; rateLimits: RateLimits; outbox: Outbox }): Metrics {
  const registry = new Registry();
  // CPU, memory, heap, event loop lag, garbage collections, open handles and file descriptors.
  collectDefaultMetrics({ register: registry });
  const durations = new RequestDurations();
  register(registry, durations);

  register(registry, scraped('authstrap_db_pool_max', 'Connections the pool may open to PostgreSQL', 'gauge', () => {
    const pool = db.poolStats?.();
    return pool ? [{ labels: {}, value: pool.max }] : [];
  }));
  register(registry, scraped('authstrap_db_pool_connections', 'Connections open to PostgreSQL, busy or idle', 'gauge', () => {
    const pool = db.poolStats?.();
    return pool ? [{ labels: { state: 'busy' }, value: pool.total - pool.idle }, { labels: { state: 'idle' }, value: pool.idle }] : [];
  }));
  register(registry, scraped('authstrap_db_pool_waiting', 'Statements and transactions waiting for a free connection now', 'gauge', () => {
    const pool = db.poolStats?.();
    return pool ? [{ labels: {}, value: pool.waiting }] : [];
  }));
  register(registry, scraped('authstrap_db_pool_waits_total', 'Statements and transactions that had to wait for a free connection', 'counter', () => {
    const pool = db.poolStats?.();
    return pool ? [{ labels: {}, value: pool.waits }] : [];
  }));
  register(registry, scraped('authstrap_db_timeouts_total', 'Waits on PostgreSQL that ran out: connect (a connection), statement (cancelled by statement_timeout), read (no answer by the deadline)', 'counter', () =>
    (['connect', 'statement', 'read'] as const).map((kind) => ({ labels: { kind }, value: databaseTimeouts[kind] })),
  ));
  register(registry, scraped('authstrap_db_unconfirmed_commits_total', 'Commits the synchronous standby did not confirm before the statement timeout: committed on the primary, answered 503 (a failover now would lose them)', 'counter', () => [
    { labels: {}, value: unconfirmedCommits.count },
  ]));
  register(registry, scraped('authstrap_db_timeline', 'The newest PostgreSQL timeline a connection of this instance has reached (it rises at each failover)', 'gauge', () => {
    const timelines = db.timelineStats?.();
    return timelines ? [{ labels: {}, value: timelines.newest }] : [];
  }));
  register(registry, scraped('authstrap_db_older_timeline_refusals_total', 'Connections ended because their primary was on an older timeline than this instance had written on (a split brain)', 'counter', () => {
    const timelines = db.timelineStats?.();
    return timelines ? [{ labels: {}, value: timelines.refused }] : [];
  }));
  register(registry, scraped('authstrap_rate_limit_refusals_total', 'Requests a rate limit refused (429), by limit: auth, sso, api or data', 'counter', () =>
    (['auth', 'sso', 'api', 'data'] as const).map((limit) => ({ labels: { limit }, value: rateLimits.refusals[limit] })),
  ));
  register(registry, scraped('authstrap_outbox_deliveries_total', 'Outbox deliveries by this instance: sent, retried (to be tried again) or failed (for good)', 'counter', () =>
    [...outbox.deliveries].flatMap(([channel, counts]) =>
      (['sent', 'retried', 'failed'] as const).map((result) => ({ labels: { channel, result }, value: counts[result] })),
    ),
  ));
  // One query per scrape; while PostgreSQL is away these two are left out rather than fail the scrape.
  let backlog: Promise<{ channel: string; pending: number; oldestSeconds: number }[]> | undefined;
  const currentBacklog = () => (backlog ??= outbox.backlog().catch(() => []).finally(() => setImmediate(() => (backlog = undefined))));
  register(registry, scraped('authstrap_outbox_pending_messages', 'Messages waiting in the outbox to be sent', 'gauge', async () =>
    (await currentBacklog()).map((row) => ({ labels: { channel: row.channel }, value: row.pending })),
  ));
  register(registry, scraped('authstrap_outbox_oldest_pending_seconds', "The outbox's lag: how long its oldest unsent message has waited", 'gauge', async () =>
    (await currentBacklog()).map((row) => ({ labels: { channel: row.channel }, value: row.oldestSeconds })),
  ));

  const expected = createHash('sha256').update(token).digest();
  const authorized = (header: string | undefined) => {
    if (!header?.startsWith('Bearer ')) return false;
    return timingSafeEqual(createHash('sha256').update(header.slice('Bearer '.length)).digest(), expected);
  };

  const metrics: Metrics = {
    routeOf: () => unmatchedRoute,
    requestEnded(req, status, milliseconds) {
      durations.observe(metrics.routeOf(req), status, req.method, milliseconds / 1000);
    },
    async endpoint(req, res) {
      if (!authorized(req.headers.authorization)) {
        res.setHeader('www-authenticate', 'Bearer realm="metrics"');
        sendError(res, 401, 'UNAUTHORIZED', 'Send the metrics token (METRICS_TOKEN) as a bearer token');
        return;
      }
      const text = await registry.metrics();
      res.setHeader('content-type', registry.contentType);
      res.setHeader('cache-control', 'no-store');
      res.end(text);
    },
  };
  return metrics;
}

/** Latency buckets, in seconds: from a millisecond (an answer from memory) to ten seconds. */
const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  /** Per bucket (not yet cumulative), and one more for above the last bound. */
  counts: number[];
  sum: number;
  count: number;
}

/**
 * http_request_duration_seconds by method, route template and status, kept here rather than in
 * prom-client's Histogram, whose observe() builds a label object, a key string and a value object
 * for every call: here a request costs three map lookups of values it already has (interned
 * strings and a small integer) and one bucket's increment. prom-client prints it like its own.
 */
class RequestDurations {
  readonly name = 'http_request_duration_seconds';
  readonly help = 'Time from a request reaching the app to its answer being sent, by method, route template and status';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly byRoute = new Map<string, Map<number, Map<string, Series>>>();

  observe(route: string, status: number, method: string, seconds: number): void {
    let byStatus = this.byRoute.get(route);
    if (!byStatus) this.byRoute.set(route, (byStatus = new Map()));
    let byMethod = byStatus.get(status);
    if (!byMethod) byStatus.set(status, (byMethod = new Map()));
    let series = byMethod.get(method);
    if (!series) byMethod.set(method, (series = { counts: new Array<number>(latencyBuckets.length + 1).fill(0), sum: 0, count: 0 }));
    let bucket = 0;
    while (bucket < latencyBuckets.length && seconds > latencyBuckets[bucket]!) bucket++;
    series.counts[bucket]!++;
    series.sum += seconds;
    series.count++;
  }

  get() {
    const values: ScrapedValue[] = [];
    for (const [route, byStatus] of this.byRoute) {
      for (const [status, byMethod] of byStatus) {
        for (const [method, series] of byMethod) {
          const labels = { method, route, status };
          let cumulative = 0;
          latencyBuckets.forEach((bound, bucket) => {
            cumulative += series.counts[bucket]!;
            values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: bound }, value: cumulative });
          });
          values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: series.count });
          values.push({ metricName: `${this.name}_sum`, labels, value: series.sum });
          values.push({ metricName: `${this.name}_count`, labels, value: series.count });
        }
      }
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

interface ScrapedValue {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

/** A metric whose values are read when Prometheus scrapes, from numbers another part of the backend keeps. */
function scraped(name: string, help: string, type: 'gauge' | 'counter', read: () => ScrapedValue[] | Promise<ScrapedValue[]>) {
  return { name, help, type, aggregator: 'sum' as const, get: async () => ({ name, help, type, aggregator: 'sum' as const, values: await read() }) };
}

/**
 * prom-client's registry prints any object with its metrics' shape (name, help, type, get()); its
 * types only know its own classes.
 */
function register(registry: Registry, metric: { name: string; get(): unknown }): void {
  registry.registerMetric(metric as unknown as Metric);
}
