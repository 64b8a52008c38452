import type { Queryable } from '../db/database.js';
import { lockUntilCommit } from '../db/locks.js';
import { ScimError } from './errors.js';
import { directoryEvent, type Directory } from './memberships.js';

/**
 * Groups to roles (docs/enterprise-identity.md, 6.5). While a directory has role mappings, the
 * role of each member it provisioned is the most privileged role mapped to a group they are in
 * (owner > admin > member), else the directory's default role; without mappings, roles are the
 * organization's to set by hand and the directory leaves them alone. Recomputed at once, in the
 * transaction of whatever changed them: a group's members, a mapping, a user made or reactivated.
 *
 * A recompute that would leave the organization without an owner is refused whole (400
 * `mutability`), as a deactivation of the last owner is.
 */

export type Role = 'owner' | 'admin' | 'member';

/** The roles a mapping may give, most privileged first. */
const rankSql = `CASE r."role" WHEN 'owner' THEN 3 WHEN 'admin' THEN 2 ELSE 1 END`;

/**
 * Sets the role of the directory's provisioned members `scimUserIds` (all of them when omitted)
 * to what the mappings give now. Returns the changes made.
 */
export async function recomputeRoles(tx: Queryable, directory: Directory, scimUserIds?: string[]): Promise<{ userId: string; from: Role; to: Role }[]> {
  await lockUntilCommit(tx, `owners:${directory.organizationId}`);
  const { rows: changes } = await tx.query<{ userId: string; from: Role; to: Role; scimUserId: string }>(
    `WITH wanted AS (
       SELECT su."id" AS "scimUserId", su."userId",
              COALESCE((SELECT r."role" FROM "authstrap_scim_group_member" gm JOIN "authstrap_scim_role_mapping" r ON r."groupId" = gm."groupId"
                         WHERE gm."scimUserId" = su."id" ORDER BY ${rankSql} DESC LIMIT 1), $3) AS "role"
         FROM "authstrap_scim_user" su
        WHERE su."directoryId" = $1 AND su."deletedAt" IS NULL AND su."membership" = 'member'
          AND ($4::uuid[] IS NULL OR su."id" = ANY($4::uuid[]))
          AND EXISTS (SELECT 1 FROM "authstrap_scim_role_mapping" WHERE "directoryId" = $1)
     ),
     before AS (
       SELECT m."id", m."role", w."role" AS "wanted", w."scimUserId", w."userId" FROM "member" m JOIN wanted w ON w."userId" = m."userId"
        WHERE m."organizationId" = $2 AND m."role" <> w."role"
     )
     UPDATE "member" m SET "role" = b."wanted", "updatedAt" = now() FROM before b WHERE m."id" = b."id"
     RETURNING b."userId", b."role" AS "from", b."wanted" AS "to", b."scimUserId"`,
    [directory.id, directory.organizationId, directory.defaultRole, scimUserIds ?? null],
  );
  if (changes.length === 0) return [];
  const { rows } = await tx.query<{ owners: number }>(`SELECT count(*)::int AS "owners" FROM "member" WHERE "organizationId" = $1 AND "role" = 'owner'`, [directory.organizationId]);
  if (rows[0]!.owners === 0) {
    throw new ScimError(400, 'mutability', 'This would leave the organization without an owner: map a group the owners are in to owner, or make someone else an owner first');
  }
  for (const change of changes) {
    await directoryEvent(tx, directory, 'directory.role_changed', change.userId, change.scimUserId, { from: change.from, to: change.to });
  }
  return changes.map(({ userId, from, to }) => ({ userId, from, to }));
}
