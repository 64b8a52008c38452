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
      // "POST /Users creates a user" is the service key's; an owner's POST /Users is an invitation (202).
      const email = `verify-carol-${context.runId}@example.com`;
      const created = context.serviceKey ? await http('POST', '/Users', { token: context.serviceKey.value, body: { email, name: 'Carol' } }) : undefined;
      if (created?.status === 201) {
        context.created.userIds.push(created.body.data.id);
        return pass('200, 200, 200 and 201 (POST /Users with the service key)');
      }
      // A refused key is service-credential's to report; this check still asks as an owner.
      if (created && created.status !== 401) return fail(`POST /Users with the service key answered ${describe(created)}`);
      const invited = await http('POST', '/Users', { ...as, body: { email, name: 'Carol' } });
      if (invited.status !== 202) return fail(`POST /Users by an owner answered ${describe(invited)}, not 202 (an invitation)`);
      const why = created ? 'the service key was refused' : 'no SERVICE_API_KEY to create a user with';
      return pass(`200, 200, 200, and 202 for an owner (an invitation; ${why})`);
    },
  },
  causes: ['module-wiring'],
  advice: "see the backend's log for the request that failed (its x-request-id)",
};
