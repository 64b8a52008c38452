import { randomBytes } from 'node:crypto';
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { Database } from '../db/database.js';
import { hasSqlState } from '../db/database.js';
import { lockUntilCommit } from '../db/locks.js';
import { recordEvent, requestContext } from '../events/events.js';
import { assertRole } from '../extensions/auth/auth.decorator.js';
import { asCaller, tenantScoped, type TenantDeps } from '../generated/guards/tenant.guard.js';
import { sendData } from '../http/envelope.js';
import { forbidden, HttpError, notFound } from '../http/errors.js';
import { parseBody, parseId } from '../http/validate.js';
import { checkDomain, domainColumns, type DomainRow } from './domain-checks.js';
import { normaliseDomain, txtRecordOf } from './domain-name.js';
import { effectiveStates, lapsesAt, takenReason, type CheckSchedule } from './domain-states.js';
import type { TxtLookup } from './txt-lookup.js';

/**
 * The organization's verified domains, for its owners and admins (docs/domains.md):
 *
 *   GET    /domains              the claims, each with the TXT record to publish and its state
 *   POST   /domains              claim one: { domain } -> pending, with the record
 *   POST   /domains/:id/verify   check now: the new state, or the same one with lastCheckError
 *   DELETE /domains/:id          remove a claim (not the last counting one while SSO is required)
 *
 * Everything runs under the caller's scope (row-level security): another organization's domain is
 * a 404, as one that does not exist. Machine keys are refused by tenantScoped (no entity named).
 */

/** A claim per organization is cheap, but each is a DNS question on every round of the worker. */
export const domainsPerOrganization = 100;

export const DomainClaimInput = z
  .strictObject({
    domain: z
      .string()
      .max(300)
      .transform((raw, ctx) => {
        const normalised = normaliseDomain(raw);
        if ('problem' in normalised) {
          ctx.addIssue({ code: 'custom', message: normalised.problem });
          return z.NEVER;
        }
        return normalised.domain;
      })
      .meta({ description: 'The domain, like example.com: stored lowercase, an internationalised one in its xn-- form. Exact: a subdomain is a claim of its own.' }),
  })
  .meta({ id: 'DomainClaimInput' });

/** A domain as answered: its row, the record to publish, and when it lapses or is next checked. */
function present(row: DomainRow, schedule: CheckSchedule, now = new Date()) {
  const { txtToken, nextCheckAt, ...rest } = row;
  // A claim left pending past its first 72 hours is checked only when its owner asks.
  const checkedOnlyOnDemand = row.state === 'pending' && now.getTime() - row.createdAt.getTime() >= schedule.pendingForMs;
  return {
    ...rest,
    txtRecord: txtRecordOf(row.domain, txtToken),
    lapsesAt: row.state === 'failing' && row.failingSince ? lapsesAt(row.failingSince, schedule) : null,
    nextCheckAt: checkedOnlyOnDemand ? null : nextCheckAt,
  };
}

