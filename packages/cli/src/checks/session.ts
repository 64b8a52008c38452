import { fail, pass, skip, type Check } from './check.js';
import { describe } from './probe-context.js';

/** The token sign-up gave authenticates; no token does not. */
export const session: Check = {
  id: 'session',
  title: 'The session authenticates',
  probe: {
    needs: 'http',
    async run({ http, people: { alice } }) {
      if (!alice) return skip('needs a signed-up user');
      const current = await http('GET', '/api/auth/get-session', { token: alice.token });
      if (current.status !== 200 || current.body?.data?.user?.id !== alice.id) return fail(`get-session answered ${describe(current)}`);
      const anonymous = await http('GET', '/api/auth/get-session');
      if (anonymous.status !== 401) return fail(`get-session without a session answered ${anonymous.status}, not 401`);
      return pass('get-session 200 with the token, 401 without');
    },
  },
  advice: "see the backend's log for the request that failed (its x-request-id)",
};
