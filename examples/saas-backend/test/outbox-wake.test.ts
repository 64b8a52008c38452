import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { createOutbox, enqueue, type Channel, type Outbox } from '../src/outbox/outbox.js';
import { pooledDatabaseKinds, startBackend, type TestBackend } from './support/backend.js';

/**
 * A wake-up (a NOTIFY, or a request's own enqueue) that arrives while the worker's run is
 * finishing must start the next run at once. Node may hand it the wake-up and the run's last
 * answer from the database in one turn of its event loop: then the run finishes after the wake-up
 * has asked for a run, and the run's own "next poll" must not push that request back. Here the
 * wake-up is made to arrive exactly then: the database the worker is given wakes it as the last
 * answer of the run (the one that marks the first message sent) comes back.
 */
describe.each(pooledDatabaseKinds)('the outbox worker on the %s database', (kind) => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend(kind, { OUTBOX_POLL_MS: '600000' });
    // The messages below are this test's worker's alone: the backend's own worker stops.
    await backend.running.outbox.stop();
  });
  afterAll(() => backend?.stop());

  it('runs again at once for a wake-up that came as its run was finishing, not at the next poll', async () => {
    const db = backend.running.db;
    const delivered: number[] = [];
    let outbox: Outbox | undefined;
    let wakeOnNextSettle = false;
    const wakingDb: Database = {
      ...db,
      async query<Row>(text: string, params?: unknown[]) {
        const result = await db.query<Row>(text, params);
        if (wakeOnNextSettle && text.includes(`"status" = 'sent'`)) {
          wakeOnNextSettle = false;
          outbox?.wake();
        }
        return result;
      },
    };
    const channel: Channel<{ n: number }> = {
      name: 'wake-test',
      timeoutMs: 1000,
      async deliver({ n }) {
        delivered.push(n);
        if (n === 1) {
          // Committed while the first is being delivered; its wake-up comes with the first's "sent".
          await enqueue(db, 'wake-test', { n: 2 });
          wakeOnNextSettle = true;
        }
      },
    };
    outbox = createOutbox({ db: wakingDb, channels: [channel as Channel<never>], logger: pino({ level: 'silent' }), settings: { pollMs: 60_000, retryMs: 1000, maxAttempts: 3 } });
    await enqueue(db, 'wake-test', { n: 1 });
    const started = performance.now();
    outbox.start();
    try {
      await expect.poll(() => delivered.length, { timeout: 10_000, interval: 10 }).toBe(2);
      expect(performance.now() - started).toBeLessThan(5000);
      expect(delivered).toEqual([1, 2]);
    } finally {
      await outbox.stop();
    }
  });
});