export function domainsRouter(deps: TenantDeps & { db: Database; lookup: TxtLookup; schedule: CheckSchedule }) {
  const { db, lookup, schedule } = deps;
  const router = Router();

  /** The caller's database, once they are known to be an owner or admin of the organization. */
  const asAdmin = async (req: Request) => {
    if (req.caller?.kind === 'service') throw forbidden('Domains are managed by the owners and admins of an organization, not the service key');
    const caller = asCaller(db, req);
    await caller.checkNow();
    assertRole(req.role, ['owner', 'admin']);
    return caller;
  };

  router.get('/', async (req, res) => {
    const caller = await asAdmin(req);
    const { rows } = await caller.query<DomainRow>(`SELECT ${domainColumns} FROM "authstrap_domain" WHERE "organizationId" = authstrap.organization_id() ORDER BY "createdAt", "id"`);
    sendData(res, rows.map((row) => present(row, schedule)));
  });

  router.post('/', async (req, res) => {
    const caller = await asAdmin(req);
    const { domain } = parseBody('domain', DomainClaimInput, req);
    const organizationId = req.organizationId!;
    let created: DomainRow;
    try {
      created = await caller.transaction(async (tx) => {
        // Counted and inserted under one lock: two claims at once cannot both pass the limit.
        await lockUntilCommit(tx, `domains:org:${organizationId}`);
        const { rows: counted } = await tx.query<{ claims: number }>(`SELECT count(*)::int AS "claims" FROM "authstrap_domain" WHERE "organizationId" = authstrap.organization_id()`);
        if (counted[0]!.claims >= domainsPerOrganization) throw new HttpError(409, 'LIMIT_REACHED', `An organization may claim at most ${domainsPerOrganization} domains: remove one first`);
        const { rows } = await tx.query<DomainRow>(
          `INSERT INTO "authstrap_domain" ("organizationId", "domain", "txtToken", "createdBy") VALUES (authstrap.organization_id(), $1, $2, authstrap.user_id())
           RETURNING ${domainColumns}`,
          [domain, randomBytes(24).toString('base64url')],
        );
        await recordEvent(tx, { type: 'domain.claimed', organizationId, entity: 'domain', entityId: rows[0]!.id, data: { domain } }, requestContext(req));
        return rows[0]!;
      });
    } catch (error) {
      if (hasSqlState(error) && error.code === '23505') throw new HttpError(409, 'CONFLICT', `This organization has claimed ${domain} already`);
      throw error;
    }
    sendData(res, present(created, schedule), 201);
  });

  router.post('/:id/verify', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('domain', req.params.id);
    const found = await caller.query<DomainRow>(`SELECT ${domainColumns} FROM "authstrap_domain" WHERE "id" = $1 AND "organizationId" = authstrap.organization_id()`, [id]);
    const domain = found.rows[0];
    if (!domain) throw notFound('domain', id);
    const { finding, row } = await checkDomain(caller, { domain, organizationId: req.organizationId!, lookup, now: new Date(), schedule, context: requestContext(req) });
    if (finding.kind === 'taken') throw new HttpError(409, 'DOMAIN_TAKEN', `${domain.domain}: ${takenReason}; a domain belongs to one organization at a time`);
    // Changed by another check meanwhile (the worker's): what it is now.
    const current = row ?? (await caller.query<DomainRow>(`SELECT ${domainColumns} FROM "authstrap_domain" WHERE "id" = $1`, [id])).rows[0];
    if (!current) throw notFound('domain', id);
    sendData(res, present(current, schedule));
  });

  router.delete('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('domain', req.params.id);
    const organizationId = req.organizationId!;
    await caller.transaction(async (tx) => {
      // The lock a change of the organization's sign-in policy takes: requiring SSO (which needs a
      // counting domain) and removing the last one cannot cross.
      await lockUntilCommit(tx, `sign-in:org:${organizationId}`);
      const { rows } = await tx.query<{ domain: string; state: DomainRow['state']; othersCounting: number; ssoRequired: boolean }>(
        `SELECT d."domain", d."state",
                (SELECT count(*)::int FROM "authstrap_domain" o WHERE o."organizationId" = d."organizationId" AND o."id" <> d."id" AND o."state" IN ('verified', 'failing')) AS "othersCounting",
                COALESCE((SELECT p."ssoRequired" FROM "authstrap_sso_policy" p WHERE p."organizationId" = d."organizationId"), false) AS "ssoRequired"
           FROM "authstrap_domain" d WHERE d."id" = $1 AND d."organizationId" = authstrap.organization_id()`,
        [id],
      );
      const domain = rows[0];
      if (!domain) throw notFound('domain', id);
      if (domain.ssoRequired && effectiveStates.includes(domain.state) && domain.othersCounting === 0) {
        throw new HttpError(409, 'LAST_VERIFIED_DOMAIN', `${domain.domain} is the organization's last verified domain while it requires single sign-on: stop requiring it first`);
      }
      await tx.query(`DELETE FROM "authstrap_domain" WHERE "id" = $1 AND "organizationId" = authstrap.organization_id()`, [id]);
      await recordEvent(tx, { type: 'domain.removed', organizationId, entity: 'domain', entityId: id, data: { domain: domain.domain, state: domain.state } }, requestContext(req));
    });
    res.status(204).end();
  });

  return tenantScoped(deps, router);
}
