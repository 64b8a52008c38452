import cors from 'cors';
import type { Request, RequestHandler } from 'express';
import type { Config } from '../config.js';
import { forbidden } from './errors.js';
import { bearerToken, hasSessionCookie } from './session-token.js';

/** Browsers may call with cookies only from the origins in ALLOWED_ORIGINS; there is no wildcard. */
export function corsPolicy(config: Pick<Config, 'allowedOrigins'>): RequestHandler {
  const policy = cors({
    origin: config.allowedOrigins,
    credentials: true,
    exposedHeaders: ['x-request-id', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'Idempotent-Replayed'],
    maxAge: 600,
  });
  // A request without an Origin header is not a browser's cross-origin one: no CORS header
  // applies to it. `Vary: Origin` still tells caches that another origin may get another answer.
  return (req, res, next) => {
    if (req.headers.origin !== undefined) return policy(req, res, next);
    res.vary('Origin');
    next();
  };
}

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * CSRF: a state-changing request that a browser authenticates with a session cookie (ours or
 * Better Auth's) must come from a page of an allowed origin (or this backend's own). Requests
 * with a Bearer token cannot be forged cross-site, and requests without the cookie have nothing
 * to forge.
 */
export function csrfGuard(config: Pick<Config, 'allowedOrigins' | 'authUrl'>): RequestHandler {
  const trusted = new Set([...config.allowedOrigins, new URL(config.authUrl).origin]);
  const ownOrigin = (req: Request) => `${req.protocol}://${req.get('host')}`;
  return (req, _res, next) => {
    if (safeMethods.has(req.method) || !hasSessionCookie(req) || bearerToken(req)) {
      next();
      return;
    }
    const origin = req.header('origin');
    // "null" is what sandboxed iframes, data: and file: pages send: anyone can be "null".
    if (origin && origin !== 'null' && (trusted.has(origin) || origin === ownOrigin(req))) {
      next();
      return;
    }
    throw forbidden('Cross-site request refused: a request using the session cookie must come from an origin in ALLOWED_ORIGINS');
  };
}
