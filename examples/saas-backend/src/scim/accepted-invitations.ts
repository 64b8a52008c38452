import type { Queryable } from '../db/database.js';
import { setScopeStatement } from '../db/scope.js';
import type { Directory } from './memberships.js';
import { recomputeRoles } from './roles.js';

/**
 * A person accepted the invitation a directory mailed them (auth/invitations.ts): its resources
 * for them become members, and their role is what the directory's mappings give (a group pushed
 * while they were still invited counts now). The roles are computed as the directory, in its
 * scope, for these statements only: the acceptance's transaction is scoped to no organization,
 * and is so again afterwards.
 */
export async function acceptDirectoryInvitation(tx: Queryable, userId: string, organizationId: string): Promise<void> {
  const { rows } = await tx.query<{ scimUserId: string; directoryId: string; defaultRole: Directory['defaultRole'] }>(
    `SELECT * FROM authstrap.directory_invitation_accepted($1, $2::uuid)`,
    [userId, organizationId],
  );
  if (rows.length === 0) return;
  const { rows: before } = await tx.query<{ organizationId: string; userId: string; role: string }>(
    `SELECT COALESCE(current_setting('authstrap.organization_id', true), '') AS "organizationId", COALESCE(current_setting('authstrap.user_id', true), '') AS "userId",
            COALESCE(current_setting('authstrap.role', true), '') AS "role"`,
  );
  const asDirectory = setScopeStatement({ organizationId, userId: '', role: 'directory' });
  await tx.query(asDirectory.text, asDirectory.params);
  for (const row of rows) await recomputeRoles(tx, { id: row.directoryId, organizationId, defaultRole: row.defaultRole }, [row.scimUserId]);
  // (A failure rolls the transaction back, and its scope with it.)
  const restored = setScopeStatement(before[0]!);
  await tx.query(restored.text, restored.params);
}
