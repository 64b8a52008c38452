import { forbidden } from '../http/errors.js';

/**
 * What an operator signed in as a user (docs/operator.md, "Impersonation") may not do with the
 * user's session: change how the user signs in (password, address), delete the account, sign the
 * user's sessions out, or make access that outlives the impersonation (a machine key). Support sees
 * and does in the product what the user does; the account itself stays the user's.
 */
export function refuseWhileImpersonating(session: { impersonatedBy: string | null }, action: string): void {
  if (session.impersonatedBy) throw forbidden(`An operator signed in as this user cannot ${action}: only the user can`);
}
