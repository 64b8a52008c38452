import { fail, pass, type Check } from './check.js';
import { describe } from './probe-context.js';

/** The backend reaches its database (`/ready` runs a query). */
export const databaseConnected: Check = {
  id: 'database-connected',
  title: 'Database connected',
  probe: {
    needs: 'http',
    async run({ http }) {
      const response = await http('GET', '/ready');
      return response.status === 200 ? pass(`GET /ready 200 (${response.body?.data?.database ?? 'database'})`) : fail(`GET /ready answered ${describe(response)}`);
    },
  },
  advice: "check DATABASE_URL (the backend's environment, then its .env) and that the database server runs",
};
