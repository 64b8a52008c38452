import type { Request, Response, Router } from 'express';
import type { Config } from '../config.js';
import type { Queryable } from '../db/database.js';
import { recordEvent } from '../events/events.js';
import { isUuid } from '../http/validate.js';
import { ScimError } from './errors.js';
import { compileFilter } from './filter-sql.js';
import { parseFilter } from './filter.js';
import type { Directory } from './memberships.js';
import { applyGroupPatch, deepEqual, type MemberChanges } from './patch.js';
import { coreGroupSchema } from './resource-schema.js';
import { recomputeRoles } from './roles.js';
import { baseUrlOf, sendScim, type AsDirectory } from './scim.router.js';
import { listQueryOf } from './list.js';
import { checkIfMatch, etagOf, projectionOf, type Projection } from './user-resource.js';

/**
 * `/Groups` of a directory (RFC 7644; docs/enterprise-identity.md, 6.5). A group is the identity
 * provider's ("Engineering admins"); its members are this directory's users. The organization's
 * owners map groups to roles (`/scim-directories/:id/role-mappings`), and every change of a
 * group's members recomputes the roles of those it concerns, in the same transaction.
 *
 * Members are never read whole to be changed: a group of 10,000 is one PATCH adding one, and
 * `patch.ts` answers member changes as lists of ids to add and remove.
 */

