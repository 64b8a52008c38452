'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import { api } from '@/lib/api';
import { authClient } from '@/lib/auth-client';
import { useFormAction } from './account-forms';
import { Sessions } from './account-security';

/**
 * The signed-in user's account, through the backend's own /api/auth (the typed client; the
 * backend accepts this app's Better Auth session): where they are signed in (the security page's
 * list, account-security.tsx), their password, and deleting the account, which the backend
 * refuses while they are the only owner of an organization with other members.
 */
export function AccountPanel({ email }: { email: string }) {
  const router = useRouter();
  const [notice, setNotice] = useState<string>();
  // The sessions are read again after a password change, which signs the others out.
  const [sessionsVersion, setSessionsVersion] = useState(0);

  const changePassword = useFormAction(async (fields) => {
    await api.auth.changePassword(String(fields.get('currentPassword')), String(fields.get('newPassword')));
    setNotice('Your password is changed; your other sessions were signed out.');
    setSessionsVersion((version) => version + 1);
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
        <p>
          <Link href="/account/security">Security: your sessions and what happened to your account</Link>
        </p>
      </section>

      <Sessions key={sessionsVersion} />

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
