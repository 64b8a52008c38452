import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import express from 'express';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { errorHandler } from '../src/http/errors.js';
import { keyedWrites, withHeldTransactions } from '../src/idempotency/held-transaction.js';
import { anonymousOwner } from '../src/idempotency/keys.js';
import { databaseKinds, startBackend, type TestBackend } from './support/backend.js';

/**
 * Work a keyed write of the built-in routes leaves behind it (fire-and-forget: a promise nobody
 * awaits, a timer) meets a held transaction that has ended (src/idempotency/held-transaction.ts).
 * Committed: it runs on the pool, as without a key. Abandoned by its client and rolled back: it
 * fails, instead of running the rest of the request outside the transaction the rest was undone
 * in. A route of a test app on the backend's own database, with `keyedWrites` and
 * `withHeldTransactions` as app.ts puts them, on a real listening server.
 */
describe.each(databaseKinds)('work left behind by a keyed write, on the %s database', (kind) => {
  let backend: TestBackend;
  let server: import('node:http').Server;
  let baseUrl: string;
  let db: Database;
  /** What the route's left-behind write came to, by the request's note. */
  const leftBehind = new Map<string, Promise<'written' | string>>();
  /** Resolves the wait of the route's request with this note (the test says when it may go on). */
  const goOn = new Map<string, () => void>();

  beforeAll(async () => {
    backend = await startBackend(kind);
    const raw = backend.running.db;
    await raw.asOwner(async (tx) => {
      await tx.query('CREATE TABLE "held_probe" ("note" text NOT NULL)');
      await tx.query('GRANT SELECT, INSERT ON "held_probe" TO authstrap_app');
    });
    db = withHeldTransactions(raw);
    const app = express();
    const logger = pino({ level: 'silent' });
    app.use((req, _res, next) => {
      req.log = logger;
      next();
    });
    app.use(express.json());
    app.post(
      '/probe',
      keyedWrites({ db: raw, config: backend.running.config }, () => anonymousOwner),
      async (req, res) => {
        const note = String(req.body.note);
        // In the held transaction: kept only if the answer is.
        await db.query('INSERT INTO "held_probe" ("note") VALUES ($1)', [`${note}: in the write`]);
        if (req.body.wait) {
          await new Promise<void>((resolve) => goOn.set(note, resolve));
        }
        // Left behind: started by the request, awaited by nobody, run after its answer.
        const later = new Promise<void>((resolve) => setTimeout(resolve, 50)).then(() =>
          db.query('INSERT INTO "held_probe" ("note") VALUES ($1)', [`${note}: left behind`]).then(
            () => 'written' as const,
            (error: Error) => error.message,
          ),
        );
        leftBehind.set(note, later);
        if (!res.destroyed) res.status(201).json({ note });
      },
    );
    app.use(errorHandler());
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await backend?.stop();
  });

  const notes = async (note: string) => (await backend.running.db.asOwner((tx) => tx.query<{ note: string }>('SELECT "note" FROM "held_probe" WHERE "note" LIKE $1 ORDER BY "note"', [`${note}:%`]))).rows.map((row) => row.note);
  const post = (body: unknown, key: string, signal?: AbortSignal) =>
    fetch(`${baseUrl}/probe`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify(body), signal });

  it('runs on the pool once the keyed write is committed', async () => {
    const note = `kept-${randomUUID()}`;
    expect((await post({ note }, randomUUID())).status).toBe(201);
    expect(await leftBehind.get(note)).toBe('written');
    expect(await notes(note)).toEqual([`${note}: in the write`, `${note}: left behind`]);
  });

  it('fails once the client went away and the keyed write was rolled back, writes nothing, and frees the key', async () => {
    const note = `abandoned-${randomUUID()}`;
    const key = randomUUID();
    const client = new AbortController();
    const sent = post({ note, wait: true }, key, client.signal).catch((error: Error) => error.name);
    // The request is in its held transaction, its first insert made: the client hangs up.
    for (let tries = 0; !goOn.has(note) && tries < 200; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(goOn.has(note)).toBe(true);
    client.abort();
    expect(await sent).toBe('AbortError');
    // The server has seen the close (and rolled back) before the route goes on.
    await new Promise((resolve) => setTimeout(resolve, 100));
    goOn.get(note)!();
    for (let tries = 0; !leftBehind.has(note) && tries < 200; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await leftBehind.get(note)).toMatch(/abandoned by its client/);
    expect(await notes(note)).toEqual([]);
    // Nobody heard of that write: the same request sent again with the key is the write.
    const again = await post({ note }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await leftBehind.get(note)).toBe('written');
    expect(await notes(note)).toEqual([`${note}: in the write`, `${note}: left behind`]);
  });
});
