import type { DomainSettings } from '../config.js';
import { verificationValuePrefix } from './domain-name.js';
import type { TxtAnswer } from './txt-lookup.js';

/**
 * A domain's states, and what one check does to them: a pure plan (the row as it was, what DNS
 * said, the time) that domain-checks.ts applies. docs/domains.md tells the same story for owners.
 *
 *   pending  --record found-->  verified  --record gone-->  failing  --grace over-->  lapsed
 *                                   ^---------record found again-------'  <-----------'
 *
 * `verified` and `failing` both count (the domain routes, captures and enforces): `failing` is the
 * grace in which an owner who removed the record by mistake puts it back. No answer from DNS
 * (a timeout, a server failure) is no finding and changes no state; it is asked again in an hour.
 */

export type DomainState = 'pending' | 'verified' | 'failing' | 'lapsed';

/** The states in which a domain counts: the sign-in rule's, and the unique index's. */
export const effectiveStates: readonly DomainState[] = ['verified', 'failing'];

/** What a check learnt. `taken`: the record is there, but another organization holds the domain verified. */
export type Finding = { kind: 'found' } | { kind: 'absent'; reason: string } | { kind: 'unanswered'; reason: string } | { kind: 'taken' };

export const takenReason = 'another organization verified this domain';

/** What DNS answered, read against the claim's token: found only with the exact value. */
export function findingOf(answer: TxtAnswer, txtToken: string): Finding {
  if (answer.kind === 'unanswered') return { kind: 'unanswered', reason: answer.reason };
  if (answer.kind === 'none') return { kind: 'absent', reason: answer.reason };
  const expected = `${verificationValuePrefix}${txtToken}`;
  if (answer.values.some((value) => value.trim() === expected)) return { kind: 'found' };
  return { kind: 'absent', reason: answer.values.some((value) => value.startsWith(verificationValuePrefix)) ? 'record found with another token' : 'record not found' };
}

/** The schedule, in milliseconds, from the settings and the design's fixed steps. */
export interface CheckSchedule {
  /** A verified (or lapsed) domain is checked again this long after a check. */
  intervalMs: number;
  /** How long a failing domain still counts. */
  failingGraceMs: number;
  /** A pending claim is checked every 5 minutes ... */
  pendingRetryMs: number;
  /** ... for its first 72 hours; then only when its owner asks (POST /domains/:id/verify). */
  pendingForMs: number;
  /** After no answer from DNS, and while failing: checked again within the hour. */
  retryMs: number;
}

const minute = 60_000;
const hour = 60 * minute;

export const checkScheduleOf = (settings: Pick<DomainSettings, 'checkIntervalHours' | 'failingGraceDays'>): CheckSchedule => ({
  intervalMs: settings.checkIntervalHours * hour,
  failingGraceMs: settings.failingGraceDays * 24 * hour,
  pendingRetryMs: 5 * minute,
  pendingForMs: 72 * hour,
  retryMs: hour,
});

/** The row as the plan reads it. */
export interface CheckedDomain {
  state: DomainState;
  failingSince: Date | null;
}

/** The row after the check, and what to tell. */
export interface CheckPlan {
  state: DomainState;
  /** Set to the check's time when the domain becomes verified; otherwise kept. */
  verifiedNow: boolean;
  failingSince: Date | null;
  lastCheckError: string | null;
  nextCheckAt: Date;
  event?: { type: 'domain.verified' | 'domain.failing' | 'domain.lapsed'; data: Record<string, unknown> };
}

const after = (now: Date, ms: number) => new Date(now.getTime() + ms);
const earlier = (a: Date, b: Date) => (a.getTime() <= b.getTime() ? a : b);

/** When a failing domain lapses. */
export const lapsesAt = (failingSince: Date, schedule: CheckSchedule) => after(failingSince, schedule.failingGraceMs);

export function planCheck(domain: CheckedDomain, finding: Finding, now: Date, schedule: CheckSchedule): CheckPlan {
  const { state } = domain;
  const keep = (lastCheckError: string | null, nextCheckAt: Date): CheckPlan => ({ state, verifiedNow: false, failingSince: domain.failingSince, lastCheckError, nextCheckAt });
  /** When a domain that is not (or no longer) proven is asked again. */
  const unprovenNext = () => (state === 'pending' ? after(now, schedule.pendingRetryMs) : after(now, schedule.intervalMs));
  const failingNext = (since: Date) => earlier(after(now, schedule.retryMs), lapsesAt(since, schedule));
  const graceOver = state === 'failing' && domain.failingSince !== null && now.getTime() >= lapsesAt(domain.failingSince, schedule).getTime();
  const lapse = (reason: string): CheckPlan => ({
    state: 'lapsed',
    verifiedNow: false,
    failingSince: null,
    lastCheckError: reason,
    nextCheckAt: after(now, schedule.intervalMs),
    event: { type: 'domain.lapsed', data: { failingSince: domain.failingSince, reason } },
  });

  switch (finding.kind) {
    case 'found':
      if (state === 'verified') return keep(null, after(now, schedule.intervalMs));
      return { state: 'verified', verifiedNow: true, failingSince: null, lastCheckError: null, nextCheckAt: after(now, schedule.intervalMs), event: { type: 'domain.verified', data: { previousState: state } } };
    case 'taken':
      // Another organization's proof came first: this claim (pending or lapsed; one that counts
      // cannot meet this, the unique index being on both counting states) stays what it was.
      return keep(takenReason, unprovenNext());
    case 'absent':
      if (state === 'verified') {
        return { state: 'failing', verifiedNow: false, failingSince: now, lastCheckError: finding.reason, nextCheckAt: failingNext(now), event: { type: 'domain.failing', data: { reason: finding.reason, lapsesAt: lapsesAt(now, schedule) } } };
      }
      if (state === 'failing') return graceOver ? lapse(finding.reason) : keep(finding.reason, failingNext(domain.failingSince ?? now));
      return keep(finding.reason, unprovenNext());
    case 'unanswered':
      // No finding; but a failing domain's grace is a deadline, not a count of findings: once it is
      // over, a DNS that cannot answer does not keep the domain counting.
      if (graceOver) return lapse(finding.reason);
      if (state === 'failing') return keep(finding.reason, failingNext(domain.failingSince ?? now));
      return keep(finding.reason, after(now, state === 'pending' ? schedule.pendingRetryMs : schedule.retryMs));
  }
}
