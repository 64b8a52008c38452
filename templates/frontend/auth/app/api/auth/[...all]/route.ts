import { toNextJsHandler } from 'better-auth/next-js';
import { auth } from '../../../../lib/auth';

// Better Auth's routes (sign-up, sign-in, sign-out, get-session, ...) under /api/auth.
export const { GET, POST } = toNextJsHandler(auth);
