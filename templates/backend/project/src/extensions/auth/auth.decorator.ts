import type { Request, RequestHandler } from 'express';
import { forbidden, HttpError } from '../../http/errors.js';
import type { Caller, PublicUser, Role } from '../../auth/types.js';

/**
 * What a route requires of its caller, written in front of its handler:
 *
 *   router.delete('/:id', requires.role('owner', 'admin'), handler)
 *
 * The auth guard has resolved the caller (401 when there is none) and, on tenant-scoped routes,
 * the scope guard has resolved the organization and the caller's role there. This file is
 * yours: the generator created it once and never writes it again.
 */

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by the auth guard. */
      caller?: Caller;
      /** Set by the scope guard: the organization this request acts in, and the caller's role there. */
      organizationId?: string;
      role?: Role;
    }
  }
}

export function callerOf(req: Request): Caller {
  if (!req.caller) throw new HttpError(401, 'UNAUTHORIZED', 'Sign in first');
  return req.caller;
}

/** The signed-in user; the service key is not a user. */
export function userOf(req: Request): PublicUser {
  const caller = callerOf(req);
  if (caller.kind !== 'user') throw forbidden(`This route needs a signed-in user, not ${caller.kind === 'key' ? 'a machine key' : 'the service key'}`);
  return caller.user;
}

/** Throws 403 unless `role` is one of `allowed`. */
export function assertRole(role: Role | undefined, allowed: Role[]): void {
  if (!role || !allowed.includes(role)) {
    throw forbidden(`This needs the ${allowed.join(' or ')} role in this organization`);
  }
}

export const requires = {
  /** A signed-in user (any role). */
  signedIn: ((req, _res, next) => {
    userOf(req);
    next();
  }) as RequestHandler,

  /** One of these roles in the request's organization (needs the scope guard in front). */
  role(...allowed: Role[]): RequestHandler {
    return (req, _res, next) => {
      assertRole(req.role, allowed);
      next();
    };
  },

  /** The trusted server's key: `Authorization: Bearer <SERVICE_API_KEY>`. */
  serviceKey: ((req, _res, next) => {
    if (callerOf(req).kind !== 'service') throw forbidden('Only a trusted server (the service key) may do this');
    next();
  }) as RequestHandler,
};
