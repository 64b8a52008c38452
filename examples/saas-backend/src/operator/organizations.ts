import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router } from 'express';
import { z } from 'zod';
import type { AuditEvent as AuditEventRow } from '../events/events.js';
import { AuditEvent } from '../events/openapi.js';
import { namesOfPage } from '../events/summaries.js';
import { eventSentence, namesFor } from '../events/sentences.js';
import { sendJsonData, sendJsonList } from '../http/envelope.js';
import { notFound } from '../http/errors.js';
import { parseBody, parseId, parseQuery } from '../http/validate.js';
import { actOn, answerOf, listOf, operatorQuery, OptionalReason, pageMeta, ReasonOnly, recentSignInNote, refusedToNonOperators, SearchQuery, searchParameters, type OperatorDeps } from './operator-query.js';

/**
 * The operators' view of organizations (under /api/operator/organizations; docs/operator.md):
 * the search, one organization with what support asks about it, and its audit log. Each reads
 * through its own SQL function (operator-sql.ts in packages/cli), which checks the operator.
 */
export function organizationRoutes(deps: OperatorDeps): Router {
  const router = Router();

  // Every organization, or those whose name or slug contains ?search=, whose id it is, or with a member whose address contains it.
  router.get('/', async (req, res) => {
    const { search, page, limit } = parseQuery('operator organizations', SearchQuery, req.query);
    const found = await operatorQuery<{ total: number; rows: unknown[] }>(deps.db, 'SELECT authstrap.operator_organizations($1, $2, $3, $4) AS "answer"', [req.operator!.userId, search, limit, (page - 1) * limit]);
    sendJsonList(res, { json: JSON.stringify(found.rows), meta: pageMeta(page, limit, found.total) });
  });

  // One organization: members and roles, pending invitations, machine keys (never their hashes), webhook endpoints and how their deliveries fare.
  router.get('/:id', async (req, res) => {
    const id = parseId('Organization', req.params.id);
    const organization = await operatorQuery<unknown>(deps.db, 'SELECT authstrap.operator_organization($1, $2) AS "answer"', [req.operator!.userId, id]);
    if (organization === null) throw notFound('Organization', id);
    sendJsonData(res, JSON.stringify(organization));
  });

  // The organization's audit log, newest first, each event in its sentence as the organization's own owners read it.
  router.get('/:id/events', async (req, res) => {
    const id = parseId('Organization', req.params.id);
    const { type, page, limit } = parseQuery('organization events', OrganizationEventsQuery, req.query);
    const found = await operatorQuery<{ total: number; rows: AuditEventRow[]; directories: Record<string, string> } | null>(
      deps.db,
      'SELECT authstrap.operator_organization_events($1, $2, $3, $4, $5) AS "answer"',
      [req.operator!.userId, id, type, limit, (page - 1) * limit],
    );
    if (found === null) throw notFound('Organization', id);
    // Users and keys have no row-level security; the organization's directories came with the page.
    const book = { ...(await namesOfPage(deps.db, found.rows)), directories: new Map(Object.entries(found.directories)) };
    const rows = found.rows.map((event) => ({ ...event, summary: eventSentence(event, namesFor(event, book)).sentence }));
    sendJsonList(res, { json: JSON.stringify(rows), meta: pageMeta(page, limit, found.total) });
  });

  // A member's role; never the only owner's (that is a transfer of ownership).
  router.post('/:id/members/:userId/role', async (req, res) => {
    const userId = parseId('User', req.params.userId);
    const { role, reason } = parseBody('role change', RoleChangeInput, req);
    sendJsonData(res, JSON.stringify(await actOn(deps, req, 'Organization', 'operator_change_role', [userId, role], reason)));
  });

  // Makes a member the owner; the other owners become admins.
  router.post('/:id/transfer-ownership', async (req, res) => {
    const { userId, reason } = parseBody('ownership transfer', TransferInput, req);
    sendJsonData(res, JSON.stringify(await actOn(deps, req, 'Organization', 'operator_transfer_ownership', [userId], reason)));
  });

  for (const [action, enable] of [['disable', false], ['enable', true]] as const) {
    // A machine key refused from its next request, or taken again.
    router.post(`/:id/machine-keys/:keyId/${action}`, async (req, res) => {
      const keyId = parseId('Machine key', req.params.keyId);
      const { reason } = parseBody(`machine key ${action}`, ReasonOnly, req);
      sendJsonData(res, JSON.stringify(await actOn(deps, req, 'Organization', 'operator_set_key_enabled', [keyId, enable], reason)));
    });
    // A webhook endpoint that gets nothing more, or deliveries again.
    router.post(`/:id/webhook-endpoints/:endpointId/${action}`, async (req, res) => {
      const endpointId = parseId('Webhook endpoint', req.params.endpointId);
      const { reason } = parseBody(`webhook endpoint ${action}`, ReasonOnly, req);
      sendJsonData(res, JSON.stringify(await actOn(deps, req, 'Organization', 'operator_set_webhook_endpoint_enabled', [endpointId, enable], reason)));
    });
  }

  // Deletes the organization with everything in it; { confirm: "<its slug>" }.
  router.delete('/:id', async (req, res) => {
    const { confirm, reason } = parseBody('organization deletion', DeleteOrganizationInput, req);
    sendJsonData(res, JSON.stringify(await actOn(deps, req, 'Organization', 'operator_delete_organization', [confirm], reason)));
  });

  return router;
}

