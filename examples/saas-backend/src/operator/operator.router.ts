import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import type { Database } from '../db/database.js';
import { resolveCaller, type CallerDeps } from '../generated/guards/auth.guard.js';
import { sendData } from '../http/envelope.js';
import { forbidden } from '../http/errors.js';

/**
 * The platform's operators: the people who run the product built on this backend, above every
 * organization (issue 50; docs/operator.md). Who is one is kept in `authstrap_operator`, granted
 * from the command line (`authstrap operator grant <email>`), never by a request of its own.
 *
 * Every route under /api/operator stands behind `operatorsOnly`: a signed-in user (a session;
 * never a machine key, whose routes are its organization's entities, nor the service key, a
 * server that is no person) who is an operator now. Everyone else gets a 403, after the 401 of a
 * caller without a session. What operators may see and do is built on this, route by route.
 */

export interface Operator {
  userId: string;
  email: string;
  grantedAt: Date;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by operatorsOnly: the operator making the request. */
      operator?: Operator;
    }
  }
}

/**
 * Whether the signed-in user is an operator: their own row of `authstrap_operator`, which
 * row-level security lets a transaction that names the user read, and no one else's.
 */
async function operatorOf(db: Database, userId: string): Promise<{ grantedAt: Date } | undefined> {
  const outcome = await db.pipeline([
    { text: `SELECT set_config('authstrap.user_id', $1, true)`, params: [userId] },
    { text: `SELECT "grantedAt" FROM "authstrap_operator" WHERE "userId" = authstrap.user_id()`, params: [] },
  ]);
  if (outcome.error !== undefined) throw outcome.error;
  return outcome.results[1]?.rows[0] as { grantedAt: Date } | undefined;
}

export function operatorsOnly(deps: CallerDeps & { db: Database }): RequestHandler {
  return async (req, res, next) => {
    await resolveCaller(deps, req, res);
    const caller = req.caller;
    if (caller?.kind !== 'user') throw forbidden('Operator routes take a signed-in operator, not the service key');
    const operator = await operatorOf(deps.db, caller.user.id);
    if (!operator) throw forbidden('Operators only: `authstrap operator grant <email>` makes one');
    req.operator = { userId: caller.user.id, email: caller.user.email, grantedAt: operator.grantedAt };
    next();
  };
}

export function operatorRouter(deps: CallerDeps & { db: Database }): Router {
  const router = Router();
  router.use(operatorsOnly(deps));

  // Who the operator is: what the app asks before it shows the operator's pages.
  router.get('/me', (req: Request, res) => {
    const { userId, email, grantedAt } = req.operator!;
    sendData(res, { userId, email, grantedAt });
  });

  return router;
}

const OperatorMe = z.object({ userId: z.uuid(), email: z.string(), grantedAt: z.date() }).meta({ id: 'Operator' });

export function registerOperatorRoutes(registry: OpenAPIRegistry): void {
  registry.registerPath({
    method: 'get',
    path: '/api/operator/me',
    operationId: 'getOperator',
    tags: ['operator'],
    summary: 'The signed-in operator (403 for anyone who is not one)',
    description: "Operators run the platform, above every organization: granted with `authstrap operator grant <email>`. A session only; machine keys and the service key get 403.",
    responses: {
      200: { description: 'The operator', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: OperatorMe }) } } },
      403: { description: 'FORBIDDEN: not an operator (or a machine key, or the service key)' },
    },
  });
}
