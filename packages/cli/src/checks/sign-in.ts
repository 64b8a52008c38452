import { fail, pass, skip, type Check } from './check.js';
import { describe } from './probe-context.js';

/** The right password signs in, a wrong one is refused. */
export const signIn: Check = {
  id: 'sign-in',
  title: 'Sign-in checks the password',
  probe: {
    needs: 'http',
    async run({ http, people: { alice } }) {
      if (!alice) return skip('needs a signed-up user');
      const right = await http('POST', '/api/auth/sign-in/email', { body: { email: alice.email, password: alice.password }, trusted: true });
      if (right.status !== 200 || !right.body?.data?.token) return fail(`the right password answered ${describe(right)}`);
      const wrong = await http('POST', '/api/auth/sign-in/email', { body: { email: alice.email, password: `${alice.password}-wrong` }, trusted: true });
      if (wrong.status !== 401) return fail(`a wrong password answered ${wrong.status}, not 401`);
      return pass('right password 200, wrong password 401');
    },
  },
  // Sign-up stores the account under another providerId than sign-in looks for.
  causes: ['credential-provider'],
  advice: "see the backend's log for the request that failed (its x-request-id)",
};
