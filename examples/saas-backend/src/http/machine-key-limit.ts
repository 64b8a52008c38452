import type { Logger } from 'pino';
import type { Database } from '../db/database.js';

/**
 * A machine key's own rate limit (`rateLimitMax` requests while less than `rateLimitTimeWindow` ms
 * pass between two of them: Better Auth's api-key rule), counted where the other limits are: in
 * this process's memory, or in Redis when REDIS_URL is set, so that every instance counts together.
 *
 * Counting in the key's row (as Better Auth does) made every request of a key a write, and the
 * requests of one busy key queued on that row's lock for as long as each request's transaction
 * lasted. Here a request costs one count in the store, as a session's does (the data limit), and
 * the key's row learns its `lastRequest` and `requestCount` from each instance at most
 * `flushMs` later (one UPDATE a flush for all the keys the instance saw: KeyUsage below).
 *
 * Only the rule's settings are read from the row, and kept: tenantScoped reads them with every
 * request's own statement (db/scope.ts, machineKeyStatement), so a changed limit counts from the
 * next request on. A key's quota (`remaining`, Better Auth's) is still counted in its row: it is
 * a total that must survive restarts, and keys that have one are rare (a key without one is charged nothing:
 * its statement has no UPDATE at all).
 */

/** The key's rule, as its row has it. */
export interface KeyRule {
  /** Off: no limit, only `lastRequest` is kept. */
  enabled: boolean;
  max: number;
  windowMs: number;
  /** A quota (`remaining`) to charge in the row: the key's statement then charges it (db/scope.ts). */
  hasQuota: boolean;
}

/** What counting one request found: allowed (and counted), or refused until `retryAfterMs` has passed. */
export type KeyCount = { allowed: true; count: number } | { allowed: false; retryAfterMs: number };

/** Where requests are counted: memory or Redis (rate-limit.ts picks, as for the other limits). */
export interface KeyRequestCounter {
  count(hashedKey: string, rule: { max: number; windowMs: number }): Promise<KeyCount>;
  /** Takes back one counted request (the key's statement refused it). */
  refund(hashedKey: string): Promise<void>;
}

/** Better Auth's rule on one key's state; `now` in ms. The state is changed only for an allowed request. */
function countOne(state: { last: number; count: number }, rule: { max: number; windowMs: number }, now: number): KeyCount {
  const since = now - state.last;
  const count = state.last === 0 || since > rule.windowMs ? 0 : state.count;
  if (count >= rule.max) return { allowed: false, retryAfterMs: Math.max(0, rule.windowMs - since) };
  state.last = now;
  state.count = count + 1;
  return { allowed: true, count: state.count };
}

/** Counts in this process: exact for one instance (several count apart: set REDIS_URL). */
export function memoryKeyCounter(): KeyRequestCounter {
  const states = new Map<string, { last: number; count: number; windowMs: number }>();
  return {
    async count(hashedKey, rule) {
      const now = Date.now();
      if (states.size >= 10_000 && !states.has(hashedKey)) {
        // Keys quiet for longer than their window count from zero anyway.
        for (const [key, state] of states) if (now - state.last > state.windowMs) states.delete(key);
      }
      let state = states.get(hashedKey);
      if (!state) states.set(hashedKey, (state = { last: 0, count: 0, windowMs: rule.windowMs }));
      state.windowMs = rule.windowMs;
      return countOne(state, rule, now);
    },
    async refund(hashedKey) {
      const state = states.get(hashedKey);
      if (state && state.count > 0) state.count--;
    },
  };
}

/**
 * The same rule in one Redis script, on Redis's clock, so that the instances agree: of 20
 * concurrent requests of a key allowed 10, on any instances, exactly 10 pass. The count expires
 * with its window.
 */
const redisScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local windowMs = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'last', 'count')
local last = tonumber(state[1] or '0')
local count = tonumber(state[2] or '0')
if last == 0 or now - last > windowMs then count = 0 end
if count >= max then return {0, windowMs - (now - last)} end
redis.call('HSET', KEYS[1], 'last', now, 'count', count + 1)
redis.call('PEXPIRE', KEYS[1], windowMs + 1000)
return {1, count + 1}`;

/** `sendCommand` is rate-limit.ts's bounded one: a Redis that does not answer fails the count, and the request goes through. */
export function redisKeyCounter(sendCommand: (args: string[]) => Promise<unknown>, prefix: string): KeyRequestCounter {
  let sha: string | undefined;
  return {
    async count(hashedKey, rule) {
      const keyArgs = ['1', `${prefix}${hashedKey}`, String(rule.windowMs), String(rule.max)];
      let reply: [number, number];
      try {
        sha ??= (await sendCommand(['SCRIPT', 'LOAD', redisScript])) as string;
        reply = (await sendCommand(['EVALSHA', sha, ...keyArgs])) as [number, number];
      } catch (error) {
        // A restarted Redis has forgotten the script: load it again next time.
        sha = undefined;
        throw error;
      }
      return reply[0] === 1 ? { allowed: true, count: reply[1] } : { allowed: false, retryAfterMs: Math.max(0, reply[1]) };
    },
    async refund(hashedKey) {
      // Only while the count is there and above 0 (it may have expired with its window since).
      await sendCommand(['EVAL', refundScript, '1', `${prefix}${hashedKey}`]);
    },
  };
}

const refundScript = `
local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
if count > 0 then redis.call('HSET', KEYS[1], 'count', count - 1) end
return count`;

/** What tenantScoped asks of the limit for a key's request. */
export interface MachineKeyLimit {
  /**
   * Counts a request of the key (stored as `hashedKey`) against its own limit. Allowed when the
   * key's rule lets it through, or when the key is unknown here (its statement then answers 401),
   * or when the store fails (as the other limits do).
   */
  admit(hashedKey: string): Promise<KeyCount>;
  /**
   * Takes back a request `admit` counted that the key's statement then refused (its permissions,
   * another organization, disabled, expired): as Better Auth counts, only the requests a key may
   * make count against its limit.
   */
  refund(hashedKey: string): void;
  /** The rule as the request's own statement read it, for the key's next request. */
  ruleSeen(hashedKey: string, rule: KeyRule): void;
  /**
   * Whether the key's statement must charge a quota: as its row said at its last request; true
   * for a key not seen. A quota set since is caught by the statement that does not charge, and
   * the request is sent again with the charge (tenant.guard.ts, CheckAgain).
   */
  charges(hashedKey: string): boolean;
  /** Writes what is noted to the keys' rows now (on shutdown, and in tests). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** `flushMs`: how often this instance writes its keys' last use and count to their rows (MACHINE_KEY_USAGE_FLUSH_MS, 1 s). */
export function createMachineKeyLimit({ db, counter, logger, flushMs }: { db: Database; counter: KeyRequestCounter; logger: Logger; flushMs: number }): MachineKeyLimit {
  const rules = new Map<string, KeyRule>();
  const usage = keyUsage(db);

  /** The rule of a key this instance has not seen yet: one read. Undefined for no such key. */
  async function ruleOf(hashedKey: string): Promise<KeyRule | undefined> {
    const known = rules.get(hashedKey);
    if (known) return known;
    const { rows } = await db.query<{ enabled: boolean; max: number | null; windowMs: number | null; hasQuota: boolean }>(
      `SELECT "rateLimitEnabled" AS "enabled", "rateLimitMax" AS "max", "rateLimitTimeWindow" AS "windowMs", "remaining" IS NOT NULL AS "hasQuota" FROM "apikey" WHERE "key" = $1`,
      [hashedKey],
    );
    if (!rows[0]) return undefined;
    const rule = ruleFrom(rows[0]);
    remember(hashedKey, rule);
    return rule;
  }

  function remember(hashedKey: string, rule: KeyRule) {
    if (rules.size >= 10_000 && !rules.has(hashedKey)) rules.clear();
    rules.set(hashedKey, rule);
  }

  const timer = setInterval(() => {
    usage.flush().catch((error) => logger.warn({ err: error }, "machine keys: could not write their last use to their rows; will try again"));
  }, flushMs);
  timer.unref();

  return {
    async admit(hashedKey) {
      const rule = await ruleOf(hashedKey);
      if (!rule) return { allowed: true, count: 0 };
      if (!rule.enabled) {
        usage.note(hashedKey, undefined);
        return { allowed: true, count: 0 };
      }
      let counted: KeyCount;
      try {
        counted = await counter.count(hashedKey, rule);
      } catch {
        // The store's outage is logged where the other limits log it (rate-limit.ts).
        return { allowed: true, count: 0 };
      }
      if (counted.allowed) usage.note(hashedKey, counted.count);
      return counted;
    },
    refund(hashedKey) {
      if (!rules.get(hashedKey)?.enabled) return;
      usage.refund(hashedKey);
      counter.refund(hashedKey).catch(() => {
        // The store's outage is logged where the other limits log it; the count stays one high.
      });
    },
    ruleSeen: remember,
    charges: (hashedKey) => rules.get(hashedKey)?.hasQuota ?? true,
    flush: () => usage.flush(),
    async close() {
      clearInterval(timer);
      await usage.flush().catch((error) => logger.warn({ err: error }, 'machine keys: could not write their last use at shutdown'));
    },
  };
}

/** A rule as read from the row: without a max or a window there is no limit (as Better Auth has it). */
export function ruleFrom(row: { enabled: boolean; max: number | null; windowMs: number | null; hasQuota: boolean }): KeyRule {
  const enabled = row.enabled && row.max !== null && row.windowMs !== null;
  return { enabled, max: row.max ?? 0, windowMs: Number(row.windowMs ?? 0), hasQuota: row.hasQuota };
}

/**
 * The keys' last use and count in their current window, noted per request and written to their
 * rows in one statement per flush. Of two instances' notes, the later use wins the count.
 */
function keyUsage(db: Database) {
  let noted = new Map<string, { last: Date; count: number | null }>();
  return {
    note(hashedKey: string, count: number | undefined) {
      noted.set(hashedKey, { last: new Date(), count: count ?? null });
    },
    refund(hashedKey: string) {
      const use = noted.get(hashedKey);
      if (use?.count) use.count--;
    },
    async flush() {
      if (noted.size === 0) return;
      const batch = noted;
      noted = new Map();
      const keys = [...batch.keys()];
      try {
        await db.query(
          `UPDATE "apikey" k SET
             "requestCount" = CASE WHEN f."count" IS NULL OR (k."lastRequest" IS NOT NULL AND k."lastRequest" > f."last") THEN k."requestCount" ELSE f."count" END,
             "lastRequest" = GREATEST(k."lastRequest", f."last")
           FROM unnest($1::text[], $2::timestamptz[], $3::int[]) AS f("key", "last", "count")
           WHERE k."key" = f."key"`,
          [keys, keys.map((key) => batch.get(key)!.last), keys.map((key) => batch.get(key)!.count)],
        );
      } catch (error) {
        // Kept for the next flush, unless a newer use was noted meanwhile.
        for (const [key, use] of batch) if (!noted.has(key)) noted.set(key, use);
        throw error;
      }
    },
  };
}
