import express, { Router, type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import type { Invitations } from '../auth/invitations.js';
import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import { recordEvent, requestContext } from '../events/events.js';
import { HttpError } from '../http/errors.js';
import { refuseInvalidUtf8 } from '../http/json-body.js';
import { bearerToken } from '../http/session-token.js';
import { isUuid } from '../http/validate.js';
import { discoveryRoutes } from './discovery.js';
import { ScimError, scimErrorBody } from './errors.js';
import type { Directory } from './memberships.js';
import { createScimRequestLog } from './request-log.js';
import { scimCallerStatement, scimTokenPrefix, type ScimCallerRow } from './tokens.js';
import { groupRoutes } from './groups.js';
import { userRoutes } from './users.js';

/**
 * The SCIM 2.0 service (RFC 7643, 7644) of each directory, at `/scim/v2/<directory id>`
 * (docs/scim.md; the design in docs/enterprise-identity.md, 5.3 and 6). An identity provider
 * provisions the organization's members here with its directory's bearer token:
 *
 *   request -> SCIM JSON body (its own limit) -> the directory's slot (at most
 *   SCIM_MAX_CONCURRENT_PER_DIRECTORY in flight; while another caller waits for an answer,
 *   SCIM_MAX_CONCURRENT_WHILE_BUSY in flight and SCIM_RATE_WHILE_BUSY a second; SCIM_RATE_LIMIT_MAX
 *   a minute; 429 beyond) ->
 *   a transaction scoped by the token (authstrap.scim_caller: its organization, the role
 *   `directory`) -> the resource's route -> SCIM's answer, or SCIM's error.
 *
 * Answers are SCIM's, not the house envelope: `application/scim+json`, `ListResponse`, and errors
 * in RFC 7644's schema with their `scimType`. The token works here only: every other route's
 * guard does not know it (401), and a session or the service key is a 401 here.
 */

export interface ScimDeps {
  db: Database;
  config: Config;
  logger: Logger;
  /** A person with an account outside the organization's domains is invited by mail (auth/invitations.ts). */
  invitations: DirectoryInvitations;
  /** Whether a caller other than a directory is waiting for an answer now (http/waiting-callers.ts). */
  othersWaiting: () => boolean;
}

export type DirectoryInvitations = Pick<Invitations, 'inviteFromDirectory' | 'mailCommitted'>;

/** The work of one SCIM request, in its transaction, as its directory. */
export type AsDirectory = <T>(req: Request, work: (tx: Queryable, directory: Directory) => Promise<T>) => Promise<T>;

export const scimContentType = 'application/scim+json';

/** Answers a SCIM resource (or list, or error) with SCIM's media type. */
export function sendScim(res: Response, status: number, body: unknown): void {
  res.status(status).type(scimContentType).send(JSON.stringify(body));
}

/** The directory's base URL (`<AUTH_URL>/scim/v2/<id>`): where its resources' `meta.location` point. */
export const baseUrlOf = (config: Config, directoryId: string) => `${config.authUrl}/scim/v2/${directoryId}`;

/** What one directory may do on this instance now (`directoryShare`). */
export interface DirectoryShare {
  /** Requests in flight at once. */
  inFlight: number;
  /** The least time between two of its requests being let in (0: no pacing). */
  gapMs: number;
}

/**
 * One directory's share of this instance now: its full share while nobody else waits for an
 * answer; while someone does, `maxConcurrentWhileBusy` in flight and `rateWhileBusy` requests a
 * second (0: unpaced). Both, because one request in flight, sent again the moment it is answered,
 * still takes a core's share from the people waiting (bench/README.md, "A directory's initial
 * sync": 0.6 of their rates with the concurrency alone, 0.9 paced). "Someone" is a caller of
 * this instance, not a pool connection: the sync's own side work (its request log, its events'
 * fan-out, the outbox) holds connections too, and counted as someone else it paced the sync when
 * nobody was there (206 s instead of 106 for 10,000 users; docs/scim.md, "Limits").
 */
export function directoryShare(limits: Pick<Config['scim'], 'maxConcurrentPerDirectory' | 'maxConcurrentWhileBusy' | 'rateWhileBusy'>, othersWaiting: boolean): DirectoryShare {
  if (!othersWaiting) return { inFlight: limits.maxConcurrentPerDirectory, gapMs: 0 };
  return { inFlight: Math.min(limits.maxConcurrentWhileBusy, limits.maxConcurrentPerDirectory), gapMs: limits.rateWhileBusy > 0 ? 1000 / limits.rateWhileBusy : 0 };
}

export function scimRouter({ db, config, logger, invitations, othersWaiting }: ScimDeps): Router {
  const router = Router();
  const { bodyLimit, rateLimitMax } = config.scim;

  // SCIM's media type and plain JSON (Okta sends either), bounded by SCIM's own limit: a group
  // with thousands of members is one body. Not valid UTF-8: refused, never stored altered.
  router.use(express.json({ type: [scimContentType, 'application/json'], limit: bodyLimit, verify: refuseInvalidUtf8 }));

  // The directory's request log (request-log.ts): requests its token was accepted for, and their outcome.
  const requestLog = createScimRequestLog(db, logger);
  const accepted = new WeakSet<Request>();
  const refusals = new WeakMap<Request, ScimError>();

  const inFlight = new Map<string, number>();
  /** When each directory's last request was let in (the pacing while others wait). */
  const lastLetIn = new Map<string, number>();
  const perMinute = new Map<string, { windowStart: number; count: number }>();
  /**
   * A directory's share of this instance: a 10,000-user initial sync sends as fast as it is
   * answered, so it gets at most `maxConcurrentPerDirectory` of the pool's connections at a time
   * and `rateLimitMax` requests a minute; beyond, 429 with Retry-After (Okta and Entra ID retry).
   * While anyone else waits for an answer (another organization's requests, a person's page), a
   * directory gets `maxConcurrentWhileBusy` in flight and `rateWhileBusy` a second: a sync is
   * background work, and it yields to people rather than take the cores from them (see
   * `directoryShare`).
   * Counted per instance, in memory: what it protects is this instance's pool.
   */
  const directorySlot: RequestHandler = (req, res, next) => {
    const directoryId = String(req.params.directoryId);
    const now = Date.now();
    const window = perMinute.get(directoryId);
    const counted = window && now - window.windowStart < 60_000 ? window : { windowStart: now, count: 0 };
    counted.count += 1;
    perMinute.set(directoryId, counted);
    const busy = inFlight.get(directoryId) ?? 0;
    const share = directoryShare(config.scim, othersWaiting());
    const tooSoon = share.gapMs > 0 && now - (lastLetIn.get(directoryId) ?? 0) < share.gapMs;
    if (busy >= share.inFlight || tooSoon || counted.count > rateLimitMax) {
      const seconds = counted.count > rateLimitMax ? Math.ceil((counted.windowStart + 60_000 - now) / 1000) : 1;
      res.setHeader('Retry-After', String(Math.max(1, seconds)));
      return sendScim(res, 429, scimErrorBody(new ScimError(429, 'tooMany', 'Too many requests for this directory at once; try again shortly')));
    }
    inFlight.set(directoryId, busy + 1);
    lastLetIn.set(directoryId, now);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = (inFlight.get(directoryId) ?? 1) - 1;
      if (left > 0) inFlight.set(directoryId, left);
      else inFlight.delete(directoryId);
    };
    const started = performance.now();
    res.on('finish', () => {
      release();
      if (!accepted.has(req)) return;
      const refused = refusals.get(req);
      requestLog.note({
        directoryId,
        method: req.method,
        path: req.originalUrl.split('?')[0]!.slice(0, 300),
        status: res.statusCode,
        scimType: refused?.scimType,
        detail: refused?.detail,
        durationMs: Math.round(performance.now() - started),
        createdAt: new Date(),
      });
    });
    res.on('close', release);
    next();
  };
  // Windows of directories that went quiet are dropped, so the map stays as small as the active ones.
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, window] of perMinute) if (now - window.windowStart >= 60_000) perMinute.delete(id);
    for (const [id, at] of lastLetIn) if (now - at >= 60_000) lastLetIn.delete(id);
  }, 60_000);
  sweep.unref();

  /**
   * Runs `work` as the directory whose token the request carries, in one transaction: the token
   * is checked by the transaction's first statement (which also answers the directory's default
   * role), which scopes it (db/scope.ts's way, with
   * the role `directory`) and names the directory as the actor of its events. Anything else is
   * a 401 with `WWW-Authenticate: Bearer`, whatever the route.
   */
  const asDirectory: AsDirectory = (req, work) => {
    const directoryId = String(req.params.directoryId);
    const token = bearerToken(req);
    if (!token || !token.startsWith(scimTokenPrefix) || !isUuid(directoryId)) throw unauthorized();
    const context = JSON.stringify(requestContext(req, { actorType: 'directory', actorId: directoryId }));
    // The token's check is sent with the BEGIN (and the pool's role switch): one round trip
    // before the route's own statements, not three.
    const run = async <T>(work: (tx: Queryable, directory: Directory) => Promise<T>) => {
      const tx = await db.begin([scimCallerStatement(token, directoryId, context)]);
      try {
        if (tx.started.error !== undefined) throw tx.started.error;
        const caller = tx.started.results[0]!.rows[0] as ScimCallerRow | undefined;
        if (!caller || caller.outcome !== 'ok') throw unauthorized(caller?.outcome);
        accepted.add(req);
        const result = await work(tx, { id: caller.directoryId, organizationId: caller.organizationId, defaultRole: caller.defaultRole });
        await tx.commit();
        return result;
      } catch (error) {
        await tx.rollback();
        throw error;
      }
    };
    return run(work).catch(async (error: unknown) => {
      // A change refused because it would leave the organization without an owner is on the
      // record (its own transaction: the request's rolled back), so the owners see what the
      // directory tried.
      if (error instanceof ScimError && error.scimType === 'mutability') {
        await run((tx, directory) =>
          recordEvent(tx, { type: 'directory.request_refused', organizationId: directory.organizationId, entity: 'scim_directory', entityId: directory.id, data: { method: req.method, path: req.path, detail: error.detail } }),
        ).catch((failed: unknown) => logger.warn({ err: (failed as Error).message }, 'scim: could not record a refused request'));
      }
      throw error;
    });
  };

  const directory = Router({ mergeParams: true });
  discoveryRoutes(directory, config);
  userRoutes(directory, { asDirectory, config, invitations });
  groupRoutes(directory, { asDirectory, config });
  // Bulk, /Me and POST /.search: not offered (ServiceProviderConfig says so).
  directory.all(['/Bulk', '/Me', '/.search', '/Users/.search', '/Groups/.search'], () => {
    throw new ScimError(501, undefined, 'Not offered by this service: see ServiceProviderConfig');
  });
  directory.use(() => {
    throw new ScimError(404, undefined, 'No such SCIM endpoint');
  });

  router.use('/:directoryId', directorySlot, directory);
  router.use(scimErrors(logger, refusals));
  return router;
}

