import { fail, pass, skip, warn, type Check } from './check.js';
import { describe } from './probe-context.js';

/**
 * The platform's operators (the backend's src/operator/, docs/operator.md): their routes refuse a
 * user who is none (`operator-routes`, against the running backend), and a production database
 * has at least one (`operators`: without one, nobody can help a customer but by psql).
 */
export const operatorRoutes: Check = {
  id: 'operator-routes',
  title: 'Operator routes refuse everyone else',
  probe: {
    needs: 'http',
    async run({ http, people: { alice }, serviceKey }) {
      if (!alice) return skip('needs a signed-up user');
      const asUser = await http('GET', '/api/operator/me', { token: alice.token });
      if (asUser.status === 404) return skip('this backend has no operator routes (made by an authstrap before them: `authstrap generate` adds them)');
      if (asUser.status !== 403) return fail(`GET /api/operator/me answered a new user who is no operator ${describe(asUser)}, not 403`);
      const anonymous = await http('GET', '/api/operator/me');
      if (anonymous.status !== 401) return fail(`GET /api/operator/me without a session answered ${anonymous.status}, not 401`);
      // The service key is no person: a 403. A key the backend does not know is service-credential's
      // failure (a 401 here too), not this check's.
      const asService = serviceKey ? await http('GET', '/api/operator/me', { trusted: true }) : undefined;
      if (asService && asService.status !== 403 && asService.status !== 401) return fail(`GET /api/operator/me with the service key answered ${describe(asService)}, not 403`);
      const serviceRefused = asService?.status === 403 ? ' and for the service key' : '';
      return pass(`GET /api/operator/me: 403 for a user who is no operator${serviceRefused}, 401 without a session`);
    },
  },
  advice: 'the operator routes must stand behind operatorsOnly (src/operator/operator.router.ts): run `authstrap generate` and compare',
};

export const operators: Check = {
  id: 'operators',
  title: 'Someone can run the platform (an operator)',
  probe: {
    needs: 'database',
    async run({ db, nodeEnv }) {
      const [table] = await db!.query<{ exists: boolean }>(`SELECT to_regclass('authstrap_operator') IS NOT NULL AS "exists"`);
      if (!table?.exists) return skip('the database has no operators table (start the backend once after `authstrap generate`)');
      const [row] = await db!.query<{ count: number }>(`SELECT count(*)::int AS "count" FROM "authstrap_operator"`);
      const count = row?.count ?? 0;
      if (count > 0) return pass(`${count} operator${count === 1 ? '' : 's'}`);
      return nodeEnv === 'production'
        ? warn('no operator in production: nobody can look up a user or help a customer but through psql. `authstrap operator grant <email>` makes one')
        : pass('no operator yet (fine outside production; `authstrap operator grant <email>` makes one)');
    },
  },
};
