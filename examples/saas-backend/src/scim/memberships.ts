import type { Queryable } from '../db/database.js';
import { lockUntilCommit } from '../db/locks.js';
import { endRefusedSessions } from '../auth/sign-in-policy.js';
import { recordEvent } from '../events/events.js';
import { HttpError } from '../http/errors.js';
import { ScimError } from './errors.js';
import type { UserColumns } from './user-resource.js';

/**
 * What a directory does to the organization's members (docs/enterprise-identity.md, 6.3 and 6.4),
 * each in the SCIM request's transaction, scoped to the organization with the role `directory`:
 *
 * - provisioning links the person to a `User` (made when there is none) and gives them a
 *   membership, but only where the organization may: an address in one of its verified domains,
 *   or a new account, or someone already a member. An existing account outside its domains is
 *   never joined to it without consent: it is `invited`.
 * - deactivating (or deleting) **suspends** the membership: the `member` row moves to
 *   `authstrap_member_suspension` (same id, role and date), every session that could still act in
 *   the organization ends (and everywhere, when the organization owns the address), their machine
 *   keys stop (db/scope.ts, creatorAllowed), their streams end at the next recheck, and the sign-in
 *   rule refuses them. Nothing they made is touched.
 * - reactivating moves the row back.
 */

export interface Directory {
  id: string;
  organizationId: string;
  defaultRole: 'member' | 'admin';
}

export type Membership = 'member' | 'suspended' | 'invited';

/** Whether the organization has verified the domain of `email` (a failing domain still counts, within its grace). */
async function ownsAddress(tx: Queryable, organizationId: string, email: string): Promise<boolean> {
  const { rows } = await tx.query(
    `SELECT 1 FROM "authstrap_domain" WHERE "organizationId" = $1 AND "domain" = lower(substring($2 from '@([^@]*)$')) AND "state" IN ('verified', 'failing')`,
    [organizationId, email],
  );
  return rows.length > 0;
}

/**
 * The `User` for a new SCIM user and what their membership became: linked to the account of the
 * same address, or a new account (its address verified only when the organization owns the
 * domain); a membership with the directory's default role, unless the account exists outside the
 * organization's domains and is not a member yet (then `invited`: nothing joins them). The same
 * create twice is a 409 `uniqueness` (Okta and Entra ID look users up before they create, and
 * read this as "exists").
 *
 * A directory's initial sync is thousands of these back to back, so what decides is asked in one
 * statement and a new account is made with its membership in another.
 */
