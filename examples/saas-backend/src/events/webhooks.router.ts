import { randomUUID } from 'node:crypto';
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { WebhookSettings } from '../config.js';
import type { Database } from '../db/database.js';
import type { ScopedQueryable } from '../db/scope.js';
import { assertRole } from '../extensions/auth/auth.decorator.js';
import { asCaller, tenantScoped, type TenantDeps } from '../generated/guards/tenant.guard.js';
import { sendData, sendList } from '../http/envelope.js';
import { forbidden, HttpError, notFound, validationFailed } from '../http/errors.js';
import type { ListSpec } from '../http/list-fields.js';
import { listRows, parseListQuery } from '../http/list-query.js';
import { parseBody, parseId } from '../http/validate.js';
import type { Outbox } from '../outbox/outbox.js';
import { recordEvent, requestContext } from './events.js';
import { parseWebhookUrl, RefusedWebhookAddress, resolveWebhookAddress } from './webhook-address.js';
import { webhookSecretSeal } from './webhook-secrets.js';
import { newWebhookSecret, webhookChannelName, type WebhookPayload } from './webhooks.js';

/**
 * The organization's webhook endpoints, for its owners and admins:
 *
 *   GET    /webhook-endpoints                                   the endpoints (never their secrets)
 *   POST   /webhook-endpoints                                   a new one; its secret is in this answer only
 *   PATCH  /webhook-endpoints/:id                               URL, event types, description, enabled
 *   DELETE /webhook-endpoints/:id
 *   POST   /webhook-endpoints/:id/rotate-secret                 a new secret, shown once; the old one signs too for a while
 *   GET    /webhook-endpoints/:id/deliveries                    the delivery log (?status=failed, paged)
 *   POST   /webhook-endpoints/:id/deliveries/:delivery/redeliver   send it again, with the same webhook-id
 *   POST   /webhook-endpoints/:id/test                          a signed `webhook.test` event to this endpoint only
 */

/**
 * The type of the event POST /webhook-endpoints/:id/test sends: to the one endpoint it names,
 * whatever its event types, through the outbox (signed, retried, in its delivery log) like any
 * other. It is no event of the organization: the audit log does not hold it, and no other
 * endpoint receives it.
 */
export const webhookTestEventType = 'webhook.test';

const eventType = z.string().regex(/^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/, 'an event type such as project.created');

export const WebhookEndpointInput = z
  .strictObject({
    url: z.string().max(2048),
    eventTypes: z.array(eventType).max(100).default([]).meta({ description: 'The event types sent to it; empty: every event' }),
    description: z.string().max(500).nullable().optional(),
    enabled: z.boolean().default(true),
  })
  .meta({ id: 'WebhookEndpointInput' });

