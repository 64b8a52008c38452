import type { Queryable } from '../db/database.js';
import { setScopeStatement } from '../db/scope.js';
import type { Directory } from './memberships.js';
import { recomputeRoles } from './roles.js';

/**
 * A person accepted the invitation a directory mailed them (auth/invitations.ts): its resources
 * for them become members, and their role is what the directory's mappings give (a group pushed
 * while they were still invited counts now). The roles are computed as the directory, in its
 * scope and as the actor of the `directory.role_changed` events they record (the person accepted;
 * the directory's mappings chose the role), for these statements only: the acceptance's
 * transaction is scoped to no organization and names the person, and does so again afterwards.
 */
export async function acceptDirectoryInvitation(tx: Queryable, userId: string, organizationId: string): Promise<void> {
  const { rows } = await tx.query<{ scimUserId: string; directoryId: string; defaultRole: Directory['defaultRole'] }>(
    `SELECT * FROM authstrap.directory_invitation_accepted($1, $2::uuid)`,
    [userId, organizationId],
  );
  if (rows.length === 0) return;
  const { rows: before } = await tx.query<{ organizationId: string; userId: string; role: string; request: string }>(
    `SELECT COALESCE(current_setting('authstrap.organization_id', true), '') AS "organizationId", COALESCE(current_setting('authstrap.user_id', true), '') AS "userId",
            COALESCE(current_setting('authstrap.role', true), '') AS "role", COALESCE(current_setting('authstrap.request', true), '') AS "request"`,
  );
  const { request, ...scope } = before[0]!;
  const asDirectory = setScopeStatement({ organizationId, userId: '', role: 'directory' });
  await tx.query(asDirectory.text, asDirectory.params);
  for (const row of rows) {
    // The request's id and address stay; the actor is the directory.
    await tx.query(
      `SELECT set_config('authstrap.request', (COALESCE(NULLIF($1, ''), '{}')::jsonb || jsonb_build_object('actorType', 'directory', 'actorId', $2::text))::text, true)`,
      [request, row.directoryId],
    );
    await recomputeRoles(tx, { id: row.directoryId, organizationId, defaultRole: row.defaultRole }, [row.scimUserId]);
  }
  // (A failure rolls the transaction back, and its scope with it.)
  const restored = setScopeStatement(scope);
  await tx.query(restored.text, restored.params);
  await tx.query(`SELECT set_config('authstrap.request', $1, true)`, [request]);
}
