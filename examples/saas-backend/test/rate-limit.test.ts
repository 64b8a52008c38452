import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, maskUrlPassword } from '../src/config.js';
import { apiClient, projectDir, redisUrl, serviceApiKey, signUp, startBackend, type TestBackend } from './support/backend.js';
import { faultProxy } from './support/fault-proxy.js';
import { spawnBackend, type BackendProcess } from './support/process.js';

const tooManyLogins = { success: false, error: { code: 'RATE_LIMITED', message: 'Too many login attempts' } };
const tooManyRequests = { success: false, error: { code: 'RATE_LIMITED', message: 'Too many requests' } };

/** A sign-in that fails (no such user): 401 while the limit allows it, 429 after. */
const wrongSignIn = (baseUrl: string, path = '/api/auth/sign-in/email') =>
  apiClient(baseUrl)('POST', path, { body: { email: 'nobody@example.com', password: 'wrong password' } });

/** A key prefix of this test run's own, so that runs sharing one Redis never share counts. */
const uniquePrefix = () => `authstrap-test:${randomUUID()}:`;

/** The Redis keys under these prefixes (a client of the test's own). */
async function redisKeys(...prefixes: string[]): Promise<string[]> {
  const redis = createClient({ url: redisUrl });
  await redis.connect();
  try {
    return (await Promise.all(prefixes.map((prefix) => redis.keys(`${prefix}*`)))).flat();
  } finally {
    await redis.close();
  }
}

/** Removes what a test counted in the shared Redis (the keys would expire with the window anyway). */
async function dropCounts(...prefixes: string[]): Promise<void> {
  const keys = await redisKeys(...prefixes);
  if (keys.length === 0) return;
  const redis = createClient({ url: redisUrl });
  await redis.connect();
  await redis.del(keys);
  await redis.close();
}

const backends: TestBackend[] = [];
/** An in-process backend on the embedded database, stopped after the test. */
async function backend(env: Record<string, string>): Promise<TestBackend> {
  const started = await startBackend('embedded', env);
  backends.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(backends.splice(0).map((started) => started.stop()));
});

