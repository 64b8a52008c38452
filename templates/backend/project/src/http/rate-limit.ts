import { hash } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { type ClientRateLimitInfo, ipKeyGenerator, MemoryStore, type RateLimitInfo, type Store } from 'express-rate-limit';
import type { Logger } from 'pino';
import { RedisStore } from 'rate-limit-redis';
import { createClient } from 'redis';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { sendError } from './envelope.js';
import { createMachineKeyLimit, memoryKeyCounter, redisKeyCounter, type MachineKeyLimit } from './machine-key-limit.js';
import { hashMachineKey, isServiceKeyRequest, presentedMachineKey, requestTokenDigest, sessionCredential } from './session-token.js';

export interface RateLimits {
  /** Mounted at /api/auth: sign-up, sign-in, sign-out (10 an hour by default). */
  auth: RequestHandler;
  /**
   * Mounted at /api/auth/sso: single sign-on's start and callback (300 per 15 minutes by default),
   * instead of the sign-in limit. A company signs in from one address through its own identity
   * provider, which has already authenticated each person. The code exchange stays the strict one's.
   */
  sso: RequestHandler;
  /** Mounted at /api: everything else there, including the signed-in reads of /api/auth (100 per 15 minutes); not the docs page, nor the operators' routes. */
  api: RequestHandler;
  /**
   * The generated data routes and your own ones outside /api, and the docs page: a generous
   * limit per session (per IP without one), so that no client sends without bound.
   */
  data: RequestHandler;
  /** Each machine key's own limit (x-api-key), in the same store: http/machine-key-limit.ts. */
  machineKeys: MachineKeyLimit;
  /** Requests each limit refused (a 429) since the start, for the metrics. */
  refusals: Record<LimitName, number>;
  close(): Promise<void>;
}

export type LimitName = 'auth' | 'sso' | 'api' | 'data';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by the limit that counted this request: its limit, the count so far, what remains, and when the window ends (as express-rate-limit sets it). */
      rateLimit?: RateLimitInfo;
    }
  }
}

/** `/auth/get-session/` -> `/auth/get-session`: routing ignores case and a trailing slash, so must we. */
const normalise = (path: string) => path.toLowerCase().replace(/\/+$/, '');
/**
 * The signed-in user's reads under /api/auth (their session, sessions and invitations), and the
 * switch of their active organization, and the management of machine keys: an app asks for them
 * on every page, and they guess no password and send no mail, so they count under /api, not under
 * the strict limit. HEAD is answered by the GET route, so it is the same request.
 */
const signedInRequests = new Set(['GET /auth/get-session', 'GET /auth/sessions', 'GET /auth/invitations', 'GET /auth/organization/invitations', 'POST /auth/organization/set-active']);
const isSignedInRead = (method: string, pathUnderApi: string) =>
  signedInRequests.has(`${method === 'HEAD' ? 'GET' : method} ${normalise(pathUnderApi)}`) || isMachineKeyManagement(pathUnderApi);
/** An owner's or admin's management of machine keys (/api/auth/api-keys): signed-in work too. */
const isMachineKeyManagement = (pathUnderApi: string) => {
  const path = normalise(pathUnderApi);
  return path === '/auth/api-keys' || path.startsWith('/auth/api-keys/');
};
/** Single sign-on's start and callbacks under /api/auth/sso: the SSO limiter's (not the code exchange, /auth/sso/token). */
const isSso = (pathUnderApi: string) => {
  const path = normalise(pathUnderApi);
  return path.startsWith('/auth/sso/') && path !== '/auth/sso/token';
};
/** `/auth` itself and everything below it: the requests the /api/auth limiter counts. */
const isUnderAuth = (pathUnderApi: string) => {
  const path = normalise(pathUnderApi);
  return path === '/auth' || path.startsWith('/auth/');
};

const isDocs = (pathUnderApi: string) => {
  const path = normalise(pathUnderApi);
  return path === '/docs' || path.startsWith('/docs/');
};
/**
 * The operators' routes (/api/operator): a signed-in person's work, page after page (an operator's
 * page asks several of them), counted per session as the data routes are, not from the /api
 * budget of an address (100 per 15 minutes), which an operator used up in minutes.
 */
const isOperator = (pathUnderApi: string) => {
  const path = normalise(pathUnderApi);
  return path === '/operator' || path.startsWith('/operator/');
};
/** Paths outside /api, the docs page and the operators' routes: the data limiter's. */
const isDataPath = (path: string) => {
  const normalised = normalise(path);
  if (normalised === '/api' || normalised.startsWith('/api/')) {
    const underApi = normalised.slice('/api'.length);
    return isDocs(underApi) || isOperator(underApi);
  }
  return true;
};

