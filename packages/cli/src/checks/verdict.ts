import type { Check, CheckResult, Finding, Outcome, Status } from './check.js';

/** What `verify` found for one check: its examine of the project, its probe of the backend. */
export interface CheckParts {
  examined?: Finding;
  probed?: Outcome & { rateLimited?: true };
}

const severity: Record<Status, number> = { pass: 0, skip: 1, warn: 2, fail: 3 };

/**
 * verify's verdict on each check from its parts (pure). The worst part decides: a failure of
 * either fails it, and a part that could not run makes it a skip, never a pass. The hint of a
 * failure names a check only when that check found something in this run: the check itself when
 * its examine has a repair, or one of the `causes` of a failed probe; otherwise its advice.
 */
export function verdicts(checks: Check[], parts: Map<string, CheckParts>): CheckResult[] {
  const judged = checks.map((check) => ({ check, ...judge(parts.get(check.id) ?? {}) }));
  const failed = new Map(judged.filter((entry) => entry.status === 'fail').map((entry) => [entry.check.id, entry]));
  return judged.map(({ check, status, message, rateLimited }) => {
    const result: CheckResult = { id: check.id, title: check.title, status, message, ...(rateLimited ? { rateLimited } : {}) };
    if (status !== 'fail' && status !== 'warn') return result;
    const { examined, probed } = parts.get(check.id) ?? {};
    if (examined?.repair && examined.status === status) return { ...result, fix: repairHint(examined.repair.summary) };
    if (probed?.status === 'fail') {
      if (probed.fix) return { ...result, fix: probed.fix };
      const causes = (check.causes ?? []).filter((id) => failed.has(id));
      if (causes.length > 0) {
        const repairable = causes.filter((id) => parts.get(id)?.examined?.repair);
        return { ...result, fix: `caused by ${causes.join(', ')}${repairable.length ? `: authstrap fix repairs ${repairable.join(', ')}` : ''}` };
      }
      if (check.advice) return { ...result, fix: check.advice };
    }
    return result;
  });
}

/** The hint of a failure that `authstrap fix` repairs. */
export const repairHint = (summary: string) => `authstrap fix repairs it: ${summary}`;

function judge({ examined, probed }: CheckParts): Outcome & { rateLimited?: true } {
  const present = [examined, probed].filter((part): part is Outcome => part !== undefined);
  if (present.length === 0) return { status: 'skip', message: 'nothing to check here' };
  const status = present.reduce<Status>((worst, part) => (severity[part.status] > severity[worst] ? part.status : worst), 'pass');
  // A failure or warning says what is wrong; a pass or skip says everything that was (and was not) checked.
  const shown = status === 'fail' || status === 'warn' ? present.filter((part) => part.status === status) : present;
  // Parts may share sentences (a check's examine and probe judge the same facts): each is said once.
  const message = [...new Set(shown.flatMap((part) => part.message.split('; ')))].join('; ');
  return { status, message, ...(probed?.rateLimited && status === 'skip' ? { rateLimited: true as const } : {}) };
}