describe('rate limits', () => {
  it('says in development how to go on after the auth limit (the setting, and that a restart clears the count)', async () => {
    const development = await backend({ NODE_ENV: 'development', RATE_LIMIT_AUTH_MAX: '2' });
    for (let attempt = 0; attempt < 2; attempt++) expect((await wrongSignIn(development.url)).status).toBe(401);
    const refused = await wrongSignIn(development.url);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toBe(
      'Too many login attempts. Development: raise RATE_LIMIT_AUTH_MAX (now 2) in .env, or restart the backend: the count is kept in its memory',
    );
    // Elsewhere the message is the specification's, word for word.
    const test = await backend({ RATE_LIMIT_AUTH_MAX: '2' });
    for (let attempt = 0; attempt < 2; attempt++) await wrongSignIn(test.url);
    expect((await wrongSignIn(test.url)).body).toEqual(tooManyLogins);
  });

  it('with the default auth limit, the 11th request to /api/auth/ in the hour is 429 with the standard headers', async () => {
    // An empty value means "unset": the limits are the real defaults of config.ts.
    const { url } = await backend({ RATE_LIMIT_AUTH_MAX: '', RATE_LIMIT_API_MAX: '' });
    for (let attempt = 1; attempt <= 10; attempt++) {
      const response = await wrongSignIn(url);
      expect(response.status, `attempt ${attempt}`).toBe(401);
      expect(response.headers.get('ratelimit')).toMatch(new RegExp(`r=${10 - attempt}\\b`));
    }

    const limited = await wrongSignIn(url);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual(tooManyLogins);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // draft-8: `RateLimit: "<policy>"; r=<remaining>; t=<seconds>` and `RateLimit-Policy: "<policy>"; q=<limit>; w=<window>`.
    expect(limited.headers.get('ratelimit')).toMatch(/^"[^"]+"; r=0; t=\d+/);
    expect(limited.headers.get('ratelimit-policy')).toMatch(/^"[^"]+"; q=10; w=3600\b/);
    expect(limited.headers.get('x-ratelimit-limit')).toBeNull();

    // Still refused, whatever the body: the limit is about the client, not the credentials.
    expect((await apiClient(url)('POST', '/api/auth/sign-up/email', { body: { email: 'late@example.com', name: 'late', password: 'correct horse battery' } })).status).toBe(429);
  });

  it('counts get-session under the /api/ limit, not the auth one; the 101st request under /api/ is 429', async () => {
    const { url } = await backend({ RATE_LIMIT_AUTH_MAX: '', RATE_LIMIT_API_MAX: '' });
    const user = await signUp(url, 'counted@example.com'); // auth: 1 (sign-up), api: 1 (get-session)
    const anonymous = apiClient(url);
    let apiCount = 1;
    for (let i = 0; i < 40; i++, apiCount++) {
      const session = await anonymous('GET', '/api/auth/get-session', { token: user.token });
      expect(session.status).toBe(200);
      expect(session.headers.get('ratelimit-policy')).toMatch(/q=100; w=900\b/);
    }
    // 41 get-sessions so far; had they counted against the auth limit (10) these would be 429.
    for (let i = 0; i < 9; i++) {
      expect((await anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'counted@example.com', password: 'correct horse battery' } })).status).toBe(200);
    }
    expect((await wrongSignIn(url)).body).toEqual(tooManyLogins);
    // The auth limit is spent, get-session is not affected by it.
    expect((await anonymous('GET', '/api/auth/get-session', { token: user.token })).status).toBe(200);
    apiCount++;

    // The docs page is not the app's API budget: loading it counts nothing here.
    for (let i = 0; i < 20; i++) expect((await anonymous('GET', '/api/docs/openapi.json')).status).toBe(200);
    for (; apiCount < 100; apiCount++) {
      const response = await anonymous('GET', '/api/auth/get-session', { token: user.token });
      expect(response.status, `request ${apiCount + 1} under /api/`).toBe(200);
    }
    const limited = await anonymous('GET', '/api/auth/get-session', { token: user.token });
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual(tooManyRequests);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(800);
    expect(limited.headers.get('ratelimit-policy')).toMatch(/q=100; w=900\b/);
  });

  it('counts case and trailing-slash variants of /api/auth paths against the auth limit only', async () => {
    const { url } = await backend({ RATE_LIMIT_AUTH_MAX: '4', RATE_LIMIT_API_MAX: '1' });
    const anonymous = apiClient(url);
    for (const path of ['/API/AUTH/sign-in/email', '/api/auth/sign-in/email/', '/Api/Auth/Sign-In/Email/']) {
      // They reach the sign-in route (so they are not someone else's 404)...
      expect((await wrongSignIn(url, path)).status, path).toBe(401);
    }
    // ... and `/api/auth` itself is counted once, by the auth limiter.
    expect((await anonymous('POST', '/api/auth')).status).toBe(404);
    // None of them touched the looser /api/ count: its only request is still allowed.
    expect((await anonymous('GET', '/api/auth/get-session')).status).toBe(401);
    expect((await anonymous('GET', '/api/auth/get-session')).body).toEqual(tooManyRequests);

    for (const path of ['/api/auth/sign-in/email', '/API/AUTH/SIGN-IN/EMAIL', '/api/auth/sign-in/email/', '/api/auth/get-session/x']) {
      const response = await wrongSignIn(url, path);
      expect(response.status, path).toBe(429);
      expect(response.body, path).toEqual(tooManyLogins);
    }
  });

  it("never limits /health and /ready; the data routes and the operators' have a budget of their own, not the /api/ ones", async () => {
    const { url } = await backend({ RATE_LIMIT_AUTH_MAX: '1', RATE_LIMIT_API_MAX: '1', RATE_LIMIT_DATA_MAX: '' });
    const owner = await signUp(url, 'busy@example.com'); // spends both limits
    expect((await wrongSignIn(url)).body).toEqual(tooManyLogins);
    expect((await apiClient(url)('GET', '/api/auth/get-session')).body).toEqual(tooManyRequests);

    for (let i = 0; i < 15; i++) {
      for (const path of ['/health', '/ready']) {
        const response = await fetch(`${url}${path}`);
        expect(response.status, path).toBe(200);
        expect(response.headers.get('ratelimit'), path).toBeNull();
      }
      const list = await owner.api('GET', i % 2 ? '/Projects' : '/projects');
      expect(list.status).toBe(200);
      expect(list.headers.get('ratelimit-policy')).toMatch(/q=1000; w=60\b/);
      // The operators' routes too: page after page of a signed-in person, counted per session (a non-operator's 403, not a 429).
      const operatorRoute = await owner.api('GET', i % 2 ? '/api/operator/me' : '/api/Operator/users');
      expect(operatorRoute.status).toBe(403);
      expect(operatorRoute.headers.get('ratelimit-policy')).toMatch(/q=1000; w=60\b/);
    }
    expect((await owner.api('POST', '/Projects', { body: { name: 'Still possible' } })).status).toBe(201);
  });

  it('limits the data routes per session, or per IP without one, and never counts the service key', async () => {
    const { url } = await backend({ RATE_LIMIT_DATA_MAX: '5' });
    const [first, second] = [await signUp(url, 'first@example.com'), await signUp(url, 'second@example.com')];
    for (let i = 0; i < 5; i++) expect((await first.api('GET', '/Projects')).status).toBe(200);
    const limited = await first.api('GET', '/Projects');
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual(tooManyRequests);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another session (from the same IP) has its own count.
    expect((await second.api('GET', '/Projects')).status).toBe(200);
    // The service key is not counted: well past the limit, it still works.
    const service = apiClient(url, { token: serviceApiKey });
    for (let i = 0; i < 8; i++) expect((await service('GET', '/Users')).status).toBe(200);
    // Without a session the IP is counted: the 6th anonymous request is limited.
    const anonymous = apiClient(url);
    for (let i = 0; i < 5; i++) expect((await anonymous('GET', '/Projects')).status).toBe(401);
    expect((await anonymous('GET', '/Projects')).status).toBe(429);
  });

  it.runIf(redisUrl)('two backend processes sharing one Redis share the count', { timeout: 120_000 }, async () => {
    const [prefix, otherPrefix] = [uniquePrefix(), uniquePrefix()];
    const env = { REDIS_URL: redisUrl!, RATE_LIMIT_PREFIX: prefix, RATE_LIMIT_AUTH_MAX: '4', RATE_LIMIT_API_MAX: '1000', EMBEDDED_DB_DIR: 'memory://' };
    const processes: BackendProcess[] = [spawnBackend(env), spawnBackend(env)];
    try {
      const urls = await Promise.all(processes.map((instance) => instance.listening));
      for (let attempt = 0; attempt < 4; attempt++) {
        expect((await wrongSignIn(urls[attempt % 2]!)).status, `attempt ${attempt + 1}`).toBe(401);
      }
      const fifth = await wrongSignIn(urls[0]!);
      expect(fifth.status).toBe(429);
      expect(fifth.body).toEqual(tooManyLogins);
      expect((await wrongSignIn(urls[1]!)).status).toBe(429);

      // The counts live under this run's prefix...
      const keys = await redisKeys(prefix);
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) expect(key.startsWith(`${prefix}auth:`)).toBe(true);
      // ... and a backend with another prefix on the same Redis counts on its own.
      const other = await backend({ REDIS_URL: redisUrl!, RATE_LIMIT_PREFIX: otherPrefix, RATE_LIMIT_AUTH_MAX: '4' });
      expect((await wrongSignIn(other.url)).status).toBe(401);
    } finally {
      for (const instance of processes) instance.child.kill('SIGTERM');
      const codes = await Promise.all(processes.map((instance) => instance.exited));
      await dropCounts(prefix, otherPrefix);
      expect(codes).toEqual([0, 0]);
    }
  });

  it.runIf(redisUrl)('lets requests through while Redis is unreachable, and counts again once it is back', async () => {
    const proxy = await faultProxy(redisUrl!);
    const prefix = uniquePrefix();
    const { url } = await backend({ REDIS_URL: `redis://127.0.0.1:${proxy.port}`, RATE_LIMIT_PREFIX: prefix, RATE_LIMIT_AUTH_MAX: '2' });
    try {
      expect((await wrongSignIn(url)).status).toBe(401);
      expect((await wrongSignIn(url)).status).toBe(401);
      expect((await wrongSignIn(url)).status).toBe(429);

      await proxy.close();
      // Not queued until Redis returns (that would hang every request under /api/): let through.
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const response = await apiClient(url)('POST', '/api/auth/sign-in/email', { body: { email: 'nobody@example.com', password: 'wrong password' } });
        expect(response.status).toBe(401);
        expect(Date.now() - started).toBeLessThan(3000);
      }

      await proxy.open();
      // The client reconnects (backing off up to 2 s); the counts kept in Redis apply again.
      let status = 0;
      for (let i = 0; i < 50 && status !== 429; i++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        status = (await wrongSignIn(url)).status;
      }
      expect(status).toBe(429);
    } finally {
      await proxy.close();
      await dropCounts(prefix);
    }
  });

  it('stops startup when REDIS_URL does not answer, naming REDIS_URL, without a stack trace or the password', async () => {
    const instance = spawnBackend({ REDIS_URL: 'redis://:hunter2@127.0.0.1:1', EMBEDDED_DB_DIR: 'memory://' });
    expect(await instance.exited).toBe(1);
    expect(instance.output()).toContain('Cannot connect to Redis at redis://:***@127.0.0.1:1');
    expect(instance.output()).toContain('REDIS_URL');
    expect(instance.output()).not.toContain('hunter2');
    expect(instance.output()).not.toMatch(/\n\s+at /);
  });
});

