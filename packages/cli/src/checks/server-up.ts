import { fail, pass, type Check } from './check.js';

/** The backend answers at all: every other probe needs it. */
export const serverUp: Check = {
  id: 'server-up',
  title: 'Server answers',
  probe: {
    needs: 'http',
    async run({ http }) {
      const response = await http('GET', '/health');
      return response.status === 200 ? pass('GET /health 200') : fail(`GET /health answered ${response.status}`);
    },
  },
  advice: 'start it: npm start (in the project folder), or pass its address with --url',
};
