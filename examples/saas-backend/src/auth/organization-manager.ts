import type { Request } from 'express';
import type { Config } from '../config.js';
import { noOrganization, notAMember, organizationHeader } from '../generated/guards/scope.guard.js';
import { forbidden, HttpError } from '../http/errors.js';
import { presentedSession } from '../http/session-token.js';
import type { Role, SessionResolver } from './types.js';

/** Who manages something of an organization under /api/auth (its machine keys, its invitations). */
export interface OrganizationManager {
  organizationId: string;
  role: Extract<Role, 'owner' | 'admin'>;
  userId: string;
  /** The operator signed in as the user (an impersonation session), else null. */
  impersonatedBy: string | null;
}

/**
 * The organization the request acts in (x-organization-id, or the session's active organization)
 * and the caller, an owner or admin there: 401 without a session, 400 without an organization,
 * 403 for anyone else, saying `managedBy` (what only owners and admins may do).
 */
export async function organizationManager(req: Request, { auth, config }: { auth: SessionResolver; config: Config }, managedBy: string): Promise<OrganizationManager> {
  const header = req.header('x-organization-id') === undefined ? undefined : organizationHeader(req);
  const presented = presentedSession(req, config);
  const resolved = presented ? await auth.resolveSession(presented.token, header) : null;
  if (!resolved) throw new HttpError(401, 'UNAUTHORIZED', 'Sign in first: send the session cookie or an Authorization: Bearer token');
  if (!header && !resolved.session.activeOrganizationId) throw noOrganization();
  if (!resolved.membership) throw notAMember();
  const { organizationId, role } = resolved.membership;
  if (role !== 'owner' && role !== 'admin') throw forbidden(managedBy);
  return { organizationId, role, userId: resolved.user.id, impersonatedBy: resolved.session.impersonatedBy };
}
