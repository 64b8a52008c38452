'use client';

import { useRouter } from 'next/navigation';
import { useCallback, useEffect, useState } from 'react';
import type { OwnSession } from '@/lib/authstrap-client';
import { api } from '@/lib/api';
import { authClient } from '@/lib/auth-client';
import { useFormAction } from './account-forms';

/**
 * The signed-in user's account, through the backend's own /api/auth (the typed client; the
 * backend accepts this app's Better Auth session): where they are signed in, their password, and
 * deleting the account, which the backend refuses while they are the only owner of an
 * organization with other members.
 */
export function AccountPanel({ email }: { email: string }) {
  const router = useRouter();
  const [sessions, setSessions] = useState<OwnSession[]>([]);
  const [notice, setNotice] = useState<string>();
  const reload = useCallback(() => api.auth.sessions().then(setSessions), []);
  useEffect(() => {
    reload().catch(() => setNotice('Could not load your sessions; reload the page.'));
  }, [reload]);

  const signOutOthers = useFormAction(async () => {
    const { revoked } = await api.auth.revokeOtherSessions();
    setNotice(`Signed out ${revoked} other ${revoked === 1 ? 'session' : 'sessions'}.`);
    await reload();
  });
  const changePassword = useFormAction(async (fields) => {
    await api.auth.changePassword(String(fields.get('currentPassword')), String(fields.get('newPassword')));
    setNotice('Your password is changed; your other sessions were signed out.');
    await reload();
  });
  const deleteAccount = useFormAction(async (fields) => {
    await api.auth.deleteAccount(String(fields.get('password')));
    // The session went with the account; Better Auth forgets its cookie.
    await authClient.signOut().catch(() => {});
    router.push('/');
    router.refresh();
  });

  return (
    <>
      <section className="card">
        <h1>Your account</h1>
        <p className="muted">{email}</p>
        {notice && <p role="status">{notice}</p>}
        <h2>Where you are signed in</h2>
        <table>
          <thead>
            <tr>
              <th>Device</th>
              <th>IP address</th>
              <th>Signed in</th>
              <th>Last renewed</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {sessions.map((session) => (
              <tr key={session.id}>
                <td>{session.userAgent ?? 'unknown'}</td>
                <td>{session.ipAddress ?? 'unknown'}</td>
                <td>{new Date(session.createdAt).toLocaleString()}</td>
                <td>{new Date(session.updatedAt).toLocaleString()}</td>
                <td>
                  {session.current ? (
                    'this one'
                  ) : (
                    <button className="quiet" onClick={() => api.auth.revokeSession(session.id).then(reload)}>
                      Sign out
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <form onSubmit={signOutOthers.onSubmit}>
          <button type="submit" disabled={signOutOthers.pending || sessions.length < 2}>
            Sign out everywhere else
          </button>
        </form>
      </section>

      <section className="card narrow">
        <h2>Change your password</h2>
        <form className="stack" onSubmit={changePassword.onSubmit}>
          <label>
            Current password
            <input name="currentPassword" type="password" autoComplete="current-password" required />
          </label>
          <label>
            New password
            <input name="newPassword" type="password" autoComplete="new-password" minLength={8} required />
          </label>
          {changePassword.error && <p className="error" role="alert">{changePassword.error}</p>}
          <button type="submit" disabled={changePassword.pending}>
            Change password
          </button>
        </form>
      </section>

      <section className="card narrow">
        <h2>Delete your account</h2>
        <p className="muted">Your organizations with no other member go with it. This cannot be undone.</p>
        <form className="stack" onSubmit={deleteAccount.onSubmit}>
          <label>
            Password
            <input name="password" type="password" autoComplete="current-password" required />
          </label>
          {deleteAccount.error && <p className="error" role="alert">{deleteAccount.error}</p>}
          <button type="submit" disabled={deleteAccount.pending}>
            Delete my account
          </button>
        </form>
      </section>
    </>
  );
}
