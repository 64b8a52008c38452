import { createAuthstrapClient } from './authstrap-client';

/**
 * The backend's typed client for browser code. The session cookie Better Auth set is sent along
 * (credentials: 'include'); the organization is chosen with `api.setOrganization(id)`.
 * `authstrap-client.ts` is generated from the backend's schema by `authstrap generate`.
 */
export const api = createAuthstrapClient({
  baseUrl: process.env.NEXT_PUBLIC_AUTHSTRAP_URL ?? 'http://localhost:3000',
  credentials: 'include',
});
