import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import { MemoryStore, rateLimit, type Store } from 'express-rate-limit';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { countingLimit } from '../src/http/rate-limit.js';

/**
 * The backend counts its limits with a limiter of its own (`countingLimit`), which must answer
 * exactly as express-rate-limit's middleware did: the same statuses, the same `RateLimit`,
 * `RateLimit-Policy` and `Retry-After` headers byte for byte, and the same `req.rateLimit`. Each
 * case sends one sequence of requests to an app with express-rate-limit, configured as the backend
 * configured it before, and to one with ours, and compares every answer. Only `Date` is faked, so
 * that both see the same clock (the reset seconds are worked out from it) and a window can pass.
 */

/** Whom a request counts as: its `x-client` header (the backend's own keys are tested in rate-limit.test.ts). */
const clientOf = (req: express.Request) => req.get('x-client') ?? 'nobody';
const skipped = (req: express.Request) => req.get('x-skip') === 'yes';
const refused: RequestHandler = (_req, res) => {
  res.status(429).json({ refused: true });
};

const servers: { close(): void }[] = [];
afterAll(() => servers.forEach((server) => server.close()));

/** An app behind one limit, answering with what the limit recorded on the request. */
async function serve(limit: RequestHandler): Promise<string> {
  const app = express();
  app.use(limit);
  app.all('/{*rest}', (req, res) => {
    res.json({ rateLimit: req.rateLimit ?? null });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The same limit twice: express-rate-limit's middleware (as the backend used it), and ours. */
async function bothLimits(windowMs: number, limit: number, stores?: { reference: Store; ours: Store }) {
  const reference = rateLimit({
    windowMs,
    limit,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    passOnStoreError: true,
    logger: { error: () => {}, warn: () => {} },
    skip: skipped,
    keyGenerator: clientOf,
    handler: refused,
    ...(stores ? { store: stores.reference } : {}),
  });
  const ours = countingLimit({
    windowMs,
    limit,
    store: stores?.ours ?? new MemoryStore(),
    skip: skipped,
    keyOf: clientOf,
    storeFailed: () => {},
    refuse: refused,
  });
  return { reference: await serve(reference), ours: await serve(ours) };
}

/** What a client sees of an answer: status, the limit's headers, and the body. */
async function answer(url: string, headers: Record<string, string>) {
  const response = await fetch(`${url}/Projects`, { headers });
  return {
    status: response.status,
    rateLimit: response.headers.get('ratelimit'),
    policy: response.headers.get('ratelimit-policy'),
    retryAfter: response.headers.get('retry-after'),
    body: await response.json(),
  };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2026-11-27T10:00:00.250Z'));
});
afterEach(() => {
  vi.useRealTimers();
});

describe('countingLimit answers as express-rate-limit did', () => {
  // The backend's own windows (the auth limit's hour, /api's 15 minutes, the data routes' minute),
  // and the shapes of the policy's name around them: seconds (a fraction too), one hour, days.
  const windows = [
    { windowMs: 60 * 60_000, limit: 3 },
    { windowMs: 15 * 60_000, limit: 4 },
    { windowMs: 60_000, limit: 2 },
    { windowMs: 1_500, limit: 2 },
    { windowMs: 2 * 60 * 60_000, limit: 1 },
    { windowMs: 24 * 60 * 60_000, limit: 2 },
    { windowMs: 3 * 24 * 60 * 60_000, limit: 2 },
  ];

  it.each(windows)('window $windowMs ms, limit $limit: every answer the same, past the limit and after the window', async ({ windowMs, limit }) => {
    const urls = await bothLimits(windowMs, limit);
    const steps: { headers: Record<string, string>; advanceMs?: number }[] = [
      // One client up to the limit and two past it, a second into the window after the first.
      ...Array.from({ length: limit + 2 }, (_, index) => ({ headers: { 'x-client': 'session:first' }, advanceMs: index === 1 ? 1_000 : 0 })),
      // Another client has its own count; a skipped request is neither counted nor told.
      { headers: { 'x-client': 'ip:203.0.113.9' } },
      { headers: { 'x-client': 'session:first', 'x-skip': 'yes' } },
      // Once the window has passed, the first client starts again.
      { headers: { 'x-client': 'session:first' }, advanceMs: windowMs },
      { headers: { 'x-client': 'session:first' }, advanceMs: 499 },
    ];
    for (const [index, { headers, advanceMs }] of steps.entries()) {
      if (advanceMs) vi.setSystemTime(Date.now() + advanceMs);
      const expected = await answer(urls.reference, headers);
      expect(await answer(urls.ours, headers), `request ${index + 1}`).toEqual(expected);
    }
    // Not vacuous: the sequence did reach the limit, with the headers on.
    const past = await answer(urls.ours, { 'x-client': 'session:last' });
    expect(past.policy).toMatch(/^"\d+-in-[\d.]+(sec|min|hrs?|days?)"; q=\d+; w=\d+; pk=:[A-Za-z0-9+/=]+:$/);
  });

  it('lets a request through, uncounted and without headers, when the store fails', async () => {
    const failing = (): Store => ({
      increment: () => Promise.reject(new Error('store down')),
      decrement: () => {},
      resetKey: () => {},
    });
    const urls = await bothLimits(60_000, 1, { reference: failing(), ours: failing() });
    for (let attempt = 0; attempt < 3; attempt++) {
      const expected = await answer(urls.reference, { 'x-client': 'session:first' });
      expect(expected).toEqual({ status: 200, rateLimit: null, policy: null, retryAfter: null, body: { rateLimit: null } });
      expect(await answer(urls.ours, { 'x-client': 'session:first' })).toEqual(expected);
    }
  });
});
