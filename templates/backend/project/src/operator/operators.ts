import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router } from 'express';
import { z } from 'zod';
import { sendJsonData } from '../http/envelope.js';
import { notFound } from '../http/errors.js';
import { parseBody, parseId } from '../http/validate.js';
import { operatorAction, operatorQuery, recentSignIn, recentSignInNote, refusedToNonOperators, type OperatorDeps } from './operator-query.js';

/**
 * Operators grant and revoke the role among themselves (under /api/operator/operators;
 * docs/operator.md), as the command line does (`authstrap operator grant/revoke`), on the record:
 * operator.granted and operator.revoked with the operator as the actor. The last operator is never
 * revoked by a request: the platform always keeps someone who can act.
 */
export function operatorsRoutes(deps: OperatorDeps): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const operators = await operatorQuery<unknown>(deps.db, 'SELECT authstrap.operator_operators($1) AS "answer"', [req.operator!.userId]);
    sendJsonData(res, JSON.stringify(operators));
  });

  // Makes a user, by address, an operator (they sign up first).
  router.post('/', async (req, res) => {
    const { email } = parseBody('operator grant', GrantInput, req);
    recentSignIn(req, deps.config);
    const granted = await operatorAction<unknown>(deps.db, req, 'operator_grant', [email]);
    if (granted === null) throw notFound('User', email);
    sendJsonData(res, JSON.stringify(granted), 201);
  });

  // Takes the role from an operator (never the last one); the sessions they hold as other users end.
  router.delete('/:userId', async (req, res) => {
    const userId = parseId('User', req.params.userId);
    recentSignIn(req, deps.config);
    const revoked = await operatorAction<unknown>(deps.db, req, 'operator_revoke', [userId]);
    if (revoked === null) throw notFound('User', userId);
    sendJsonData(res, JSON.stringify(revoked));
  });

  return router;
}

const GrantInput = z.object({ email: z.email().max(320).meta({ description: "The user's address (they sign up first)" }) }).strict();

const PlatformOperator = z
  .object({
    userId: z.uuid(),
    email: z.string(),
    name: z.string(),
    grantedAt: z.iso.datetime(),
    grantedBy: z.object({ commandLine: z.boolean(), id: z.string().nullable(), email: z.string().nullable() }).meta({ description: 'The command line, or the operator who granted it (email null once their account is gone)' }),
  })
  .meta({ id: 'PlatformOperator' });

export function registerOperatorsRoutes(registry: OpenAPIRegistry): void {
  const tags = ['operator'];
  registry.registerPath({
    method: 'get', path: '/api/operator/operators', operationId: 'listPlatformOperators', tags,
    summary: "The platform's operators, by when they were granted, and by whom (operators only)",
    responses: { 200: { description: 'The operators', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: z.array(PlatformOperator) }) } } }, ...refusedToNonOperators },
  });
  registry.registerPath({
    method: 'post', path: '/api/operator/operators', operationId: 'grantOperator', tags,
    summary: 'Make a user an operator, by address (operators only; recorded as operator.granted)',
    description: recentSignInNote,
    request: { body: { content: { 'application/json': { schema: GrantInput } } } },
    responses: {
      201: { description: 'Granted', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: z.object({ userId: z.uuid(), email: z.string() }) }) } } },
      ...refusedToNonOperators,
      404: { description: 'NOT_FOUND: no user has that address (they sign up first)' },
      409: { description: 'CONFLICT: an operator already, or banned' },
      422: { description: 'VALIDATION_ERROR: not an address' },
    },
  });
  registry.registerPath({
    method: 'delete', path: '/api/operator/operators/{userId}', operationId: 'revokeOperator', tags,
    summary: 'Take the operator role from a user, never the last operator; the sessions they hold as other users end (operators only; recorded as operator.revoked)',
    description: recentSignInNote,
    request: { params: z.object({ userId: z.uuid() }) },
    responses: {
      200: { description: 'Revoked', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: z.object({ userId: z.uuid(), email: z.string(), impersonationsEnded: z.int() }) }) } } },
      ...refusedToNonOperators,
      404: { description: 'NOT_FOUND: no such user' },
      409: { description: 'CONFLICT: not an operator, or the last one' },
    },
  });
}
