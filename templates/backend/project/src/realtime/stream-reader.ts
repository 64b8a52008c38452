import type { Logger } from 'pino';
import type { Queryable } from '../db/database.js';
import type { StreamedEvent } from './stream-rules.js';

/**
 * Each instance reads the committed events once, in the order their transactions committed, and
 * hands every batch to its streams (streams.ts). The order is the events' `position`, which a
 * data event takes from one sequence when its transaction commits (the generator's event-sql.ts,
 * positionClaimKey), so positions follow commits, not the order in which transactions wrote.
 *
 * What is delivered is always a prefix: the reader's `head` only moves over positions that are
 * settled, committed or never to be. A position can be missing for a moment (its transaction is
 * committing: it took the position, and is not visible yet) or for good (it rolled back after
 * taking it). Which, PostgreSQL tells through a lock: every committing transaction holds one
 * advisory lock, shared, from before it takes a position until after it is visible. So at a gap
 * the reader notes which transactions hold that lock, waits for them to end, and reads again:
 * what is still missing below the position it saw then never will be there, and is passed over.
 *
 * It polls (REALTIME_POLL_MS, 25 ms by default) rather than being woken by NOTIFY: a NOTIFY at
 * every write would make every commit of the database take one global lock in turn, a cost the
 * writes would pay whether anyone listens or not. A poll finds nothing in one index probe, and
 * runs only while this instance holds a stream. It also cannot miss a lost notification.
 */

export interface PositionedEvent {
  position: number;
  event: StreamedEvent;
}

/** The advisory lock of committing transactions, as pg_locks shows it (two int4 keys: objsubid 2). */
const committingLock = `locktype = 'advisory' AND classid = 1635087464 AND objid = 1 AND objsubid = 2 AND granted`;

/** The events after `after` (one organization's, or all), at most `max`, up to `upTo`. */
export async function readEvents(db: Queryable, after: number, max: number, only?: { organizationId?: string; upTo?: number }): Promise<PositionedEvent[]> {
  const { rows } = await db.query<{ position: string; event: string }>(
    `SELECT "position", "event" FROM authstrap.stream_events($1, $2, $3, $4)`,
    [after, max, only?.organizationId ?? null, only?.upTo ?? null],
  );
  return rows.map((row) => ({ position: Number(row.position), event: JSON.parse(row.event) as StreamedEvent }));
}

/** The oldest position still kept and the newest committed (0 when there is none). */
export async function streamBounds(db: Queryable): Promise<{ oldest: number; newest: number }> {
  const { rows } = await db.query<{ oldest: string | null; newest: string | null }>(`SELECT "oldest", "newest" FROM authstrap.stream_bounds()`);
  return { oldest: Number(rows[0]?.oldest ?? 0), newest: Number(rows[0]?.newest ?? 0) };
}

/** The transactions committing now (holding the lock), by their virtual transaction id. */
async function committingNow(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(`SELECT virtualtransaction AS "id" FROM pg_locks WHERE ${committingLock}`);
  return rows.map((row) => row.id);
}

/** Whether any of `transactions` is still committing. */
async function stillCommitting(db: Queryable, transactions: string[]): Promise<boolean> {
  if (transactions.length === 0) return false;
  const { rows } = await db.query(`SELECT 1 FROM pg_locks WHERE ${committingLock} AND virtualtransaction = ANY($1::text[]) LIMIT 1`, [transactions]);
  return rows.length > 0;
}

export interface StreamReader {
  /** Every position up to here is settled and has been handed over. */
  readonly head: number;
  /** Starts reading from the newest settled position (resolves once it is known); again after stop(). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface StreamReaderOptions {
  db: Queryable;
  logger: Logger;
  pollMs: number;
  /** Called with each batch, in position order, before `head` moves past it. */
  onEvents: (events: PositionedEvent[]) => void;
  batchSize?: number;
}

/** How soon to look again while a gap's transactions are still committing (they take milliseconds). */
const gapRecheckMs = 2;

export function createStreamReader({ db, logger, pollMs, onEvents, batchSize = 500 }: StreamReaderOptions): StreamReader {
  let head = 0;
  let running: Promise<void> | undefined;
  let starting: Promise<void> | undefined;
  let stopped = true;
  let wakeTimer: ReturnType<typeof setTimeout> | undefined;
  let wakeSleep: (() => void) | undefined;
  /** A gap being waited out: the transactions committing when it was seen, and the position seen beyond it. */
  let gap: { committing: string[]; seenBeyond: number } | undefined;
  /** Below this, a position still missing is one that rolled back (its gap's transactions have ended). */
  let settledBelow = 0;

  /** Reads once; true when there may be more to read at once. */
  async function poll(): Promise<boolean> {
    if (gap && !(await stillCommitting(db, gap.committing))) {
      settledBelow = gap.seenBeyond;
      gap = undefined;
    }
    const read = await readEvents(db, head, batchSize);
    const settled: PositionedEvent[] = [];
    let expected = head + 1;
    for (const row of read) {
      // Passed over: positions taken by transactions that rolled back.
      if (row.position > expected && expected < settledBelow) expected = Math.min(row.position, settledBelow);
      if (row.position !== expected) {
        gap ??= { committing: await committingNow(db), seenBeyond: row.position };
        break;
      }
      settled.push(row);
      expected++;
    }
    if (settled.length > 0) {
      onEvents(settled);
      head = settled.at(-1)!.position;
    }
    return settled.length === batchSize;
  }

  async function loop() {
    let failures = 0;
    while (!stopped) {
      let delay = pollMs;
      try {
        const more = await poll();
        failures = 0;
        delay = more ? 0 : gap ? gapRecheckMs : pollMs;
      } catch (error) {
        failures++;
        delay = Math.min(5000, pollMs * 2 ** Math.min(failures, 8));
        logger.warn({ err: (error as Error).message, retryInMs: delay }, 'realtime: could not read the events; streams wait');
      }
      if (stopped) break;
      await new Promise<void>((resolve) => {
        wakeSleep = resolve;
        wakeTimer = setTimeout(resolve, delay);
      });
    }
  }

  /**
   * The newest committed position, once the transactions committing now have ended: every
   * position up to it is settled then (any lower one was taken before it, by a transaction that
   * held the lock from then on).
   */
  async function settledNewest(): Promise<number> {
    const { newest } = await streamBounds(db);
    const committing = await committingNow(db);
    for (let waited = 0; await stillCommitting(db, committing); waited++) {
      if (waited % 5000 === 4999) logger.warn({ committing }, 'realtime: waiting for transactions still committing');
      await new Promise((resolve) => setTimeout(resolve, gapRecheckMs));
    }
    return newest;
  }

  return {
    get head() {
      return head;
    },
    start() {
      if (!stopped) return starting ?? Promise.resolve();
      stopped = false;
      starting = (async () => {
        try {
          head = await settledNewest();
        } catch (error) {
          stopped = true;
          starting = undefined;
          throw error;
        }
        settledBelow = 0;
        gap = undefined;
        running = loop();
      })();
      return starting;
    },
    async stop() {
      stopped = true;
      clearTimeout(wakeTimer);
      wakeSleep?.();
      await starting?.catch(() => {});
      await running;
      running = undefined;
      starting = undefined;
    },
  };
}
