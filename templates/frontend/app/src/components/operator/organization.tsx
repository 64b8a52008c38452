'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useCallback, useState } from 'react';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { CardTable } from '@/components/ui/card-table';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { EventSentence } from '@/components/ui/event-sentence';
import { LoadError, useLoad } from '@/components/ui/load';
import { Pager } from '@/components/ui/pager';
import type { OperatorOrganization, Role } from '@/lib/authstrap-client';
import { operatorApi } from '@/lib/api';
import { dateTimeFormat } from './formats';
import { ReasonedAction } from './user';

const roles: Role[] = ['owner', 'admin', 'member'];
const eventsPerPage = 20;

/**
 * One organization, as support needs it: its members and roles (a role changed, the ownership
 * transferred), pending invitations, machine keys (never a secret; disabled and enabled), webhook
 * endpoints and how their deliveries fare (disabled and enabled), its audit log, and its deletion
 * with the slug typed. Each action is in the platform's log and the organization's own; a refusal
 * (the only owner, a key disabled already) shows the backend's words.
 */
export function OperatorOrganizationDetail({ id }: { id: string }) {
  const router = useRouter();
  const { data: organization, error, reload } = useLoad(useCallback(() => operatorApi.organization(id), [id]));
  const [eventsPage, setEventsPage] = useState(1);
  const {
    data: events,
    error: eventsError,
    reload: reloadEvents,
  } = useLoad(useCallback(() => operatorApi.organizationEvents(id, { page: eventsPage, limit: eventsPerPage }), [id, eventsPage]));
  const changed = async () => {
    await Promise.all([reload(), reloadEvents()]);
  };

  const memberAction = useAction(async (work: () => Promise<string>) => {
    const done = await work();
    await changed();
    return done;
  });
  const keyAction = useAction(async (key: OperatorOrganization['machineKeys'][number]) => {
    await operatorApi.setMachineKeyEnabled(id, key.id, !key.enabled);
    await changed();
    return `The key ${key.name ?? key.start ?? key.id} is ${key.enabled ? 'disabled' : 'enabled'}.`;
  });
  const endpointAction = useAction(async (endpoint: OperatorOrganization['webhookEndpoints'][number]) => {
    await operatorApi.setWebhookEndpointEnabled(id, endpoint.id, !endpoint.enabled);
    await changed();
    return `${endpoint.url} is ${endpoint.enabled ? 'disabled' : 'enabled'}.`;
  });

  if (!organization) return error ? <LoadError error={error} /> : <p className="muted" role="status">Loading…</p>;
  return (
    <section className="grid min-w-0 gap-6">
      <div className="grid gap-2">
        <p className="muted">
          <Link href="/operator/organizations">Organizations</Link> / {organization.name}
        </p>
        <h1 className="mb-0 break-words">{organization.name}</h1>
        <p className="break-all">
          {organization.slug} <span className="muted font-mono text-xs">{organization.id}</span>
        </p>
        <p className="muted">Created {dateTimeFormat.format(new Date(organization.createdAt))}.</p>
        <LoadError error={error} />
      </div>

      <div className="grid min-w-0 gap-2">
        <h2>Members</h2>
        <p className="muted">A role changed here, or the ownership handed over, is in the organization’s audit log as done by an operator.</p>
        <OutcomeMessage outcome={memberAction.outcome} pending={memberAction.pending} />
        <CardTable label="Members" columns={['Member', 'Role', 'Joined', 'Actions']}>
          {organization.members.map((member) => {
            const name = member.name || member.email;
            return (
              <tr key={member.userId} className="align-top">
                <td data-label="Member" className="break-words">
                  <Link href={`/operator/users/${member.userId}`}>{name}</Link>
                  <div className="muted break-all">{member.email}</div>
                  {member.banned && <span className="badge bad">Banned</span>}
                </td>
                <td data-label="Role">
                  <select
                    aria-label={`Role of ${name}`}
                    value={member.role}
                    disabled={memberAction.pending}
                    onChange={(event) => {
                      const role = event.target.value as Role;
                      void memberAction.run(async () => {
                        await operatorApi.changeRole(id, member.userId, role);
                        return `${name} is ${role === 'admin' ? 'an' : 'a'} ${role} now.`;
                      });
                    }}
                  >
                    {roles.map((role) => (
                      <option key={role} value={role}>
                        {role}
                      </option>
                    ))}
                  </select>
                </td>
                <td data-label="Joined">{dateTimeFormat.format(new Date(member.joinedAt))}</td>
                <td data-label="Actions">
                  {member.role !== 'owner' && (
                    <ConfirmButton
                      label="Make owner"
                      accessibleName={`Make owner: ${name}`}
                      title={`Make ${name} the owner?`}
                      description="They become the organization’s owner; its other owners become admins."
                      confirmLabel="Make owner"
                      className="quiet"
                      disabled={memberAction.pending}
                      onConfirm={() =>
                        memberAction.run(async () => {
                          await operatorApi.transferOwnership(id, member.userId);
                          return `${name} owns the organization now.`;
                        })
                      }
                    />
                  )}
                </td>
              </tr>
            );
          })}
        </CardTable>
      </div>

      <div className="grid min-w-0 gap-2">
        <h2>Invitations</h2>
        {organization.invitations.length === 0 ? (
          <p className="muted">No invitation is waiting.</p>
        ) : (
          <CardTable label="Invitations" columns={['Address', 'Role', 'Invited by', 'Expires']}>
            {organization.invitations.map((invitation) => (
              <tr key={invitation.id} className="align-top">
                <td data-label="Address" className="break-all">
                  {invitation.email}
                </td>
                <td data-label="Role">{invitation.role}</td>
                <td data-label="Invited by" className="break-all">
                  {invitation.invitedBy.email ?? 'a former member'}
                </td>
                <td data-label="Expires">{dateTimeFormat.format(new Date(invitation.expiresAt))}</td>
              </tr>
            ))}
          </CardTable>
        )}
      </div>

      <div className="grid min-w-0 gap-2">
        <h2>Machine keys</h2>
        <p className="muted">Never the keys themselves. A disabled key is refused from its next request, until enabled again.</p>
        <OutcomeMessage outcome={keyAction.outcome} pending={keyAction.pending} />
        {organization.machineKeys.length === 0 ? (
          <p className="muted">No machine keys.</p>
        ) : (
          <CardTable label="Machine keys" columns={['Key', 'Role', 'State', 'Used', 'Actions']}>
            {organization.machineKeys.map((key) => {
              const name = key.name ?? key.start ?? key.id;
              return (
                <tr key={key.id} className="align-top">
                  <td data-label="Key" className="break-words">
                    {name}
                    <div className="muted font-mono text-xs">{key.start ? `${key.start}…` : key.id}</div>
                    {key.createdBy && <div className="muted break-all">by {key.createdBy.email ?? 'a former member'}</div>}
                  </td>
                  <td data-label="Role">{key.role}</td>
                  <td data-label="State">
                    {key.enabled ? <span className="badge good">Enabled</span> : <span className="badge bad">Disabled</span>}
                    {key.remaining !== null && <div className="muted">{key.remaining} requests left</div>}
                  </td>
                  <td data-label="Used">
                    {key.requestCount} {key.requestCount === 1 ? 'request' : 'requests'}
                    <div className="muted">{key.lastRequest ? `last ${dateTimeFormat.format(new Date(key.lastRequest))}` : 'never'}</div>
                  </td>
                  <td data-label="Actions">
                    <button type="button" className={key.enabled ? 'quiet danger' : 'quiet'} disabled={keyAction.pending} onClick={() => void keyAction.run(key)}>
                      {key.enabled ? `Disable ${name}` : `Enable ${name}`}
                    </button>
                  </td>
                </tr>
              );
            })}
          </CardTable>
        )}
      </div>

      <div className="grid min-w-0 gap-2">
        <h2>Webhook endpoints</h2>
        <p className="muted">Never their secrets. How deliveries fare: failures in a row, failed ones in the last 7 days, retries waiting.</p>
        <OutcomeMessage outcome={endpointAction.outcome} pending={endpointAction.pending} />
        {organization.webhookEndpoints.length === 0 ? (
          <p className="muted">No webhook endpoints.</p>
        ) : (
          <CardTable label="Webhook endpoints" columns={['Endpoint', 'Health', 'State', 'Actions']}>
            {organization.webhookEndpoints.map((endpoint) => (
              <tr key={endpoint.id} className="align-top">
                <td data-label="Endpoint" className="break-all">
                  {endpoint.url}
                  {endpoint.description && <div className="muted">{endpoint.description}</div>}
                </td>
                <td data-label="Health">
                  {endpoint.failureCount === 0 ? <span className="badge good">Delivering</span> : <span className="badge warning">{endpoint.failureCount} failed in a row</span>}
                  <div className="muted">
                    {endpoint.deliveries.failedLast7Days} failed in 7 days, {endpoint.deliveries.retrying} retrying; last success{' '}
                    {endpoint.deliveries.lastSuccessAt ? dateTimeFormat.format(new Date(endpoint.deliveries.lastSuccessAt)) : 'never'}
                  </div>
                  {endpoint.deliveries.lastError && <div className="muted break-all">Last error: {endpoint.deliveries.lastError}</div>}
                </td>
                <td data-label="State">
                  {endpoint.enabled ? <span className="badge good">Enabled</span> : <span className="badge bad">Disabled</span>}
                  {endpoint.disabledReason && <div className="muted">{endpoint.disabledReason}</div>}
                </td>
                <td data-label="Actions">
                  <button
                    type="button"
                    className={endpoint.enabled ? 'quiet danger' : 'quiet'}
                    aria-label={`${endpoint.enabled ? 'Disable' : 'Enable'} ${endpoint.url}`}
                    disabled={endpointAction.pending}
                    onClick={() => void endpointAction.run(endpoint)}
                  >
                    {endpoint.enabled ? 'Disable' : 'Enable'}
                  </button>
                </td>
              </tr>
            ))}
          </CardTable>
        )}
      </div>

      <div className="grid min-w-0 gap-2">
        <h2>Audit log</h2>
        <p className="muted">The organization’s own log, newest first, as its owners see it.</p>
        <LoadError error={eventsError} />
        {events && (
          <>
            {events.data.length === 0 ? (
              <p className="muted">No events.</p>
            ) : (
              <CardTable label="Events" columns={['Time', 'Event']}>
                {events.data.map((event) => (
                  <tr key={event.id} className="align-top">
                    <td data-label="Time" className="min-w-28">
                      {dateTimeFormat.format(new Date(event.createdAt))}
                    </td>
                    <td data-label="Event" className="break-words">
                      <EventSentence event={event} />
                    </td>
                  </tr>
                ))}
              </CardTable>
            )}
            <Pager meta={events.meta} onPage={setEventsPage} />
          </>
        )}
      </div>

      <ReasonedAction
        title="Delete the organization"
        explanation="Deletes it with everything in it: records, invitations, machine keys, webhook endpoints. Its members keep their accounts and their other organizations."
        reasonOptional
        buttonLabel={`Delete ${organization.name}`}
        confirm={{
          title: `Delete ${organization.name}?`,
          description: `Everything in ${organization.slug} is deleted; this cannot be undone.`,
          confirmLabel: 'Delete',
          typeToConfirm: organization.slug,
        }}
        onConfirm={async (reason) => {
          await operatorApi.deleteOrganization(id, organization.slug, reason || undefined);
          router.push('/operator/organizations');
          return `${organization.name} is deleted.`;
        }}
      />
    </section>
  );
}
