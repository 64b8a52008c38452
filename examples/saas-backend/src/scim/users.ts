import type { Request, Router } from 'express';
import type { Config } from '../config.js';
import type { Queryable } from '../db/database.js';
import { isUuid } from '../http/validate.js';
import { ScimError } from './errors.js';
import { compileFilter } from './filter-sql.js';
import { parseFilter } from './filter.js';
import { listQueryOf } from './list.js';
import { directoryEvent, provisionUser, reactivate, suspend, updateAccount, type Directory } from './memberships.js';
import { applyUserPatch, deepEqual } from './patch.js';
import { recomputeRoles } from './roles.js';
import { baseUrlOf, sendScim, type AsDirectory, type DirectoryInvitations } from './scim.router.js';
import { checkIfMatch, etagOf, projectionOf, userAttributesOf, userColumnsOf, userResource, type ScimUserRow, type UserAttributes } from './user-resource.js';

/**
 * `/Users` of a directory (RFC 7644 3.3 to 3.6; docs/enterprise-identity.md, 6.3 and 6.4). The
 * directory sees and changes only the users it provisioned: every statement goes through
 * `authstrap_scim_user` of this directory, in the organization's scope; a member who joined
 * otherwise is never listed, deactivated or changed by it.
 *
 * A change is compared with what is stored first: the same PUT or PATCH twice changes nothing (no
 * new version, no event). `active: false` suspends the membership (memberships.ts), `true` brings
 * it back; DELETE suspends it too and the resource answers 404 from then on.
 */

/** The columns of a stored user, from the table under `alias` (the filters' SQL calls it `u`). */
const columnsOf = (alias: string) => ['id', 'userId', 'attributes', 'active', 'membership', 'version', 'createdAt', 'updatedAt'].map((column) => `${alias}."${column}"`).join(', ');
const userColumns = columnsOf('su');

