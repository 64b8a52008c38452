import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { eventTypes, tableEventTypes } from '../generated/events.js';
import { auditEventListSpec } from './events.js';
import { WebhookDelivery, WebhookEndpoint, WebhookEndpointInput, WebhookEndpointUpdate, WebhookSecretRotation, webhookTestEventType } from './webhooks.router.js';

/**
 * Events in the OpenAPI document: every event type in its `webhooks` section (OpenAPI 3.1), with
 * the body an endpoint receives and the Standard Webhooks headers; and the routes of the audit
 * log and of the webhook endpoints. Entity events are registered by the generated openapi.ts, one
 * entity at a time; the auth events here.
 */

const signatureHeaders = z.object({
  'webhook-id': z.string().meta({ description: 'The delivery id: the same on every attempt and on a redelivery. Drop a delivery whose id you have seen.' }),
  'webhook-timestamp': z.string().meta({ description: 'When this attempt was signed, in seconds since 1970. Refuse one far from now (replays).' }),
  'webhook-signature': z.string().meta({ description: 'v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>", keyed with the base64-decoded secret after whsec_>' }),
});

const actor = z.object({
  type: z.enum(['user', 'machine_key', 'service', 'system', 'directory']),
  id: z.string().nullable().meta({ description: "The user's id when a user acted" }),
});

/** The body every endpoint receives, around `data`. */
const eventBody = (type: string, data: z.ZodType) =>
  z
    .object({
      id: z.uuid().meta({ description: 'The event id (the same in the audit log); several endpoints get the same event id under different webhook-ids' }),
      type: z.literal(type),
      timestamp: z.iso.datetime().meta({ description: 'When the change was made (deliveries are not ordered: this is)' }),
      organizationId: z.uuid().nullable(),
      data,
    })
    .meta({ id: `Event_${type.replace(/\./g, '_')}` });

function registerEvent(registry: OpenAPIRegistry, type: string, summary: string, data: z.ZodType) {
  registry.registerWebhook({
    method: 'post',
    path: type,
    // `project.created` -> onProjectCreated, `session.sign_in_failed` -> onSessionSignInFailed.
    operationId: `on${type.split(/[._]/).map((word) => word[0]!.toUpperCase() + word.slice(1)).join('')}`,
    summary,
    tags: ['events'],
    request: { headers: signatureHeaders, body: { content: { 'application/json': { schema: eventBody(type, data) } } } },
    responses: { 200: { description: 'Any 2xx answer acknowledges the delivery; anything else (or none within WEBHOOK_TIMEOUT_MS) is retried' } },
  });
}

const common = { actor, userId: z.uuid().nullable(), entity: z.string().nullable(), entityId: z.string().nullable() };

/** `<prefix>.created`, `.updated` and `.deleted` of one entity, with its record as the API returns it. */
export function registerEntityWebhooks(registry: OpenAPIRegistry, { prefix, entity, record }: { prefix: string; entity: string; record: z.ZodType }) {
  registerEvent(registry, `${prefix}.created`, `${entity} created`, z.object({ ...common, record: record.meta({ description: 'The row as stored (secret fields left out)' }) }));
  registerEvent(registry, `${prefix}.updated`, `${entity} changed`, z.object({ ...common, changedFields: z.array(z.string()).meta({ description: 'The columns whose value changed' }), previous: z.record(z.string(), z.unknown()).meta({ description: 'The changed columns\' values before the change (secret fields left out)' }), record }));
  registerEvent(registry, `${prefix}.deleted`, `${entity} deleted`, z.object({ ...common, record: record.meta({ description: 'The row as it was (secret fields left out)' }) }));
}

/** An event as the audit logs answer it (the organization's, a user's own, an operator's view of an organization's). */
export const AuditEvent = z
  .object({
    id: z.uuid(),
    type: z.string(),
    organizationId: z.uuid().nullable(),
    userId: z.uuid().nullable(),
    actorType: z.enum(['user', 'machine_key', 'service', 'system', 'directory']),
    actorId: z.string().nullable(),
    entity: z.string().nullable(),
    entityId: z.string().nullable(),
    data: z.record(z.string(), z.unknown()),
    requestId: z.string().nullable(),
    ipAddress: z.string().nullable(),
    userAgent: z.string().nullable(),
    createdAt: z.date(),
    summary: z.string().meta({ description: 'What happened, in a sentence a person reads ("Olivia Oakes changed Ivy Invitee\'s role from member to admin"), with the names of the users, keys and directories it names as they are now: plain text, never HTML' }),
  });

