import { randomUUID } from 'node:crypto';
import type { BetterAuthOptions } from 'better-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, authSecret, databaseKinds, serviceApiKey, startBackend, type TestBackend } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter } from '../src/index.js';
import { AuthstrapRequestError } from '../src/rest.js';
import { answerLosingProxy, type AnswerLosingProxy } from './support/answer-losing-proxy.js';

/**
 * The adapter's requests when an answer is lost or refused for now (a failover, a drain, a reset
 * connection): against the example backend, through a proxy that resets the connection once the
 * backend has answered, or answers 503 or 429 itself. A write is sent again with the key it was
 * first sent with, and applied once; a read is sent again; a transaction's commit too.
 */
const options = { secret: authSecret, baseURL: 'http://localhost:3100', logger: { disabled: true } } satisfies BetterAuthOptions;
const where = (clauses: unknown) => `where=${encodeURIComponent(JSON.stringify(clauses))}`;
const inOneHour = () => new Date(Date.now() + 60 * 60 * 1000);

describe.each(databaseKinds)('lost and refused answers of the adapter on the %s database', (kind) => {
  let backend: TestBackend;
  let proxy: AnswerLosingProxy;
  const adapterOf = (more: { retries?: number; maxRetryWaitMs?: number } = {}) =>
    authstrapAdapter({ baseUrl: proxy.url, serviceKey: serviceApiKey, personalOrganization: false, ...more })(options);
  /** The verifications with this identifier, read past the proxy. */
  const verifications = async (identifier: string) =>
    (await apiClient(backend.url, { token: serviceApiKey })('GET', `/verifications?${where([{ field: 'identifier', value: identifier }])}`)).body.data as { value: string }[];
  /** The requests the proxy saw since `from`, as `POST /verifications` with their keys. */
  const seenSince = (from: number) => proxy.seen.slice(from).map(({ line, idempotencyKey }) => ({ request: line.split('?')[0]!.replace(/ HTTP\/1\.1$/, ''), idempotencyKey }));

  beforeAll(async () => {
    backend = await startBackend(kind);
    proxy = await answerLosingProxy(backend.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await backend?.stop();
  });

  it('applies a create once when its answer is lost: sent again with the same Idempotency-Key', async () => {
    const adapter = adapterOf();
    const identifier = `lost:create:${randomUUID()}`;
    const from = proxy.seen.length;
    proxy.loseAnswers(/^POST \/verifications /);
    const created = await adapter.create<{ identifier: string; value: string; expiresAt: Date }>({ model: 'verification', data: { identifier, value: 'once', expiresAt: inOneHour() } });
    expect(created).toMatchObject({ identifier, value: 'once' });
    const sent = seenSince(from);
    expect(sent.map(({ request }) => request)).toEqual(['POST /verifications', 'POST /verifications']);
    expect(sent[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]!.idempotencyKey).toBe(sent[0]!.idempotencyKey);
    expect(await verifications(identifier)).toHaveLength(1);
  });

  it('gives each logical write a key of its own', async () => {
    const adapter = adapterOf();
    const identifier = `lost:fresh:${randomUUID()}`;
    const from = proxy.seen.length;
    for (const value of ['a', 'b']) await adapter.create({ model: 'verification', data: { identifier, value, expiresAt: inOneHour() } });
    const keys = seenSince(from).map(({ idempotencyKey }) => idempotencyKey);
    expect(keys).toHaveLength(2);
    expect(keys[0]).not.toBe(keys[1]);
    expect(await verifications(identifier)).toHaveLength(2);
  });

  it('answers a consumed value lost on its way with that value, not with null', async () => {
    const adapter = adapterOf();
    const identifier = `lost:consume:${randomUUID()}`;
    await adapter.create({ model: 'verification', data: { identifier, value: 'single-use', expiresAt: inOneHour() } });
    proxy.loseAnswers(/^POST \/verifications\/consume-one/);
    const consumed = await adapter.consumeOne<{ value: string }>({ model: 'verification', where: [{ field: 'identifier', value: identifier }] });
    expect(consumed).toMatchObject({ value: 'single-use' });
    expect(await verifications(identifier)).toEqual([]);
  });

  it('answers an update and a delete by filter lost on their way with the first count', async () => {
    const adapter = adapterOf();
    const identifier = `lost:many:${randomUUID()}`;
    for (const value of ['1', '2']) await adapter.create({ model: 'verification', data: { identifier, value, expiresAt: inOneHour() } });
    proxy.loseAnswers(/^PATCH \/verifications\?/);
    expect(await adapter.updateMany({ model: 'verification', where: [{ field: 'identifier', value: identifier }], update: { value: 'changed' } })).toBe(2);
    expect((await verifications(identifier)).map((row) => row.value)).toEqual(['changed', 'changed']);
    proxy.loseAnswers(/^DELETE \/verifications\?/);
    // Sent again without its key, the delete would find nothing left and answer 0.
    expect(await adapter.deleteMany({ model: 'verification', where: [{ field: 'identifier', value: identifier }] })).toBe(2);
    expect(await verifications(identifier)).toEqual([]);
  });

  it('sends a read again when its connection breaks', async () => {
    const adapter = adapterOf();
    const identifier = `lost:read:${randomUUID()}`;
    await adapter.create({ model: 'verification', data: { identifier, value: 'read', expiresAt: inOneHour() } });
    const from = proxy.seen.length;
    proxy.loseAnswers(/^GET \/verifications/);
    expect(await adapter.findOne({ model: 'verification', where: [{ field: 'identifier', value: identifier }] })).toMatchObject({ value: 'read' });
    expect(seenSince(from).map(({ request, idempotencyKey }) => [request, idempotencyKey])).toEqual([
      ['GET /verifications', undefined],
      ['GET /verifications', undefined],
    ]);
  });

  it('waits out a 503 and a 429 that say when (Retry-After), then sends the write again with its key', async () => {
    const adapter = adapterOf();
    const identifier = `refused:${randomUUID()}`;
    const from = proxy.seen.length;
    proxy.answerInstead(/^POST \/verifications /, 503, '1');
    proxy.answerInstead(/^POST \/verifications /, 429, '1');
    await adapter.create({ model: 'verification', data: { identifier, value: 'later', expiresAt: inOneHour() } });
    const sent = seenSince(from);
    expect(sent.map(({ request }) => request)).toEqual(['POST /verifications', 'POST /verifications', 'POST /verifications']);
    expect(new Set(sent.map(({ idempotencyKey }) => idempotencyKey)).size).toBe(1);
    expect(await verifications(identifier)).toHaveLength(1);
  });

  it('gives up on a Retry-After longer than maxRetryWaitMs, and after `retries` more attempts', async () => {
    const adapter = adapterOf({ retries: 2, maxRetryWaitMs: 1000 });
    const from = proxy.seen.length;
    proxy.answerInstead(/^POST \/verifications /, 429, '60');
    const refused = await adapter.create({ model: 'verification', data: { identifier: `refused:long:${randomUUID()}`, value: 'v', expiresAt: inOneHour() } }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AuthstrapRequestError);
    expect((refused as AuthstrapRequestError).status).toBe(429);
    expect(seenSince(from)).toHaveLength(1);

    const identifier = `lost:always:${randomUUID()}`;
    const before = proxy.seen.length;
    // Every answer the adapter may wait for is lost: a fourth attempt would get one.
    proxy.loseAnswers(/^POST \/verifications /, 3);
    await expect(adapter.create({ model: 'verification', data: { identifier, value: 'v', expiresAt: inOneHour() } })).rejects.toThrow(TypeError);
    // Three attempts (the first and two more), one key, one row.
    const sent = seenSince(before);
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map(({ idempotencyKey }) => idempotencyKey)).size).toBe(1);
    expect(await verifications(identifier)).toHaveLength(1);
  });

  it("commits a transaction once when the commit's answer is lost, and sends none of its own requests again", async () => {
    const adapter = adapterOf();
    const identifier = `lost:transaction:${randomUUID()}`;
    proxy.loseAnswers(/^POST \/api\/service\/transactions\/commit /);
    await adapter.transaction(async (trx) => {
      await trx.create({ model: 'verification', data: { identifier, value: 'kept', expiresAt: inOneHour() } });
    });
    expect(await verifications(identifier)).toHaveLength(1);

    // A write inside a transaction whose answer is lost is not sent again: the transaction fails whole.
    const failed = `lost:in-transaction:${randomUUID()}`;
    const from = proxy.seen.length;
    proxy.loseAnswers(/^POST \/verifications /);
    await expect(
      adapter.transaction(async (trx) => {
        await trx.create({ model: 'verification', data: { identifier: failed, value: 'gone', expiresAt: inOneHour() } });
      }),
    ).rejects.toThrow();
    expect(seenSince(from).map(({ request }) => request)).toEqual(['POST /api/service/transactions', 'POST /verifications', 'POST /api/service/transactions/rollback']);
    expect(await verifications(failed)).toEqual([]);
  });
});