export function userRoutes(router: Router, { asDirectory, config, invitations }: { asDirectory: AsDirectory; config: Config; invitations: DirectoryInvitations }): void {
  /** Requests whose transaction wrote an invitation mail: the outbox is woken for those only. */
  const mailing = new WeakSet<Request>();
  /**
   * A person the directory provisioned who has an account outside the organization's domains
   * joins only by accepting: they are mailed an invitation (once while it stands; memberships.ts).
   */
  const inviteIfInvited = async (req: Request, tx: Queryable, directory: Directory, row: ScimUserRow, columns: { email: string; personName: string }) => {
    if (row.membership !== 'invited' || !row.active) return;
    const invitation = { organizationId: directory.organizationId, directoryId: directory.id, email: columns.email, name: columns.personName, role: directory.defaultRole };
    if (await invitations.inviteFromDirectory(tx, invitation)) mailing.add(req);
  };
  /** Runs a change as the directory, then lets the mail it wrote leave (a sync's other writes wake nothing). */
  const asDirectoryMailing: AsDirectory = async (req, work) => {
    const result = await asDirectory(req, work);
    if (mailing.has(req)) invitations.mailCommitted();
    return result;
  };
  const locationOf = (req: Request, id: string) => `${baseUrlOf(config, String(req.params.directoryId))}/Users/${id}`;

  /** The directory's live user `id`, locked for the change (404 for anything else: another directory's, a deleted one, not a uuid). */
  const userOf = async (tx: Queryable, directory: Directory, id: string, lock = false): Promise<ScimUserRow> => {
    if (!isUuid(id)) throw notFound(id);
    const { rows } = await tx.query<ScimUserRow>(
      `SELECT ${userColumns} FROM "authstrap_scim_user" su WHERE su."id" = $1 AND su."directoryId" = $2 AND su."deletedAt" IS NULL${lock ? ' FOR UPDATE' : ''}`,
      [id, directory.id],
    );
    if (!rows[0]) throw notFound(id);
    return rows[0];
  };

  router.get('/Users', async (req, res) => {
    const { filter, startIndex, count } = listQueryOf(req.query);
    const projection = projectionOf(req.query);
    const page = await asDirectory(req, async (tx, directory) => {
      const params: unknown[] = [directory.id];
      const where = filter ? ` AND (${compileFilter(parseFilter(filter), 'User', params)})` : '';
      params.push(count, startIndex - 1);
      // The total in the same statement as the page (a window over the filtered rows).
      const { rows } = await tx.query<ScimUserRow & { total: number }>(
        `SELECT ${columnsOf('u')}, count(*) OVER ()::int AS "total" FROM "authstrap_scim_user" u
          WHERE u."directoryId" = $1 AND u."deletedAt" IS NULL${where}
          ORDER BY u."createdAt", u."id" LIMIT $${params.length - 1} OFFSET $${params.length}`,
        params,
      );
      // A page past the end still says how many there are.
      const total = rows[0]?.total ?? (startIndex > 1 ? await countUsers(tx, directory, filter) : 0);
      return { rows, total };
    });
    sendScim(res, 200, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: page.total,
      startIndex,
      itemsPerPage: page.rows.length,
      Resources: page.rows.map((row) => userResource(row, locationOf(req, row.id), projection)),
    });
  });

  router.post('/Users', async (req, res) => {
    const attributes = userAttributesOf(req.body);
    const columns = userColumnsOf(attributes);
    const row = await asDirectoryMailing(req, async (tx, directory) => {
      const provisioned = await provisionUser(tx, directory, columns);
      const { rows } = await tx.query<ScimUserRow>(
        `INSERT INTO "authstrap_scim_user" AS su ("directoryId", "organizationId", "userId", "userName", "externalId", "email", "emails", "displayName", "active", "membership", "attributes")
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, true, $9, $10) RETURNING ${userColumns}`,
        [directory.id, directory.organizationId, provisioned.userId, columns.userName.toLowerCase(), columns.externalId, columns.email, columns.emails, columns.displayName, provisioned.membership, withoutActive(attributes)],
      );
      let created = rows[0]!;
      await directoryEvent(tx, directory, 'directory.user_provisioned', provisioned.userId, created.id, {
        userName: columns.userName,
        email: columns.email,
        membership: provisioned.membership,
        newAccount: provisioned.created,
      });
      // Made inactive (Okta can assign a user who is not active yet): suspended at once.
      // A new resource is in no group yet: its role is the default (or the one the person had)
      // until the directory pushes the groups that map one.
      if (!columns.active) created = await setActive(tx, directory, created, false);
      await inviteIfInvited(req, tx, directory, created, columns);
      return created;
    });
    res.setHeader('Location', locationOf(req, row.id));
    res.setHeader('ETag', etagOf(row.version));
    sendScim(res, 201, userResource(row, locationOf(req, row.id)));
  });

  router.get('/Users/:id', async (req, res) => {
    const projection = projectionOf(req.query);
    const row = await asDirectory(req, (tx, directory) => userOf(tx, directory, String(req.params.id)));
    res.setHeader('ETag', etagOf(row.version));
    sendScim(res, 200, userResource(row, locationOf(req, row.id), projection));
  });

  /** PUT and PATCH: the new attributes, compared with the stored ones, kept when they differ. */
  const change = (compute: (stored: ScimUserRow, body: unknown) => UserAttributes) => async (req: Request, res: import('express').Response) => {
    const row = await asDirectoryMailing(req, async (tx, directory) => {
      const stored = await userOf(tx, directory, String(req.params.id), true);
      checkIfMatch(req.header('if-match'), stored.version, 'user');
      const attributes = userAttributesOf(compute(stored, req.body));
      const changed = await replaceUser(tx, directory, stored, attributes);
      // Made active again while still invited: invited again, unless the invitation still stands.
      if (changed.active && !stored.active) await inviteIfInvited(req, tx, directory, changed, userColumnsOf(attributes));
      return changed;
    });
    res.setHeader('ETag', etagOf(row.version));
    sendScim(res, 200, userResource(row, locationOf(req, row.id)));
  };
  // Okta deactivates by a PUT of the whole user with `active: false`: the same comparison.
  router.put('/Users/:id', change((_stored, body) => userAttributesOf(body)));
  router.patch('/Users/:id', change((stored, body) => applyUserPatch({ ...stored.attributes, active: stored.active }, body).resource));

  router.delete('/Users/:id', async (req, res) => {
    await asDirectory(req, async (tx, directory) => {
      const stored = await userOf(tx, directory, String(req.params.id), true);
      await suspend(tx, directory, stored.userId, 'directory-deleted');
      await tx.query(`UPDATE "authstrap_scim_user" SET "deletedAt" = now(), "active" = false, "membership" = 'suspended', "updatedAt" = now() WHERE "id" = $1`, [stored.id]);
      await directoryEvent(tx, directory, 'directory.user_deprovisioned', stored.userId, stored.id, { reason: 'directory-deleted' });
    });
    res.status(204).end();
  });
}

