import type { Logger } from 'pino';
import { endRefusedSessions } from '../auth/sign-in-policy.js';
import { hasSqlState, type Database } from '../db/database.js';
import { withScope, type ScopedQueryable } from '../db/scope.js';
import { recordEvent, type EventContext } from '../events/events.js';
import { txtRecordOf } from './domain-name.js';
import { findingOf, planCheck, type CheckPlan, type CheckSchedule, type CheckedDomain, type Finding } from './domain-states.js';
import type { TxtLookup } from './txt-lookup.js';
import { pollingWorker, type PollingWorker } from '../db/polling-worker.js';

/**
 * Checking a domain: the DNS question (txt-lookup.ts), the plan (domain-states.ts), and applying
 * it in one transaction of the domain's organization: the row, its event, and, when it becomes
 * verified, the end of the sessions the organization's SSO rule now refuses
 * (`endRefusedSessions`, docs/enterprise-identity.md 3.5). POST /domains/:id/verify checks one now;
 * the worker below checks every due one, on every instance, without two checking the same.
 */

/** A domain as the API answers it, before domains.router.ts adds its TXT record. */
export interface DomainRow {
  id: string;
  domain: string;
  state: CheckedDomain['state'];
  txtToken: string;
  verifiedAt: Date | null;
  lastCheckedAt: Date | null;
  failingSince: Date | null;
  lastCheckError: string | null;
  nextCheckAt: Date;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const domainColumns = `"id", "domain", "state", "txtToken", "verifiedAt", "lastCheckedAt", "failingSince", "lastCheckError", "nextCheckAt", "createdBy", "createdAt", "updatedAt"`;

/** The domain a check is about: what the plan reads, and what names the record. */
export type DomainToCheck = Pick<DomainRow, 'id' | 'domain' | 'state' | 'txtToken' | 'failingSince'>;

/** Where a check's transaction runs: the caller's scope (a route) or the `system` role's (the worker). */
interface ScopedTransactions {
  transaction<T>(work: (tx: ScopedQueryable) => Promise<T>): Promise<T>;
}

/** The unique index that keeps a domain to one organization while it counts. */
const verifiedDomainKey = 'authstrap_domain_domain_verified_key';

const isTakenElsewhere = (error: unknown) => hasSqlState(error) && error.code === '23505' && (error as { constraint?: string }).constraint === verifiedDomainKey;

/**
 * Writes `plan` over the row, if it still is in the state the plan was made from (a check of the
 * route and one of the worker may meet; the later one changes nothing and answers undefined).
 */
async function applyPlan(tx: ScopedQueryable, domain: DomainToCheck, organizationId: string, plan: CheckPlan, now: Date, context: EventContext): Promise<DomainRow | undefined> {
  const { rows } = await tx.query<DomainRow>(
    `UPDATE "authstrap_domain" SET "state" = $3, "verifiedAt" = CASE WHEN $4 THEN $5 ELSE "verifiedAt" END, "failingSince" = $6,
            "lastCheckError" = $7, "lastCheckedAt" = $5, "nextCheckAt" = $8, "updatedAt" = $5
      WHERE "id" = $1 AND "state" = $2 AND "organizationId" = authstrap.organization_id()
      RETURNING ${domainColumns}`,
    [domain.id, domain.state, plan.state, plan.verifiedNow, now, plan.failingSince, plan.lastCheckError, plan.nextCheckAt],
  );
  const row = rows[0];
  if (!row || !plan.event) return row;
  const data: Record<string, unknown> = { domain: domain.domain, ...plan.event.data };
  // Verified while the organization requires SSO: its addresses' password sessions end now, in this transaction.
  if (plan.event.type === 'domain.verified') data.sessionsEnded = await endRefusedSessions(tx, { kind: 'domain-verified', organizationId, domain: domain.domain });
  await recordEvent(tx, { type: plan.event.type, organizationId, entity: 'domain', entityId: domain.id, data }, context);
  return row;
}

export interface CheckDone {
  finding: Finding;
  /** The row after the check; undefined when another check changed it first. */
  row: DomainRow | undefined;
}

/** Asks DNS for the domain's record and applies what it found (found, absent, no answer, or taken by another organization). */
export async function checkDomain(
  scoped: ScopedTransactions,
  { domain, organizationId, lookup, now, schedule, context }: { domain: DomainToCheck; organizationId: string; lookup: TxtLookup; now: Date; schedule: CheckSchedule; context: EventContext },
): Promise<CheckDone> {
  const answer = await lookup(txtRecordOf(domain.domain, domain.txtToken).name);
  const finding = findingOf(answer, domain.txtToken);
  const apply = (tx: ScopedQueryable, what: Finding) => applyPlan(tx, domain, organizationId, planCheck(domain, what, now, schedule), now, context);
  return scoped.transaction(async (tx) => {
    // Behind a savepoint: a refusal of the unique index leaves the transaction usable (a route's
    // keyed write runs every statement in one held transaction).
    await tx.query('SAVEPOINT authstrap_domain_check');
    try {
      return { finding, row: await apply(tx, finding) };
    } catch (error) {
      // Found, but another organization holds it verified: the unique index refused; say so on the row.
      if (!isTakenElsewhere(error)) throw error;
      await tx.query('ROLLBACK TO SAVEPOINT authstrap_domain_check');
      const taken: Finding = { kind: 'taken' };
      return { finding: taken, row: await apply(tx, taken) };
    }
  });
}

/** Checks every domain due now (by the clock), a batch at a time; `runOnce` answers how many were checked. */
export type DomainChecks = PollingWorker<number>;

/**
 * Rows one round claims at a time; how many of them are checked at once (each ends in a
 * transaction: a few, so that requests keep most of the pool's connections); and how long a claim
 * keeps others off a domain (a check takes seconds).
 */
const batchSize = 20;
const checksAtOnce = 5;
const leaseSeconds = 600;

/**
 * The worker every instance runs. Each round claims due domains with `authstrap.due_domain_checks`
 * (`FOR UPDATE SKIP LOCKED`, moving their `nextCheckAt` on in the same statement), so two
 * instances never check the same domain at once, and one stopped mid-check leaves its domains to
 * others once the lease is over. `clock` is the time the round acts at (tests set it).
 */
export function createDomainChecks({
  db,
  logger,
  lookup,
  schedule,
  pollMs,
  clock = () => new Date(),
}: {
  db: Database;
  logger: Logger;
  lookup: TxtLookup;
  schedule: CheckSchedule;
  pollMs: number;
  clock?: () => Date;
}): DomainChecks {
  const pendingHours = Math.ceil(schedule.pendingForMs / 3_600_000);

  const checkClaimed = async (domain: DomainToCheck & { organizationId: string }, now: Date) => {
    const asSystem = withScope(db, { organizationId: domain.organizationId, userId: '', role: 'system' });
    try {
      await checkDomain(asSystem, { domain, organizationId: domain.organizationId, lookup, now, schedule, context: { actorType: 'system' } });
    } catch (error) {
      // Its lease runs out and another round takes it again.
      logger.warn({ err: (error as Error)?.message, domain: domain.domain }, 'domain check failed; it is tried again later');
    }
  };

  const round = async (stopped: () => boolean) => {
    let checked = 0;
    for (;;) {
      const now = clock();
      const { rows } = await db.query<DomainToCheck & { organizationId: string }>('SELECT * FROM authstrap.due_domain_checks($1, $2, $3, $4)', [batchSize, now, leaseSeconds, pendingHours]);
      for (let start = 0; start < rows.length; start += checksAtOnce) {
        await Promise.all(rows.slice(start, start + checksAtOnce).map((domain) => checkClaimed(domain, now)));
      }
      checked += rows.length;
      if (rows.length < batchSize || stopped()) return checked;
    }
  };

  return pollingWorker({ round, pollMs, logger, what: 'domains due a check' });
}
