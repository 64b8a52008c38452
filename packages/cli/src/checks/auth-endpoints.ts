import { fail, pass, skip, type Check } from './check.js';
import { describe } from './probe-context.js';

/** The spec's endpoints of the auth entities, as a signed-in user calls them. */
export const authEndpoints: Check = {
  id: 'auth-endpoints',
  title: 'GET /Users, /accounts, /sessions; POST /Users',
  probe: {
    needs: 'http',
    async run(context) {
      const { http, people: { alice } } = context;
      if (!alice) return skip('needs a signed-up user');
      const as = { token: alice.token, organizationId: alice.organizationId };
      for (const path of ['/Users', '/accounts', '/sessions']) {
        const response = await http('GET', path, as);
        if (response.status !== 200 || !Array.isArray(response.body?.data)) return fail(`GET ${path} answered ${describe(response)}`);
      }
      const created = await http('POST', '/Users', { ...as, body: { email: `verify-carol-${context.runId}@example.com`, name: 'Carol' } });
      // 202: an invitation (an address that has an account already is never attached without consent).
      if (created.status !== 201 && created.status !== 202) return fail(`POST /Users answered ${describe(created)}`);
      if (created.status === 201) context.created.userIds.push(created.body.data.id);
      return pass(`200, 200, 200 and ${created.status}`);
    },
  },
  causes: ['module-wiring'],
  advice: "see the backend's log for the request that failed (its x-request-id)",
};
