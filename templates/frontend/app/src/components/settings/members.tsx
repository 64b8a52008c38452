'use client';

import { useCallback, useEffect, useRef, useState } from 'react';
import { LiveIndicator, type LiveStatus } from '@/components/live-list';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import type { Member, Role, ScimManagedMember } from '@/lib/authstrap-client';
import { api } from '@/lib/api';
import { NoOrganization } from './refusal';

interface MemberRow extends Member {
  name: string | null;
  email: string;
  /** The directory that provisioned them, and what it owns of them (owners and admins see it). */
  managedBy?: ScimManagedMember;
}

const pageSize = 50;
const roles: Role[] = ['owner', 'admin', 'member'];
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

/**
 * Who belongs to the organization, their role and since when. Owners and admins change roles and
 * remove people; everyone may leave. The backend decides (only an owner makes or unmakes an owner,
 * the last owner stays); its reason is shown as it gives it.
 *
 * A member an organization's directory (SCIM) provisioned is marked "Managed by <directory>", and
 * what the directory owns is not offered by hand, with the reason beside it: their role and their
 * removal while it maps groups to roles, their name and address when their address is in a
 * verified domain (docs/scim.md in authstrap). The page follows the memberships' live stream: a
 * person the directory provisions appears, one it deprovisions goes, without a reload.
 */