function unauthorized(outcome?: ScimCallerRow['outcome']): ScimError {
  const detail =
    outcome === 'disabled'
      ? 'This directory is turned off in the organization’s settings'
      : outcome === 'expired'
        ? 'This token was rotated and its overlap has ended: use the new one'
        : 'Send this directory’s SCIM token as Authorization: Bearer scim_…';
  return new ScimError(401, undefined, detail);
}

/** PostgreSQL's unique violation: a userName, externalId or account the directory already has. */
const uniqueViolation = '23505';

/** Every error of a SCIM route, as SCIM's error; what is no client's mistake goes on to the backend's handler (logged, 500 or 503). */
function scimErrors(logger: Logger, refusals: WeakMap<Request, ScimError>): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (error instanceof ScimError) {
      refusals.set(req, error);
      if (error.status === 401) res.setHeader('WWW-Authenticate', 'Bearer realm="scim"');
      return sendScim(res, error.status, scimErrorBody(error));
    }
    if ((error as { code?: unknown }).code === uniqueViolation) {
      return sendScim(res, 409, scimErrorBody(new ScimError(409, 'uniqueness', 'A resource with this userName, externalId or account already exists in this directory')));
    }
    // The body parser's: malformed JSON, too large, wrong encoding.
    const status = (error as { status?: unknown }).status;
    if (error instanceof HttpError || (typeof status === 'number' && status >= 400 && status < 500)) {
      const code = error instanceof HttpError ? error.status : (status as number);
      return sendScim(res, code, scimErrorBody(new ScimError(code, code === 400 ? 'invalidSyntax' : undefined, (error as Error).message || 'Bad request')));
    }
    logger.debug({ err: (error as Error).message, path: req.path }, 'scim: passing an error to the error handler');
    next(error);
  };
}