/**
 * Which limit counts a request to this path (from the root; a path template of the OpenAPI
 * document will do), by the same tests as the limiters below: none for the probes, which app.ts
 * answers before the limits. The document's 429s are read from it (openapi/answers.ts).
 */
export function limitCounting(method: string, path: string): LimitName | undefined {
  const normalised = normalise(path);
  if (normalised === '/health' || normalised === '/ready' || normalised === '/metrics') return undefined;
  if (isDataPath(normalised)) return 'data';
  const underApi = normalised.slice('/api'.length);
  if (isSso(underApi)) return 'sso';
  return isUnderAuth(underApi) && !isSignedInRead(method, underApi) ? 'auth' : 'api';
}

/** A Redis that does not answer (or fails) while counting: the request goes through uncounted. */
class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

/** After a timeout, counting is skipped for this long instead of queueing more commands behind it. */
const redisBackoffMs = 1000;

/**
 * A connection error as one line. Node's can be an AggregateError (IPv4 and IPv6 both refused)
 * with an empty message, and the Redis client wraps it without adding one.
 */
function describe(error: unknown): string {
  const { message, code, errors, originalError } = (error ?? {}) as { message?: string; code?: string; errors?: unknown[]; originalError?: unknown };
  if (message) return message;
  if (originalError) return describe(originalError);
  if (errors?.length) return errors.map(describe).join('; ');
  return code ?? String(error);
}

/**
 * The request limits of the spec, counted per client IP (`TRUST_PROXY` says how many proxies
 * to look through). Counts live in memory, or in Redis when `REDIS_URL` is set so that several
 * instances count together (keys start with `RATE_LIMIT_PREFIX`). If Redis fails mid-flight,
 * requests are let through (and the error is logged) rather than the whole API going down
 * with it; counting resumes once Redis is back.
 */
export async function createRateLimits(config: Config, logger: Logger, db: Database): Promise<RateLimits> {
  const outage = redisOutageLog(logger);
  let redis: ReturnType<typeof createClient> | undefined;
  if (config.redisUrl) {
    let ready = false;
    const client = createClient({
      url: config.redisUrl,
      socket: {
        connectTimeout: 5000,
        // At startup a wrong REDIS_URL must stop the server with a message: the default strategy
        // retries forever, and startup would hang without a word. Once connected, a lost
        // connection is retried (backing off up to 2 s) for as long as the server runs.
        reconnectStrategy: (retries, cause) => (ready ? Math.min(100 * 2 ** retries, 2000) : cause),
      },
      // Without these, commands sent while Redis is unreachable (or stuck) wait in a queue, and so
      // would every request under /api: a limit lets a request through when its store fails, not
      // while the store keeps it waiting.
      disableOfflineQueue: true,
      commandOptions: { timeout: config.rateLimits.redisTimeoutMs },
    });
    client.on('error', (error) => {
      // Startup failures are reported once, by the caller, as a StartupError.
      if (ready) outage.failed(error);
    });
    try {
      await client.connect();
    } catch (error) {
      if (client.isOpen) client.destroy();
      throw new Error(describe(error));
    }
    ready = true;
    redis = client;
  }

  const sendCommand = redis ? boundedCommands(redis, config.rateLimits.redisTimeoutMs, outage) : undefined;
  const store = (prefix: string): Store | undefined =>
    sendCommand ? new ResilientRedisStore({ prefix, sendCommand: (...args: string[]) => sendCommand(args) }) : undefined;

  // A store's failure goes to our log. A Redis outage was logged once when it began; it is not
  // logged again for every request it lets through.
  const storeFailed = (error: unknown) => {
    if (!(error instanceof RedisUnavailableError)) logger.error({ err: error }, 'rate limit store failed; the request goes through uncounted');
  };

  // The service key is a trusted server (the Better Auth adapter, `authstrap verify`): its
  // requests are not the users' and are not counted against them.
  const isService = (req: Request) => isServiceKeyRequest(req, config.serviceApiKey);

  const refusals: Record<LimitName, number> = { auth: 0, sso: 0, api: 0, data: 0 };
  const stores: Store[] = [];
  const limiter = (options: {
    name: LimitName;
    windowMs: number;
    limit: number;
    message: string;
    prefix: string;
    skip: (req: Request) => boolean;
    keyGenerator?: (req: Request) => string;
  }) => {
    const counts = store(options.prefix) ?? new MemoryStore();
    stores.push(counts);
    return countingLimit({
      windowMs: options.windowMs,
      limit: options.limit,
      store: counts,
      // The path test first: it is cheap, and most limits do not apply to most paths.
      skip: (req) => options.skip(req) || isService(req),
      keyOf: options.keyGenerator ?? clientIpKey,
      storeFailed,
      refuse: (_req, res) => {
        refusals[options.name]++;
        sendError(res, 429, 'RATE_LIMITED', options.message);
      },
    });
  };

  const { prefix } = config.rateLimits;
  // In development a few mistyped passwords shut sign-in for an hour: the answer says how to go on.
  const authHint =
    config.nodeEnv === 'development'
      ? `. Development: raise RATE_LIMIT_AUTH_MAX (now ${config.rateLimits.authMax}) in .env${redis ? '' : ', or restart the backend: the count is kept in its memory'}`
      : '';
  const machineKeys = createMachineKeyLimit({
    db,
    logger,
    counter: sendCommand ? redisKeyCounter((args) => sendCommand(args), `${prefix}key:`) : memoryKeyCounter(),
    flushMs: config.rateLimits.machineKeyUsageFlushMs,
  });
  return {
    machineKeys,
    auth: limiter({
      name: 'auth',
      windowMs: config.rateLimits.authWindowMs,
      limit: config.rateLimits.authMax,
      message: `Too many login attempts${authHint}`,
      prefix: `${prefix}auth:`,
      skip: (req) => isSignedInRead(req.method, `/auth${req.path}`) || isSso(`/auth${req.path}`),
    }),
    sso: limiter({
      name: 'sso',
      windowMs: config.rateLimits.ssoWindowMs,
      limit: config.rateLimits.ssoMax,
      message: 'Too many single sign-on requests from this address',
      prefix: `${prefix}sso:`,
      skip: (req) => !isSso(`/auth/sso${req.path}`),
    }),
    api: limiter({
      name: 'api',
      windowMs: config.rateLimits.apiWindowMs,
      limit: config.rateLimits.apiMax,
      message: 'Too many requests',
      prefix: `${prefix}api:`,
      // Requests to /api/auth are the stricter limiter's, except the signed-in reads; `/api/auth` itself
      // (no trailing part) is mounted there too, so it must not be counted twice. The docs page
      // loads about eight files: they are the data limiter's, not the API budget of the app.
      skip: (req) => (isUnderAuth(req.path) && !isSignedInRead(req.method, req.path)) || isDocs(req.path) || isOperator(req.path),
    }),
    data: limiter({
      name: 'data',
      windowMs: config.rateLimits.dataWindowMs,
      limit: config.rateLimits.dataMax,
      message: 'Too many requests',
      prefix: `${prefix}data:`,
      skip: (req) => !isDataPath(req.path),
      keyGenerator: dataClientKey,
    }),
    refusals,
    async close() {
      // The keys' last use is written while the database is still open (server.ts closes it after).
      await machineKeys.close();
      for (const counts of stores) if (counts instanceof MemoryStore) counts.shutdown();
      if (redis?.isOpen) await redis.close();
    },
  };
}

