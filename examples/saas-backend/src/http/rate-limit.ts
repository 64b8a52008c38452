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
const isGetSession = (method: string, pathUnderApi: string) => method === 'GET' && normalise(pathUnderApi) === '/auth/get-session';

/**
 * The request limits of the spec, counted per client IP (`TRUST_PROXY` says how many proxies
 * to look through). Counts live in memory, or in Redis when `REDIS_URL` is set so that several
 * instances count together. If Redis fails mid-flight, requests are let through (and the error
 * is logged) rather than the whole API going down with it.
 */
export async function createRateLimits(config: Config, logger: Logger): Promise<RateLimits> {
  let redis: ReturnType<typeof createClient> | undefined;
  if (config.redisUrl) {
    redis = createClient({ url: config.redisUrl });
    redis.on('error', (error) => logger.error({ err: error }, 'redis error'));
    await redis.connect();
  }
  const store = (prefix: string): Store | undefined =>
    redis ? new RedisStore({ prefix, sendCommand: (...args: string[]) => redis!.sendCommand(args) }) : undefined;

  const limiter = (options: { windowMs: number; limit: number; message: string; prefix: string; skip: (req: Request) => boolean }) =>
    rateLimit({
      windowMs: options.windowMs,
      limit: options.limit,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      store: store(options.prefix),
      passOnStoreError: true,
      skip: options.skip,
      handler: (_req, res) => sendError(res, 429, 'RATE_LIMITED', options.message),
    });

  return {
    auth: limiter({
      windowMs: config.rateLimits.authWindowMs,
      limit: config.rateLimits.authMax,
      message: 'Too many login attempts',
      prefix: 'authstrap:rl:auth:',
      skip: (req) => isGetSession(req.method, `/auth${req.path}`),
    }),
    api: limiter({
      windowMs: config.rateLimits.apiWindowMs,
      limit: config.rateLimits.apiMax,
      message: 'Too many requests',
      prefix: 'authstrap:rl:api:',
      skip: (req) => normalise(req.path).startsWith('/auth/') && !isGetSession(req.method, req.path),
    }),
    async close() {
      await redis?.quit();
    },
  };
}
