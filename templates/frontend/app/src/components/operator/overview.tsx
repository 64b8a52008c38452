'use client';

import Link from 'next/link';
import { useCallback, useState } from 'react';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { CardTable } from '@/components/ui/card-table';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { LoadError, useLoad } from '@/components/ui/load';
import { EventsPerDayChart } from '@/components/settings/events-per-day-chart';
import type { OperatorOverview } from '@/lib/authstrap-client';
import { operatorApi } from '@/lib/api';
import { dateFormat } from './formats';

/** The ranges the charts offer, in days (today included); 30 first. */
const ranges = [7, 30, 90, 365];

type Day = OperatorOverview['days'][number];
const series: { key: 'signUps' | 'activeUsers' | 'newOrganizations'; label: string; units: [string, string] }[] = [
  { key: 'signUps', label: 'Sign-ups', units: ['sign-up', 'sign-ups'] },
  { key: 'activeUsers', label: 'Active users', units: ['active user', 'active users'] },
  { key: 'newOrganizations', label: 'New organizations', units: ['new organization', 'new organizations'] },
];

/**
 * The platform at a glance (GET /api/operator/overview): sign-ups, active users and new
 * organizations per day over the chosen range, the webhook endpoints whose deliveries fail, and
 * the organizations near a limit, each linking to its organization; and the operators.
 */
export function OperatorOverviewPage() {
  const [days, setDays] = useState(30);
  const { data: overview, error } = useLoad(useCallback(() => operatorApi.overview(days), [days]));

  return (
    <section className="grid min-w-0 gap-6">
      <div>
        <h1>Overview</h1>
        <p className="muted">The platform per day (UTC), and what needs someone’s attention.</p>
      </div>
      <label className="max-w-xs">
        Days shown
        <select value={days} onChange={(event) => setDays(Number(event.target.value))}>
          {ranges.map((range) => (
            <option key={range} value={range}>
              Last {range} days
            </option>
          ))}
        </select>
      </label>
      <LoadError error={error} />
      {!overview ? (
        !error && <p className="muted" role="status">Loading…</p>
      ) : (
        <>
          <div className="grid min-w-0 gap-4 lg:grid-cols-3">
            {series.map(({ key, label, units }) => (
              <DayChart key={key} days={overview.days} field={key} label={label} units={units} />
            ))}
          </div>
          <FailingWebhookEndpoints endpoints={overview.failingWebhookEndpoints} />
          <NearLimits rows={overview.organizationsNearLimits} />
        </>
      )}
      <Operators />
    </section>
  );
}

/** One series of the overview as a chart, with its total over the range in numbers above it. */
function DayChart({ days, field, label, units }: { days: Day[]; field: keyof Omit<Day, 'day'>; label: string; units: [string, string] }) {
  const counted = days.map((day) => ({ day: day.day, count: day[field] }));
  const total = counted.reduce((sum, day) => sum + day.count, 0);
  return (
    <div className="card grid min-w-0 content-start gap-2" role="region" aria-label={label}>
      <h2 className="mb-0">{label}</h2>
      <p>
        <span className="text-2xl font-semibold">{total}</span> <span className="muted">in {days.length} days{field === 'activeUsers' ? ' (a user counted once a day)' : ''}</span>
      </p>
      <EventsPerDayChart days={counted} from={days[0]?.day} to={days[days.length - 1]?.day} label={label} units={units} longest={366} />
    </div>
  );
}

function OrganizationLink({ organization }: { organization: { id: string; name: string; slug: string } }) {
  return (
    <>
      <Link href={`/operator/organizations/${organization.id}`}>{organization.name}</Link> <span className="muted">({organization.slug})</span>
    </>
  );
}

function FailingWebhookEndpoints({ endpoints }: { endpoints: OperatorOverview['failingWebhookEndpoints'] }) {
  return (
    <div className="grid min-w-0 gap-2">
      <h2>Failing webhook endpoints</h2>
      {endpoints.length === 0 ? (
        <p className="muted">Every webhook endpoint’s last delivery went through.</p>
      ) : (
        <CardTable label="Failing webhook endpoints" columns={['Organization', 'Endpoint', 'Failures in a row', 'State']}>
          {endpoints.map((endpoint) => (
            <tr key={endpoint.id} className="align-top">
              <td data-label="Organization" className="break-words">
                <OrganizationLink organization={endpoint.organization} />
              </td>
              <td data-label="Endpoint" className="break-all">
                {endpoint.url}
              </td>
              <td data-label="Failures in a row">{endpoint.failureCount}</td>
              <td data-label="State">{endpoint.enabled ? <span className="badge warning">Failing</span> : <span className="badge bad">Disabled{endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}</span>}</td>
            </tr>
          ))}
        </CardTable>
      )}
    </div>
  );
}