/** The auth events, and the routes of the audit log, the security events and the webhook endpoints. */
export function registerEventRoutes(registry: OpenAPIRegistry): void {
  // The tables' events are registered with their records' schemas by the generated openapi.ts.
  for (const [type, summary] of Object.entries(eventTypes)) {
    if (!tableEventTypes.includes(type as keyof typeof eventTypes)) registerEvent(registry, type, summary, z.object(common).catchall(z.unknown()));
  }
  registerEvent(registry, webhookTestEventType, 'A test event, sent to one endpoint by POST /webhook-endpoints/{id}/test (never to others, not in the audit log)', z.object({ ...common, message: z.string() }));

  // Unnamed, as the webhook endpoints' (webhooks.router.ts): not a generated collection for `authstrap verify`.
  const meta = z.object({ page: z.int(), limit: z.int(), total: z.int(), totalPages: z.int() });
  const list = (item: z.ZodType) => ({ content: { 'application/json': { schema: z.object({ success: z.literal(true), data: z.array(item), meta }) } } });
  const one = (item: z.ZodType) => ({ content: { 'application/json': { schema: z.object({ success: z.literal(true), data: item }) } } });
  const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
  const filters = z.object({
    page: z.int().min(1).optional(),
    limit: z.int().min(1).max(100).optional(),
    order: z.enum(['asc', 'desc']).optional(),
    ...Object.fromEntries(Object.keys(auditEventListSpec.fields).map((field) => [field, z.string().optional()])),
    'createdAt[gte]': z.iso.datetime().optional(),
    'createdAt[lt]': z.iso.datetime().optional(),
  });
  const tenant = z.object({ 'x-organization-id': z.uuid().optional() });
  const adminOnly = { 401: { description: 'Not signed in' }, 403: { description: 'Not an owner or admin of the organization' } };
  const id = z.object({ id: z.uuid() });

  registry.registerPath({ method: 'get', path: '/audit-events', operationId: 'listAuditEvents', tags: ['events'], summary: "The organization's audit log, newest first (owners and admins)", request: { query: filters, headers: tenant }, responses: { 200: { description: 'Events', ...list(AuditEvent) }, ...adminOnly } });
  const { page: _page, limit: _limit, order: _order, ...rangeFilters } = filters.shape;
  const range = z.object(rangeFilters);
  const perDay = z.object({ day: z.string().meta({ description: 'The day in UTC, YYYY-MM-DD' }), count: z.int() });
  registry.registerPath({ method: 'get', path: '/audit-events/per-day', operationId: 'countAuditEventsPerDay', tags: ['events'], summary: 'How many events each day (UTC) of the filtered range had, oldest first; days without one are left out (owners and admins)', request: { query: range, headers: tenant }, responses: { 200: { description: 'Counts per day', ...one(z.array(perDay)) }, 400: { description: 'A filter the audit log does not have, or a bad value' }, ...adminOnly } });
  registry.registerPath({ method: 'get', path: '/audit-events/export.csv', operationId: 'exportAuditEvents', tags: ['events'], summary: 'Every event of the filtered range as CSV, newest first (owners and admins)', description: 'Streamed, all pages at once. Fields are quoted as RFC 4180 says; one that starts with =, +, -, @, a tab or a carriage return gets a leading apostrophe, so that a spreadsheet does not run it as a formula. `data` is the event\'s JSON.', request: { query: range, headers: tenant }, responses: { 200: { description: 'The events: id, createdAt, type, actorType, actorId, entity, entityId, userId, requestId, ipAddress, userAgent, data, summary (the sentence the list answers)', content: { 'text/csv': { schema: z.string() } } }, 400: { description: 'A filter the audit log does not have, or a bad value' }, ...adminOnly } });
  registry.registerPath({ method: 'get', path: '/api/auth/security-events', operationId: 'listSecurityEvents', tags: ['auth'], summary: "The signed-in user's own security events: sign-ins and failed ones, password and address changes, sessions ended", request: { query: filters }, responses: { 200: { description: 'Events', ...list(AuditEvent) }, 401: { description: 'Not signed in' } } });

  const tags = ['webhooks'];
  registry.registerPath({ method: 'get', path: '/webhook-endpoints', operationId: 'listWebhookEndpoints', tags, summary: "The organization's webhook endpoints (never their secrets)", request: { headers: tenant }, responses: { 200: { description: 'Endpoints', ...one(z.array(WebhookEndpoint)) }, ...adminOnly } });
  registry.registerPath({ method: 'post', path: '/webhook-endpoints', operationId: 'createWebhookEndpoint', tags, summary: 'Add an endpoint: https only, to a public address. Its secret is in this answer only.', request: { headers: tenant, body: json(WebhookEndpointInput) }, responses: { 201: { description: 'Added', ...one(WebhookEndpoint.extend({ secret: z.string().meta({ description: 'whsec_...: shown once' }) })) }, ...adminOnly, 422: { description: 'Not a URL webhooks may go to (details.url says why)' } } });
  registry.registerPath({ method: 'patch', path: '/webhook-endpoints/{id}', operationId: 'updateWebhookEndpoint', tags, summary: 'Change, disable or enable an endpoint (enabling starts its failure count over)', request: { headers: tenant, params: id, body: json(WebhookEndpointUpdate) }, responses: { 200: { description: 'Changed', ...one(WebhookEndpoint) }, ...adminOnly, 404: { description: 'No such endpoint in this organization' } } });
  registry.registerPath({ method: 'delete', path: '/webhook-endpoints/{id}', operationId: 'deleteWebhookEndpoint', tags, summary: 'Remove an endpoint; its pending deliveries fail', request: { headers: tenant, params: id }, responses: { 204: { description: 'Removed' }, ...adminOnly, 404: { description: 'No such endpoint in this organization' } } });
  registry.registerPath({ method: 'post', path: '/webhook-endpoints/{id}/rotate-secret', operationId: 'rotateWebhookSecret', tags, summary: 'A new signing secret, shown once; the old one keeps signing beside it for graceSeconds (default a day)', description: 'While both sign, webhook-signature carries one v1 signature per secret, separated by a space: a receiver with either secret verifies the delivery.', request: { headers: tenant, params: id, body: json(WebhookSecretRotation) }, responses: { 200: { description: 'Rotated', ...one(WebhookEndpoint.extend({ secret: z.string().meta({ description: 'whsec_...: the new secret, shown once' }), previousSecretExpiresAt: z.date().nullable().meta({ description: 'Until when the old secret signs too (null: it no longer does)' }) })) }, ...adminOnly, 404: { description: 'No such endpoint in this organization' }, 422: { description: 'graceSeconds out of range (0 to 604800)' } } });
  registry.registerPath({ method: 'get', path: '/webhook-endpoints/{id}/deliveries', operationId: 'listWebhookDeliveries', tags, summary: "An endpoint's delivery log, newest first (?status=failed)", request: { headers: tenant, params: id, query: z.object({ status: z.enum(['pending', 'sent', 'failed']).optional(), page: z.int().min(1).optional(), limit: z.int().min(1).max(100).optional() }) }, responses: { 200: { description: 'Deliveries', ...list(WebhookDelivery) }, ...adminOnly, 404: { description: 'No such endpoint in this organization' } } });
  registry.registerPath({ method: 'post', path: '/webhook-endpoints/{id}/test', operationId: 'sendWebhookTestEvent', tags, summary: `Send this endpoint alone a signed ${webhookTestEventType} event, through the outbox: it shows in its delivery log`, request: { headers: tenant, params: id }, responses: { 202: { description: 'On its way', ...one(WebhookDelivery) }, ...adminOnly, 404: { description: 'No such endpoint in this organization' }, 409: { description: 'The endpoint is disabled' } } });
  registry.registerPath({ method: 'post', path: '/webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver', operationId: 'redeliverWebhook', tags, summary: 'Send a sent or failed delivery again, with the same webhook-id', request: { headers: tenant, params: z.object({ id: z.uuid(), deliveryId: z.uuid() }) }, responses: { 202: { description: 'On its way again', ...one(WebhookDelivery) }, ...adminOnly, 404: { description: 'No such finished delivery of this endpoint' } } });
}
