import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Config } from '../config.js';

/** How a client presents its session: the `session` cookie, or `Authorization: Bearer <token>`. */

export const sessionCookieName = 'session';
const sessionCookieMaxAgeMs = 7 * 24 * 60 * 60 * 1000;

export function bearerToken(req: Request): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '');
  return match?.[1];
}

/** What the database keeps of a session secret (and of an invitation's): its SHA-256, never the secret. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/** Compares two secrets in time independent of where they differ. */
export function secretsEqual(given: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(expected).digest());
}

/** Whether the request authenticates with the service key (a trusted server, not a user). */
export function isServiceKeyRequest(req: Request, serviceApiKey: string | undefined): boolean {
  const bearer = bearerToken(req);
  return bearer !== undefined && serviceApiKey !== undefined && secretsEqual(bearer, serviceApiKey);
}

/** The `session` cookie's value, read without a cookie-parsing dependency. */
export function sessionCookie(req: Request): string | undefined {
  for (const part of (req.header('cookie') ?? '').split(';')) {
    const separator = part.indexOf('=');
    if (separator !== -1 && part.slice(0, separator).trim() === sessionCookieName) {
      const value = part.slice(separator + 1).trim();
      try {
        return value ? decodeURIComponent(value) : undefined;
      } catch {
        // Not valid percent-encoding, so not a token we issued: as if there were no cookie.
        return undefined;
      }
    }
  }
  return undefined;
}

const cookieOptions = (config: Pick<Config, 'nodeEnv'>) => ({
  httpOnly: true,
  sameSite: 'lax' as const,
  path: '/',
  secure: config.nodeEnv === 'production',
});

export function setSessionCookie(res: Response, token: string, config: Pick<Config, 'nodeEnv'>): void {
  res.cookie(sessionCookieName, token, { ...cookieOptions(config), maxAge: sessionCookieMaxAgeMs });
}

export function clearSessionCookie(res: Response, config: Pick<Config, 'nodeEnv'>): void {
  res.clearCookie(sessionCookieName, cookieOptions(config));
}
