import { AsyncLocalStorage } from 'node:async_hooks';
import type { Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/database.js';
import { startHourlyPrune } from '../db/hourly.js';
import type { Statement } from '../db/sql.js';
import type { EventType } from '../generated/events.js';
import type { ListSpec } from '../http/list-fields.js';
import { listRows, type ListPage, type ListQuery } from '../http/list-query.js';
import { withSummaries } from './summaries.js';

/**
 * Events: what happened, who did it, in which organization, from which request. Each one is
 * written in the transaction of the change that caused it, by the SQL function
 * `authstrap.record_event` (made by the migrations): so a change and its event are kept or
 * rolled back together, and the event's webhook deliveries (src/events/webhooks.ts) go into the
 * outbox in the same transaction too.
 *
 * - Data events (`project.created`, `project.updated` with the names of the changed fields,
 *   `project.deleted`; `organization.*`, `member.*`) are written by a trigger on the table, so
 *   every path that changes a row records them: the routes, the service key, your own SQL.
 * - Auth events (`user.signed_up`, `session.signed_in`, ...) are written by the auth flows
 *   (src/auth/), with `recordEvent` below.
 *
 * Who and from where: the caller's user id is the scope's (`authstrap.user_id`, db/scope.ts);
 * the request id, IP address, user agent, and the actor when it is not a signed-in user, travel
 * in the transaction setting `authstrap.request` (eventContextStatement). An event never holds a
 * secret: password hashes and tokens live in tables that have no events, and a schema field
 * marked `secret` is left out of a record.
 */

/**
 * What code records: one of the types of src/generated/events.ts (the auth flows', the webhook
 * routes'), or one of your own (`report.exported`), recorded and delivered the same way but not
 * listed in the OpenAPI document or the typed client.
 */
export type AuthEventType = EventType | (string & {});

/** Who acted, when it is not the signed-in user of the transaction's scope. */
export type Actor = { actorType: 'user' | 'machine_key' | 'directory'; actorId: string } | { actorType: 'service' | 'system'; actorId?: undefined };

/** Where a change came from: the request, and who made it. Stored with each of its events. */
export interface EventContext {
  requestId?: string;
  ipAddress?: string;
  userAgent?: string;
  actorType?: Actor['actorType'];
  actorId?: string;
  /**
   * The operator signed in as the user (an impersonation session: docs/operator.md): every event
   * the request records says so in its `data.impersonatedBy`.
   */
  impersonatedBy?: string;
}

/**
 * The request's id, address and user agent, and its caller when it is known here: the actor, and
 * the operator behind an impersonation session. (A tenant route's caller is often found only by
 * its statement: scope.ts's caller lookup adds the operator then.)
 */
export function requestContext(req: Pick<Request, 'ip' | 'header' | 'caller'> & { id?: string }, actor?: Actor): EventContext {
  const impersonatedBy = req.caller?.kind === 'user' ? req.caller.session.impersonatedBy : null;
  return { requestId: req.id, ipAddress: req.ip, userAgent: req.header('user-agent')?.slice(0, 512), ...actor, ...(impersonatedBy ? { impersonatedBy } : {}) };
}

/**
 * Sets the context for the rest of the transaction: every event it records, by a trigger or by
 * recordEvent, carries it. Sent in the round trip of a request's statement (tenant.guard.ts).
 */
export const eventContextStatement = (context: EventContext): Statement => ({
  text: `SELECT set_config('authstrap.request', $1, true)`,
  params: [JSON.stringify(context)],
});

/** See eventContextStatement; for a transaction of the auth flows. */
export async function setEventContext(tx: Queryable, context: EventContext): Promise<void> {
  const statement = eventContextStatement(context);
  await tx.query(statement.text, statement.params);
}

export interface NewEvent {
  type: AuthEventType;
  organizationId?: string | null;
  /** The user the event is about: it shows in their security events (GET /api/auth/security-events). */
  userId?: string | null;
  entity?: string;
  entityId?: string;
  /** What else is worth knowing. Never a secret: no password, hash, token or link. */
  data?: Record<string, unknown>;
}

/** Records an event in `tx`: it exists only if `tx` commits. The context is the transaction's unless given. */
export async function recordEvent(tx: Queryable, event: NewEvent, context?: EventContext): Promise<string> {
  const { rows } = await tx.query<{ id: string }>(`SELECT authstrap.record_event($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb) AS "id"`, [
    event.type,
    event.organizationId ?? null,
    event.userId ?? null,
    event.entity ?? null,
    event.entityId ?? null,
    JSON.stringify(event.data ?? {}),
    context ? JSON.stringify(context) : null,
  ]);
  return rows[0]!.id;
}

/** An event as the table holds it. */
export interface StoredEvent {
  id: string;
  type: string;
  organizationId: string | null;
  userId: string | null;
  actorType: string;
  actorId: string | null;
  entity: string | null;
  entityId: string | null;
  data: Record<string, unknown>;
  requestId: string | null;
  ipAddress: string | null;
  userAgent: string | null;
  createdAt: Date;
}

/** An event as the audit log and the security events answer it: with `summary`, what happened in a sentence (sentences.ts). */
export interface AuditEvent extends StoredEvent {
  summary: string;
}

/** The event log through the one list-query module: filter by type, actor, entity, time; newest first. */
export const auditEventListSpec: ListSpec = {
  entity: 'AuditEvent',
  table: 'authstrap_event',
  selectList: `"id", "type", "organizationId", "userId", "actorType", "actorId", "entity", "entityId", "data", "requestId", "ipAddress", "userAgent", "createdAt"`,
  fields: {
    type: { column: 'type', type: 'string' },
    actorType: { column: 'actorType', type: 'string', values: ['user', 'machine_key', 'service', 'system', 'directory'] },
    actorId: { column: 'actorId', type: 'string', nullable: true },
    userId: { column: 'userId', type: 'uuid', nullable: true },
    entity: { column: 'entity', type: 'string', nullable: true },
    entityId: { column: 'entityId', type: 'string', nullable: true },
    requestId: { column: 'requestId', type: 'string', nullable: true },
    createdAt: { column: 'createdAt', type: 'datetime' },
  },
  defaultSort: 'createdAt',
  searchColumns: [],
  createdAtColumn: 'createdAt',
};

/**
 * A user's own security events (sign-ins, failed ones, password and address changes, sessions
 * ended, invitations answered), whichever organization they were in: row-level security lets a
 * transaction that names the user see the events about them.
 */
export function listSecurityEvents(db: Database, userId: string, query: ListQuery): Promise<ListPage<AuditEvent>> {
  return db.transaction(async (tx) => {
    await tx.query(`SELECT set_config('authstrap.user_id', $1, true)`, [userId]);
    const page = await listRows<StoredEvent>(tx, auditEventListSpec, query, { userId });
    return { ...page, rows: await withSummaries(tx, page.rows) };
  });
}

/**
 * Deletes events past EVENTS_RETENTION_DAYS, hourly, in every instance (db/hourly.ts). Requests
 * cannot delete events; `authstrap.prune_events` can.
 */
export function startEventRetention({ db, logger, retentionDays }: { db: Database; logger: Logger; retentionDays: number }) {
  return startHourlyPrune({ db, logger, statement: 'SELECT authstrap.prune_events($1) AS "pruned"', params: [retentionDays], what: `events older than ${retentionDays} days (EVENTS_RETENTION_DAYS)` });
}

/**
 * The context of the request being served, for the auth flows' events: set by `eventContext` on
 * /api/auth, read by recordEvent. Other routes send theirs with their statements instead.
 */
const requestContexts = new AsyncLocalStorage<EventContext>();

export const eventContext = (): RequestHandler => (req, _res, next) => requestContexts.run(requestContext(req), next);

/** The context `eventContext` keeps for the request being served (empty outside one). */
export const currentRequestContext = (): EventContext => ({ ...requestContexts.getStore() });

/**
 * Records an auth flow's event in `tx` (it exists only if `tx` commits), done by `actor`, and
 * makes the request's context the transaction's: the data events the same transaction records
 * later (a new organization, a membership) carry it too.
 */
export async function recordAuthEvent(tx: Queryable, event: NewEvent, actor: Actor): Promise<string> {
  const context: EventContext = { ...requestContexts.getStore(), ...actor };
  const { rows } = await tx.query<{ id: string }>(
    `SELECT set_config('authstrap.request', $7, true), authstrap.record_event($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb) AS "id"`,
    [event.type, event.organizationId ?? null, event.userId ?? null, event.entity ?? null, event.entityId ?? null, JSON.stringify(event.data ?? {}), JSON.stringify(context)],
  );
  return rows[0]!.id;
}

/** The signed-in user as the actor of an auth event. */
export const byUser = (userId: string): Actor => ({ actorType: 'user', actorId: userId });
