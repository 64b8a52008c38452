import { randomUUID } from 'node:crypto';
import { betterAuth, type BetterAuthOptions } from 'better-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authSecret, databaseKinds, serviceApiKey } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter } from '../src/index.js';
import { schemaFollowingBackend } from './support/schema-following-backend.js';

/**
 * consumeOne and incrementOne, each one SQL statement in the backend (DELETE ... RETURNING,
 * UPDATE ... SET n = n + $1 ... RETURNING on one locked row), raced for real: many concurrent
 * requests against a backend process. Better Auth's database rate-limit storage counts through
 * incrementOne, so its model (`rateLimit`, with numeric `count`) is part of the schema here.
 */
const options = {
  secret: authSecret,
  baseURL: 'http://localhost:3100',
  rateLimit: { enabled: true, storage: 'database', window: 60, max: 5 },
  logger: { disabled: true },
} satisfies BetterAuthOptions;

describe.each(databaseKinds)('consumeOne and incrementOne on the %s database', (kind) => {
  const backend = schemaFollowingBackend(kind);
  let requests: string[] = [];
  const countingFetch: typeof fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    requests.push(`${init?.method ?? 'GET'} ${url.pathname}`);
    return fetch(input, init);
  };
  const adapterOf = () => authstrapAdapter({ baseUrl: backend.url!, serviceKey: serviceApiKey, personalOrganization: false, fetch: countingFetch })(options);

  beforeAll(() => backend.migrate(options), 120_000);
  afterAll(() => backend.stop());

  it('of 20 concurrent consumers of one verification value, exactly one gets it, each in one request', async () => {
    const adapter = adapterOf();
    const identifier = `reset:${randomUUID()}`;
    await adapter.create({ model: 'verification', data: { identifier, value: 'user-1', expiresAt: new Date(Date.now() + 60_000) } });
    requests = [];
    const results = await Promise.all(
      Array.from({ length: 20 }, () => adapter.consumeOne<{ identifier: string; value: string }>({ model: 'verification', where: [{ field: 'identifier', value: identifier }] })),
    );
    const winners = results.filter((result) => result !== null);
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ identifier, value: 'user-1' });
    expect(requests).toEqual(Array.from({ length: 20 }, () => 'POST /verifications/consume-one'));
    expect(await adapter.findOne({ model: 'verification', where: [{ field: 'identifier', value: identifier }] })).toBeNull();
  });

  it('consumes one row of several that match, never more', async () => {
    const adapter = adapterOf();
    const identifier = `many:${randomUUID()}`;
    for (const value of ['a', 'b', 'c']) await adapter.create({ model: 'verification', data: { identifier, value, expiresAt: new Date(Date.now() + 60_000) } });
    expect(await adapter.consumeOne({ model: 'verification', where: [{ field: 'identifier', value: identifier }] })).not.toBeNull();
    expect(await adapter.count({ model: 'verification', where: [{ field: 'identifier', value: identifier }] })).toBe(2);
    expect(await adapter.consumeOne({ model: 'verification', where: [{ field: 'identifier', value: 'nobody' }] })).toBeNull();
  });

  it('50 concurrent increments of one counter end at 50', async () => {
    const adapter = adapterOf();
    const key = `counter-${randomUUID()}`;
    await adapter.create({ model: 'rateLimit', data: { key, count: 0, lastRequest: Date.now() } });
    requests = [];
    const results = await Promise.all(
      Array.from({ length: 50 }, () => adapter.incrementOne<{ count: number }>({ model: 'rateLimit', where: [{ field: 'key', value: key }], increment: { count: 1 } })),
    );
    expect(results.every((result) => result !== null)).toBe(true);
    expect(new Set(results.map((result) => result!.count)).size).toBe(50);
    expect(requests).toHaveLength(50);
    expect(await adapter.findOne<{ count: number }>({ model: 'rateLimit', where: [{ field: 'key', value: key }] })).toMatchObject({ count: 50 });
  });

  it('guards with its where: of 20 concurrent increments while count < 5, exactly 5 succeed; set moves a value too', async () => {
    const adapter = adapterOf();
    const key = `guarded-${randomUUID()}`;
    await adapter.create({ model: 'rateLimit', data: { key, count: 0, lastRequest: 1 } });
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        adapter.incrementOne({ model: 'rateLimit', where: [{ field: 'key', value: key }, { field: 'count', operator: 'lt', value: 5 }], increment: { count: 1 }, set: { lastRequest: 2 } }),
      ),
    );
    expect(results.filter((result) => result !== null)).toHaveLength(5);
    expect(await adapter.findOne({ model: 'rateLimit', where: [{ field: 'key', value: key }] })).toMatchObject({ count: 5, lastRequest: 2 });
    // A negative delta decrements.
    expect(await adapter.incrementOne({ model: 'rateLimit', where: [{ field: 'key', value: key }], increment: { count: -2 } })).toMatchObject({ count: 3 });
  });

  it("counts Better Auth's database rate limit exactly under concurrent requests", async () => {
    const auth = betterAuth({ ...options, database: authstrapAdapter({ baseUrl: backend.url!, serviceKey: serviceApiKey, personalOrganization: false }) });
    const ip = `127.0.0.${2 + Math.floor(Math.random() * 200)}`;
    const statuses = await Promise.all(
      Array.from({ length: 12 }, () => auth.handler(new Request('http://localhost:3100/api/auth/ok', { headers: { 'x-forwarded-for': ip } })).then((response) => response.status)),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(7);
  });
});
