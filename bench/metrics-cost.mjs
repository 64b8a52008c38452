#!/usr/bin/env node
// What counting one request costs, without a server around it: the backend's request histogram
// (src/observability/metrics.ts, from the compiled example) against prom-client's own Histogram
// with the same labels and buckets, each observing BENCH_OBSERVATIONS (2,000,000) requests spread
// over 12 series (4 routes, 3 statuses), as the request logger's 'close' listener would. Reports
// nanoseconds per observation and the young-generation collections the observations caused (the
// allocations the hot path leaves behind). Measured in turns, three times each.
//
//   (cd examples/saas-backend && npm run build) && node bench/metrics-cost.mjs
import { createRequire } from 'node:module';
import path from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { exampleDir } from './lib/harness.mjs';

const observations = Number(process.env.BENCH_OBSERVATIONS ?? 2_000_000);
const { createMetrics } = await import(pathToFileURL(path.join(exampleDir, 'dist/observability/metrics.js')).href);
const { Histogram, Registry } = createRequire(path.join(exampleDir, 'package.json'))('prom-client');

// Requests as the request logger sees them: a matched route (its template looked up), a method.
const routes = ['/Projects', '/Projects/:id', '/Projects/:projectId/Tasks', '/api/auth/get-session'].map((template) => ({ template, route: { path: template } }));
const statuses = [200, 201, 404];
const requests = routes.flatMap(({ route }) => statuses.map((status) => ({ req: { method: 'GET', route }, status })));
const templates = new Map(routes.map(({ template, route }) => [route, template]));
const routeOf = (req) => templates.get(req.route);

const idle = { poolStats: undefined, query: async () => ({ rows: [] }) };
const backend = createMetrics({ token: 'x'.repeat(32), db: idle, rateLimits: { refusals: { auth: 0, api: 0, data: 0 } }, outbox: { deliveries: new Map(), backlog: async () => [] } });
backend.routeOf = routeOf;

const promHistogram = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'the same, by prom-client',
  labelNames: ['method', 'route', 'status'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [new Registry()],
});

const ways = {
  'the backend (hand-kept histogram)': (req, status, ms) => backend.requestEnded(req, status, ms),
  "prom-client's Histogram, labels object": (req, status, ms) => promHistogram.observe({ method: req.method, route: routeOf(req), status }, ms / 1000),
};

let minorCollections = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) minorCollections += 1;
}).observe({ entryTypes: ['gc'] });

async function run(observe) {
  const before = minorCollections;
  const started = process.hrtime.bigint();
  for (let n = 0; n < observations; n += 1) {
    const { req, status } = requests[n % requests.length];
    observe(req, status, (n % 50) + 0.5);
  }
  const nanoseconds = Number(process.hrtime.bigint() - started);
  // The collections are reported after the loop gives way.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { nsPerObservation: nanoseconds / observations, minorCollections: minorCollections - before };
}

const results = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
for (let round = 0; round < 3; round += 1) {
  for (const [name, observe] of Object.entries(ways)) {
    const result = await run(observe);
    results[name].push(result);
    console.log(`[bench] ${name}: ${result.nsPerObservation.toFixed(0)} ns per request, ${result.minorCollections} young-generation collections in ${observations.toLocaleString('en')} requests`);
  }
}
const median = (values) => values.slice().sort((a, b) => a - b)[1];
console.log('\nmedians of 3:');
for (const [name, list] of Object.entries(results)) {
  console.log(`  ${name}: ${median(list.map((run) => run.nsPerObservation)).toFixed(0)} ns per request, ${median(list.map((run) => run.minorCollections))} collections`);
}