export function MembersSettings() {
  const { active, loaded, userId, refresh } = useOrganizations();
  const [rows, setRows] = useState<MemberRow[]>();
  const [total, setTotal] = useState(0);
  const [page, setPage] = useState(1);
  const [loadError, setLoadError] = useState<string>();
  const [live, setLive] = useState<LiveStatus>('connecting');
  const manages = active ? managesOrganization(active.role) : false;

  const load = useCallback(async () => {
    if (!active) return;
    try {
      const members = await api.member.list({ page, limit: pageSize });
      // Names and addresses are the users': one request for the page's people (and, for those
      // who manage the organization, one for what a directory owns of them).
      const ids = members.data.map((member) => member.userId);
      const [users, managed] = ids.length
        ? await Promise.all([api.User.list({ limit: pageSize, filter: { id: { in: ids } } }).then((listed) => listed.data), manages ? api.scimDirectories.managedMembers(ids) : []])
        : [[], []];
      const byId = new Map(users.map((user) => [user.id, user]));
      const managedById = new Map(managed.map((member) => [member.userId, member]));
      setRows(
        members.data.map((member) => ({
          ...member,
          name: byId.get(member.userId)?.name ?? null,
          email: byId.get(member.userId)?.email ?? '',
          managedBy: managedById.get(member.userId),
        })),
      );
      setTotal(members.meta.total);
      setLoadError(undefined);
    } catch (thrown) {
      setRows(undefined);
      setLoadError(thrown instanceof Error ? thrown.message : String(thrown));
    }
  }, [active, page, manages]);
  useEffect(() => {
    void load();
  }, [load]);

  // Someone joined, changed role, left or was deprovisioned: the page is read again (its names,
  // and what a directory owns, come from other records than the change's).
  const latestLoad = useRef(load);
  latestLoad.current = load;
  const organizationId = active?.id;
  useEffect(() => {
    if (!organizationId) return;
    const closing = new AbortController();
    setLive('connecting');
    api.member
      .subscribe({
        signal: closing.signal,
        onEvent: (change) => {
          if (change.organizationId === organizationId) void latestLoad.current();
        },
        onReset: () => void latestLoad.current(),
        onConnectionChange: (connected) => setLive(connected ? 'live' : 'reconnecting'),
        onError: () => setLive('off'),
      })
      .then(
        () => !closing.signal.aborted && setLive('live'),
        // Refused (too many streams, say): the page still lists, without live changes.
        () => !closing.signal.aborted && setLive('off'),
      );
    return () => closing.abort();
  }, [organizationId]);

  // One message under the heading: the latest action's.
  const change = useAction(async (member: MemberRow, role: Role) => {
    remove.clear();
    await api.member.update(member.id, { role });
    await load();
    if (member.userId === userId) await refresh();
    return `${member.name ?? member.email} is now ${role === 'admin' ? 'an' : 'a'} ${role}.`;
  });
  const remove = useAction(async (member: MemberRow) => {
    change.clear();
    await api.member.delete(member.id);
    if (member.userId === userId) {
      await refresh();
      return `You left ${active?.name}.`;
    }
    await load();
    return `${member.name ?? member.email} was removed.`;
  });

  if (!active) return <NoOrganization loaded={loaded} />;
  const pages = Math.max(1, Math.ceil(total / pageSize));
  return (
    <section className="grid gap-4">
      <div>
        <h1 className="flex items-center gap-3">
          Members <LiveIndicator status={live} />
        </h1>
        <p className="muted">
          {rows ? `${total} ${total === 1 ? 'person' : 'people'} in ${active.name}.` : ''} {manages ? 'Invite more from Invitations.' : 'Owners and admins invite people and change roles.'}
        </p>
      </div>
      <OutcomeMessage outcome={change.outcome ?? remove.outcome} pending={change.pending || remove.pending} />
      {loadError && (
        <p className="error" role="alert">
          {loadError}
        </p>
      )}
      {rows && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Role</th>
                <th scope="col">Since</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((member) => {
                const who = member.name ?? member.email;
                const me = member.userId === userId;
                const directory = member.managedBy;
                // What the directory owns is changed in the identity provider: said beside the control it disables.
                const roleReason = directory?.rolesFromGroups ? `Role and removal follow their groups in ${directory.directoryName}.` : undefined;
                const reasonId = `managed-${member.id}`;
                return (
                  <tr key={member.id}>
                    <td>
                      <div className="font-medium">
                        {who}
                        {me && <span className="muted"> (you)</span>}
                        {directory && <span className="badge ml-2">Managed by {directory.directoryName}</span>}
                      </div>
                      <div className="muted">{member.email}</div>
                      {directory && (
                        <div id={reasonId} className="muted text-xs">
                          {[directory.profileFromDirectory && `Name and address come from ${directory.directoryName}.`, roleReason].filter(Boolean).join(' ') ||
                            `Deactivated in ${directory.directoryName}, they lose access here.`}
                        </div>
                      )}
                    </td>
                    <td>
                      {manages && !me ? (
                        <select
                          aria-label={`Role of ${who}`}
                          aria-describedby={roleReason ? reasonId : undefined}
                          title={roleReason}
                          value={member.role}
                          disabled={change.pending || roleReason !== undefined}
                          onChange={(event) => void change.run(member, event.target.value as Role)}
                        >
                          {roles.map((role) => (
                            <option key={role} value={role}>
                              {role}
                            </option>
                          ))}
                        </select>
                      ) : (
                        member.role
                      )}
                    </td>
                    <td>{dateFormat.format(new Date(member.createdAt))}</td>
                    <td className="text-right">
                      {me ? (
                        <ConfirmButton
                          label="Leave"
                          title={`Leave ${active.name}?`}
                          description={<p>You lose access to {active.name} until someone invites you again.</p>}
                          confirmLabel="Leave"
                          onConfirm={() => remove.run(member)}
                        />
                      ) : (
                        manages && (
                          <ConfirmButton
                            label="Remove"
                            accessibleName={`Remove ${who}`}
                            title={`Remove ${who}?`}
                            description={<p>{who} loses access to {active.name} at their next request.</p>}
                            confirmLabel="Remove"
                            onConfirm={() => remove.run(member)}
                            disabled={roleReason !== undefined}
                          />
                        )
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {pages > 1 && (
        <nav aria-label="Pages of members" className="flex items-center gap-2">
          <button type="button" className="quiet" disabled={page === 1} onClick={() => setPage(page - 1)}>
            Previous
          </button>
          <span className="muted">
            Page {page} of {pages}
          </span>
          <button type="button" className="quiet" disabled={page === pages} onClick={() => setPage(page + 1)}>
            Next
          </button>
        </nav>
      )}
    </section>
  );
}
