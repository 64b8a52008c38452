import type { Request } from 'express';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { CallerDeps } from '../generated/guards/auth.guard.js';
import { requestContext } from '../events/events.js';
import { forbidden, HttpError, notFound } from '../http/errors.js';
import { parseId } from '../http/validate.js';

/* What the operator's routes share: operator.router.ts mounts them (users, organizations, operators, the overview). */

/** What the operator's routes need: who is calling, the database, OPERATOR_RECENT_SIGN_IN_MINUTES, OPERATOR_IMPERSONATION_MAX_MINUTES and INVITATIONS_PENDING_MAX (the overview's limit). */
export type OperatorDeps = CallerDeps & { db: Database; config: Pick<Config, 'operators' | 'invitations'> };

/**
 * A destructive action's guard: with OPERATOR_RECENT_SIGN_IN_MINUTES set, the operator's session
 * must have begun within that many minutes (a laptop left signed in for a week cannot end a
 * customer's sessions); a 403 that says to sign in again otherwise.
 */
export function recentSignIn(req: Request, config: Pick<Config, 'operators'>): void {
  const minutes = config.operators.recentSignInMinutes;
  if (minutes === undefined || req.caller?.kind !== 'user') return;
  const signedInAt = new Date(req.caller.session.createdAt).getTime();
  if (Date.now() - signedInAt > minutes * 60_000) {
    throw forbidden(`This action needs a sign-in from the last ${minutes} minutes (OPERATOR_RECENT_SIGN_IN_MINUTES): sign in again, then repeat it`);
  }
}

/** ?search=, ?page=, ?limit= of the operators' lists; anything else is a 400 naming it. */
export const SearchQuery = z
  .object({
    search: z.string().max(200).default(''),
    page: z.coerce.number().int().min(1).default(1),
    // As every list: 1 to 100, 20 by default.
    limit: z.coerce.number().int().default(20).transform((limit) => Math.min(100, Math.max(1, limit))),
  })
  .strict();

export const pageMeta = (page: number, limit: number, total: number) => ({ page, limit, total, totalPages: Math.ceil(total / limit) });

/**
 * One of the operators' functions (packages/cli's operator-sql.ts, in the migrations): the one
 * way an operator's request reaches other organizations' rows. Each checks the operator again
 * itself (42501 when they are none since operatorsOnly asked: a 403). An action the target's state
 * refuses (an operator to ban, a user who is not banned) is SQLSTATE AS409, its message written
 * for people: a 409; a member, key or endpoint the organization does not have AS404 (404); a typed
 * confirmation that does not match AS422 (422 on `confirm`).
 */
export async function operatorQuery<Answer>(db: Database, text: string, params: unknown[]): Promise<Answer> {
  try {
    const { rows } = await db.query<{ answer: Answer }>(text, params);
    return rows[0]!.answer;
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    if (code === '42501') throw forbidden('Operators only: `authstrap operator grant <email>` makes one');
    if (code === 'AS409') throw new HttpError(409, 'CONFLICT', message ?? 'Refused: the user is not in a state that allows it');
    if (code === 'AS404') throw new HttpError(404, 'NOT_FOUND', message ?? 'Not found');
    // A typed confirmation that does not match what it confirms: nothing was changed.
    if (code === 'AS422') throw new HttpError(422, 'VALIDATION_ERROR', 'The confirmation does not match', { confirm: message ?? 'does not match' });
    throw error;
  }
}

/** A list answer in the OpenAPI document: the envelope, a page of `item`, and `meta`. */
export const listOf = (item: z.ZodType) => ({
  content: {
    'application/json': {
      schema: z.object({ success: z.literal(true), data: z.array(item), meta: z.object({ page: z.int(), limit: z.int(), total: z.int(), totalPages: z.int() }) }),
    },
  },
});

/** The search's parameters as the OpenAPI document shows them. */
export const searchParameters = z.object({
  search: z.string().max(200).optional().meta({ description: 'Part of an address or name (any case), or an id' }),
  page: z.int().min(1).optional().meta({ description: 'The page, from 1' }),
  limit: z.int().optional().meta({ description: 'Rows per page, 1 to 100 (default 20)' }),
});

/** The answer every operator route gives everyone else. */
export const refusedToNonOperators = { 403: { description: 'FORBIDDEN: not an operator (or a machine key, or the service key)' } };

/** The reason an operator may give an action, optional: kept in the platform's log (and the subject's own security events), never in the organization's copy. */
export const OptionalReason = z.string().trim().min(1).max(500).optional().meta({ description: "Why, if you say: kept in the platform's log, not in the organization's audit log" });

/** The note every changing route's OpenAPI entry carries. */
export const recentSignInNote = 'With OPERATOR_RECENT_SIGN_IN_MINUTES set, the operator must have signed in within that many minutes (403 otherwise).';

/** The OpenAPI answer of an action: the envelope around `data`. */
export const answerOf = (description: string, data: z.ZodType) => ({ description, content: { 'application/json': { schema: z.object({ success: z.literal(true), data }) } } });

/**
 * Calls an operator's action function: the operator first, then `args`, then the request's context
 * (who, from where: the events' context) as jsonb; what operatorQuery answers.
 */
export function operatorAction<Answer>(db: Database, req: Request, fn: string, args: unknown[]): Promise<Answer> {
  const params = [req.operator!.userId, ...args, JSON.stringify(requestContext(req))];
  const placeholders = params.map((_, index) => (index === params.length - 1 ? `$${index + 1}::jsonb` : `$${index + 1}`));
  return operatorQuery<Answer>(db, `SELECT authstrap.${fn}(${placeholders.join(', ')}) AS "answer"`, params);
}

/**
 * One action on the user or organization of `req.params.id` (`entity`): a recent sign-in first,
 * then its function with (that id, ...args, reason); a 404 naming it when the function answers
 * null (no such one).
 */
export async function actOn<Answer = unknown>(deps: OperatorDeps, req: Request, entity: 'User' | 'Organization', fn: string, args: unknown[], reason: string | undefined): Promise<Answer> {
  const id = parseId(entity, req.params.id);
  recentSignIn(req, deps.config);
  const answer = await operatorAction<Answer | null>(deps.db, req, fn, [id, ...args, reason ?? null]);
  if (answer === null) throw notFound(entity, id);
  return answer;
}

/** The body of an action that takes nothing but a reason, if one is given. */
export const ReasonOnly = z.object({ reason: OptionalReason }).strict();