function NearLimits({ rows }: { rows: OperatorOverview['organizationsNearLimits'] }) {
  return (
    <div className="grid min-w-0 gap-2">
      <h2>Organizations near their limits</h2>
      {rows.length === 0 ? (
        <p className="muted">No organization is near a limit (pending invitations, a machine key’s quota).</p>
      ) : (
        <CardTable label="Organizations near their limits" columns={['Organization', 'Limit', 'Where it stands']}>
          {rows.map((row) => (
            <tr key={`${row.organization.id}-${row.limit}-${row.keyId ?? ''}`} className="align-top">
              <td data-label="Organization" className="break-words">
                <OrganizationLink organization={row.organization} />
              </td>
              <td data-label="Limit">{row.limit === 'pendingInvitations' ? 'Pending invitations' : 'A machine key’s quota'}</td>
              <td data-label="Where it stands">
                {row.limit === 'pendingInvitations'
                  ? `${row.current} pending of ${row.maximum ?? '—'}`
                  : `${row.current} requests left${row.maximum === null ? '' : ` of ${row.maximum}`}`}
              </td>
            </tr>
          ))}
        </CardTable>
      )}
    </div>
  );
}

/** The platform's operators: granted by address (a user who signed up), revoked (never the last one). */
function Operators() {
  const { data: operators, error, reload } = useLoad(useCallback(() => operatorApi.operators(), []));
  const [email, setEmail] = useState('');
  const grant = useAction(async () => {
    const granted = await operatorApi.grantOperator(email.trim());
    setEmail('');
    await reload();
    return `${granted.email} is an operator.`;
  });
  const revoke = useAction(async (userId: string) => {
    const revoked = await operatorApi.revokeOperator(userId);
    await reload();
    return `${revoked.email} is no longer an operator.`;
  });
  return (
    <div className="grid min-w-0 gap-2">
      <h2>Operators</h2>
      <p className="muted">Who may see and act on every organization. Each grant and revocation is in the audit log.</p>
      <LoadError error={error} />
      {operators && (
        <CardTable label="Operators" columns={['Operator', 'Granted', 'By', 'Actions']}>
          {operators.map((operator) => (
            <tr key={operator.userId} className="align-top">
              <td data-label="Operator" className="break-words">
                <Link href={`/operator/users/${operator.userId}`}>{operator.name || operator.email}</Link>
                <div className="muted break-all">{operator.email}</div>
              </td>
              <td data-label="Granted">{dateFormat.format(new Date(operator.grantedAt))}</td>
              <td data-label="By" className="break-words">
                {operator.grantedBy.commandLine ? 'the command line' : operator.grantedBy.email ?? 'a former operator'}
              </td>
              <td data-label="Actions">
                <ConfirmButton
                  label="Revoke"
                  accessibleName={`Revoke ${operator.email}'s operator role`}
                  title={`Revoke ${operator.email}'s operator role?`}
                  description="They keep their account and organizations; their sessions as other users end."
                  confirmLabel="Revoke"
                  disabled={revoke.pending}
                  onConfirm={() => revoke.run(operator.userId)}
                />
              </td>
            </tr>
          ))}
        </CardTable>
      )}
      <OutcomeMessage outcome={revoke.outcome} pending={revoke.pending} />
      <form
        aria-label="Grant the operator role"
        className="flex flex-wrap items-end gap-2"
        onSubmit={(event) => {
          event.preventDefault();
          void grant.run();
        }}
      >
        <label className="min-w-0 flex-1">
          Address of a user to make an operator
          <input type="email" required value={email} onChange={(event) => setEmail(event.target.value)} autoComplete="off" />
        </label>
        <button type="submit" disabled={grant.pending}>
          Grant
        </button>
      </form>
      <OutcomeMessage outcome={grant.outcome} pending={grant.pending} />
    </div>
  );
}
