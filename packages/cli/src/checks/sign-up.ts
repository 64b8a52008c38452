import { randomBytes } from 'node:crypto';
import { fail, pass, type Check } from './check.js';
import { describe, type Person, type ProbeContext } from './probe-context.js';

/**
 * Two people sign up, Alice and Bob; each gets a session and an organization of their own. The
 * probes after this one act as them (and verify removes them at the end).
 */
export const signUp: Check = {
  id: 'sign-up',
  title: 'Sign-up creates a user',
  probe: {
    needs: 'http',
    async run(context) {
      const alice = await signUpPerson(context, 'Alice');
      if (typeof alice === 'string') return fail(alice);
      context.people.alice = alice;
      const bob = await signUpPerson(context, 'Bob');
      if (typeof bob === 'string') return fail(bob);
      context.people.bob = bob;
      return pass('POST /api/auth/sign-up/email 201, with a session and an organization');
    },
  },
  causes: ['nullability'],
  advice: "see the backend's log for the request that failed (its x-request-id)",
};

async function signUpPerson(context: ProbeContext, name: string): Promise<Person | string> {
  const email = `verify-${name.toLowerCase()}-${context.runId}@example.com`;
  const password = `verify-${randomBytes(6).toString('hex')}`;
  const response = await context.http('POST', '/api/auth/sign-up/email', { body: { email, name, password }, trusted: true });
  if (response.status !== 201 || response.body?.data?.token === undefined) return `sign-up answered ${describe(response)}`;
  const { user } = response.body.data;
  context.created.userIds.push(user.id);
  const started = response.body.data.token ? { token: response.body.data.token as string } : await signInConfirmed(context, user.id, email, password);
  if ('problem' in started) return started.problem;
  const { token } = started;
  const session = await context.http('GET', '/api/auth/get-session', { token });
  const organizationId = session.body?.data?.organizations?.[0]?.id;
  if (!organizationId) return `get-session after sign-up answered ${describe(session)} without an organization`;
  context.created.organizationIds.push(organizationId);
  return { id: user.id, email, password, token, organizationId };
}

/**
 * A backend that keeps unconfirmed addresses out (REQUIRE_EMAIL_VERIFICATION, production's
 * default) signs nobody in at sign-up. With the service key, verify confirms its own test user's
 * address, as the mailed link would, and signs in.
 */
async function signInConfirmed(context: ProbeContext, userId: string, email: string, password: string): Promise<{ token: string } | { problem: string }> {
  if (!context.serviceKey) {
    return { problem: 'sign-up answered 201 without a session: the backend wants addresses confirmed first (REQUIRE_EMAIL_VERIFICATION); give verify the service key (SERVICE_API_KEY, or --service-key) to confirm its test users' };
  }
  const confirmed = await context.http('PATCH', `/Users/${userId}`, { token: context.serviceKey.value, body: { email_verified: true } });
  if (confirmed.status !== 200) return { problem: `confirming the test user's address with the service key answered ${describe(confirmed)}` };
  const signedIn = await context.http('POST', '/api/auth/sign-in/email', { body: { email, password }, trusted: true });
  const token = signedIn.body?.data?.token;
  return typeof token === 'string' ? { token } : { problem: `sign-in after confirming the address answered ${describe(signedIn)}` };
}
