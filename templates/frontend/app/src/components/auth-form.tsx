'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { ssoRefusalMessage } from '@/components/sso-sign-in';
import { authClient } from '@/lib/auth-client';

/** A refusal to show: its words, and where single sign-on starts for it when that is the way in. */
interface Refusal {
  message: string;
  ssoHref?: string;
}

/**
 * Sign-in and sign-up: one form, Better Auth's client, then a full reload into the app. An address
 * whose organization requires single sign-on is refused with the way there (SSO_REQUIRED, on Better
 * Auth's path as on the backend's); `ssoError` is a single sign-on the backend sent back refused.
 */
export function AuthForm({ mode, ssoError }: { mode: 'sign-in' | 'sign-up'; ssoError?: string }) {
  const router = useRouter();
  const [error, setError] = useState<Refusal | undefined>(ssoError ? { message: ssoRefusalMessage(ssoError), ssoHref: '/sign-in/sso' } : undefined);
  const [pending, setPending] = useState(false);
  const signUp = mode === 'sign-up';

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const email = String(form.get('email'));
    const password = String(form.get('password'));
    setPending(true);
    setError(undefined);
    const { error } = signUp
      ? // The confirmation link in the sign-up mail leads back to /verify-email.
        await authClient.signUp.email({ email, password, name: String(form.get('name')), callbackURL: '/verify-email' })
      : await authClient.signIn.email({ email, password });
    setPending(false);
    if (error?.code === 'SSO_REQUIRED') return setError({ message: error.message ?? ssoRefusalMessage('SSO_REQUIRED'), ssoHref: `/sign-in/sso?${new URLSearchParams({ email })}` });
    if (error) return setError({ message: error.message ?? 'Something went wrong; try again.' });
    // The header and the organizations are read on the server: reload them with the new session.
    router.push('/');
    router.refresh();
  }

  return (
    <section className="card narrow">
      <h1>{signUp ? 'Create an account' : 'Sign in'}</h1>
      <form className="stack" onSubmit={submit}>
        {signUp && (
          <label>
            Name
            <input name="name" autoComplete="name" required />
          </label>
        )}
        <label>
          E-mail
          <input name="email" type="email" autoComplete="email" required />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete={signUp ? 'new-password' : 'current-password'} minLength={8} required />
        </label>
        {error && (
          <div className="error" role="alert">
            <p>{error.message}</p>
            {error.ssoHref && <Link href={error.ssoHref}>Sign in with SSO instead</Link>}
          </div>
        )}
        <button type="submit" disabled={pending}>
          {signUp ? 'Sign up' : 'Sign in'}
        </button>
      </form>
      <p className="muted">
        {signUp ? <>Have an account? <Link href="/sign-in">Sign in</Link></> : <>New here? <Link href="/sign-up">Create an account</Link></>}
      </p>
      {!signUp && (
        <>
          <p className="muted">
            <Link href="/forgot-password">Forgot your password?</Link>
          </p>
          <p className="muted">
            <Link href="/sign-in/sso">Sign in with SSO</Link>
          </p>
        </>
      )}
    </section>
  );
}
