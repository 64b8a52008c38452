import { authstrapAdapter, authstrapPassword } from '@authstrap/better-auth-adapter';
import { betterAuth } from 'better-auth';
import { nextCookies } from 'better-auth/next-js';

/**
 * Better Auth on this app's server, keeping its users, accounts, sessions and verifications in
 * the authstrap backend (through its entity routes, with the service key). The session cookie it
 * sets is one the backend accepts too: both sign it with the backend's AUTH_SECRET, and the
 * browser sends it to the backend on the same site (see docs/frontend.md in authstrap).
 * Written by `authstrap setup --frontend`; yours to change.
 */
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
  },
  // The backend embeds a session's user in the same request: get-session is one round trip.
  advanced: { database: { joins: true } },
  // Server actions and route handlers that sign in set the cookie through Next's cookies().
  plugins: [nextCookies()],
});
