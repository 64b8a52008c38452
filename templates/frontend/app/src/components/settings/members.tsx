'use client';

import { useCallback, useEffect, useState } from 'react';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import type { Member, Role } from '@/lib/authstrap-client';
import { api } from '@/lib/api';
import { NoOrganization } from './refusal';

interface MemberRow extends Member {
  name: string | null;
  email: string;
}

const pageSize = 50;
const roles: Role[] = ['owner', 'admin', 'member'];
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

/**
 * Who belongs to the organization, their role and since when. Owners and admins change roles and
 * remove people; everyone may leave. The backend decides (only an owner makes or unmakes an owner,
 * the last owner stays); its reason is shown as it gives it.
 */
export function MembersSettings() {
  const { active, loaded, userId, refresh } = useOrganizations();
  const [rows, setRows] = useState<MemberRow[]>();
  const [total, setTotal] = useState(0);
  const [page, setPage] = useState(1);
  const [loadError, setLoadError] = useState<string>();

  const load = useCallback(async () => {
    if (!active) return;
    try {
      const members = await api.member.list({ page, limit: pageSize });
      // Names and addresses are the users': one request for the page's people.
      const ids = members.data.map((member) => member.userId);
      const users = ids.length ? (await api.User.list({ limit: pageSize, filter: { id: { in: ids } } })).data : [];
      const byId = new Map(users.map((user) => [user.id, user]));
      setRows(members.data.map((member) => ({ ...member, name: byId.get(member.userId)?.name ?? null, email: byId.get(member.userId)?.email ?? '' })));
      setTotal(members.meta.total);
      setLoadError(undefined);
    } catch (thrown) {
      setRows(undefined);
      setLoadError(thrown instanceof Error ? thrown.message : String(thrown));
    }
  }, [active, page]);
  useEffect(() => {
    void load();
  }, [load]);

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
  const manages = managesOrganization(active.role);
  const pages = Math.max(1, Math.ceil(total / pageSize));
  return (
    <section className="grid gap-4">
      <div>
        <h1>Members</h1>
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
                return (
                  <tr key={member.id}>
                    <td>
                      <div className="font-medium">
                        {who}
                        {me && <span className="muted"> (you)</span>}
                      </div>
                      <div className="muted">{member.email}</div>
                    </td>
                    <td>
                      {manages && !me ? (
                        <select aria-label={`Role of ${who}`} value={member.role} disabled={change.pending} onChange={(event) => void change.run(member, event.target.value as Role)}>
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
