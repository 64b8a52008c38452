'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useCallback, useState, type ReactNode } from 'react';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { CardTable } from '@/components/ui/card-table';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { LoadError, useLoad } from '@/components/ui/load';
import type { OperatorUser } from '@/lib/authstrap-client';
import { operatorApi } from '@/lib/api';
import { holdImpersonation } from '@/lib/impersonation';
import { dateTimeFormat } from './formats';
import { UserState } from './users';

/** How long an impersonation may last, as offered (the backend allows 1 to OPERATOR_IMPERSONATION_MAX_MINUTES, 60 unless set). */
const impersonationMinutes = [5, 15, 30, 60];

/**
 * One user, as support needs them: who they are and their state (address confirmed, operator,
 * banned: why, since when, by whom, until when), their organizations and roles, where they are
 * signed in, their last sign-ins, failed and refused ones; and what an operator does about them: sign them
 * out everywhere, ban or unban them, sign in as them. Each action takes a reason, which the
 * platform's log and the user's own security events keep.
 */
export function OperatorUserDetail({ id }: { id: string }) {
  const { data: user, error, reload } = useLoad(useCallback(() => operatorApi.user(id), [id]));
  const endImpersonation = useAction(async (sessionId: string) => {
    await operatorApi.endImpersonation(sessionId);
    await reload();
    return 'The operator’s session as this user ended.';
  });

  if (!user) return error ? <LoadError error={error} /> : <p className="muted" role="status">Loading…</p>;
  const name = user.name || user.email;
  return (
    <section className="grid min-w-0 gap-6">
      <div className="grid gap-2">
        <p className="muted">
          <Link href="/operator/users">Users</Link> / {name}
        </p>
        <h1 className="mb-0 break-words">{name}</h1>
        <p className="break-all">
          {user.email} <span className="muted font-mono text-xs">{user.id}</span>
        </p>
        <div className="flex flex-wrap gap-1">
          <UserState banned={user.ban !== null} verified={user.email_verified} />
          {user.operator && <span className="badge">Operator</span>}
        </div>
        <p className="muted">Signed up {dateTimeFormat.format(new Date(user.createdAt))}.</p>
        <LoadError error={error} />
      </div>

      {user.ban && (
        <div className="card grid gap-2 border-red-300 bg-red-50" role="region" aria-label="The ban in force">
          <h2>Banned</h2>
          <p>
            Since {dateTimeFormat.format(new Date(user.ban.bannedAt))}
            {user.ban.bannedBy ? ` by ${user.ban.bannedBy.email}` : ''}, {user.ban.expiresAt ? `until ${dateTimeFormat.format(new Date(user.ban.expiresAt))}` : 'until an operator lifts it'}.
            Reason: {user.ban.reason}
          </p>
          <p className="muted">No way of signing in lets them in, and the machine keys they made are stopped. Their memberships and records are kept.</p>
        </div>
      )}

      {(user.ssoRequiredBy || user.suspensions.length > 0) && (
        <div className="card grid gap-2" role="region" aria-label="Their organizations' identity providers">
          <h2>Identity provider</h2>
          {user.ssoRequiredBy && (
            <p>
              Signs in only through the identity provider of{' '}
              <Link href={`/operator/organizations/${user.ssoRequiredBy.organizationId}`}>{user.ssoRequiredBy.name}</Link>, which requires single sign-on for
              their address: a password reset or sign-in is refused (its owners keep a password if it allows break-glass).
            </p>
          )}
          {user.suspensions.map((suspension) => (
            <p key={suspension.organizationId}>
              Deprovisioned in <Link href={`/operator/organizations/${suspension.organizationId}`}>{suspension.name}</Link> by its directory since{' '}
              {dateTimeFormat.format(new Date(suspension.since))} ({suspension.reason === 'directory-deleted' ? 'deleted there' : 'deactivated there'}): their
              membership comes back when the directory reactivates them.
            </p>
          ))}
        </div>
      )}

      {user.operator ? (
        <p className="card">
          Operators act as themselves: nobody bans an operator or signs in as one. Revoke the role first: <code>authstrap operator revoke {user.email}</code>.
        </p>
      ) : (
        <UserActions user={user} onChanged={reload} />
      )}

      <div className="grid min-w-0 gap-2">
        <h2>Organizations</h2>
        {user.organizations.length === 0 ? (
          <p className="muted">In no organization.</p>
        ) : (
          <CardTable label="Organizations" columns={['Organization', 'Role', 'Member since']}>
            {user.organizations.map((organization) => (
              <tr key={organization.id}>
                <td data-label="Organization" className="break-words">
                  {organization.name} <span className="muted">({organization.slug})</span>
                </td>
                <td data-label="Role">{organization.role}</td>
                <td data-label="Member since">{dateTimeFormat.format(new Date(organization.joinedAt))}</td>
              </tr>
            ))}
          </CardTable>
        )}
      </div>

      <div className="grid min-w-0 gap-2">
        <h2>Sessions</h2>
        <OutcomeMessage outcome={endImpersonation.outcome} pending={endImpersonation.pending} pendingText="Ending…" />
        {user.sessions.length === 0 ? (
          <p className="muted">Signed in nowhere.</p>
        ) : (
          <CardTable label="Sessions" columns={['Device', 'IP address', 'Signed in', 'Last seen', 'Ends']}>
            {user.sessions.map((session) => (
              <tr key={session.id} className="align-top">
                <td data-label="Device" className="break-all">
                  {session.userAgent ?? 'unknown'}
                  {session.impersonatedBy && (
                    <div className="mt-1 flex flex-wrap items-center gap-2">
                      <span className="badge warning">An operator signed in as them</span>
                      <button type="button" className="quiet" disabled={endImpersonation.pending} onClick={() => void endImpersonation.run(session.id)}>
                        End it
                      </button>
                    </div>
                  )}
                </td>
                <td data-label="IP address">{session.ipAddress ?? 'unknown'}</td>
                <td data-label="Signed in">{dateTimeFormat.format(new Date(session.createdAt))}</td>
                <td data-label="Last seen">{dateTimeFormat.format(new Date(session.lastSeenAt))}</td>
                <td data-label="Ends">{dateTimeFormat.format(new Date(session.expiresAt))}</td>
              </tr>
            ))}
          </CardTable>
        )}
      </div>

      <div className="grid min-w-0 gap-2">
        <h2>Sign-ins</h2>
        <p className="muted">The last 50 through the backend, failed ones included (a wrong password), with how they signed in.</p>
        {user.signIns.length === 0 ? (
          <p className="muted">No sign-in recorded.</p>
        ) : (
          <CardTable label="Sign-ins" columns={['When', 'Outcome', 'Method', 'IP address', 'Device']}>
            {user.signIns.map((signIn) => (
              <tr key={`${signIn.createdAt}-${signIn.type}`} className="align-top">
                <td data-label="When">{dateTimeFormat.format(new Date(signIn.createdAt))}</td>
                <td data-label="Outcome">
                  {signIn.type === 'session.signed_in' ? <span className="badge good">Signed in</span> : <span className="badge bad">Failed</span>}
                </td>
                <td data-label="Method">{signIn.method ?? '—'}</td>
                <td data-label="IP address">{signIn.ipAddress ?? 'unknown'}</td>
                <td data-label="Device" className="break-all">
                  {signIn.userAgent ?? 'unknown'}
                </td>
              </tr>
            ))}
          </CardTable>
        )}
      </div>

      <div className="grid min-w-0 gap-2">
        <h2>Refused sign-ins</h2>
        <p className="muted">
          The last 20 the sign-in rule refused on either path (the backend’s, Better Auth’s): single sign-on required, deprovisioned by a directory, or
          banned. An organization’s refusals are in its audit log too.
        </p>
        {user.refusedSignIns.length === 0 ? (
          <p className="muted">No refused sign-in recorded.</p>
        ) : (
          <CardTable label="Refused sign-ins" columns={['When', 'Method', 'Code', 'Organization']}>
            {user.refusedSignIns.map((refused, index) => (
              <tr key={`${refused.createdAt}-${refused.organization?.id ?? ''}-${index}`} className="align-top">
                <td data-label="When">{dateTimeFormat.format(new Date(refused.createdAt))}</td>
                <td data-label="Method">{refused.method}</td>
                <td data-label="Code">
                  <span className="badge bad">{refused.code}</span>
                </td>
                <td data-label="Organization" className="break-words">
                  {refused.organization === null ? (
                    <span className="muted">None (the platform’s)</span>
                  ) : refused.organization.name === null ? (
                    <span className="muted">Deleted since</span>
                  ) : (
                    <Link href={`/operator/organizations/${refused.organization.id}`}>{refused.organization.name}</Link>
                  )}
                </td>
              </tr>
            ))}
          </CardTable>
        )}
      </div>
    </section>
  );
}

