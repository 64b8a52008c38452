import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router } from 'express';
import { z } from 'zod';
import { sendJsonData } from '../http/envelope.js';
import { parseBody } from '../http/validate.js';
import { actOn, answerOf, OptionalReason, ReasonOnly, recentSignInNote, refusedToNonOperators, type OperatorDeps } from './operator-query.js';

/**
 * What operators do for a user beyond bans and impersonation (under /api/operator/users;
 * docs/operator.md): mail them a link through the backend's own account flows (the operator never
 * sees it, nor any password), and delete their account with a typed confirmation. Each is an
 * event with the operator as the actor; each needs a recent sign-in when that is required.
 */
export function userActionRoutes(deps: OperatorDeps): Router {
  const router = Router();

  // A new link to verify their address, as "send the link again" mails it.
  router.post('/:id/send-verification-mail', async (req, res) => {
    const { reason } = parseBody('verification mail', ReasonOnly, req);
    sendJsonData(res, JSON.stringify(await actOn(deps, req, 'User', 'operator_send_verification', [], reason)), 202);
  });

  // A link to reset their password, as "forgot password" mails it: the user chooses the password.
  router.post('/:id/send-password-reset', async (req, res) => {
    const { reason } = parseBody('password reset mail', ReasonOnly, req);
    sendJsonData(res, JSON.stringify(await actOn(deps, req, 'User', 'operator_send_password_reset', [], reason)), 202);
  });

  // Deletes the account, as the user's own deletion does; { confirm: "<their address>" }.
  router.delete('/:id', async (req, res) => {
    const { confirm, reason } = parseBody('user deletion', DeleteUserInput, req);
    sendJsonData(res, JSON.stringify(await actOn(deps, req, 'User', 'operator_delete_user', [confirm], reason)));
  });

  return router;
}

const DeleteUserInput = z.object({ confirm: z.string().min(1).max(320).meta({ description: "The user's address, typed: what makes a deletion deliberate" }), reason: OptionalReason }).strict();

export function registerUserActionRoutes(registry: OpenAPIRegistry): void {
  const tags = ['operator'];
  const id = z.object({ id: z.uuid() });
  const noSuchUser = { 404: { description: 'NOT_FOUND: no such user' } };
  const mailQueued = answerOf('The mail is on its way (through the outbox, after commit)', z.object({ userId: z.uuid(), email: z.string(), queued: z.literal(true) }));
  registry.registerPath({
    method: 'post', path: '/api/operator/users/{id}/send-verification-mail', operationId: 'sendUserVerificationMail', tags,
    summary: 'Mail a user a new link to verify their address, as their own "send the link again" does (operators only; recorded as operator.sent_verification_mail)',
    description: `The operator never sees the link. ${recentSignInNote}`,
    request: { params: id, body: { required: false, content: { 'application/json': { schema: ReasonOnly } } } },
    responses: { 202: mailQueued, ...refusedToNonOperators, ...noSuchUser, 409: { description: 'CONFLICT: the address is verified already' } },
  });
  registry.registerPath({
    method: 'post', path: '/api/operator/users/{id}/send-password-reset', operationId: 'sendUserPasswordReset', tags,
    summary: 'Mail a user a link to reset their password, as "forgot password" does: the user chooses it (operators only; recorded as operator.sent_password_reset)',
    description: `The operator never sees the link or a password. No link goes to an address whose organization requires single sign-on (the sign-in rule, as for the user's own request). ${recentSignInNote}`,
    request: { params: id, body: { required: false, content: { 'application/json': { schema: ReasonOnly } } } },
    responses: { 202: mailQueued, ...refusedToNonOperators, ...noSuchUser, 409: { description: 'CONFLICT: the user is banned' } },
  });
  registry.registerPath({
    method: 'delete', path: '/api/operator/users/{id}', operationId: 'deleteUserAsOperator', tags,
    summary: "Delete a user's account with a typed confirmation (their address), as their own deletion does: never leaving an organization without an owner (operators only; recorded as operator.deleted_user)",
    description: `The organizations where they are the only member go with them; every other organization keeps its rows. An operator (revoke the role first) cannot be deleted. ${recentSignInNote}`,
    request: { params: id, body: { content: { 'application/json': { schema: DeleteUserInput } } } },
    responses: {
      200: answerOf('Deleted', z.object({ userId: z.uuid(), email: z.string(), organizationsDeleted: z.int() })),
      ...refusedToNonOperators,
      ...noSuchUser,
      409: { description: 'CONFLICT: the only owner of an organization with other members, or an operator' },
      422: { description: 'VALIDATION_ERROR: confirm is not their address' },
    },
  });
}
