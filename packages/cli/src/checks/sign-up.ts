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
  if (response.status !== 201 || !response.body?.data?.token) return `sign-up answered ${describe(response)}`;
  const { user, token } = response.body.data;
  context.created.userIds.push(user.id);
  const session = await context.http('GET', '/api/auth/get-session', { token });
  const organizationId = session.body?.data?.organizations?.[0]?.id;
  if (!organizationId) return `get-session after sign-up answered ${describe(session)} without an organization`;
  context.created.organizationIds.push(organizationId);
  return { id: user.id, email, password, token, organizationId };
}