export const WebhookEndpointUpdate = z
  .strictObject({
    url: z.string().max(2048).optional(),
    eventTypes: z.array(eventType).max(100).optional(),
    description: z.string().max(500).nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .meta({ id: 'WebhookEndpointUpdate' });

/** One day: long enough to deploy a receiver with the new secret, short enough to retire a leaked one. */
const defaultGraceSeconds = 24 * 60 * 60;

export const WebhookSecretRotation = z
  .strictObject({
    graceSeconds: z
      .int()
      .min(0)
      .max(7 * 24 * 60 * 60)
      .default(defaultGraceSeconds)
      .meta({ description: 'How long the old secret keeps signing beside the new one (0: not at all; at most 7 days)' }),
  })
  .meta({ id: 'WebhookSecretRotation' });

// The answers' schemas have no component name: `authstrap verify` takes a route whose list or
// create answers a named schema for a generated collection, and probes it as one.
export const WebhookEndpoint = z
  .object({
    id: z.uuid(),
    url: z.string(),
    description: z.string().nullable(),
    eventTypes: z.array(z.string()),
    enabled: z.boolean(),
    failureCount: z.int().meta({ description: 'Deliveries that failed for good in a row' }),
    disabledReason: z.string().nullable(),
    createdAt: z.date(),
    updatedAt: z.date(),
  });

export const WebhookDelivery = z
  .object({
    id: z.uuid().meta({ description: 'The webhook-id header: the same on every attempt and on a redelivery' }),
    eventId: z.uuid(),
    eventType: z.string(),
    status: z.enum(['pending', 'sent', 'failed']),
    attempts: z.int(),
    lastError: z.string().nullable(),
    nextAttemptAt: z.date(),
    sentAt: z.date().nullable(),
    createdAt: z.date(),
  });

const endpointColumns = `"id", "url", "description", "eventTypes", "enabled", "failureCount", "disabledReason", "createdAt", "updatedAt"`;

/** The delivery log: the outbox's webhook messages of one endpoint, through the one list-query module. */
const deliveryListSpec: ListSpec = {
  entity: 'WebhookDelivery',
  table: 'authstrap_outbox',
  selectList: `"id", "payload"->'event'->>'id' AS "eventId", "payload"->'event'->>'type' AS "eventType", "status", "attempts", "lastError", "nextAttemptAt", "sentAt", "createdAt"`,
  fields: {
    status: { column: 'status', type: 'string', values: ['pending', 'sent', 'failed'] },
    createdAt: { column: 'createdAt', type: 'datetime' },
  },
  defaultSort: 'createdAt',
  searchColumns: [],
  createdAtColumn: 'createdAt',
};

export function webhooksRouter(deps: TenantDeps & { db: Database; outbox: Outbox; settings: WebhookSettings }) {
  const { db, settings } = deps;
  const router = Router();
  // Secrets are stored sealed (webhook-secrets.ts); the answer shows the new one once, in clear.
  const seal = webhookSecretSeal(settings.authSecret);

  /** The caller's database, once they are known to be an owner or admin of the organization. */
  const asAdmin = async (req: Request) => {
    if (req.caller?.kind === 'service') throw forbidden('Webhook endpoints are managed by the owners and admins of an organization, not the service key');
    const caller = asCaller(db, req);
    await caller.checkNow();
    assertRole(req.role, ['owner', 'admin']);
    return caller;
  };

  /** A URL webhooks may go to now (it is checked again on every delivery): 422 otherwise. */
  const checkedUrl = async (raw: string) => {
    try {
      const url = parseWebhookUrl(raw, settings.allowPrivate);
      await resolveWebhookAddress(url, settings.allowPrivate);
      return url.toString();
    } catch (error) {
      if (error instanceof RefusedWebhookAddress) throw validationFailed('This URL cannot receive webhooks', { url: error.message });
      throw validationFailed('This URL cannot receive webhooks', { url: `its name does not resolve (${(error as Error).message})` });
    }
  };

  const endpointOf = async (tx: ScopedQueryable, id: string) => {
    const { rows } = await tx.query(`SELECT ${endpointColumns} FROM "authstrap_webhook_endpoint" WHERE "id" = $1 AND "organizationId" = authstrap.organization_id()`, [id]);
    if (!rows[0]) throw notFound('webhook endpoint', id);
    return rows[0];
  };

  router.get('/', async (req, res) => {
    const caller = await asAdmin(req);
    const { rows } = await caller.query(`SELECT ${endpointColumns} FROM "authstrap_webhook_endpoint" WHERE "organizationId" = authstrap.organization_id() ORDER BY "createdAt", "id"`);
    sendData(res, rows);
  });

  router.post('/', async (req, res) => {
    const caller = await asAdmin(req);
    const input = parseBody('webhook endpoint', WebhookEndpointInput, req);
    const url = await checkedUrl(input.url);
    const secret = newWebhookSecret();
    const created = await caller.transaction(async (tx) => {
      const { rows } = await tx.query<{ id: string }>(
        `INSERT INTO "authstrap_webhook_endpoint" ("organizationId", "url", "description", "eventTypes", "enabled", "secret")
         VALUES (authstrap.organization_id(), $1, $2, $3, $4, $5) RETURNING ${endpointColumns}`,
        [url, input.description ?? null, input.eventTypes, input.enabled, seal.seal(secret)],
      );
      const endpoint = rows[0]!;
      // The URL and event types, never the secret.
      await recordEvent(tx, { type: 'webhook_endpoint.created', organizationId: req.organizationId, entity: 'webhook_endpoint', entityId: endpoint.id, data: { url, eventTypes: input.eventTypes } }, requestContext(req));
      return endpoint;
    });
    // Shown once: only its receiver keeps it from now on.
    sendData(res, { ...created, secret }, 201);
  });

  router.patch('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('webhook endpoint', req.params.id);
    const patch = parseBody('webhook endpoint', WebhookEndpointUpdate, req);
    const url = patch.url === undefined ? undefined : await checkedUrl(patch.url);
    const updated = await caller.transaction(async (tx) => {
      await endpointOf(tx, id);
      const { rows } = await tx.query(
        `UPDATE "authstrap_webhook_endpoint" SET
           "url" = COALESCE($2, "url"), "eventTypes" = COALESCE($3, "eventTypes"),
           "description" = CASE WHEN $4::boolean THEN $5 ELSE "description" END,
           "enabled" = COALESCE($6, "enabled"),
           -- Enabled again by a person: the count of failures starts over.
           "failureCount" = CASE WHEN $6 THEN 0 ELSE "failureCount" END,
           "disabledReason" = CASE WHEN $6 IS NULL THEN "disabledReason" WHEN $6 THEN NULL ELSE 'disabled by an owner or admin' END,
           "updatedAt" = now()
         WHERE "id" = $1 RETURNING ${endpointColumns}`,
        [id, url ?? null, patch.eventTypes ?? null, patch.description !== undefined, patch.description ?? null, patch.enabled ?? null],
      );
      const changedFields = Object.keys(patch).sort();
      await recordEvent(tx, { type: 'webhook_endpoint.updated', organizationId: req.organizationId, entity: 'webhook_endpoint', entityId: id, data: { changedFields } }, requestContext(req));
      return rows[0];
    });
    sendData(res, updated);
  });

  router.delete('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('webhook endpoint', req.params.id);
    await caller.transaction(async (tx) => {
      const { rowCount } = await tx.query(`DELETE FROM "authstrap_webhook_endpoint" WHERE "id" = $1 AND "organizationId" = authstrap.organization_id()`, [id]);
      if (rowCount === 0) throw notFound('webhook endpoint', id);
      await recordEvent(tx, { type: 'webhook_endpoint.deleted', organizationId: req.organizationId, entity: 'webhook_endpoint', entityId: id }, requestContext(req));
    });
    res.status(204).end();
  });

  // A new secret, shown once. Deliveries are signed with both until the grace period ends (one
  // signature per secret in webhook-signature), so a receiver switches without losing one; a
  // rotation within the grace period of the one before retires that one's old secret at once.
  router.post('/:id/rotate-secret', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('webhook endpoint', req.params.id);
    const { graceSeconds } = parseBody('secret rotation', WebhookSecretRotation, req);
    const secret = newWebhookSecret();
    const rotated = await caller.transaction(async (tx) => {
      await endpointOf(tx, id);
      const { rows } = await tx.query<{ previousSecretExpiresAt: Date | null }>(
        `UPDATE "authstrap_webhook_endpoint" SET
           "previousSecret" = CASE WHEN $3 > 0 THEN "secret" END,
           "previousSecretExpiresAt" = CASE WHEN $3 > 0 THEN now() + make_interval(secs => $3) END,
           "secret" = $2, "updatedAt" = now()
         WHERE "id" = $1 RETURNING ${endpointColumns}, "previousSecretExpiresAt"`,
        [id, seal.seal(secret), graceSeconds],
      );
      // That it changed and until when the old one signs; never either secret.
      const previousSecretExpiresAt = rows[0]!.previousSecretExpiresAt;
      await recordEvent(tx, { type: 'webhook_endpoint.updated', organizationId: req.organizationId, entity: 'webhook_endpoint', entityId: id, data: { changedFields: ['secret'], previousSecretExpiresAt } }, requestContext(req));
      return rows[0]!;
    });
    sendData(res, { ...rotated, secret });
  });

  router.get('/:id/deliveries', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('webhook endpoint', req.params.id);
    const query = parseListQuery(req.query, deliveryListSpec);
    // The endpoint is the organization's (row-level security says so too); its deliveries are the outbox's.
    await endpointOf(caller, id);
    sendList(res, await listRows(caller, deliveryListSpec, query, { channel: webhookChannelName }, [{ sql: (placeholder) => `"payload"->>'endpointId' = ${placeholder}`, value: id }]));
  });

  router.post('/:id/deliveries/:deliveryId/redeliver', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('webhook endpoint', req.params.id);
    const deliveryId = parseId('webhook delivery', req.params.deliveryId);
    await endpointOf(caller, id);
    // The same message again, from its first attempt: the same webhook-id, so a receiver that has it drops it.
    const { rows } = await caller.query(
      `UPDATE "authstrap_outbox" SET "status" = 'pending', "attempts" = 0, "nextAttemptAt" = now(), "lockedUntil" = NULL, "lastError" = NULL, "sentAt" = NULL
        WHERE "id" = $1 AND "channel" = $2 AND "payload"->>'endpointId' = $3 AND "status" <> 'pending'
        RETURNING "id", "payload"->'event'->>'id' AS "eventId", "payload"->'event'->>'type' AS "eventType", "status", "attempts", "lastError", "nextAttemptAt", "sentAt", "createdAt"`,
      [deliveryId, webhookChannelName, id],
    );
    if (!rows[0]) throw new HttpError(404, 'NOT_FOUND', `No finished delivery with id '${deliveryId}' for this endpoint (one still pending is being retried already)`);
    deps.outbox.wake();
    sendData(res, rows[0], 202);
  });

  router.post('/:id/test', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('webhook endpoint', req.params.id);
    const delivery = await caller.transaction(async (tx) => {
      const endpoint = await endpointOf(tx, id);
      // The worker sends nothing to a disabled endpoint: say so now rather than fail the delivery later.
      if (!endpoint.enabled) throw new HttpError(409, 'CONFLICT', 'This endpoint is disabled: enable it first to send it a test event');
      const { ipAddress, userAgent, requestId } = requestContext(req);
      const event: WebhookPayload['event'] = {
        id: randomUUID(),
        type: webhookTestEventType,
        organizationId: req.organizationId!,
        userId: null,
        actorType: 'user',
        actorId: req.scope?.userId || null,
        entity: 'webhook_endpoint',
        entityId: id,
        data: { message: 'A test event, sent from the webhook settings: nothing changed.' },
        requestId: requestId ?? null,
        ipAddress: ipAddress ?? null,
        userAgent: userAgent ?? null,
        createdAt: new Date().toISOString(),
      };
      const payload: WebhookPayload = { endpointId: id, organizationId: req.organizationId!, event };
      const { rows } = await tx.query(
        `INSERT INTO "authstrap_outbox" ("channel", "payload") VALUES ($1, $2::jsonb)
         RETURNING "id", "payload"->'event'->>'id' AS "eventId", "payload"->'event'->>'type' AS "eventType", "status", "attempts", "lastError", "nextAttemptAt", "sentAt", "createdAt"`,
        [webhookChannelName, JSON.stringify(payload)],
      );
      return rows[0];
    });
    deps.outbox.wake();
    sendData(res, delivery, 202);
  });

  return tenantScoped(deps, router);
}
