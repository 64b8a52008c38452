import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Config } from '../config.js';

/**
 * How a client presents its session: `Authorization: Bearer <token>`, the `session` cookie, or
 * the cookie Better Auth sets when it runs on this backend through @authstrap/better-auth-adapter
 * (see docs/better-auth.md). This file is yours: the generator created it once.
 */

export const sessionCookieName = 'session';
/**
 * Better Auth's session cookie: `<prefix>.session_token`, with `__Secure-` in front when its
 * base URL is https. Change the prefix here if you set `advanced.cookiePrefix` in Better Auth.
 */
const betterAuthCookiePrefix = 'better-auth';
const betterAuthCookieNames = [`__Secure-${betterAuthCookiePrefix}.session_token`, `${betterAuthCookiePrefix}.session_token`];
const sessionCookieMaxAgeMs = 7 * 24 * 60 * 60 * 1000;

export function bearerToken(req: Request): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '');
  return match?.[1];
}

/** What the database keeps of a session secret (and of an invitation's): its SHA-256, never the secret. */
export const hashToken = (token: string): string => hash('sha256', token, 'hex');

const requestDigests = new WeakMap<Request, { token: string; digest: Buffer }>();

/**
 * The SHA-256 of a token the request presents, worked out once per request: the data limiter
 * counts the session by it (http/rate-limit.ts) and the tenant guard looks the session up by it
 * (hashToken's hex), a few µs each time (bench/README.md, issue 32).
 */
export function requestTokenDigest(req: Request, token: string): Buffer {
  const known = requestDigests.get(req);
  if (known !== undefined && known.token === token) return known.digest;
  const digest = hash('sha256', token, 'buffer');
  requestDigests.set(req, { token, digest });
  return digest;
}

/**
 * A machine key of an organization (auth/machine-keys.ts), as a cron job or another
 * service sends it: the `x-api-key` header, Better Auth's api-key plugin's default. It reaches the
 * organization's tenant-scoped routes only (src/generated/guards/tenant.guard.ts).
 */
export const machineKeyHeader = 'x-api-key';

/** The machine key a request presents, unverified; none when the header is absent or empty. */
export function presentedMachineKey(req: Request): string | undefined {
  const key = req.header(machineKeyHeader)?.trim();
  return key ? key : undefined;
}

/**
 * What the database keeps of a machine key: its SHA-256 in base64url without padding, exactly as
 * Better Auth's api-key plugin hashes its keys, so a key made by either is found by the other.
 */
export const hashMachineKey = (key: string): string => hash('sha256', key, 'base64url');

/** Compares two secrets in time independent of where they differ. */
export function secretsEqual(given: string, expected: string): boolean {
  return timingSafeEqual(hash('sha256', given, 'buffer'), hash('sha256', expected, 'buffer'));
}

/**
 * Whether the request authenticates with the service key (a trusted server, not a user). The
 * rate limiter and the guards all ask: the SHA-256 of the bearer is the request's own (worked out
 * once, and the session lookup uses it too), the key's is worked out once, and the two are
 * compared in constant time.
 */
export function isServiceKeyRequest(req: Request, serviceApiKey: string | undefined): boolean {
  const bearer = bearerToken(req);
  if (bearer === undefined || serviceApiKey === undefined) return false;
  return timingSafeEqual(requestTokenDigest(req, bearer), serviceKeyDigest(serviceApiKey));
}

let serviceKey: { key: string; digest: Buffer } | undefined;
function serviceKeyDigest(key: string): Buffer {
  if (serviceKey?.key !== key) serviceKey = { key, digest: hash('sha256', key, 'buffer') };
  return serviceKey.digest;
}

/**
 * The request's cookies, name -> raw value (the first of a repeated name), read without a
 * cookie-parsing dependency. Parsed once per request: the CSRF guard, the data limiter and the
 * auth guard all look, for up to three names.
 */