describe('rate-limit settings', () => {
  const load = (env: Record<string, string>) => loadConfig(env, projectDir);
  const problems = (env: Record<string, string>) => {
    try {
      load(env);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems.join('\n');
      throw error;
    }
    return '';
  };

  it('has the spec defaults and the default key prefix', () => {
    expect(load({}).rateLimits).toEqual({
      apiMax: 100,
      apiWindowMs: 15 * 60_000,
      authMax: 10,
      authWindowMs: 60 * 60_000,
      ssoMax: 300,
      ssoWindowMs: 15 * 60_000,
      dataMax: 1000,
      dataWindowMs: 60_000,
      prefix: 'authstrap:rl:',
      redisTimeoutMs: 500,
      machineKeyUsageFlushMs: 1000,
    });
    expect(load({ RATE_LIMIT_PREFIX: 'app1:' }).rateLimits.prefix).toBe('app1:');
  });

  it('refuses bad values, naming the variable', () => {
    expect(problems({ RATE_LIMIT_PREFIX: 'has space' })).toMatch(/^RATE_LIMIT_PREFIX: /);
    expect(problems({ RATE_LIMIT_AUTH_MAX: '0' })).toMatch(/^RATE_LIMIT_AUTH_MAX: must be 1 or more/);
    // Longer than a Node timer can wait: the in-memory store would reset its counts every millisecond.
    expect(problems({ RATE_LIMIT_API_WINDOW_MS: String(2 ** 31) })).toMatch(/^RATE_LIMIT_API_WINDOW_MS: must be 2147483647 or less/);
    expect(problems({ REDIS_URL: 'localhost:6379' })).toMatch(/^REDIS_URL: /);
    expect(problems({ MACHINE_KEY_USAGE_FLUSH_MS: '10' })).toMatch(/^MACHINE_KEY_USAGE_FLUSH_MS: must be 100 or more/);
    // Whitespace is "unset", not the number 0 (which for PORT would mean any free port).
    expect(load({ PORT: '  ' }).port).toBe(3000);
  });

  it('masks the password of a Redis URL, which usually has no user name', () => {
    expect(maskUrlPassword('redis://:hunter2@cache:6379')).toBe('redis://:***@cache:6379');
    expect(maskUrlPassword('rediss://default:hunter2@cache:6379/0')).toBe('rediss://default:***@cache:6379/0');
    expect(maskUrlPassword('redis://cache:6379')).toBe('redis://cache:6379');
  });
});
