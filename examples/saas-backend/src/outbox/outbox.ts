import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';

/**
 * The transactional outbox: what must leave the backend (mail, webhooks) is written to the
 * `authstrap_outbox` table in the same transaction as the change that causes it, and delivered
 * after commit by a worker that runs in every instance. So a change and its message are kept or
 * lost together; a crash, a restart or an SMTP outage delays a message, never loses it.
 *
 * - Claiming: a worker takes due messages with `FOR UPDATE SKIP LOCKED` and leases them
 *   (`lockedUntil`) for longer than a delivery may take, so two instances never hold one message
 *   at once. A worker that dies mid-delivery leaves its lease to run out; another then delivers.
 * - At least once: a worker killed after the receiver took a message but before it wrote `sent`
 *   leaves it to be sent again. Each channel gives its receivers the message's id to drop such a
 *   repeat by (mail: the Message-ID header).
 * - Retries: exponential, with jitter (OUTBOX_RETRY_MS doubling, at most an hour apart), up to
 *   OUTBOX_MAX_ATTEMPTS; an error the channel calls permanent (a refused address) ends at once.
 *   The message is then `failed`, with its last error.
 * - Requests never wait for a delivery: they write the row, and wake the worker after commit.
 *   What SQL writes (an event's webhook deliveries, from a trigger) wakes the workers of every
 *   instance through PostgreSQL's NOTIFY at commit (wake-ups.ts); polling catches the rest.
 */

/**
 * One way out of the backend. Mail is `mailChannel` in src/mail/mail.ts, webhooks `webhookChannel`
 * in src/events/webhooks.ts; a new channel is a module like them.
 */
export interface Channel<Payload = unknown> {
  name: string;
  /** The longest one delivery may take; the channel gives up (throws) by then. */
  timeoutMs: number;
  /** Its own retry bounds, when they differ from OUTBOX_RETRY_MS and OUTBOX_MAX_ATTEMPTS. */
  retry?: { retryMs: number; maxAttempts: number };
  /** Told once a message has failed for good (after its last attempt, or a permanent error). */
  failed?(payload: Payload, message: OutboxMessage, reason: string): Promise<void>;
  /** Delivers one message. Throws PermanentDeliveryError when no retry can help. */
  deliver(payload: Payload, message: OutboxMessage): Promise<void>;
  /** What stays in the table once the message is sent (the secrets of a link need not). */
  redact?(payload: Payload): unknown;
  /** Lets go of what the channel keeps open (connections), once the worker has stopped. */
  close?(): void;
}

export interface OutboxMessage {
  id: string;
  /** 1 on the first attempt. */
  attempt: number;
}

/** A delivery that no retry can make succeed (the receiver refused the address for good). */
export class PermanentDeliveryError extends Error {
  override name = 'PermanentDeliveryError';
}

