import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router } from 'express';
import { z } from 'zod';
import type { AuditEvent } from '../events/events.js';
import { namesOfPage } from '../events/summaries.js';
import { eventSentence, namesFor } from '../events/sentences.js';
import { sendJsonData, sendJsonList } from '../http/envelope.js';
import { notFound } from '../http/errors.js';
import { parseId, parseQuery } from '../http/validate.js';
import { listOf, operatorQuery, pageMeta, refusedToNonOperators, SearchQuery, searchParameters, type OperatorDeps } from './operator-query.js';

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
    const found = await operatorQuery<{ total: number; rows: AuditEvent[]; directories: Record<string, string> } | null>(
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

  return router;
}

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

const OperatorOrganizationEvent = z
  .object({
    id: z.uuid(),
    type: z.string(),
    organizationId: z.uuid(),
    userId: z.uuid().nullable(),
    actorType: z.string(),
    actorId: z.string().nullable(),
    entity: z.string().nullable(),
    entityId: z.string().nullable(),
    data: z.record(z.string(), z.unknown()),
    requestId: z.string().nullable(),
    ipAddress: z.string().nullable(),
    userAgent: z.string().nullable(),
    createdAt: z.iso.datetime(),
    summary: z.string().meta({ description: "What happened, in a sentence a person reads, as the organization's own audit log says it: plain text, never HTML" }),
  })
  .meta({ id: 'OperatorOrganizationEvent' });

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
}