const parsedCookies = new WeakMap<Request, Map<string, string>>();
function cookiesOf(req: Request): Map<string, string> {
  let cookies = parsedCookies.get(req);
  if (!cookies) {
    cookies = new Map();
    for (const part of (req.header('cookie') ?? '').split(';')) {
      const separator = part.indexOf('=');
      const name = separator === -1 ? '' : part.slice(0, separator).trim();
      if (name && !cookies.has(name)) cookies.set(name, part.slice(separator + 1).trim());
    }
    parsedCookies.set(req, cookies);
  }
  return cookies;
}

/** A cookie's value, percent-decoded; none when it is empty or not valid percent-encoding. */
export function cookieValue(req: Request, name: string): string | undefined {
  const value = cookiesOf(req).get(name);
  try {
    return value ? decodeURIComponent(value) : undefined;
  } catch {
    // Not valid percent-encoding, so not a token anyone issued: as if there were no cookie.
    return undefined;
  }
}

/** The `session` cookie's value. */
export const sessionCookie = (req: Request): string | undefined => cookieValue(req, sessionCookieName);

/** Better Auth's signed session cookie, as sent (not verified). */
const betterAuthCookie = (req: Request): string | undefined =>
  betterAuthCookieNames.map((name) => cookieValue(req, name)).find((value) => value !== undefined);

/** Whether the browser sent a session cookie (ours or Better Auth's): what CSRF is about. */
export const hasSessionCookie = (req: Request): boolean => sessionCookie(req) !== undefined || betterAuthCookie(req) !== undefined;

/** Whatever session credential a request carries, unverified: whom the data limiter counts. */
export const sessionCredential = (req: Request): string | undefined => bearerToken(req) ?? sessionCookie(req) ?? betterAuthCookie(req);

/** How the session was presented: only our own cookie is renewed by setting it again. */
export type PresentedSession = { token: string; via: 'bearer' | 'cookie' | 'better-auth-cookie' };

/**
 * The session token a request presents, in this order: a Bearer, the `session` cookie, Better
 * Auth's cookie. Better Auth's values are `<token>.<signature>`, the signature an HMAC-SHA256 of
 * the token with AUTH_SECRET; one that does not verify presents nothing. A Bearer in that signed
 * form (what Better Auth's bearer plugin hands out) is checked the same way.
 */
export function presentedSession(req: Request, config: Pick<Config, 'authSecret'>): PresentedSession | undefined {
  const bearer = bearerToken(req);
  if (bearer !== undefined) {
    const token = bearer.includes('.') ? verifiedBetterAuthToken(bearer, config.authSecret) : bearer;
    return token === undefined ? undefined : { token, via: 'bearer' };
  }
  const own = sessionCookie(req);
  if (own !== undefined) return { token: own, via: 'cookie' };
  const signed = betterAuthCookie(req);
  const token = signed === undefined ? undefined : verifiedBetterAuthToken(signed, config.authSecret);
  return token === undefined ? undefined : { token, via: 'better-auth-cookie' };
}

/** The token of a Better Auth signed value, or undefined when its signature is not AUTH_SECRET's. */
function verifiedBetterAuthToken(signed: string, authSecret: string | undefined): string | undefined {
  const dot = signed.lastIndexOf('.');
  if (!authSecret || dot < 1) return undefined;
  const token = signed.slice(0, dot);
  // Better Auth signs in standard base64; its bearer plugin may hand the value out URL-safe.
  const signature = Buffer.from(signed.slice(dot + 1).replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  const expected = createHmac('sha256', authSecret).update(token).digest();
  return signature.length === expected.length && timingSafeEqual(signature, expected) ? token : undefined;
}

/**
 * The values a presented token may be stored as. Our own sessions keep only the token's SHA-256
 * (64 hex digits). Better Auth's keep the token itself, as Better Auth does in a database of its
 * own (docs/decisions.md says why). A token shaped like a SHA-256 is only ever compared hashed,
 * so a stored hash read from a database leak never works as a token.
 */
export function storedTokenCandidates(token: string, hashed: string = hashToken(token)): string[] {
  return /^[0-9a-f]{64}$/.test(token) ? [hashed] : [hashed, token];
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