interface GroupRow {
  id: string;
  displayName: string;
  externalId: string | null;
  attributes: Record<string, unknown>;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

const columnsOf = (alias: string) => ['id', 'displayName', 'externalId', 'attributes', 'version', 'createdAt', 'updatedAt'].map((column) => `${alias}."${column}"`).join(', ');
const groupColumns = columnsOf('g');

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A POST's or PUT's body: its name, external id and members (ids of this directory's users). */
function groupOf(body: unknown): { displayName: string; externalId: string | null; members: string[] } {
  if (!isObject(body)) throw new ScimError(400, 'invalidSyntax', 'The body must be a SCIM Group (a JSON object)');
  const field = (name: string) => Object.entries(body).find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];
  const displayName = field('displayName');
  if (typeof displayName !== 'string' || displayName.trim() === '' || displayName.length > 256) throw new ScimError(400, 'invalidValue', 'displayName is required (at most 256 characters)');
  const externalId = field('externalId');
  if (externalId !== undefined && externalId !== null && typeof externalId !== 'string') throw new ScimError(400, 'invalidValue', 'externalId must be a string');
  const members = field('members') ?? [];
  if (!Array.isArray(members) || !members.every((member) => isObject(member) && typeof member.value === 'string')) {
    throw new ScimError(400, 'invalidValue', 'members must be a list of { value: <user id> }');
  }
  return { displayName, externalId: typeof externalId === 'string' ? externalId : null, members: [...new Set(members.map((member) => (member as { value: string }).value))] };
}

export function groupRoutes(router: Router, { asDirectory, config }: { asDirectory: AsDirectory; config: Config }): void {
  const base = (req: Request) => baseUrlOf(config, String(req.params.directoryId));

  const groupOfDirectory = async (tx: Queryable, directory: Directory, id: string, lock = false): Promise<GroupRow> => {
    if (!isUuid(id)) throw notFound(id);
    const { rows } = await tx.query<GroupRow>(`SELECT ${groupColumns} FROM "authstrap_scim_group" g WHERE g."id" = $1 AND g."directoryId" = $2${lock ? ' FOR UPDATE' : ''}`, [id, directory.id]);
    if (!rows[0]) throw notFound(id);
    return rows[0];
  };

  /** The group as answered, its members read (unless left out) in one statement for the page. */
  const resources = async (tx: Queryable, req: Request, groups: GroupRow[], projection?: Projection) => {
    const wantsMembers = projection?.attributes ? projection.attributes.includes('members') : !projection?.excludedAttributes?.includes('members');
    const members = new Map<string, { value: string; display: string; $ref: string }[]>();
    if (wantsMembers && groups.length > 0) {
      const { rows } = await tx.query<{ groupId: string; value: string; display: string }>(
        `SELECT gm."groupId", su."id" AS "value", su."attributes"->>'userName' AS "display" FROM "authstrap_scim_group_member" gm
           JOIN "authstrap_scim_user" su ON su."id" = gm."scimUserId" AND su."deletedAt" IS NULL
          WHERE gm."groupId" = ANY($1::uuid[]) ORDER BY su."createdAt", su."id"`,
        [groups.map((group) => group.id)],
      );
      for (const row of rows) {
        const list = members.get(row.groupId) ?? [];
        list.push({ value: row.value, display: row.display, $ref: `${base(req)}/Users/${row.value}` });
        members.set(row.groupId, list);
      }
    }
    return groups.map((group) => {
      const stored: Record<string, unknown> = { displayName: group.displayName, ...(group.externalId === null ? {} : { externalId: group.externalId }), ...(wantsMembers ? { members: members.get(group.id) ?? [] } : {}) };
      const shown = projection?.attributes
        ? Object.fromEntries(Object.entries(stored).filter(([name]) => projection.attributes!.includes(name.toLowerCase())))
        : projection?.excludedAttributes
          ? Object.fromEntries(Object.entries(stored).filter(([name]) => !projection.excludedAttributes!.includes(name.toLowerCase())))
          : stored;
      const location = `${base(req)}/Groups/${group.id}`;
      return { schemas: [coreGroupSchema], id: group.id, ...shown, meta: { resourceType: 'Group', created: group.createdAt, lastModified: group.updatedAt, location, version: etagOf(group.version) } };
    });
  };

  router.get('/Groups', async (req, res) => {
    const { filter, startIndex, count } = listQueryOf(req.query);
    const projection = projectionOf(req.query);
    const page = await asDirectory(req, async (tx, directory) => {
      const params: unknown[] = [directory.id];
      const where = filter ? ` AND (${compileFilter(parseFilter(filter), 'Group', params)})` : '';
      params.push(count, startIndex - 1);
      const { rows } = await tx.query<GroupRow & { total: number }>(
        `SELECT ${groupColumns}, count(*) OVER ()::int AS "total" FROM "authstrap_scim_group" g WHERE g."directoryId" = $1${where}
          ORDER BY g."createdAt", g."id" LIMIT $${params.length - 1} OFFSET $${params.length}`,
        params,
      );
      return { total: rows[0]?.total ?? 0, resources: await resources(tx, req, rows, projection) };
    });
    sendScim(res, 200, { schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: page.total, startIndex, itemsPerPage: page.resources.length, Resources: page.resources });
  });

  router.post('/Groups', async (req, res) => {
    const input = groupOf(req.body);
    const made = await asDirectory(req, async (tx, directory) => {
      if (input.externalId !== null) {
        const { rows } = await tx.query(`SELECT 1 FROM "authstrap_scim_group" WHERE "directoryId" = $1 AND "externalId" = $2`, [directory.id, input.externalId]);
        if (rows[0]) throw new ScimError(409, 'uniqueness', 'A group with this externalId already exists in this directory');
      }
      const { rows } = await tx.query<GroupRow>(
        `INSERT INTO "authstrap_scim_group" AS g ("directoryId", "organizationId", "displayName", "externalId") VALUES ($1, $2, $3, $4) RETURNING ${groupColumns}`,
        [directory.id, directory.organizationId, input.displayName, input.externalId],
      );
      const group = rows[0]!;
      await changeMembers(tx, directory, group.id, { add: input.members, remove: [], removeAll: false });
      await groupEvent(tx, directory, 'directory.group_created', group.id, { displayName: group.displayName, members: input.members.length });
      return (await resources(tx, req, [group]))[0]!;
    });
    res.setHeader('Location', made.meta.location);
    res.setHeader('ETag', made.meta.version);
    sendScim(res, 201, made);
  });

  router.get('/Groups/:id', async (req, res) => {
    const projection = projectionOf(req.query);
    const group = await asDirectory(req, async (tx, directory) => (await resources(tx, req, [await groupOfDirectory(tx, directory, String(req.params.id))], projection))[0]!);
    res.setHeader('ETag', group.meta.version);
    sendScim(res, 200, group);
  });

  /** PUT and PATCH: the new name and external id, and the member changes, kept when they change something. */
  const change = (compute: (stored: GroupRow, body: unknown) => { displayName: string; externalId: string | null; members: MemberChanges }) => async (req: Request, res: Response) => {
    const group = await asDirectory(req, async (tx, directory) => {
      const stored = await groupOfDirectory(tx, directory, String(req.params.id), true);
      checkIfMatch(req.header('if-match'), stored.version, 'group');
      const next = compute(stored, req.body);
      const membersChanged = await changeMembers(tx, directory, stored.id, next.members);
      const renamed = next.displayName !== stored.displayName || next.externalId !== stored.externalId;
      let row = stored;
      if (renamed || membersChanged) {
        const { rows } = await tx.query<GroupRow>(
          `UPDATE "authstrap_scim_group" g SET "displayName" = $2, "externalId" = $3, "version" = g."version" + 1, "updatedAt" = now() WHERE g."id" = $1 RETURNING ${groupColumns}`,
          [stored.id, next.displayName, next.externalId],
        );
        row = rows[0]!;
        await groupEvent(tx, directory, 'directory.group_updated', stored.id, { displayName: row.displayName, renamed, membersChanged });
      }
      return (await resources(tx, req, [row], projectionOf(req.query)))[0]!;
    });
    res.setHeader('ETag', group.meta.version);
    sendScim(res, 200, group);
  };
  router.put('/Groups/:id', change((_stored, body) => {
    const input = groupOf(body);
    return { displayName: input.displayName, externalId: input.externalId, members: { add: [], remove: [], removeAll: true, replace: input.members } };
  }));
  router.patch('/Groups/:id', change((stored, body) => {
    const patched = applyGroupPatch({ displayName: stored.displayName, ...(stored.externalId === null ? {} : { externalId: stored.externalId }) }, body);
    const displayName = patched.resource.displayName;
    if (typeof displayName !== 'string' || displayName.trim() === '') throw new ScimError(400, 'mutability', 'A group keeps its displayName');
    const externalId = typeof patched.resource.externalId === 'string' ? patched.resource.externalId : null;
    return { displayName, externalId, members: patched.members };
  }));

  router.delete('/Groups/:id', async (req, res) => {
    await asDirectory(req, async (tx, directory) => {
      const group = await groupOfDirectory(tx, directory, String(req.params.id), true);
      const { rows } = await tx.query<{ scimUserId: string }>(`DELETE FROM "authstrap_scim_group_member" WHERE "groupId" = $1 RETURNING "scimUserId"`, [group.id]);
      await tx.query(`DELETE FROM "authstrap_scim_group" WHERE "id" = $1`, [group.id]);
      // Its mapping went with it (the foreign key cascades): its members' roles follow.
      await recomputeRoles(tx, directory, rows.map((row) => row.scimUserId));
      await groupEvent(tx, directory, 'directory.group_deleted', group.id, { displayName: group.displayName });
    });
    res.status(204).end();
  });
}

const notFound = (id: string) => new ScimError(404, undefined, `No group ${id} in this directory`);

const groupEvent = (tx: Queryable, directory: Directory, type: string, groupId: string, data: Record<string, unknown>) =>
  recordEvent(tx, { type, organizationId: directory.organizationId, entity: 'scim_group', entityId: groupId, data });

/**
 * Applies member changes to a group (`removeAll` with `replace`: only those not in `replace`
 * leave, and those missing join), then recomputes the roles of everyone who joined or left.
 * Every member must be a live user of this directory: 400 `invalidValue` naming the first that is
 * not (another directory's user, a deleted one, not an id at all). Whether anything changed.
 */
async function changeMembers(tx: Queryable, directory: Directory, groupId: string, changes: MemberChanges): Promise<boolean> {
  const joining = changes.replace ?? changes.add;
  const unknown = joining.filter((id) => !isUuid(id));
  if (unknown.length === 0 && joining.length > 0) {
    const { rows } = await tx.query<{ id: string }>(
      `SELECT x."id" FROM unnest($2::uuid[]) AS x("id") WHERE NOT EXISTS (SELECT 1 FROM "authstrap_scim_user" su WHERE su."id" = x."id" AND su."directoryId" = $1 AND su."deletedAt" IS NULL)`,
      [directory.id, joining],
    );
    unknown.push(...rows.map((row) => row.id));
  }
  if (unknown.length > 0) throw new ScimError(400, 'invalidValue', `Not a user of this directory: ${unknown[0]}`);

  const left: string[] = [];
  if (changes.removeAll) {
    const keep = changes.replace ?? [];
    const { rows } = await tx.query<{ scimUserId: string }>(`DELETE FROM "authstrap_scim_group_member" WHERE "groupId" = $1 AND NOT ("scimUserId" = ANY($2::uuid[])) RETURNING "scimUserId"`, [groupId, keep]);
    left.push(...rows.map((row) => row.scimUserId));
  }
  const removing = changes.remove.filter(isUuid);
  if (removing.length > 0) {
    const { rows } = await tx.query<{ scimUserId: string }>(`DELETE FROM "authstrap_scim_group_member" WHERE "groupId" = $1 AND "scimUserId" = ANY($2::uuid[]) RETURNING "scimUserId"`, [groupId, removing]);
    left.push(...rows.map((row) => row.scimUserId));
  }
  const joined: string[] = [];
  if (joining.length > 0) {
    const { rows } = await tx.query<{ scimUserId: string }>(
      `INSERT INTO "authstrap_scim_group_member" ("groupId", "scimUserId", "organizationId") SELECT $1, x."id", $3 FROM unnest($2::uuid[]) AS x("id")
       ON CONFLICT DO NOTHING RETURNING "scimUserId"`,
      [groupId, joining, directory.organizationId],
    );
    joined.push(...rows.map((row) => row.scimUserId));
  }
  const concerned = [...new Set([...left, ...joined])];
  if (concerned.length > 0) await recomputeRoles(tx, directory, concerned);
  return concerned.length > 0 && !deepEqual(left, joined);
}