/** What an operator does about a user who is no operator: each with its reason, asked for before it is done. */
function UserActions({ user, onChanged }: { user: OperatorUser; onChanged(): Promise<void> }) {
  const router = useRouter();
  const name = user.name || user.email;
  const [banUntil, setBanUntil] = useState('');
  const [minutes, setMinutes] = useState(15);
  return (
    <div className="grid gap-4 md:grid-cols-2">
      <ReasonedAction
        title={`Sign in as ${name}`}
        explanation="See and do in the product what they do, for a bounded time, in this tab: a banner says so on every page, and their organizations' audit logs record the start and whatever you change."
        buttonLabel={`Sign in as ${name}`}
        confirm={{ title: `Sign in as ${name}?`, description: `For ${minutes} minutes this tab acts as ${user.email}. Your own session stays yours.`, confirmLabel: 'Sign in as them' }}
        onConfirm={async (reason) => {
          const started = await operatorApi.impersonate(user.id, { reason, minutes });
          holdImpersonation({ ...started, email: user.email, name: user.name });
          // A new page load: every part of the app (the organizations, the live streams) starts again as the user.
          window.location.assign('/');
          return 'Signing in as them…';
        }}
      >
        <label>
          For
          <select value={minutes} onChange={(event) => setMinutes(Number(event.target.value))}>
            {impersonationMinutes.map((option) => (
              <option key={option} value={option}>
                {option} minutes
              </option>
            ))}
          </select>
        </label>
      </ReasonedAction>

      <ReasonedAction
        title="Sign out everywhere"
        explanation="Every session of theirs ends now, and their live pages within seconds. They can sign in again."
        buttonLabel="Sign out everywhere"
        confirm={{ title: `Sign ${name} out everywhere?`, description: `Every session of ${user.email} ends.`, confirmLabel: 'Sign out everywhere' }}
        onConfirm={async (reason) => {
          const { sessions } = await operatorApi.revokeSessions(user.id, reason);
          await onChanged();
          return `${sessions} ${sessions === 1 ? 'session' : 'sessions'} ended.`;
        }}
      />

      {user.ban ? (
        <ReasonedAction
          title="Lift the ban"
          explanation="They may sign in again at once, and the machine keys they made work again."
          reasonOptional
          buttonLabel="Unban"
          confirm={{ title: `Unban ${name}?`, description: `${user.email} may sign in again.`, confirmLabel: 'Unban' }}
          onConfirm={async (reason) => {
            await operatorApi.unban(user.id, reason || undefined);
            await onChanged();
            return `${name} is no longer banned.`;
          }}
        />
      ) : (
        <ReasonedAction
          title="Ban"
          explanation="No way of signing in lets them in, their sessions and live pages end, and the machine keys they made stop, until the end you set or until unbanned. Nothing of theirs is deleted."
          buttonLabel={`Ban ${name}`}
          confirm={{
            title: `Ban ${name}?`,
            description: `${user.email} is signed out everywhere and cannot sign in ${banUntil ? `until ${dateTimeFormat.format(new Date(banUntil))}` : 'until unbanned'}.`,
            confirmLabel: 'Ban',
            typeToConfirm: user.email,
          }}
          onConfirm={async (reason) => {
            const { sessions } = await operatorApi.ban(user.id, { reason, ...(banUntil && { expiresAt: new Date(banUntil).toISOString() }) });
            setBanUntil('');
            await onChanged();
            return `${name} is banned; ${sessions} ${sessions === 1 ? 'session' : 'sessions'} ended.`;
          }}
        >
          <label>
            Until (optional; empty: until unbanned)
            <input type="datetime-local" value={banUntil} onChange={(event) => setBanUntil(event.target.value)} />
          </label>
        </ReasonedAction>
      )}

      <ReasonedAction
        title="Send a verification mail"
        explanation={user.email_verified ? 'Their address is confirmed already; a new link confirms it again.' : 'A new link to confirm their address goes to it.'}
        reasonOptional
        buttonLabel="Send verification mail"
        confirm={{ title: `Send a verification mail to ${user.email}?`, description: 'A new link to confirm the address goes to it.', confirmLabel: 'Send' }}
        onConfirm={async (reason) => {
          const sent = await operatorApi.sendVerificationMail(user.id, reason || undefined);
          return `A verification mail is on its way to ${sent.email}.`;
        }}
      />

      <ReasonedAction
        title="Send a password reset"
        explanation="A link to choose a new password goes to their address. Nobody, operators included, sees or sets their password."
        reasonOptional
        buttonLabel="Send password reset"
        confirm={{ title: `Send a password reset to ${user.email}?`, description: 'A link to choose a new password goes to their address.', confirmLabel: 'Send' }}
        onConfirm={async (reason) => {
          const sent = await operatorApi.sendPasswordReset(user.id, reason || undefined);
          return `A password reset mail is on its way to ${sent.email}.`;
        }}
      />

      <ReasonedAction
        title="Delete the account"
        explanation="Deletes their account as their own deletion does: an organization they alone are in goes with it; no organization is left without an owner."
        reasonOptional
        buttonLabel={`Delete ${name}`}
        confirm={{ title: `Delete ${name}?`, description: `The account of ${user.email} is deleted; this cannot be undone.`, confirmLabel: 'Delete', typeToConfirm: user.email }}
        onConfirm={async (reason) => {
          await operatorApi.deleteUser(user.id, user.email, reason || undefined);
          router.push('/operator/users');
          return `${name} is deleted.`;
        }}
      />
    </div>
  );
}

