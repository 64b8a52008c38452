'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { api } from '@/lib/api';
import { authClient } from '@/lib/auth-client';
import { rememberOrganization } from './organization-provider';

/**
 * The pages that links in mail lead to: reset a forgotten password, confirm an address, accept an
 * invitation. Better Auth's flows (its links, made here, mailed by the backend) and the backend's
 * own (`?token=` links it mailed itself, for users of its API) end on the same pages.
 */

/** A form's submit: runs `work` with the form's fields, showing that it is pending and what it threw. */
export function useFormAction(work: (fields: FormData) => Promise<void>) {
  const [error, setError] = useState<string>();
  const [pending, setPending] = useState(false);
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const fields = new FormData(event.currentTarget);
    setPending(true);
    setError(undefined);
    try {
      await work(fields);
    } catch (thrown) {
      setError(thrown instanceof Error ? thrown.message : 'Something went wrong; try again.');
    } finally {
      setPending(false);
    }
  }
  return { onSubmit, error, pending };
}

/** Better Auth's client answers `{ error }` instead of throwing: this throws it. */
async function orThrow<T extends { error: { message?: string } | null }>(call: Promise<T>): Promise<T> {
  const result = await call;
  if (result.error) throw new Error(result.error.message ?? 'Something went wrong; try again.');
  return result;
}

const FormError = ({ message }: { message?: string }) => (message ? <p className="error" role="alert">{message}</p> : null);

export function ForgotPasswordForm() {
  const [sent, setSent] = useState(false);
  const form = useFormAction(async (fields) => {
    await orThrow(authClient.requestPasswordReset({ email: String(fields.get('email')), redirectTo: '/reset-password' }));
    setSent(true);
  });
  return (
    <section className="card narrow">
      <h1>Forgot your password?</h1>
      {sent ? (
        <p role="status">If an account has this address, a link to reset its password is on its way to it.</p>
      ) : (
        <form className="stack" onSubmit={form.onSubmit}>
          <label>
            E-mail
            <input name="email" type="email" autoComplete="email" required />
          </label>
          <FormError message={form.error} />
          <button type="submit" disabled={form.pending}>
            Send me a link
          </button>
        </form>
      )}
      <p className="muted">
        <Link href="/sign-in">Back to sign in</Link>
      </p>
    </section>
  );
}

export function ResetPasswordForm({ token }: { token?: string }) {
  const [done, setDone] = useState(false);
  const form = useFormAction(async (fields) => {
    const newPassword = String(fields.get('password'));
    const { error } = await authClient.resetPassword({ newPassword, token: token! });
    // Not one of Better Auth's links: one the backend mailed itself, which the backend checks.
    if (error?.code === 'INVALID_TOKEN') await api.auth.resetPassword(token!, newPassword);
    else if (error) throw new Error(error.message ?? 'Something went wrong; try again.');
    setDone(true);
  });
  if (!token) return <InvalidLink what="reset link" retry={{ href: '/forgot-password', label: 'Ask for a new one' }} />;
  return (
    <section className="card narrow">
      <h1>Choose a new password</h1>
      {done ? (
        <p role="status">
          Your password is changed, and every session of your account is signed out. <Link href="/sign-in">Sign in</Link> with the new one.
        </p>
      ) : (
        <form className="stack" onSubmit={form.onSubmit}>
          <label>
            New password
            <input name="password" type="password" autoComplete="new-password" minLength={8} required />
          </label>
          <FormError message={form.error} />
          <button type="submit" disabled={form.pending}>
            Set the new password
          </button>
        </form>
      )}
    </section>
  );
}

export function VerifyEmailStatus({ token, failed }: { token?: string; failed: boolean }) {
  const [state, setState] = useState<'checking' | 'confirmed' | 'failed'>(failed ? 'failed' : token ? 'checking' : 'confirmed');
  // Once, even where React runs effects twice (development): a link works only once.
  const sent = useRef(false);
  useEffect(() => {
    if (!token || failed || sent.current) return;
    sent.current = true;
    api.auth.verifyEmail(token).then(
      () => setState('confirmed'),
      () => setState('failed'),
    );
  }, [token, failed]);
  if (state === 'failed') return <InvalidLink what="confirmation link" retry={{ href: '/sign-in', label: 'Sign in to get a new one' }} />;
  return (
    <section className="card narrow">
      <h1>Your e-mail address</h1>
      <p role="status">{state === 'checking' ? 'Confirming…' : 'Your e-mail address is confirmed.'}</p>
      {state === 'confirmed' && <Link href="/">Continue</Link>}
    </section>
  );
}

export function AcceptInvitation({ token, email, signedInAs }: { token: string; email: string; signedInAs?: string }) {
  const router = useRouter();
  const [outcome, setOutcome] = useState<string>();
  const accept = useFormAction(async () => {
    const joined = await api.auth.acceptInvitation(token);
    rememberOrganization(joined.organization.id);
    setOutcome(`You joined ${joined.organization.name}.`);
    router.refresh();
  });
  const decline = useFormAction(async () => {
    await api.auth.declineInvitation(token);
    setOutcome('You declined the invitation.');
  });
  const signUp = useFormAction(async (fields) => {
    const password = String(fields.get('password'));
    const joined = await api.auth.acceptInvitationAsNewUser({ token, email, name: String(fields.get('name')), password });
    // The app opens in the organization just joined.
    rememberOrganization(joined.organization.id);
    // The account is made and has joined; this app's session is Better Auth's.
    api.setToken(undefined);
    await orThrow(authClient.signIn.email({ email, password }));
    router.push('/');
    router.refresh();
  });

  if (!token || !email) return <InvalidLink what="invitation link" retry={{ href: '/', label: 'Go to the start page' }} />;
  if (outcome) {
    return (
      <section className="card narrow">
        <p role="status">{outcome}</p>
        <Link href="/">Continue</Link>
      </section>
    );
  }
  if (signedInAs && signedInAs !== email) {
    return (
      <section className="card narrow">
        <h1>An invitation for {email}</h1>
        <p>You are signed in as {signedInAs}. Sign out, then open the link from the mail again.</p>
      </section>
    );
  }
  if (signedInAs) {
    return (
      <section className="card narrow">
        <h1>You are invited</h1>
        <form className="stack" onSubmit={accept.onSubmit}>
          <button type="submit" disabled={accept.pending}>
            Accept the invitation
          </button>
        </form>
        <form className="stack" onSubmit={decline.onSubmit}>
          <button type="submit" className="quiet" disabled={decline.pending}>
            Decline
          </button>
        </form>
        <FormError message={accept.error ?? decline.error} />
      </section>
    );
  }
  return (
    <section className="card narrow">
      <h1>Join as {email}</h1>
      <form className="stack" onSubmit={signUp.onSubmit}>
        <label>
          Name
          <input name="name" autoComplete="name" required />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="new-password" minLength={8} required />
        </label>
        <FormError message={signUp.error} />
        <button type="submit" disabled={signUp.pending}>
          Create my account and join
        </button>
      </form>
      <p className="muted">
        Have an account with this address? <Link href="/sign-in">Sign in</Link>, then open the link again.
      </p>
    </section>
  );
}

function InvalidLink({ what, retry }: { what: string; retry: { href: string; label: string } }) {
  return (
    <section className="card narrow">
      <h1>This link does not work</h1>
      <p>This {what} was used already, or has expired.</p>
      <Link href={retry.href}>{retry.label}</Link>
    </section>
  );
}
