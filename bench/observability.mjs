#!/usr/bin/env node
// What metrics and traces cost the list route: (a)'s load on the example with nothing on, with
// Prometheus metrics on (METRICS_TOKEN), and with metrics and traces on (the `traces` variants:
// OTEL_EXPORTER_OTLP_ENDPOINT, to an OTLP receiver in this process that takes the spans and drops
// them), every trace kept, one in ten, or none. The same compiled example in each, in turns
// (bench/lib/variants.mjs). Goal: metrics cost at most 3 % of the rps.
//
//   node bench/observability.mjs
//
// Settings: BENCH_PG_URL, BENCH_ROUNDS (3), BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (8),
// BENCH_VARIANTS (the names to measure, separated by ';'; all by default). Linux only (reads
// /proc); needs wrk. Writes bench/results/observability.json.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { children, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';
import { alternate, roundSettings } from './lib/variants.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'observability.json');
const settings = roundSettings();
const metricsToken = 'bench-metrics-token-0123456789abcdef0123456789';

// A collector that takes the spans (OTLP/HTTP) and drops them, counting what it was sent.
let spanPosts = 0;
const collector = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    spanPosts += 1;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
});
await new Promise((resolve) => collector.listen(0, '127.0.0.1', resolve));
const collectorUrl = `http://127.0.0.1:${collector.address().port}`;

const database = await throwawayDatabase('observability');
try {
  const seeding = await startExampleBackend({ dbUrl: database.url });
  const seed = await seedProjects(seeding.base);
  await stopChild(seeding.child);

  /** What /metrics says of the run: the list requests it counted, and how often the pool made one wait. */
  const scrape = async (base) => {
    const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
    const sample = (pattern) => Number(pattern.exec(text)?.[1] ?? 0);
    return {
      counted: sample(/^http_request_duration_seconds_count\{method="GET",route="\/Projects",status="200"\} (\d+)/m),
      poolWaits: sample(/^authstrap_db_pool_waits_total (\d+)/m),
    };
  };
  const variants = [
    { name: 'off', start: () => startExampleBackend({ dbUrl: database.url }) },
    {
      name: 'metrics',
      start: () => startExampleBackend({ dbUrl: database.url, env: { METRICS_TOKEN: metricsToken } }),
      async afterRun({ base, run }) {
        const { counted, poolWaits } = await scrape(base);
        if (counted < run.requests) throw new Error(`/metrics counted ${counted} list requests, wrk completed ${run.requests}`);
        run.poolWaitsPerRequest = poolWaits / counted;
        console.log(`[bench]   /metrics: ${counted} list requests counted (warm-up included), ${poolWaits} waited for a connection`);
      },
    },
    {
      name: 'traces',
      exports: true,
      start: () => startExampleBackend({ dbUrl: database.url, env: { METRICS_TOKEN: metricsToken, OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_SERVICE_NAME: 'bench' } }),
    },
    {
      // Spans made and linked to their request, none kept: what tracing costs before any export.
      name: 'traces, none sampled',
      start: () =>
        startExampleBackend({
          dbUrl: database.url,
          env: { METRICS_TOKEN: metricsToken, OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_SERVICE_NAME: 'bench', OTEL_TRACES_SAMPLER: 'always_off' },
        }),
    },
    {
      // What a busy production would run: one trace in ten kept (and those a caller's traceparent samples).
      name: 'traces, 1 in 10',
      exports: true,
      start: () =>
        startExampleBackend({
          dbUrl: database.url,
          env: { METRICS_TOKEN: metricsToken, OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_SERVICE_NAME: 'bench', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
        }),
    },
  ];
  // BENCH_VARIANTS='off;metrics' measures only those (more rounds of the comparison that matters).
  const chosen = process.env.BENCH_VARIANTS ? variants.filter((variant) => process.env.BENCH_VARIANTS.split(';').includes(variant.name)) : variants;
  const { runs, medians, againstFirst } = await alternate(chosen, { seed, ...settings });
  if (chosen.some((variant) => variant.exports) && spanPosts === 0) throw new Error('the variants that keep traces sent no spans');
  const change = (name, key) => `${(((medians[name][key] - medians.off[key]) / medians.off[key]) * 100).toFixed(1)} %`;
  console.log(`\nmedians of ${settings.rounds} rounds:`);
  const percent = (ratio) => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)} %`;
  for (const { name } of chosen) {
    const { rps, p99Ms, nodeCpuUsPerRequest } = medians[name];
    const paired = againstFirst[name] ? `; against "off" in the same round: rps ${percent(againstFirst[name].rps)}, Node CPU ${percent(againstFirst[name].nodeCpuUsPerRequest)}` : '';
    console.log(`  ${name}: ${rps} rps (${change(name, 'rps')}), p99 ${p99Ms} ms, Node ${nodeCpuUsPerRequest} µs per request (${change(name, 'nodeCpuUsPerRequest')})${paired}`);
  }
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), loadAverage1m: os.loadavg()[0], settings, runs, medians, againstFirst }, null, 2)}\n`);
} finally {
  for (const child of children) await stopChild(child);
  await database.drop();
  collector.close();
}
