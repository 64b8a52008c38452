import { describeProbeBreakages } from '../support/check-cycle.js';
import { breakFile } from '../support/example-copies.js';

describeProbeBreakages('session', [
  {
    name: 'get-session answers 200 without a session',
    breakFiles: (dir) => breakFile(dir, 'src/auth/auth.router.ts', "if (!resolved) throw new HttpError(401, 'UNAUTHORIZED', 'No valid session');", 'if (!resolved) return sendData(res, null);'),
    fails: ['session'],
    hint: "see the backend's log for the request that failed (its x-request-id)",
  },
]);
