import { Router, type Request } from 'express';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { presentedSession, storedTokenCandidates } from '../http/session-token.js';
import { lockUntilCommit } from '../db/locks.js';
import { recordEvent, requestContext } from '../events/events.js';
import { assertRole } from '../extensions/auth/auth.decorator.js';
import { asCaller, tenantScoped, type TenantDeps } from '../generated/guards/tenant.guard.js';
import { sendData } from '../http/envelope.js';
import { forbidden, HttpError } from '../http/errors.js';
import { parseBody } from '../http/validate.js';
import { endRefusedSessions } from '../auth/sign-in-policy.js';

/**
 * The organization's single sign-on policy (docs/sso.md, "Requiring SSO"):
 *
 *   GET /sso-policy   { ssoRequired, breakGlass, requiredSince }: any member may read it
 *   PUT /sso-policy   owners only; requiring SSO needs an enabled connection and a verified domain,
 *                     and ends the sessions it makes refusable (the caller's own is kept)
 */

export const SsoPolicyInput = z
  .strictObject({
    ssoRequired: z.boolean(),
    breakGlass: z.enum(['owners', 'none']).default('owners').meta({ description: "owners: the organization's owners keep a password path (audited); none: nobody does" }),
  })
  .meta({ id: 'SsoPolicyInput' });

interface PolicyRow {
  ssoRequired: boolean;
  breakGlass: 'owners' | 'none';
  requiredSince: Date | null;
  updatedAt: Date | null;
}

const noPolicy: PolicyRow = { ssoRequired: false, breakGlass: 'owners', requiredSince: null, updatedAt: null };

/** The session the request came with (a user's route may be checked in its own statement, which leaves `req.caller` unset). */
async function callersSessionId(db: Database, req: Request, config: Pick<Config, 'authSecret'>): Promise<string | undefined> {
  const presented = presentedSession(req, config);
  if (!presented) return undefined;
  const { rows } = await db.query<{ id: string }>(`SELECT "id" FROM "session" WHERE "token" = ANY($1::text[])`, [storedTokenCandidates(presented.token)]);
  return rows[0]?.id;
}

export function ssoPolicyRouter(deps: TenantDeps & { db: Database; config: Config }) {
  const { db } = deps;
  const router = Router();

  const asMember = async (req: Request) => {
    if (req.caller?.kind === 'service') throw forbidden('The single sign-on policy is set by the owners of an organization, not the service key');
    const caller = asCaller(db, req);
    await caller.checkNow();
    return caller;
  };

  router.get('/', async (req, res) => {
    const caller = await asMember(req);
    const { rows } = await caller.query<PolicyRow>(`SELECT "ssoRequired", "breakGlass", "requiredSince", "updatedAt" FROM "authstrap_sso_policy" WHERE "organizationId" = authstrap.organization_id()`);
    sendData(res, rows[0] ?? noPolicy);
  });

  router.put('/', async (req, res) => {
    const caller = await asMember(req);
    assertRole(req.role, ['owner']);
    const input = parseBody('sso-policy', SsoPolicyInput, req);
    const organizationId = req.organizationId!;
    const keepSessionId = await callersSessionId(db, req, deps.config);
    const answer = await caller.transaction(async (tx) => {
      // The lock the session trigger takes shared, and that removing a domain or a connection takes.
      await lockUntilCommit(tx, `sign-in:org:${organizationId}`);
      if (input.ssoRequired) {
        const { rows } = await tx.query<{ connections: number; domains: number }>(
          `SELECT (SELECT count(*)::int FROM "authstrap_sso_connection" WHERE "organizationId" = authstrap.organization_id() AND "enabled") AS "connections",
                  (SELECT count(*)::int FROM "authstrap_domain" WHERE "organizationId" = authstrap.organization_id() AND "state" IN ('verified', 'failing')) AS "domains"`,
        );
        if (rows[0]!.connections === 0) throw new HttpError(409, 'NO_ENABLED_CONNECTION', 'Requiring single sign-on needs an enabled connection: add one, test it and enable it first');
        if (rows[0]!.domains === 0) throw new HttpError(409, 'NO_VERIFIED_DOMAIN', 'Requiring single sign-on needs a verified domain: the addresses it applies to');
      }
      const { rows } = await tx.query<PolicyRow>(
        `INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "breakGlass", "requiredSince", "updatedBy")
         VALUES (authstrap.organization_id(), $1, $2, CASE WHEN $1 THEN now() END, authstrap.user_id())
         ON CONFLICT ("organizationId") DO UPDATE SET "ssoRequired" = $1, "breakGlass" = $2,
           "requiredSince" = CASE WHEN $1 THEN COALESCE("authstrap_sso_policy"."requiredSince", now()) END,
           "updatedBy" = EXCLUDED."updatedBy", "updatedAt" = now()
         RETURNING "ssoRequired", "breakGlass", "requiredSince", "updatedAt"`,
        [input.ssoRequired, input.breakGlass],
      );
      const sessionsEnded = input.ssoRequired ? await endRefusedSessions(tx, { kind: 'sso-required', organizationId, keepSessionId }) : 0;
      await recordEvent(tx, { type: 'sso_policy.updated', organizationId, entity: 'sso_policy', entityId: organizationId, data: { ...input, sessionsEnded } }, requestContext(req));
      return { ...rows[0]!, sessionsEnded };
    });
    sendData(res, answer);
  });

  return tenantScoped(deps, router);
}
