import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router } from 'express';
import { z } from 'zod';
import { sendJsonData } from '../http/envelope.js';
import { parseQuery } from '../http/validate.js';
import { operatorQuery, refusedToNonOperators, type OperatorDeps } from './operator-query.js';

/**
 * The operators' overview (GET /api/operator/overview; docs/operator.md): the platform's days for
 * charts and what needs someone's attention, in one statement (authstrap.operator_overview).
 */
export function overviewRoutes(deps: OperatorDeps): Router {
  const router = Router();
  router.get('/', async (req, res) => {
    const { days } = parseQuery('operator overview', OverviewQuery, req.query);
    const overview = await operatorQuery<unknown>(deps.db, 'SELECT authstrap.operator_overview($1, $2, $3) AS "answer"', [req.operator!.userId, days, deps.config.invitations.pendingMax]);
    sendJsonData(res, JSON.stringify(overview));
  });
  return router;
}

/** ?days=: how many days the charts cover, today included: 1 to 366 (a year, leap or not), 30 by default. */
const OverviewQuery = z.object({ days: z.coerce.number().int().min(1).max(366).default(30) }).strict();

const organizationNamed = z.object({ id: z.uuid(), name: z.string(), slug: z.string() });
const Overview = z
  .object({
    days: z.array(z.object({ day: z.string().meta({ description: 'The day in UTC, YYYY-MM-DD' }), signUps: z.int(), activeUsers: z.int().meta({ description: 'Users who acted that day (an event with them as its actor: a sign-in, a change)' }), newOrganizations: z.int() })),
    failingWebhookEndpoints: z
      .array(z.object({ id: z.uuid(), url: z.string(), enabled: z.boolean(), disabledReason: z.string().nullable(), failureCount: z.int(), organization: organizationNamed }))
      .meta({ description: 'Endpoints whose last deliveries failed for good (failureCount in a row), disabled ones first, then the most failures; at most 50' }),
    organizationsNearLimits: z
      .array(
        z.object({
          organization: organizationNamed,
          limit: z.enum(['pendingInvitations', 'machineKeyQuota']),
          current: z.int().meta({ description: 'pendingInvitations: invitations pending; machineKeyQuota: requests left of the key' }),
          maximum: z.int().nullable().meta({ description: 'pendingInvitations: INVITATIONS_PENDING_MAX; machineKeyQuota: the key\'s refill amount (null: none)' }),
          keyId: z.uuid().nullable(),
        }),
      )
      .meta({ description: 'Pending invitations at 80 % or more of INVITATIONS_PENDING_MAX, and machine keys with a tenth or less of their quota left; at most 100' }),
  })
  .meta({ id: 'OperatorOverview' });

export function registerOverviewRoutes(registry: OpenAPIRegistry): void {
  registry.registerPath({
    method: 'get', path: '/api/operator/overview', operationId: 'getOperatorOverview', tags: ['operator'],
    summary: "The platform's sign-ups, active users and new organizations per day, failing webhook endpoints and organizations near their limits (operators only)",
    request: { query: z.object({ days: z.int().min(1).max(366).optional().meta({ description: 'Days the charts cover, today included (30 by default)' }) }) },
    responses: { 200: { description: 'The overview', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: Overview }) } } }, ...refusedToNonOperators },
  });
}