/** The client's IP (an IPv6 address by its /56, as express-rate-limit counts it): whom the auth and /api limits count. */
const clientIpKey = (req: Request) => ipKeyGenerator(req.ip ?? '');

/**
 * One limit, over a fixed window: each request that `skip` lets through is counted in `store`
 * under `keyOf(req)`, and past `limit` it is refused with `refuse`. The answer carries the IETF
 * draft-8 headers (`RateLimit`, `RateLimit-Policy`, and `Retry-After` on a 429).
 *
 * This is what express-rate-limit's middleware did here, on its stores (its MemoryStore, or
 * rate-limit-redis), with the same counts and headers, byte for byte (test/rate-limit-headers.test.ts
 * sends the same requests to both). Its middleware cost an eighth of a data request's instructions
 * (five awaited steps, checks meant for setting it up, a SHA-256 per request; bench/README.md,
 * "A limiter of our own"); this one awaits the store once and hashes each client once.
 */
export function countingLimit(options: {
  windowMs: number;
  limit: number;
  store: Store;
  skip: (req: Request) => boolean;
  keyOf: (req: Request) => string;
  storeFailed: (error: unknown) => void;
  refuse: RequestHandler;
}): RequestHandler {
  const { windowMs, limit, store, skip, keyOf, storeFailed, refuse } = options;
  // Only the window is read by the stores' init (MemoryStore, rate-limit-redis).
  const initialised = store.init?.({ windowMs } as Parameters<NonNullable<Store['init']>>[0]);
  if (initialised instanceof Promise) initialised.catch(storeFailed);
  const windowSeconds = Math.ceil(windowMs / 1000);
  const name = `"${limit}-in-${windowName(windowMs)}"`;
  const policy = `${name}; q=${limit}; w=${windowSeconds}; pk=:`;

  const count: RequestHandler = async (req, res, next) => {
    const key = keyOf(req);
    let counted: ClientRateLimitInfo;
    try {
      counted = await store.increment(key);
    } catch (error) {
      storeFailed(error);
      return next();
    }
    const { totalHits, resetTime } = counted;
    const remaining = Math.max(limit - totalHits, 0);
    req.rateLimit = { limit, used: totalHits, remaining, resetTime, key };
    const resetSeconds = resetTime ? Math.max(0, Math.ceil((resetTime.getTime() - Date.now()) / 1000)) : windowSeconds;
    res.setHeader('RateLimit', `${name}; r=${remaining}; t=${resetSeconds}`);
    res.setHeader('RateLimit-Policy', `${policy}${partitionKey(key)}:`);
    if (totalHits <= limit) return next();
    res.setHeader('Retry-After', String(resetSeconds));
    return refuse(req, res, next);
  };
  return (req, res, next) => (skip(req) ? next() : count(req, res, next));
}

