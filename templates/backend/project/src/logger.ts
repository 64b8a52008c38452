import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { pino, type Logger } from 'pino';
import type { Config } from './config.js';
import type { Metrics } from './observability/metrics.js';

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({ level: config.logLevel });
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** This request's id: the client's or proxy's `x-request-id` when it is plain, a new UUID otherwise. */
      id: string;
      /** The logger, every line tagged with this request's id. */
      log: Logger;
    }
  }
}

// A request id from a proxy or client is kept when it is short and plain, so logs line up end to end.
const acceptableRequestId = /^[\w.:-]{1,128}$/;

/**
 * Gives each request an id (returned to the client as `x-request-id`) and logs one short line
 * when it is answered: method, URL, status and time taken, at info (error for a 5xx, warn for a
 * 4xx). Headers stay out of the logs: they carry cookies and tokens. A line below LOG_LEVEL costs
 * nothing but the level check (bench/README.md measured the per-request middleware). With
 * metrics on, the same moment counts the request (observability/metrics.ts).
 */
export function requestLogger(logger: Logger, metrics?: Pick<Metrics, 'requestEnded'>): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && acceptableRequestId.test(incoming) ? incoming : randomUUID();
    req.id = id;
    req.log = logger.child({ reqId: id });
    res.setHeader('x-request-id', id);
    const startedAt = performance.now();
    // 'close' comes once per response: after the last byte was handed over, or when the connection broke first.
    res.once('close', () => {
      const status = res.statusCode;
      const elapsedMs = performance.now() - startedAt;
      metrics?.requestEnded(req, status, elapsedMs);
      // A connection closed before the whole answer was sent: the client gave up, or the socket broke.
      const aborted = !res.writableFinished;
      const level = status >= 500 ? 'error' : status >= 400 || aborted ? 'warn' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const responseTime = Math.round(elapsedMs);
      // A machine key's request names the key by its id, never by the key.
      const key = req.caller?.kind === 'key' ? { keyId: req.caller.keyId } : {};
      logger[level]({ reqId: id, req: { method: req.method, url: req.originalUrl, ...key }, res: { statusCode: status }, responseTime }, aborted ? 'request aborted' : 'request completed');
    });
    next();
  };
}