const RoleChangeInput = z.object({ role: z.enum(['owner', 'admin', 'member']), reason: OptionalReason }).strict();
const TransferInput = z.object({ userId: z.uuid().meta({ description: 'The member who becomes the owner' }), reason: OptionalReason }).strict();
const DeleteOrganizationInput = z.object({ confirm: z.string().min(1).max(200).meta({ description: "The organization's slug, typed: what makes a deletion deliberate" }), reason: OptionalReason }).strict();

const OrganizationEventsQuery = z
  .object({
    type: z.string().regex(/^[a-z][a-z0-9_]*\.[a-z_]+$/, 'must be an event type, like member.updated').default(''),
    page: SearchQuery.shape.page,
    limit: SearchQuery.shape.limit,
  })
  .strict();

const OperatorOrganizationRow = z
  .object({ id: z.uuid(), name: z.string(), slug: z.string(), createdAt: z.iso.datetime(), members: z.int() })
  .meta({ id: 'OperatorOrganizationRow' });

const someone = z.object({ id: z.string(), email: z.string().nullable() });
const OperatorOrganization = z
  .object({
    id: z.uuid(),
    name: z.string(),
    slug: z.string(),
    createdAt: z.iso.datetime(),
    members: z.array(z.object({ userId: z.uuid(), email: z.string(), name: z.string(), role: z.enum(['owner', 'admin', 'member']), joinedAt: z.iso.datetime(), banned: z.boolean() })),
    invitations: z
      .array(z.object({ id: z.uuid(), email: z.string(), role: z.string(), invitedBy: someone.meta({ description: "The inviter (email null once their account is gone)" }), createdAt: z.iso.datetime(), expiresAt: z.iso.datetime() }))
      .meta({ description: 'Invitations not answered and not expired' }),
    machineKeys: z
      .array(
        z.object({
          id: z.uuid(),
          name: z.string().nullable(),
          start: z.string().nullable().meta({ description: 'The few characters of the key kept in the clear (as its organization sees them): never the key or its hash' }),
          role: z.enum(['owner', 'admin', 'member']),
          permissions: z.record(z.string(), z.array(z.string())),
          enabled: z.boolean(),
          expiresAt: z.iso.datetime().nullable(),
          lastRequest: z.iso.datetime().nullable(),
          requestCount: z.int(),
          remaining: z.int().nullable().meta({ description: "Requests left of the key's quota (null: no quota)" }),
          createdBy: someone.nullable(),
          createdAt: z.iso.datetime(),
        }),
      ),
    webhookEndpoints: z.array(
      z.object({
        id: z.uuid(),
        url: z.string(),
        description: z.string().nullable(),
        eventTypes: z.array(z.string()),
        enabled: z.boolean(),
        disabledReason: z.string().nullable(),
        failureCount: z.int().meta({ description: 'Deliveries that failed for good in a row' }),
        createdAt: z.iso.datetime(),
        deliveries: z
          .object({ failedLast7Days: z.int(), retrying: z.int(), lastSuccessAt: z.iso.datetime().nullable(), lastError: z.string().nullable() })
          .meta({ description: 'How its deliveries fare, from the outbox (which keeps a delivery 7 days after it is sent)' }),
      }),
    ).meta({ description: 'Never their secrets' }),
  })
  .meta({ id: 'OperatorOrganization' });

const OperatorOrganizationEvent = AuditEvent.extend({
  organizationId: z.uuid(),
  createdAt: z.iso.datetime(),
  summary: z.string().meta({ description: "What happened, in a sentence a person reads, as the organization's own audit log says it: plain text, never HTML" }),
}).meta({ id: 'OperatorOrganizationEvent' });