/** Writes a message for `channel` in the caller's transaction: it leaves only if that commits. */
export async function enqueue(tx: Queryable, channel: string, payload: unknown): Promise<string> {
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO "authstrap_outbox" ("channel", "payload") VALUES ($1, $2::jsonb) RETURNING "id"`,
    [channel, JSON.stringify(payload)],
  );
  return rows[0]!.id;
}

export interface Outbox {
  /** See enqueue above. */
  enqueue(tx: Queryable, channel: string, payload: unknown): Promise<string>;
  /** A message was committed: deliver now rather than at the next poll. */
  wake(): void;
  /** Adds a channel made after the outbox (one that writes mail itself: the account flows' requests), before start(). */
  register(channel: Channel<never>): void;
  start(): void;
  /** Stops polling and waits for the deliveries in hand. */
  stop(): Promise<void>;
  /** Deliveries by this instance since it started, per channel: sent, to be retried, failed for good (for the metrics). */
  deliveries: Map<string, { sent: number; retried: number; failed: number }>;
  /** What waits to be sent, per channel: how many messages, and how long the oldest has waited (the outbox's lag). */
  backlog(): Promise<{ channel: string; pending: number; oldestSeconds: number }[]>;
}

interface ClaimedRow {
  id: string;
  channel: string;
  payload: unknown;
  attempts: number;
}

const batchSize = 10;
const maxRetryDelayMs = 60 * 60 * 1000;
const pruneEveryMs = 60 * 60 * 1000;

/** The delay before attempt `attempt + 1`: doubling from `retryMs`, at most an hour, with jitter in the upper half. */
export function retryDelayMs(attempt: number, retryMs: number): number {
  const ceiling = Math.min(maxRetryDelayMs, retryMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

export function createOutbox({ db, channels, logger, settings }: { db: Database; channels: Channel<never>[]; logger: Logger; settings: Config['outbox'] }): Outbox {
  const byName = new Map<string, Channel<unknown>>();
  const deliveries = new Map<string, { sent: number; retried: number; failed: number }>();
  // Long enough that a delivery still in hand (it gives up after its timeout) is never claimed twice.
  let leaseMs = 0;
  const register = (channel: Channel<never>) => {
    byName.set(channel.name, channel as Channel<unknown>);
    deliveries.set(channel.name, deliveries.get(channel.name) ?? { sent: 0, retried: 0, failed: 0 });
    leaseMs = Math.max(leaseMs, 2 * channel.timeoutMs + 5000);
  };
  channels.forEach(register);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = true;
  let lastPrune = 0;

  async function deliver(row: ClaimedRow) {
    const channel = byName.get(row.channel);
    // Only while the claim is this worker's: each claim counts an attempt, so `attempts` names it.
    const settle = (sql: string, params: unknown[]) =>
      db.query(`UPDATE "authstrap_outbox" SET ${sql}, "lockedUntil" = NULL WHERE "id" = $1 AND "attempts" = $2`, [row.id, row.attempts, ...params]);
    try {
      if (!channel) throw new PermanentDeliveryError(`no channel named '${row.channel}' in this backend`);
      await channel.deliver(row.payload, { id: row.id, attempt: row.attempts });
      const kept = channel.redact ? channel.redact(row.payload) : row.payload;
      await settle(`"status" = 'sent', "sentAt" = now(), "lastError" = NULL, "payload" = $3::jsonb`, [JSON.stringify(kept)]);
      counted(row.channel).sent++;
    } catch (error) {
      const retry = channel?.retry ?? settings;
      const permanent = error instanceof PermanentDeliveryError || row.attempts >= retry.maxAttempts;
      counted(row.channel)[permanent ? 'failed' : 'retried']++;
      const reason = String((error as Error)?.message ?? error).slice(0, 1000);
      logger.warn({ outboxId: row.id, channel: row.channel, attempt: row.attempts, permanent, err: reason }, permanent ? 'outbox message failed for good' : 'outbox delivery failed; will retry');
      await settle(
        `"status" = $3, "lastError" = $4, "nextAttemptAt" = now() + make_interval(secs => $5::double precision / 1000)`,
        [permanent ? 'failed' : 'pending', reason, retryDelayMs(row.attempts, retry.retryMs)],
      );
      if (permanent && channel?.failed) {
        await channel.failed(row.payload, { id: row.id, attempt: row.attempts }, reason).catch((failure) => {
          logger.warn({ outboxId: row.id, channel: row.channel, err: (failure as Error)?.message }, 'outbox: the channel could not handle a failed message');
        });
      }
    }
  }

  /** A message for a channel this backend does not have is counted under its name too. */
  function counted(channel: string) {
    let counts = deliveries.get(channel);
    if (!counts) deliveries.set(channel, (counts = { sent: 0, retried: 0, failed: 0 }));
    return counts;
  }

  async function prune() {
    if (Date.now() - lastPrune < pruneEveryMs) return;
    lastPrune = Date.now();
    // Sent messages are kept a week (what went out, when); failed ones a month, to look into.
    await db.query(
      `DELETE FROM "authstrap_outbox" WHERE ("status" = 'sent' AND "sentAt" < now() - interval '7 days')
         OR ("status" = 'failed' AND "createdAt" < now() - interval '30 days')`,
    );
  }

  /** Claims what is due and delivers it, until nothing is left. */
  async function drain() {
    for (;;) {
      const { rows } = await db.query<ClaimedRow>(
        `UPDATE "authstrap_outbox" SET "lockedUntil" = now() + make_interval(secs => $1::double precision / 1000), "attempts" = "attempts" + 1
          WHERE "id" IN (
            SELECT "id" FROM "authstrap_outbox"
             WHERE "status" = 'pending' AND "nextAttemptAt" <= now() AND ("lockedUntil" IS NULL OR "lockedUntil" <= now())
             ORDER BY "nextAttemptAt" LIMIT ${batchSize}
             FOR UPDATE SKIP LOCKED)
          RETURNING "id", "channel", "payload", "attempts"`,
        [leaseMs],
      );
      if (rows.length === 0) return;
      await Promise.all(rows.map(deliver));
      if (rows.length < batchSize && !again) return;
    }
  }

  /** When the pending tick is due (Infinity: none is). */
  let dueAt = Infinity;

  /**
   * The next tick in `delayMs`, unless one is due sooner: a wake-up that came while a run was
   * finishing must not be pushed back to the next poll by that run's own scheduling.
   */
  function schedule(delayMs: number) {
    if (stopped) return;
    const at = Date.now() + delayMs;
    if (timer !== undefined && dueAt <= at) return;
    clearTimeout(timer);
    dueAt = at;
    timer = setTimeout(() => {
      timer = undefined;
      dueAt = Infinity;
      tick();
    }, delayMs);
    timer.unref();
  }

  function tick() {
    if (running) {
      again = true;
      return;
    }
    again = false;
    running = (async () => {
      try {
        await drain();
        await prune();
      } catch (error) {
        // The database is away or failing: the messages wait in the table; try again at the next poll.
        logger.warn({ err: (error as Error)?.message }, 'outbox: could not reach the database');
      }
    })().finally(() => {
      running = undefined;
      schedule(again ? 0 : settings.pollMs);
    });
  }

  return {
    enqueue,
    deliveries,
    async backlog() {
      const { rows } = await db.query<{ channel: string; pending: number; oldestSeconds: number }>(
        `SELECT "channel", count(*)::int AS "pending", extract(epoch FROM now() - min("createdAt"))::float8 AS "oldestSeconds"
           FROM "authstrap_outbox" WHERE "status" = 'pending' GROUP BY "channel"`,
      );
      return rows;
    },
    wake: () => schedule(0),
    register,
    start() {
      stopped = false;
      schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      dueAt = Infinity;
      await running;
      for (const channel of byName.values()) channel.close?.();
    },
  };
}
