import { createAuthClient } from 'better-auth/react';

/**
 * Better Auth's browser client, talking to this app's own /api/auth (app/api/auth/[...all]).
 * Written by `authstrap setup --frontend`; yours to change.
 */
export const authClient = createAuthClient();
