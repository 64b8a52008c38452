import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, databaseKinds, postgresAdminUrl, projectDir, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * GET /metrics (src/observability/metrics.ts): Prometheus's text, only for a scraper with the
 * token, and counters that follow the requests actually sent.
 */

const token = 'test-metrics-token-0123456789abcdef0123456789';

/** One sample of the Prometheus text format: `name{label="value",...} number`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[label[1]!] = label[2]!.replace(/\\(.)/g, '$1');
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the sample `name` whose labels include `labels` (0 when there is none yet). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}

async function scrape(baseUrl: string): Promise<Sample[]> {
  const response = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parse(await response.text());
}

describe('metrics switched off', () => {
  it('has no /metrics without METRICS_TOKEN', async () => {
    const backend = await startBackend('embedded');
    try {
      const response = await fetch(`${backend.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).toBe(404);
    } finally {
      await backend.stop();
    }
  });
});

describe.each(databaseKinds)('metrics on the %s database', (kind) => {
  let backend: TestBackend;
  let owner: SignedUp;
  beforeAll(async () => {
    backend = await startBackend(kind, { METRICS_TOKEN: token });
    owner = await signUp(backend.url, `metrics-${kind}@example.com`);
  });
  afterAll(() => backend.stop());

  it('refuses a scrape without the token, or with another, with a 401 that says how to authenticate', async () => {
    for (const authorization of [undefined, `Bearer ${token}x`, `Basic ${Buffer.from(`prometheus:${token}`).toString('base64')}`, token]) {
      const response = await fetch(`${backend.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      const body = await response.json();
      expect(body.error.code).toBe('UNAUTHORIZED');
      expect(JSON.stringify(body)).not.toContain('# HELP');
    }
  });

  it('counts each request by method, route template and status, with its latency', async () => {
    const before = await scrape(backend.url);
    const created = await owner.api('POST', '/Projects', { body: { name: 'Counted' } });
    expect(created.status).toBe(201);
    for (let n = 0; n < 3; n++) expect((await owner.api('GET', '/Projects')).status).toBe(200);
    for (let n = 0; n < 2; n++) expect((await owner.api('GET', `/Projects/${randomUUID()}`)).status).toBe(404);
    expect((await owner.api('GET', `/Projects/${created.body.data.id}/Tasks`)).status).toBe(200);
    expect((await owner.api('GET', '/nowhere')).status).toBe(404);
    expect((await owner.api('GET', '/Projects', { token: '' })).status).toBe(401);
    const after = await scrape(backend.url);

    const counted = (method: string, route: string, status: string) =>
      valueOf(after, 'http_request_duration_seconds_count', { method, route, status }) - valueOf(before, 'http_request_duration_seconds_count', { method, route, status });
    expect(counted('POST', '/Projects', '201')).toBe(1);
    expect(counted('GET', '/Projects', '200')).toBe(3);
    expect(counted('GET', '/Projects/:id', '404')).toBe(2);
    expect(counted('GET', '/Projects/:projectId/Tasks', '200')).toBe(1);
    // No route answered these: a 404 of the app, and a 401 of the guard in front of the routes.
    expect(counted('GET', '(unmatched)', '404')).toBe(1);
    expect(counted('GET', '(unmatched)', '401')).toBe(1);

    // The histogram is whole: its buckets rise to the count, and the time is plausible.
    const labels = { method: 'GET', route: '/Projects', status: '200' };
    const buckets = after.filter((sample) => sample.name === 'http_request_duration_seconds_bucket' && sample.labels.route === '/Projects' && sample.labels.method === 'GET' && sample.labels.status === '200');
    expect(buckets.at(-1)).toMatchObject({ labels: { le: '+Inf' }, value: valueOf(after, 'http_request_duration_seconds_count', labels) });
    for (let index = 1; index < buckets.length; index++) expect(buckets[index]!.value).toBeGreaterThanOrEqual(buckets[index - 1]!.value);
    const seconds = valueOf(after, 'http_request_duration_seconds_sum', labels) - valueOf(before, 'http_request_duration_seconds_sum', labels);
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(5);

    // Routes are named by their templates: no id ever becomes a label value (a series per id).
    const routes = new Set(after.filter((sample) => sample.labels.route !== undefined).map((sample) => sample.labels.route));
    for (const route of routes) expect(route).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}/);
  });

  it('counts the refusals of each rate limit', async () => {
    const limited = await startBackend(kind, { METRICS_TOKEN: token, RATE_LIMIT_AUTH_MAX: '3' });
    try {
      const signIn = () => apiClient(limited.url)('POST', '/api/auth/sign-in/email', { body: { email: 'nobody@example.com', password: 'wrong password' } });
      const statuses: number[] = [];
      for (let n = 0; n < 5; n++) statuses.push((await signIn()).status);
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
      const samples = await scrape(limited.url);
      expect(valueOf(samples, 'authstrap_rate_limit_refusals_total', { limit: 'auth' })).toBe(2);
      expect(valueOf(samples, 'authstrap_rate_limit_refusals_total', { limit: 'api' })).toBe(0);
    } finally {
      await limited.stop();
    }
  });

  it('counts the mail the outbox sent, and shows what waits in it', async () => {
    const sentBefore = valueOf(await scrape(backend.url), 'authstrap_outbox_deliveries_total', { channel: 'mail', result: 'sent' });
    // Sign-up mails an address confirmation.
    await signUp(backend.url, `outbox-${kind}@example.com`);
    const deadline = Date.now() + 10_000;
    let samples = await scrape(backend.url);
    while (valueOf(samples, 'authstrap_outbox_deliveries_total', { channel: 'mail', result: 'sent' }) === sentBefore && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      samples = await scrape(backend.url);
    }
    expect(valueOf(samples, 'authstrap_outbox_deliveries_total', { channel: 'mail', result: 'sent' })).toBeGreaterThan(sentBefore);
    // Nothing waits once it is sent: the lag gauges have no series, or zero.
    expect(valueOf(samples, 'authstrap_outbox_pending_messages', { channel: 'mail' })).toBe(0);
  });

  it("exports every metric docs/grafana-dashboard.json plots", async () => {
    const dashboard = JSON.parse(fs.readFileSync(path.resolve(projectDir, '../../docs/grafana-dashboard.json'), 'utf8'));
    const expressions: string[] = dashboard.panels.flatMap((panel: { targets: { expr: string }[] }) => panel.targets.map((target) => target.expr));
    const plotted = new Set(expressions.flatMap((expr) => [...expr.matchAll(/\b([a-z_:][a-z0-9_:]*)\{/g)].map((match) => match[1]!.replace(/_(bucket|count|sum)$/, ''))));
    expect(plotted.size).toBeGreaterThan(10);
    const text = await (await fetch(`${backend.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]));
    for (const name of plotted) expect(exported, name).toContain(name);
  });

  it('has the process metrics', async () => {
    const samples = await scrape(backend.url);
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
      expect(samples.some((sample) => sample.name === name), name).toBe(true);
    }
  });
});

describe.runIf(postgresAdminUrl)('pool metrics on PostgreSQL', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend('postgres', { METRICS_TOKEN: token });
  });
  afterAll(() => backend.stop());

  it('shows the pool, the requests that waited for a connection, and the statements PostgreSQL cancelled', async () => {
    const sleeps = (count: number) => Promise.all(Array.from({ length: count }, () => backend.running.db.query('SELECT pg_sleep(0.2)')));
    // The pool grows to its size ...
    await sleeps(12);
    const before = await scrape(backend.url);
    expect(valueOf(before, 'authstrap_db_pool_max')).toBe(10);
    // ... and then two more statements at once than it has connections: two wait.
    await sleeps(12);
    const statementTimeoutsBefore = valueOf(before, 'authstrap_db_timeouts_total', { kind: 'statement' });
    const slow = backend.running.db.transaction(async (tx) => {
      await tx.query("SET LOCAL statement_timeout = '50ms'");
      await tx.query('SELECT pg_sleep(1)');
    });
    await expect(slow).rejects.toMatchObject({ code: '57014' });
    const after = await scrape(backend.url);
    // (The outbox worker's poll may have had to wait too.)
    expect(valueOf(after, 'authstrap_db_pool_waits_total') - valueOf(before, 'authstrap_db_pool_waits_total')).toBeGreaterThanOrEqual(2);
    expect(valueOf(after, 'authstrap_db_pool_connections', { state: 'idle' }) + valueOf(after, 'authstrap_db_pool_connections', { state: 'busy' })).toBe(10);
    expect(valueOf(after, 'authstrap_db_timeouts_total', { kind: 'statement' })).toBe(statementTimeoutsBefore + 1);
  });
});
