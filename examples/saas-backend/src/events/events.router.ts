import { Router, type Request } from 'express';
import type { Database } from '../db/database.js';
import { assertRole } from '../extensions/auth/auth.decorator.js';
import { asCaller, parsedAfterChecks, tenantScoped } from '../generated/guards/tenant.guard.js';
import type { CallerDeps } from '../generated/guards/auth.guard.js';
import { sendList } from '../http/envelope.js';
import { forbidden } from '../http/errors.js';
import { listRows, parseListQuery } from '../http/list-query.js';
import { auditEventListSpec, type AuditEvent } from './events.js';

/**
 * GET /audit-events: the organization's event log, for its owners and admins, filtered and paged
 * by the one list-query module (?type=, ?actorId=, ?entity=, ?entityId=, ?createdAt[gte]=,
 * ?createdAt[lt]=, ?page=, ?limit=). Row-level security shows the rows of the caller's own
 * organization only, and only to an owner or admin, whatever this route's filter says.
 */
export function auditEventsRouter(deps: CallerDeps & { db: Database }) {
  const router = Router();
  router.get('/', async (req, res) => {
    const caller = callerOf(deps.db, req);
    const query = await parsedAfterChecks(caller, () => parseListQuery(req.query, auditEventListSpec));
    await caller.checkNow();
    assertRole(req.role, ['owner', 'admin']);
    sendList(res, await listRows<AuditEvent>(caller, auditEventListSpec, query, {}, [{ sql: '"organizationId" = authstrap.organization_id()' }]));
  });
  return tenantScoped(deps, router);
}

/** The database as this request's signed-in user; the service key reads no audit log (it belongs to no organization). */
function callerOf(db: Database, req: Request) {
  if (req.caller?.kind === 'service') throw forbidden('The audit log is for the owners and admins of an organization, not the service key');
  return asCaller(db, req);
}