/** The policy's name, as express-rate-limit writes it: `100-in-15min`, `10-in-1hr`, `5-in-2days`. */
function windowName(windowMs: number): string {
  const seconds = windowMs / 1000;
  const minutes = seconds / 60;
  const hours = minutes / 60;
  const days = hours / 24;
  if (seconds < 60) return `${seconds}sec`;
  if (minutes < 60) return `${minutes}min`;
  if (hours < 24) return `${hours}hr${hours > 1 ? 's' : ''}`;
  return `${days}day${days > 1 ? 's' : ''}`;
}

/**
 * The draft-8 partition key of a client: the first 12 hex digits of the SHA-256 of its key, in
 * base64. The same clients come back request after request, so each is hashed once (the map is
 * emptied when it grows large).
 */
const partitionKeys = new Map<string, string>();
function partitionKey(key: string): string {
  let found = partitionKeys.get(key);
  if (found === undefined) {
    if (partitionKeys.size >= 10_000) partitionKeys.clear();
    found = Buffer.from(hash('sha256', key, 'hex').slice(0, 12)).toString('base64');
    partitionKeys.set(key, found);
  }
  return found;
}

/**
 * Whom the data limiter counts: a machine key or a session (hashed: raw secrets never become keys
 * in Redis), or the client IP for a request without either.
 */
function dataClientKey(req: Request): string {
  // A machine key is one client wherever it runs; its own limit is counted besides (machine-key-limit.ts).
  const machineKey = presentedMachineKey(req);
  if (machineKey) return `key:${hashMachineKey(machineKey)}`;
  const token = sessionCredential(req);
  if (token) return `session:${requestTokenDigest(req, token).toString('base64url')}`;
  return `ip:${ipKeyGenerator(req.ip ?? '')}`;
}

/** Logs a Redis outage once when it begins and once when it ends, however many requests it touches. */
function redisOutageLog(logger: Logger) {
  let down = false;
  return {
    failed(error: unknown) {
      if (down) return;
      down = true;
      logger.warn({ err: error }, `redis is not answering: ${describe(error)}; requests are let through uncounted until it is back`);
    },
    answered() {
      if (!down) return;
      down = false;
      logger.info('redis answers again; rate limits count again');
    },
  };
}

/**
 * Every Redis command the limiter sends, bounded: the client's own command timeout does not
 * cover a reply that never comes (a frozen Redis keeps the connection open), so a request would
 * wait for it. A command that takes longer than `timeoutMs` fails (the request goes through
 * uncounted), and for a second afterwards no command is sent at all, so requests do not queue
 * behind a Redis that is not answering.
 */
function boundedCommands(client: ReturnType<typeof createClient>, timeoutMs: number, outage: ReturnType<typeof redisOutageLog>) {
  let skipUntil = 0;
  return async (args: string[]): Promise<never> => {
    if (Date.now() < skipUntil) throw new RedisUnavailableError('Redis did not answer recently; not counted');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_resolve, reject) => {
      // Timers run before I/O in each turn of the event loop: after a busy spell both may be due
      // at once, and the reply that did arrive must win. setImmediate lets it be read first.
      timer = setTimeout(() => setImmediate(() => reject(new RedisUnavailableError(`Redis did not answer within ${timeoutMs} ms`))), timeoutMs);
    });
    try {
      const reply = (await Promise.race([client.sendCommand(args), timedOut])) as never;
      outage.answered();
      return reply;
    } catch (error) {
      skipUntil = Date.now() + redisBackoffMs;
      outage.failed(error);
      throw error instanceof RedisUnavailableError ? error : new RedisUnavailableError(describe(error));
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * rate-limit-redis loads its Lua scripts once and keeps the promise of their SHA. If that load
 * fails (Redis unreachable just then), the rejected promise is kept too, and every later count
 * fails with it: the limits would be off for good, not just while Redis is away. After a failed
 * count the scripts are loaded again, so the first request after Redis is back restores them.
 */
class ResilientRedisStore extends RedisStore {
  override async increment(key: string) {
    try {
      return await super.increment(key);
    } catch (error) {
      this.incrementScriptSha = this.loadIncrementScript();
      this.incrementScriptSha.catch(() => {});
      throw error;
    }
  }
}