export async function provisionUser(tx: Queryable, directory: Directory, user: UserColumns): Promise<{ userId: string; membership: Membership; created: boolean }> {
  const { rows } = await tx.query<{ duplicate: boolean; owned: boolean; accountId: string | null; member: boolean; suspended: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM "authstrap_scim_user" su WHERE su."directoryId" = $1 AND su."deletedAt" IS NULL AND (su."userName" = $2 OR su."externalId" = $3)) AS "duplicate",
            EXISTS (SELECT 1 FROM "authstrap_domain" d WHERE d."organizationId" = $4 AND d."domain" = lower(substring($5 from '@([^@]*)$')) AND d."state" IN ('verified', 'failing')) AS "owned",
            u."id" AS "accountId",
            EXISTS (SELECT 1 FROM "member" m WHERE m."userId" = u."id" AND m."organizationId" = $4) AS "member",
            u."id" IS NOT NULL AND authstrap.member_suspended(u."id", $4) AS "suspended"
       FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT "id" FROM "User" WHERE lower("email") = $5 LIMIT 1) u ON true`,
    [directory.id, user.userName.toLowerCase(), user.externalId, directory.organizationId, user.email],
  );
  const facts = rows[0]!;
  if (facts.duplicate) throw new ScimError(409, 'uniqueness', `A user with this userName or externalId already exists in this directory`);
  if (facts.accountId === null) {
    const { rows: made } = await tx.query<{ userId: string }>(
      `WITH account AS (INSERT INTO "User" ("email", "name", "email_verified") VALUES ($1, $2, $3) RETURNING "id")
       INSERT INTO "member" ("organizationId", "userId", "role") SELECT $4, "id", $5 FROM account RETURNING "userId"`,
      [user.email, user.personName, facts.owned, directory.organizationId, directory.defaultRole],
    );
    return { userId: made[0]!.userId, membership: 'member', created: true };
  }
  const userId = facts.accountId;
  // Made again after a DELETE (Okta re-assigns so): the membership comes back.
  if (facts.suspended) {
    await reactivate(tx, directory, userId);
    return { userId, membership: 'member', created: false };
  }
  if (facts.member) return { userId, membership: 'member', created: false };
  if (!facts.owned) return { userId, membership: 'invited', created: false };
  await tx.query(`INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, $3)`, [directory.organizationId, userId, directory.defaultRole]);
  return { userId, membership: 'member', created: false };
}

/**
 * Suspends the membership of `userId` and ends what it could still do (6.4). The last owner of
 * the organization is never suspended by a directory: 400 `mutability` (the caller records the
 * refusal once this transaction has rolled back). Returns how many sessions ended.
 */
export async function suspend(tx: Queryable, directory: Directory, userId: string, reason: 'directory-inactive' | 'directory-deleted'): Promise<number> {
  // A sign-in in flight commits before this (and its session is ended below), or waits and is refused.
  await lockUntilCommit(tx, `sign-in:user:${userId}`, `owners:${directory.organizationId}`);
  const { rows } = await tx.query<{ role: string; owners: number }>(
    `SELECT m."role", (SELECT count(*)::int FROM "member" o WHERE o."organizationId" = m."organizationId" AND o."role" = 'owner') AS "owners"
       FROM "member" m WHERE m."organizationId" = $1 AND m."userId" = $2`,
    [directory.organizationId, userId],
  );
  const membership = rows[0];
  if (membership?.role === 'owner' && membership.owners <= 1) {
    throw new ScimError(400, 'mutability', 'The last owner of the organization cannot be deactivated by the directory: make someone else an owner first');
  }
  if (membership) {
    await tx.query(
      `WITH gone AS (DELETE FROM "member" WHERE "organizationId" = $1 AND "userId" = $2 RETURNING "id", "role", "createdAt")
       INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason", "directoryId")
       SELECT "id", $1, $2, "role", "createdAt", $3, $4 FROM gone`,
      [directory.organizationId, userId, reason, directory.id],
    );
  } else {
    // Suspended already (deactivated, now deleted): the reason is the latest.
    await tx.query(`UPDATE "authstrap_member_suspension" SET "reason" = $3 WHERE "organizationId" = $1 AND "userId" = $2`, [directory.organizationId, userId, reason]);
  }
  return endRefusedSessions(tx, { kind: 'suspended', organizationId: directory.organizationId, userId });
}

/** Brings a suspended membership back, with its id, role and date (the sessions stay ended: they sign in again). */
export async function reactivate(tx: Queryable, directory: Directory, userId: string): Promise<boolean> {
  await lockUntilCommit(tx, `sign-in:user:${userId}`);
  const { rowCount } = await tx.query(
    `WITH back AS (DELETE FROM "authstrap_member_suspension" WHERE "organizationId" = $1 AND "userId" = $2 RETURNING "id", "role", "memberCreatedAt")
     INSERT INTO "member" ("id", "organizationId", "userId", "role", "createdAt") SELECT "id", $1, $2, "role", "memberCreatedAt" FROM back
     ON CONFLICT ("organizationId", "userId") DO NOTHING`,
    [directory.organizationId, userId],
  );
  return rowCount > 0;
}

/**
 * What the directory changes of the person's account: the name, and the address when both the old
 * and the new one are in the organization's verified domains (the organization owns that account's
 * profile; 6.3). An account outside them is the person's own, and keeps its name and address.
 */
export async function updateAccount(tx: Queryable, directory: Directory, userId: string, user: UserColumns): Promise<void> {
  const { rows } = await tx.query<{ email: string }>(`SELECT "email" FROM "User" WHERE "id" = $1`, [userId]);
  const current = rows[0];
  if (!current || !(await ownsAddress(tx, directory.organizationId, current.email))) return;
  const newAddress = current.email.toLowerCase() !== user.email && (await ownsAddress(tx, directory.organizationId, user.email)) ? user.email : null;
  await tx.query(`UPDATE "User" SET "name" = $2, "email" = COALESCE($3, "email"), "updatedAt" = now() WHERE "id" = $1 AND ("name" IS DISTINCT FROM $2 OR $3::text IS NOT NULL)`, [
    userId,
    user.personName,
    newAddress,
  ]);
}

/** Records a directory event in the transaction (the directory is its actor: the transaction's context). */
export const directoryEvent = (tx: Queryable, directory: Directory, type: string, userId: string | null, entityId: string, data: Record<string, unknown>) =>
  recordEvent(tx, { type, organizationId: directory.organizationId, userId, entity: 'scim_user', entityId, data });

/**
 * A person's name or address is the directory's to change when it provisioned them in a domain
 * their organization verified (docs/enterprise-identity.md, 6.3): by hand, 409 DIRECTORY_MANAGED,
 * saying where to change it. Asked by the routes that change them (the user's own update, the
 * address change).
 */
export async function refuseIfDirectoryManaged(db: Queryable, userId: string, what: 'name' | 'address'): Promise<void> {
  const { rows } = await db.query<{ managed: boolean }>(`SELECT authstrap.directory_manages_profile($1) AS "managed"`, [userId]);
  if (rows[0]?.managed) throw directoryManaged(what);
}

const directoryManaged = (what: 'name' | 'address') =>
  new HttpError(409, 'DIRECTORY_MANAGED', `Your ${what} comes from your organization's directory: ask its administrators to change it in the identity provider`);

/**
 * The same rule on the trusted server's path: Better Auth's `updateUser` and its address change
 * write the `User` through the service routes (PATCH /Users/:id), on the person's behalf. A change
 * of the name or address of any of `userIds` the directory owns is refused whole (409
 * DIRECTORY_MANAGED, which the adapter answers as Better Auth's own 409); writing the value that
 * is already there, or any other field (the picture, `emailVerified`), goes through.
 */
export async function refuseDirectoryManagedChanges(db: Queryable, userIds: string[], change: { name?: unknown; email?: unknown }): Promise<void> {
  if (userIds.length === 0 || (change.name === undefined && change.email === undefined)) return;
  const { rows } = await db.query<{ name: string; email: string }>(
    `SELECT "name", "email" FROM "User" WHERE "id" = ANY($1::uuid[]) AND authstrap.directory_manages_profile("id")`,
    [userIds],
  );
  for (const stored of rows) {
    if (typeof change.name === 'string' && change.name !== stored.name) throw directoryManaged('name');
    if (typeof change.email === 'string' && change.email.toLowerCase() !== stored.email.toLowerCase()) throw directoryManaged('address');
  }
}