export function registerOrganizationRoutes(registry: OpenAPIRegistry): void {
  const tags = ['operator'];
  const noSuchOrganization = { 404: { description: 'NOT_FOUND: no such organization' } };
  registry.registerPath({
    method: 'get', path: '/api/operator/organizations', operationId: 'listOperatorOrganizations', tags,
    summary: 'Every organization, or those whose name or slug contains ?search=, whose id it is, or with a member whose address contains it, newest first (operators only)',
    request: { query: searchParameters },
    responses: { 200: { description: 'A page of organizations', ...listOf(OperatorOrganizationRow) }, ...refusedToNonOperators },
  });
  registry.registerPath({
    method: 'get', path: '/api/operator/organizations/{id}', operationId: 'getOperatorOrganization', tags,
    summary: 'One organization: its members and roles, pending invitations, machine keys and webhook endpoints with their delivery health; never a secret (operators only)',
    request: { params: z.object({ id: z.uuid() }) },
    responses: { 200: { description: 'The organization', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: OperatorOrganization }) } } }, ...refusedToNonOperators, ...noSuchOrganization },
  });
  registry.registerPath({
    method: 'get', path: '/api/operator/organizations/{id}/events', operationId: 'listOperatorOrganizationEvents', tags,
    summary: "An organization's audit log, newest first, each event with its sentence (summary), as its owners see it (operators only)",
    request: {
      params: z.object({ id: z.uuid() }),
      query: z.object({ type: z.string().optional().meta({ description: 'One type, like member.updated' }), page: z.int().min(1).optional(), limit: z.int().optional() }),
    },
    responses: { 200: { description: 'A page of events', ...listOf(OperatorOrganizationEvent) }, ...refusedToNonOperators, ...noSuchOrganization },
  });

  // The actions: each recorded in the platform's log and the organization's audit log (and webhooks), with the operator as the actor.
  const id = z.object({ id: z.uuid() });
  const reasonBody = { required: false, content: { 'application/json': { schema: ReasonOnly } } };
  registry.registerPath({
    method: 'post', path: '/api/operator/organizations/{id}/members/{userId}/role', operationId: 'changeMemberRoleAsOperator', tags,
    summary: "Change a member's role (operators only; recorded as operator.changed_role)",
    description: `The only owner's role changes by a transfer of ownership instead (409). ${recentSignInNote}`,
    request: { params: z.object({ id: z.uuid(), userId: z.uuid() }), body: { content: { 'application/json': { schema: RoleChangeInput } } } },
    responses: {
      200: answerOf('The role changed', z.object({ userId: z.uuid(), from: z.string(), to: z.string() })),
      ...refusedToNonOperators,
      404: { description: 'NOT_FOUND: no such organization, or the user is not its member' },
      409: { description: 'CONFLICT: the member has that role already, or is the only owner' },
    },
  });
  registry.registerPath({
    method: 'post', path: '/api/operator/organizations/{id}/transfer-ownership', operationId: 'transferOwnershipAsOperator', tags,
    summary: "Make a member the organization's owner; its other owners become admins (operators only; recorded as operator.transferred_ownership)",
    description: recentSignInNote,
    request: { params: id, body: { content: { 'application/json': { schema: TransferInput } } } },
    responses: {
      200: answerOf('The new owner, and the owners who became admins', z.object({ owner: z.object({ userId: z.uuid(), email: z.string() }), previousOwners: z.array(z.object({ userId: z.uuid(), email: z.string() })) })),
      ...refusedToNonOperators,
      404: { description: 'NOT_FOUND: no such organization, or the user is not its member' },
      409: { description: 'CONFLICT: the member is the owner already' },
    },
  });
  for (const [action, enable] of [['disable', false], ['enable', true]] as const) {
    registry.registerPath({
      method: 'post', path: `/api/operator/organizations/{id}/machine-keys/{keyId}/${action}`, operationId: `${action}MachineKeyAsOperator`, tags,
      summary: enable ? 'Enable a machine key again (operators only; recorded as operator.enabled_key)' : 'Disable a machine key: refused from its next request, its live streams within seconds (operators only; recorded as operator.disabled_key)',
      description: recentSignInNote,
      request: { params: z.object({ id: z.uuid(), keyId: z.uuid() }), body: reasonBody },
      responses: {
        200: answerOf('The key', z.object({ id: z.uuid(), name: z.string().nullable(), enabled: z.boolean() })),
        ...refusedToNonOperators,
        404: { description: 'NOT_FOUND: no such organization, or no such key in it' },
        409: { description: `CONFLICT: the key is ${action}d already` },
      },
    });
    registry.registerPath({
      method: 'post', path: `/api/operator/organizations/{id}/webhook-endpoints/{endpointId}/${action}`, operationId: `${action}WebhookEndpointAsOperator`, tags,
      summary: enable
        ? 'Enable a webhook endpoint again; its count of failures starts over (operators only; recorded as operator.enabled_webhook_endpoint)'
        : 'Disable a webhook endpoint: nothing more is delivered to it (operators only; recorded as operator.disabled_webhook_endpoint)',
      description: recentSignInNote,
      request: { params: z.object({ id: z.uuid(), endpointId: z.uuid() }), body: reasonBody },
      responses: {
        200: answerOf('The endpoint', z.object({ id: z.uuid(), url: z.string(), enabled: z.boolean() })),
        ...refusedToNonOperators,
        404: { description: 'NOT_FOUND: no such organization, or no such endpoint in it' },
        409: { description: `CONFLICT: the endpoint is ${action}d already` },
      },
    });
  }
  registry.registerPath({
    method: 'delete', path: '/api/operator/organizations/{id}', operationId: 'deleteOrganizationAsOperator', tags,
    summary: 'Delete an organization with everything in it, with a typed confirmation (its slug) (operators only; recorded as operator.deleted_organization)',
    description: `Its members keep their accounts and their other organizations. ${recentSignInNote}`,
    request: { params: id, body: { content: { 'application/json': { schema: DeleteOrganizationInput } } } },
    responses: {
      200: answerOf('Deleted', z.object({ id: z.uuid(), name: z.string(), slug: z.string(), members: z.int() })),
      ...refusedToNonOperators,
      ...noSuchOrganization,
      422: { description: 'VALIDATION_ERROR: confirm is not its slug' },
    },
  });
}
