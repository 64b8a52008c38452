import type { Request, RequestHandler } from 'express';
import { rateLimit, type Store } from 'express-rate-limit';
import type { Logger } from 'pino';
import { RedisStore } from 'rate-limit-redis';
import { createClient } from 'redis';
import type { Config } from '../config.js';
import { sendError } from './envelope.js';

export interface RateLimits {
  /** Mounted at /api/auth: sign-up, sign-in, sign-out (10 an hour by default). */
  auth: RequestHandler;
  /** Mounted at /api: everything else there, including get-session (100 per 15 minutes). */
  api: RequestHandler;
  close(): Promise<void>;
}

/** `/auth/get-session/` -> `/auth/get-session`: routing ignores case and a trailing slash, so must we. */
const normalise = (path: string) => path.toLowerCase().replace(/\/+$/, '');
/** HEAD is answered by the GET route, so it is the same request without a body. */
const isGetSession = (method: string, pathUnderApi: string) =>
  (method === 'GET' || method === 'HEAD') && normalise(pathUnderApi) === '/auth/get-session';
/** `/auth` itself and everything below it: the requests the /api/auth limiter counts. */
const isUnderAuth = (pathUnderApi: string) => {
  const path = normalise(pathUnderApi);
  return path === '/auth' || path.startsWith('/auth/');
};

/** How long a rate-limit check may wait for Redis before the request is let through. */
const redisCommandTimeoutMs = 1000;

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
export async function createRateLimits(config: Config, logger: Logger): Promise<RateLimits> {
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
      // would every request under /api: `passOnStoreError` below only helps when the store fails.
      disableOfflineQueue: true,
      commandOptions: { timeout: redisCommandTimeoutMs },
    });
    client.on('error', (error) => {
      // Startup failures are reported once, by the caller, as a StartupError.
      if (ready) logger.error({ err: error }, 'redis error; requests are let through uncounted until it is back');
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

  const store = (prefix: string): Store | undefined =>
    redis ? new ResilientRedisStore({ prefix, sendCommand: (...args: string[]) => redis!.sendCommand(args) }) : undefined;

  // express-rate-limit's own warnings and store errors go to our log, not to the console.
  const rateLimitLogger = {
    error: (error: unknown, message?: string) => logger.error({ err: error }, message ?? 'rate limit error'),
    warn: (error: unknown, message?: string) => logger.warn({ err: error }, message ?? 'rate limit warning'),
  };

  const limiter = (options: { windowMs: number; limit: number; message: string; prefix: string; skip: (req: Request) => boolean }) =>
    rateLimit({
      windowMs: options.windowMs,
      limit: options.limit,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      store: store(options.prefix),
      passOnStoreError: true,
      logger: rateLimitLogger,
      skip: options.skip,
      handler: (_req, res) => sendError(res, 429, 'RATE_LIMITED', options.message),
    });

  const { prefix } = config.rateLimits;
  return {
    auth: limiter({
      windowMs: config.rateLimits.authWindowMs,
      limit: config.rateLimits.authMax,
      message: 'Too many login attempts',
      prefix: `${prefix}auth:`,
      skip: (req) => isGetSession(req.method, `/auth${req.path}`),
    }),
    api: limiter({
      windowMs: config.rateLimits.apiWindowMs,
      limit: config.rateLimits.apiMax,
      message: 'Too many requests',
      prefix: `${prefix}api:`,
      // Requests to /api/auth are the stricter limiter's, except get-session; `/api/auth` itself
      // (no trailing part) is mounted there too, so it must not be counted twice.
      skip: (req) => isUnderAuth(req.path) && !isGetSession(req.method, req.path),
    }),
    async close() {
      if (redis?.isOpen) await redis.close();
    },
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
