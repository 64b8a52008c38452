'use client';

import Link from 'next/link';
import { useState, type FormEvent } from 'react';
import { api } from '@/lib/api';
import { AuthstrapError, type SsoStartInput } from '@/lib/authstrap-client';

/**
 * The backend's refusals of a single sign-on, in words: those it sends the browser back with
 * (`/sign-in?error=<CODE>`, docs/sso.md) and those of the start. Unknown codes get the generic one.
 */
const refusals: Record<string, string> = {
  SSO_NOT_CONFIGURED: 'Single sign-on is not set up for this address or organization (no verified domain, or no enabled connection). Sign in with your password, or ask your IT team.',
  CHOOSE_CONNECTION: 'Several identity providers sign this organization in. Use the sign-in link your IT team gave you.',
  SSO_REQUIRED: 'Your organization requires single sign-on for this address: sign in with SSO.',
  SSO_INVALID_STATE: 'That sign-in took too long or was already used. Start it again.',
  SSO_BROWSER_MISMATCH: 'The sign-in must end in the browser that started it. Start it again here.',
  ACCOUNT_EXISTS: 'An account with this address exists outside your organization’s verified domains. Sign in with that account instead.',
  NOT_A_MEMBER: 'You are not a member of this organization yet. Ask an owner or admin to invite you.',
  DEPROVISIONED: 'Your organization’s directory turned your account off. Ask your IT team.',
  SSO_IDP_INITIATED_NOT_ALLOWED: 'Sign-ins started from the identity provider’s portal are not allowed here. Start it from this page.',
  SSO_PROFILE_INCOMPLETE: 'The identity provider did not send your e-mail address. Ask your IT team to check the connection’s attributes.',
};
export const ssoRefusalMessage = (code: string) => refusals[code] ?? 'Single sign-on failed. Start it again, or ask your IT team.';

/** The connections a CHOOSE_CONNECTION refusal offers: its details, each enabled connection's id and name. */
const choicesOf = (thrown: AuthstrapError) => Object.entries(thrown.details ?? {}).map(([id, name]) => ({ id, name }));

/**
 * "Sign in with SSO": a work address (its verified domain picks the organization's connection) or
 * the organization's slug. The backend starts the flow and answers the identity provider's URL;
 * this tab goes there and comes back signed in, on `/` (the organization active). An organization
 * with several enabled connections (two IdPs during a migration, employees and contractors) gets
 * its people a choice by the connections' names, which then starts with the one chosen.
 */
export function SsoSignInForm({ email, organization, error: refusal }: { email?: string; organization?: string; error?: string }) {
  const [error, setError] = useState(refusal ? ssoRefusalMessage(refusal) : undefined);
  const [pending, setPending] = useState(false);
  const [choices, setChoices] = useState<{ id: string; name: string }[]>([]);

  async function start(input: SsoStartInput) {
    setPending(true);
    setError(undefined);
    try {
      const { url } = await api.auth.sso.start({ ...input, returnTo: '/' });
      window.location.assign(url);
    } catch (thrown) {
      setPending(false);
      if (thrown instanceof AuthstrapError && thrown.code === 'CHOOSE_CONNECTION' && choicesOf(thrown).length > 1) return setChoices(choicesOf(thrown));
      setError(thrown instanceof AuthstrapError ? (refusals[thrown.code] ?? thrown.message) : 'Something went wrong; try again.');
    }
  }

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const given = String(new FormData(event.currentTarget).get('who')).trim();
    setChoices([]);
    void start(given.includes('@') ? { email: given } : { organization: given });
  }

  return (
    <section className="card narrow">
      <h1>Sign in with SSO</h1>
      <p className="muted mb-4">Your work e-mail address, or your organization&apos;s identifier (its slug). You sign in at your company&apos;s identity provider.</p>
      <form className="stack" onSubmit={submit}>
        <label>
          Work e-mail or organization
          <input name="who" defaultValue={email ?? organization ?? ''} autoComplete="email" required maxLength={320} />
        </label>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={pending}>
          {pending ? 'Opening your identity provider…' : 'Continue'}
        </button>
      </form>
      {choices.length > 0 && (
        <section className="mt-6 mb-4 grid gap-2" aria-labelledby="sso-choices">
          <h2 id="sso-choices">Choose your identity provider</h2>
          <p className="muted">Your organization signs in through several. Pick the one your IT team told you to use.</p>
          <ul className="grid gap-2" aria-label="Identity providers">
            {choices.map((choice) => (
              <li key={choice.id}>
                <button type="button" className="w-full" disabled={pending} onClick={() => void start({ connectionId: choice.id })}>
                  Continue with {choice.name}
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}
      <p className="muted">
        <Link href="/sign-in">Sign in with a password</Link>
      </p>
    </section>
  );
}
