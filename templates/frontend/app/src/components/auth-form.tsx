'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { authClient } from '@/lib/auth-client';

/** Sign-in and sign-up: one form, Better Auth's client, then a full reload into the app. */
export function AuthForm({ mode }: { mode: 'sign-in' | 'sign-up' }) {
  const router = useRouter();
  const [error, setError] = useState<string>();
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
    if (error) return setError(error.message ?? 'Something went wrong; try again.');
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
        {error && <p className="error" role="alert">{error}</p>}
        <button type="submit" disabled={pending}>
          {signUp ? 'Sign up' : 'Sign in'}
        </button>
      </form>
      <p className="muted">
        {signUp ? <>Have an account? <Link href="/sign-in">Sign in</Link></> : <>New here? <Link href="/sign-up">Create an account</Link></>}
      </p>
      {!signUp && (
        <p className="muted">
          <Link href="/forgot-password">Forgot your password?</Link>
        </p>
      )}
    </section>
  );
}
