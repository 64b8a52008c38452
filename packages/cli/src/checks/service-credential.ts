import { randomBytes } from 'node:crypto';
import { fail, pass, skip, type Check } from './check.js';
import { describe } from './probe-context.js';

/**
 * What a Better Auth adapter does at every sign-up, with the service key: it writes the user and a
 * credential account, and a later sign-in reads the hash back by userId and providerId. Without a
 * key there is no adapter to check for; a key the backend refuses is named with where it came from.
 */
export const serviceCredential: Check = {
  id: 'service-credential',
  title: "A trusted server's password account keeps providerId 'credential' and its hash",
  probe: {
    needs: 'http',
    async run(context) {
      const { http, serviceKey, runId } = context;
      if (!serviceKey) return skip('no service key (--service-key, or SERVICE_API_KEY in the environment or .env): no adapter can use the backend');
      const as = { token: serviceKey.value };
      const user = await http('POST', '/Users', { ...as, body: { email: `verify-dora-${runId}@example.com`, name: 'Dora' } });
      if (user.status === 401) {
        return { ...fail(`the backend refused the service key (401): ${serviceKey.source} is not the backend's SERVICE_API_KEY`), fix: "pass the backend's key with --service-key, or set SERVICE_API_KEY" };
      }
      if (user.status !== 201) return fail(`POST /Users with the service key answered ${describe(user)}`);
      context.created.userIds.push(user.body.data.id);
      // A bcrypt hash as an adapter stores it (of a password nobody knows).
      const hash = `$2b$10$${randomBytes(40).toString('base64').replace(/[+=]/g, '.').slice(0, 53)}`;
      const body = { userId: user.body.data.id, accountId: user.body.data.id, providerId: 'credential', password: hash };
      const created = await http('POST', '/accounts', { ...as, body });
      if (created.status !== 201) return fail(`POST /accounts with the service key answered ${describe(created)}`);
      const where = encodeURIComponent(JSON.stringify([{ field: 'userId', value: user.body.data.id }, { field: 'providerId', value: 'credential' }]));
      const found = await http('GET', `/accounts?where=${where}`, as);
      const account = found.body?.data?.[0];
      if (found.status !== 200 || !account) return fail(`the credential account is not found by userId and providerId: ${describe(found)}`);
      if (account.password !== hash) return fail('account.password does not read back as written: a Better Auth sign-in would fail');
      return pass("stored and read back with providerId 'credential' and the same bcrypt hash");
    },
  },
  causes: ['module-wiring'],
  advice: "see the backend's log for the request that failed (its x-request-id)",
};
