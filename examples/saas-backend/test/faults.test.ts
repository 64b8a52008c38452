import { afterEach, describe, expect, it } from 'vitest';
import { createAuthstrapClient } from '../client/authstrap-client.js';
import { DatabaseUnavailableError, openDatabase } from '../src/db/database.js';
import { apiClient, createThrowawayDatabase, postgresAdminUrl, projectDir, redisUrl, signUp, startBackend, type TestBackend } from './support/backend.js';
import { faultProxy, type FaultProxy } from './support/fault-proxy.js';
import { spawnBackend } from './support/process.js';

/**
 * A failing environment, played by a loopback proxy between the backend and its PostgreSQL or
 * Redis: every wait is bounded (503, or the limiter failing open), and the backend recovers on
 * its own once the dependency is back. The shared servers themselves are never touched.
 */

const queryTimeoutMs = 1000;
const connectTimeoutMs = 1000;
// The read timeout is the statement timeout plus 250 ms; the goal is that bound plus at most 1 s.
const failureBoundMs = queryTimeoutMs + 250 + 1000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

describe.runIf(postgresAdminUrl)('PostgreSQL that stops answering', () => {
  /** A backend whose PostgreSQL is behind a proxy the test controls. */
  async function backendBehindProxy(): Promise<{ backend: TestBackend; proxy: FaultProxy }> {
    const database = await createThrowawayDatabase();
    const proxy = await faultProxy(database.url);
    const backend = await startBackend('embedded', {
      DATABASE_URL: proxy.url,
      DATABASE_QUERY_TIMEOUT_MS: String(queryTimeoutMs),
      DATABASE_CONNECT_TIMEOUT_MS: String(connectTimeoutMs),
    });
    cleanups.push(async () => {
      proxy.resume();
      await backend.stop();
      await proxy.close();
      await database.drop();
    });
    return { backend, proxy };
  }

  it('answers 503 within the bound while it stalls, and serves again once it answers, without a restart', async () => {
    const { backend, proxy } = await backendBehindProxy();
    const owner = await signUp(backend.url, 'stall@example.com');
    expect((await owner.api('POST', '/Projects', { body: { name: 'Before' } })).status).toBe(201);

    proxy.stall();
    // More requests at once than the pool has connections: the ones waiting for a connection are bounded too.
    const during = await Promise.all(
      Array.from({ length: 14 }, (_, n) =>
        timed(() => (n % 2 ? owner.api('GET', '/Projects') : owner.api('POST', '/Projects', { body: { name: `During ${n}` } }))),
      ),
    );
    console.info(`[measured] PostgreSQL stalled: ${during.length} requests failed in ${Math.min(...during.map((d) => d.ms)).toFixed(0)}-${Math.max(...during.map((d) => d.ms)).toFixed(0)} ms (bound ${queryTimeoutMs} ms + 250 ms read margin)`);
    for (const { value, ms } of during) {
      expect(value.status).toBe(503);
      expect(value.body.error.code).toBe('SERVICE_UNAVAILABLE');
      // Every 503 says when to come back: a whole number of seconds, at least 1.
      expect(value.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(ms).toBeLessThan(failureBoundMs);
    }
    const ready = await timed(() => fetch(`${backend.url}/ready`));
    expect(ready.value.status).toBe(503);
    expect(ready.value.headers.get('retry-after')).toBe('1');
    expect(ready.ms).toBeLessThan(failureBoundMs);
    const signIn = await timed(() => apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'stall@example.com', password: 'correct horse battery' } }));
    expect(signIn.value.status).toBe(503);
    expect(signIn.value.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(signIn.ms).toBeLessThan(failureBoundMs);
    expect((await fetch(`${backend.url}/health`)).status).toBe(200);

    proxy.resume();
    // The very next requests succeed: the stalled connections were dropped, new ones are made.
    expect((await fetch(`${backend.url}/ready`)).status).toBe(200);
    const list = await owner.api('GET', '/Projects?limit=100');
    expect(list.status).toBe(200);
    // Nothing of what failed was half-written.
    expect(list.body.data.map((project: { name: string }) => project.name)).toEqual(['Before']);
    expect((await owner.api('POST', '/Projects', { body: { name: 'After' } })).status).toBe(201);
  });

  it('applies once a keyed write that got a 503 while PostgreSQL stalled, when it is sent again with its key', async () => {
    const { backend, proxy } = await backendBehindProxy();
    const owner = await signUp(backend.url, 'keyed-stall@example.com');
    const send = () => owner.api('POST', '/Projects', { body: { name: 'Keyed' }, headers: { 'Idempotency-Key': 'stall-1' } });
    proxy.stall();
    const during = await send();
    expect(during.status).toBe(503);
    expect(during.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    proxy.resume();
    const again = await send();
    expect(again.status).toBe(201);
    expect((await send()).body).toEqual(again.body);
    expect((await owner.api('GET', '/Projects?name=Keyed')).body.meta.total).toBe(1);
  });

  it('lets the typed client carry a write through a stall: it waits as Retry-After says, sends it again with its key, and it is applied once', async () => {
    const { backend, proxy } = await backendBehindProxy();
    const owner = await signUp(backend.url, 'client-stall@example.com');
    const client = createAuthstrapClient({ baseUrl: backend.url, token: owner.token, organizationId: owner.organizationId });
    proxy.stall();
    const creating = client.Project.create({ name: 'Through a stall' });
    // PostgreSQL answers again after the first attempt's 503 (the read deadline), before the client gives up.
    setTimeout(() => proxy.resume(), failureBoundMs);
    const created = await creating;
    expect(created.name).toBe('Through a stall');
    const listed = await client.Project.list({ filter: { name: 'Through a stall' } });
    expect(listed.meta.total).toBe(1);
  });

  it('answers 503 (not 500) when the connection is cut in the middle of a query', async () => {
    const { backend, proxy } = await backendBehindProxy();
    const owner = await signUp(backend.url, 'cut@example.com');
    proxy.stall();
    const pending = timed(() => owner.api('GET', '/Projects'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    proxy.cut();
    const { value, ms } = await pending;
    expect(value.status).toBe(503);
    expect(value.body.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: expect.any(String) });
    // A broken connection is retried soon: the next attempt gets a new one.
    expect(value.headers.get('retry-after')).toBe('1');
    // It was the cut, not the timeout, that ended it.
    expect(ms).toBeLessThan(queryTimeoutMs);
    proxy.resume();
    expect((await owner.api('GET', '/Projects')).status).toBe(200);
  });
});

describe.runIf(postgresAdminUrl)('the read deadline of a pooled connection (src/db/database.ts, readDeadlines)', () => {
  const statementMs = 300;
  const deadlineMs = statementMs + 250;

  async function databaseBehindProxy() {
    const database = await createThrowawayDatabase();
    const proxy = await faultProxy(database.url);
    const db = await openDatabase({
      databaseUrl: proxy.url,
      embeddedDbDir: '',
      projectDir,
      databaseTimeouts: { connectMs: 1000, queryMs: statementMs },
      databasePreparedStatements: true,
    });
    cleanups.push(async () => {
      proxy.resume();
      await db.close();
      await proxy.close();
      await database.drop();
    });
    const backendPid = async () => (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS "pid"')).rows[0]?.pid;
    return { db, proxy, backendPid };
  }

  it('keeps a connection that sat idle in the pool past the deadline', async () => {
    const { backendPid } = await databaseBehindProxy();
    const first = await backendPid();
    await new Promise((resolve) => setTimeout(resolve, deadlineMs * 3));
    expect(await backendPid()).toBe(first);
  });

  it('leaves a slow statement to the statement timeout, which comes first', async () => {
    const { db } = await databaseBehindProxy();
    // PostgreSQL's cancel (SQLSTATE 57014), not the deadline's ended connection (DatabaseUnavailableError).
    await expect(db.query('SELECT pg_sleep(2)')).rejects.toMatchObject({ code: '57014' });
  });

  it('counts from the start of each statement of a transaction, not from the transaction start', async () => {
    const { db, backendPid } = await databaseBehindProxy();
    const first = await backendPid();
    // Three statements of 200 ms: each well inside the deadline, together past it.
    const started = performance.now();
    await db.transaction(async (tx) => {
      for (let n = 0; n < 3; n += 1) await tx.query('SELECT pg_sleep(0.2)');
    });
    expect(performance.now() - started).toBeGreaterThan(deadlineMs);
    expect(await backendPid()).toBe(first);
  });

  it('ends the connection of a statement whose answer does not come by the deadline; the next statement gets a new one', async () => {
    const { db, proxy, backendPid } = await databaseBehindProxy();
    const first = await backendPid();
    proxy.stall();
    const started = performance.now();
    await expect(db.query('SELECT 1')).rejects.toBeInstanceOf(DatabaseUnavailableError);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(deadlineMs - 20);
    expect(waited).toBeLessThan(deadlineMs + 1000);
    proxy.resume();
    const second = await backendPid();
    expect(second).toBeTypeOf('number');
    expect(second).not.toBe(first);
  });
});

describe.runIf(redisUrl)('Redis that stops answering', () => {
  it('lets requests through uncounted within well under a second, warns once, and counts again once it answers', async () => {
    const proxy = await faultProxy(redisUrl!);
    const prefix = `authstrap-test-faults-${process.pid}-${Date.now()}:`;
    const instance = spawnBackend({ EMBEDDED_DB_DIR: 'memory://', REDIS_URL: proxy.url, RATE_LIMIT_PREFIX: prefix, RATE_LIMIT_AUTH_MAX: '2' });
    cleanups.push(async () => {
      proxy.resume();
      instance.child.kill('SIGTERM');
      await instance.exited;
      await proxy.close();
    });
    const url = await instance.listening;
    const wrongSignIn = () => apiClient(url)('POST', '/api/auth/sign-in/email', { body: { email: 'nobody@example.com', password: 'wrong password' } });
    expect((await wrongSignIn()).status).toBe(401);
    expect((await wrongSignIn()).status).toBe(401);
    expect((await wrongSignIn()).status).toBe(429);

    proxy.stall();
    const stalledTimes: number[] = [];
    for (let i = 0; i < 6; i++) {
      const { value, ms } = await timed(wrongSignIn);
      stalledTimes.push(ms);
      expect(value.status).toBe(401);
      expect(ms).toBeLessThan(1000);
    }
    console.info(`[measured] Redis stalled: requests answered in ${stalledTimes.map((ms) => ms.toFixed(0)).join(', ')} ms`);
    // The data routes' limiter fails open the same way.
    const { value: list, ms } = await timed(() => apiClient(url)('GET', '/Projects'));
    expect(list.status).toBe(401);
    expect(ms).toBeLessThan(1000);
    expect(instance.output().match(/redis is not answering/g)).toHaveLength(1);

    proxy.resume();
    let status = 0;
    for (let i = 0; i < 50 && status !== 429; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await wrongSignIn()).status;
    }
    expect(status).toBe(429);
  });
});
