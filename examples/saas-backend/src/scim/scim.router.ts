import express, { Router, type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import type { Invitations } from '../auth/invitations.js';
import type { Config } from '../config.js';
import type { Database, PoolStats, Queryable } from '../db/database.js';
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
 *   SCIM_MAX_CONCURRENT_PER_DIRECTORY in flight, SCIM_MAX_CONCURRENT_WHILE_BUSY while others use
 *   the pool, SCIM_RATE_LIMIT_MAX a minute; 429 beyond) ->
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

/**
 * How many requests one directory may have in flight on this instance now: its full share while
 * the pool serves nobody else, `maxConcurrentWhileBusy` while someone else holds or waits for a
 * connection. The pool's connections in use, less the directories' own requests, are the others'
 * (a directory's request that has not reached the database yet makes that count low, never high).
 * The embedded database has no pool to share: the full share.
 */
export function directoryAllowance(
  limits: Pick<Config['scim'], 'maxConcurrentPerDirectory' | 'maxConcurrentWhileBusy'>,
  pool: PoolStats | undefined,
  directoriesInFlight: number,
): number {
  if (!pool) return limits.maxConcurrentPerDirectory;
  const others = pool.total - pool.idle + pool.waiting - directoriesInFlight;
  return others > 0 ? Math.min(limits.maxConcurrentWhileBusy, limits.maxConcurrentPerDirectory) : limits.maxConcurrentPerDirectory;
}

export function scimRouter({ db, config, logger, invitations }: ScimDeps): Router {
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
  let directoriesInFlight = 0;
  const perMinute = new Map<string, { windowStart: number; count: number }>();
  /**
   * A directory's share of this instance: a 10,000-user initial sync sends as fast as it is
   * answered, so it gets at most `maxConcurrentPerDirectory` of the pool's connections at a time
   * and `rateLimitMax` requests a minute; beyond, 429 with Retry-After (Okta and Entra ID retry).
   * While anyone else holds or waits for a connection (another organization's requests, the
   * outbox), a directory gets `maxConcurrentWhileBusy`: a sync is background work, and it yields
   * to people rather than take the cores from them (see `directoryAllowance`).
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
    if (busy >= directoryAllowance(config.scim, db.poolStats?.(), directoriesInFlight) || counted.count > rateLimitMax) {
      const seconds = counted.count > rateLimitMax ? Math.ceil((counted.windowStart + 60_000 - now) / 1000) : 1;
      res.setHeader('Retry-After', String(Math.max(1, seconds)));
      return sendScim(res, 429, scimErrorBody(new ScimError(429, 'tooMany', 'Too many requests for this directory at once; try again shortly')));
    }
    inFlight.set(directoryId, busy + 1);
    directoriesInFlight += 1;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      directoriesInFlight -= 1;
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
