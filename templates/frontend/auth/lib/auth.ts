import { authstrapAdapter, authstrapPassword } from '@authstrap/better-auth-adapter';
import { betterAuth } from 'better-auth';
import { createAuthMiddleware } from 'better-auth/api';
import { nextCookies } from 'better-auth/next-js';

/**
 * Better Auth on this app's server, keeping its users, accounts, sessions and verifications in
 * the authstrap backend (through its entity routes, with the service key). The session cookie it
 * sets is one the backend accepts too: both sign it with the backend's AUTH_SECRET, and the
 * browser sends it to the backend on the same site (see docs/frontend.md in authstrap).
 * Written by `authstrap setup --frontend`; yours to change.
 */
/**
 * Better Auth's mail goes out through the backend (its outbox, its SMTP settings, its wording), so
 * that there is one mail configuration: Better Auth makes the link, the backend sends it.
 */
const mailThroughBackend =
  (kind: 'verify-email' | 'reset-password') =>
  async ({ user, url }: { user: { email: string; name: string }; url: string }) => {
    const response = await fetch(`${process.env.AUTHSTRAP_URL}/api/auth/send-mail`, {
      method: 'POST',
      headers: { authorization: `Bearer ${process.env.SERVICE_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind, to: user.email, name: user.name, link: url }),
    });
    if (!response.ok) throw new Error(`the backend did not take the ${kind} mail: ${response.status} ${await response.text()}`);
  };

export const auth = betterAuth({
  baseURL: process.env.BETTER_AUTH_URL, // this app's own address
  secret: process.env.AUTH_SECRET, // the backend's AUTH_SECRET
  database: authstrapAdapter({
    baseUrl: process.env.AUTHSTRAP_URL!, // the backend
    serviceKey: process.env.SERVICE_API_KEY!, // a secret of this server: never sent to a browser
  }),
  emailAndPassword: {
    enabled: true,
    // The backend's bcrypt: a user who signed up on one path signs in on the other.
    password: authstrapPassword(),
    // As the backend does: production lets nobody in before their address is confirmed, unless
    // REQUIRE_EMAIL_VERIFICATION=false (a local setup's .env.local).
    requireEmailVerification: (process.env.REQUIRE_EMAIL_VERIFICATION ?? String(process.env.NODE_ENV === 'production')) === 'true',
    sendResetPassword: mailThroughBackend('reset-password'),
    // A reset ends every session of the user, the backend's own included (one session table).
    revokeSessionsOnPasswordReset: true,
  },
  emailVerification: {
    sendOnSignUp: true,
    sendVerificationEmail: mailThroughBackend('verify-email'),
    autoSignInAfterVerification: true,
  },
  // The backend refuses to delete the only owner of an organization that has other members.
  user: { deleteUser: { enabled: true } },
  hooks: {
    // A new password ends the user's other sessions, here as at the backend, whatever the caller asked.
    before: createAuthMiddleware(async (ctx) => {
      if (ctx.path === '/change-password') return { context: { ...ctx, body: { ...ctx.body, revokeOtherSessions: true } } };
    }),
  },
  // No cookie cache: a session revoked anywhere (a sign-out at the backend, a password reset, an
  // admin) ends here at the next request too, as it does at the backend. With the cache on, this
  // app would trust a copy of the session in a cookie for up to its maxAge after the revocation.
  session: { cookieCache: { enabled: false } },
  // The backend embeds a session's user in the same request: get-session is one round trip.
  advanced: { database: { joins: true } },
  // Server actions and route handlers that sign in set the cookie through Next's cookies().
  plugins: [nextCookies()],
});