const notFound = (id: string) => new ScimError(404, undefined, `No user ${id} in this directory`);

async function countUsers(tx: Queryable, directory: Directory, filter: string | undefined): Promise<number> {
  const params: unknown[] = [directory.id];
  const where = filter ? ` AND (${compileFilter(parseFilter(filter), 'User', params)})` : '';
  const { rows } = await tx.query<{ total: number }>(`SELECT count(*)::int AS "total" FROM "authstrap_scim_user" u WHERE u."directoryId" = $1 AND u."deletedAt" IS NULL${where}`, params);
  return rows[0]!.total;
}

/** Suspends or brings back the membership as `active` says, and records it on the resource. */
async function setActive(tx: Queryable, directory: Directory, row: ScimUserRow, active: boolean): Promise<ScimUserRow> {
  let membership = row.membership;
  if (!active && row.membership === 'member') {
    const sessionsEnded = await suspend(tx, directory, row.userId, 'directory-inactive');
    membership = 'suspended';
    await directoryEvent(tx, directory, 'directory.user_deprovisioned', row.userId, row.id, { reason: 'directory-inactive', sessionsEnded });
  } else if (active && row.membership === 'suspended') {
    await reactivate(tx, directory, row.userId);
    membership = 'member';
    await directoryEvent(tx, directory, 'directory.user_reactivated', row.userId, row.id, {});
  }
  const { rows } = await tx.query<ScimUserRow>(
    `UPDATE "authstrap_scim_user" su SET "active" = $2, "membership" = $3 WHERE su."id" = $1 RETURNING ${userColumns}`,
    [row.id, active, membership],
  );
  // Reactivated: the role the mappings give now, not the one kept from before.
  if (active && row.membership === 'suspended') await recomputeRoles(tx, directory, [row.id]);
  return rows[0]!;
}

/** Keeps the new attributes when they differ from the stored ones (a new version), with what follows from them. */
async function replaceUser(tx: Queryable, directory: Directory, stored: ScimUserRow, attributes: UserAttributes): Promise<ScimUserRow> {
  const columns = userColumnsOf(attributes);
  const before = userAttributesOf({ ...stored.attributes, active: stored.active });
  if (deepEqual(before, { ...attributes, active: columns.active })) return stored;
  const { rows } = await tx.query<ScimUserRow>(
    `UPDATE "authstrap_scim_user" su SET "userName" = $2, "externalId" = $3, "email" = $4, "emails" = $5, "displayName" = $6, "attributes" = $7,
            "version" = su."version" + 1, "updatedAt" = now()
      WHERE su."id" = $1 RETURNING ${userColumns}`,
    [stored.id, columns.userName.toLowerCase(), columns.externalId, columns.email, columns.emails, columns.displayName, withoutActive(attributes)],
  );
  let row = rows[0]!;
  await updateAccount(tx, directory, row.userId, columns);
  if (columns.active !== stored.active) row = await setActive(tx, directory, row, columns.active);
  else await directoryEvent(tx, directory, 'directory.user_updated', row.userId, row.id, { changedFields: changedFields(before, attributes) });
  return row;
}

/** `active` lives in its own column (what the membership follows), not in the stored attributes. */
const withoutActive = ({ active: _active, ...rest }: UserAttributes) => rest;

function changedFields(before: UserAttributes, after: UserAttributes): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((name) => !deepEqual(before[name], after[name])).sort();
}
