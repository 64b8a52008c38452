'use client';

import { useCallback, useEffect, useState } from 'react';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import type { OrganizationInvitation, Role } from '@/lib/authstrap-client';
import { api } from '@/lib/api';
import { NoOrganization, Refusal } from './refusal';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/**
 * Inviting people (owners and admins): an address and a role; the backend mails the link, which
 * ends on /accept-invitation. The pending invitations, with who sent them; sending one again makes
 * a new link (the backend replaces the earlier invitation to that address).
 */
export function InvitationsSettings() {
  const { active, loaded } = useOrganizations();
  const [pending, setPending] = useState<OrganizationInvitation[]>();
  const [loadError, setLoadError] = useState<string>();
  const manages = managesOrganization(active?.role);

  const load = useCallback(async () => {
    if (!active || !manages) return;
    try {
      setPending((await api.auth.organizationInvitations({ limit: 100 })).data);
      setLoadError(undefined);
    } catch (thrown) {
      setLoadError(thrown instanceof Error ? thrown.message : String(thrown));
    }
  }, [active, manages]);
  useEffect(() => {
    void load();
  }, [load]);

  const invite = useAction(async (form: HTMLFormElement) => {
    const fields = new FormData(form);
    const email = String(fields.get('email'));
    await api.member.create({ email, role: String(fields.get('role')) as Role });
    form.reset();
    await load();
    return `Invitation sent to ${email}.`;
  });
  // One message above the list: the latest action's.
  const resend = useAction(async (invitation: OrganizationInvitation) => {
    revoke.clear();
    // Inviting the address again replaces its invitation: a new link, the old one dead.
    await api.member.create({ email: invitation.email, role: invitation.role });
    await load();
    return `A new link went to ${invitation.email}; the old one no longer works.`;
  });
  const revoke = useAction(async (invitation: OrganizationInvitation) => {
    resend.clear();
    await api.auth.revokeInvitation(invitation.id);
    await load();
    return `The invitation to ${invitation.email} is withdrawn.`;
  });

  if (!active) return <NoOrganization loaded={loaded} />;
  if (!manages) return <Refusal what="invitations" organization={active.name} role={active.role} />;
  const roles: Role[] = active.role === 'owner' ? ['member', 'admin', 'owner'] : ['member', 'admin'];
  return (
    <section className="grid gap-6">
      <div className="card">
        <h1>Invitations</h1>
        <form
          className="row"
          aria-label="Invite someone"
          onSubmit={(event) => {
            event.preventDefault();
            void invite.run(event.currentTarget);
          }}
        >
          <label className="min-w-0 grow">
            E-mail address
            <input name="email" type="email" autoComplete="off" required />
          </label>
          <label>
            Role
            <select name="role" defaultValue="member">
              {roles.map((role) => (
                <option key={role}>{role}</option>
              ))}
            </select>
          </label>
          <button type="submit" disabled={invite.pending}>
            Send invitation
          </button>
        </form>
        <OutcomeMessage outcome={invite.outcome} pending={invite.pending} pendingText="Sending…" />
      </div>
      <div className="grid gap-2">
        <h2>Waiting for an answer</h2>
        <OutcomeMessage outcome={resend.outcome ?? revoke.outcome} pending={resend.pending || revoke.pending} />
        {loadError && (
          <p className="error" role="alert">
            {loadError}
          </p>
        )}
        {pending?.length === 0 && <p className="muted">No invitation is waiting. Invite someone with the form above; they get a link by e-mail.</p>}
        {pending && pending.length > 0 && (
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">E-mail</th>
                  <th scope="col">Role</th>
                  <th scope="col">Invited by</th>
                  <th scope="col">Expires</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {pending.map((invitation) => (
                  <tr key={invitation.id}>
                    <td>{invitation.email}</td>
                    <td>{invitation.role}</td>
                    <td>
                      {invitation.invitedBy.name ?? 'someone'}
                      <div className="muted">{dateFormat.format(new Date(invitation.createdAt))}</div>
                    </td>
                    <td>{dateFormat.format(new Date(invitation.expiresAt))}</td>
                    <td>
                      <div className="flex flex-wrap justify-end gap-2">
                        <button type="button" className="quiet" disabled={resend.pending} onClick={() => void resend.run(invitation)}>
                          Resend<span className="sr-only"> to {invitation.email}</span>
                        </button>
                        <ConfirmButton
                          label="Revoke"
                          accessibleName={`Revoke the invitation to ${invitation.email}`}
                          title={`Withdraw the invitation to ${invitation.email}?`}
                          description={<p>The link in their mail stops working.</p>}
                          confirmLabel="Withdraw"
                          onConfirm={() => revoke.run(invitation)}
                        />
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </section>
  );
}
