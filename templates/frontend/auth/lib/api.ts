import { createAuthstrapClient } from './authstrap-client';
import { heldImpersonation } from './impersonation';

const baseUrl = process.env.NEXT_PUBLIC_AUTHSTRAP_URL ?? 'http://localhost:3000';

/**
 * The backend's typed client for browser code. The session cookie Better Auth set is sent along
 * (credentials: 'include'); the organization is chosen with `api.setOrganization(id)`. In a tab
 * where an operator signs in as a user (lib/impersonation.ts), it sends that session's token
 * instead, so every page acts as the user. `authstrap-client.ts` is generated from the backend's
 * schema by `authstrap generate`.
 */
export const api = createAuthstrapClient({ baseUrl, credentials: 'include', token: heldImpersonation()?.token });

/**
 * The operator's routes with the operator's own session (the cookie), never an impersonation's
 * token: the /operator pages work, and end an impersonation, in a tab signed in as a user too.
 */
export const operatorApi = createAuthstrapClient({ baseUrl, credentials: 'include' }).operator;