/**
 * One operator action in a card: what it does, its reason (kept in the platform's log and the
 * user's security events), any settings of its own, and a button that asks before it acts.
 */
export function ReasonedAction({
  title,
  explanation,
  buttonLabel,
  confirm,
  reasonOptional = false,
  onConfirm,
  children,
}: {
  title: string;
  explanation: string;
  buttonLabel: string;
  confirm: { title: string; description: string; confirmLabel: string; typeToConfirm?: string };
  reasonOptional?: boolean;
  onConfirm(reason: string): Promise<string>;
  children?: ReactNode;
}) {
  const [reason, setReason] = useState('');
  const action = useAction(async () => {
    const done = await onConfirm(reason.trim());
    setReason('');
    return done;
  });
  return (
    <div className="card grid content-start gap-3" role="region" aria-label={title}>
      <h2 className="mb-0">{title}</h2>
      <p className="muted">{explanation}</p>
      <label>
        {reasonOptional ? 'Reason (optional)' : 'Reason (the ticket, what happened)'}
        <input value={reason} onChange={(event) => setReason(event.target.value)} maxLength={500} />
      </label>
      {children}
      <div>
        <ConfirmButton
          label={buttonLabel}
          className={confirm.typeToConfirm ? 'danger' : ''}
          disabled={action.pending || (!reasonOptional && reason.trim() === '')}
          onConfirm={() => action.run()}
          {...confirm}
        />
      </div>
      <OutcomeMessage outcome={action.outcome} pending={action.pending} />
    </div>
  );
}
