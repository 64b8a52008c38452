import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { lockUntilCommit } from '../db/locks.js';
import type { ScopedQueryable } from '../db/scope.js';
import { recordEvent, requestContext } from '../events/events.js';
import { assertRole } from '../extensions/auth/auth.decorator.js';
import { asCaller, tenantScoped, type TenantDeps } from '../generated/guards/tenant.guard.js';
import { sendData } from '../http/envelope.js';
import { forbidden, HttpError, notFound, validationFailed } from '../http/errors.js';
import { isUuid, parseBody, parseId } from '../http/validate.js';
import { ScimError } from './errors.js';
import { recomputeRoles } from './roles.js';
import { newScimToken } from './tokens.js';

/**
 * An organization's SCIM directories, for its owners and admins (docs/scim.md): an identity
 * provider (Okta, Entra ID, Google Workspace) that provisions the organization's members through
 * `/scim/v2/<directory id>` with a bearer token made here.
 *
 *   GET    /scim-directories                         the directories, with their tokens (never the tokens themselves)
 *   POST   /scim-directories                         a new one; its first token is in this answer only
 *   GET    /scim-directories/managed-members         which of the given members a directory provisioned, and what it owns of them
 *   GET    /scim-directories/:id
 *   PATCH  /scim-directories/:id                     name, default role, enabled
 *   DELETE /scim-directories/:id                     memberships stay as they are; suspended ones become removable by hand
 *   POST   /scim-directories/:id/tokens              a new token, shown once; the current one keeps working for `overlapSeconds`
 *   DELETE /scim-directories/:id/tokens/:tokenId     revoke: its next request is a 401
 *   GET    /scim-directories/:id/users               the users it provisioned, with their membership
 *   GET    /scim-directories/:id/groups              its groups, with their member counts and the role mapped to each
 *   GET    /scim-directories/:id/requests            the last requests it made, and what they were answered (newest first)
 *   GET    /scim-directories/:id/role-mappings       which group gives which role
 *   PUT    /scim-directories/:id/role-mappings       the mappings, replaced whole; roles recomputed at once
 */

export const ScimDirectoryInput = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    preset: z.enum(['okta', 'entra', 'google', 'generic']).default('generic'),
    defaultRole: z.enum(['member', 'admin']).default('member').meta({ description: 'The role of a provisioned member no group mapping gives another' }),
  })
  .meta({ id: 'ScimDirectoryInput' });

export const ScimDirectoryUpdate = z
  .strictObject({
    name: z.string().trim().min(1).max(200).optional(),
    defaultRole: z.enum(['member', 'admin']).optional(),
    enabled: z.boolean().optional().meta({ description: 'Off: its tokens answer 401; nothing else changes' }),
  })
  .meta({ id: 'ScimDirectoryUpdate' });

export const ScimRoleMappings = z
  .array(z.strictObject({ groupId: z.uuid(), role: z.enum(['owner', 'admin', 'member']) }))
  .max(500)
  .meta({ id: 'ScimRoleMappings', description: "Each directory group's role in the organization; a member in several gets the most privileged" });

/** One day: long enough to paste the new token into the identity provider, short enough to retire a leaked one. */
const defaultOverlapSeconds = 24 * 60 * 60;

export const ScimTokenRotation = z
  .strictObject({
    overlapSeconds: z.int().min(0).max(7 * 24 * 60 * 60).default(defaultOverlapSeconds).meta({ description: 'How long the current token keeps working beside the new one (0: not at all; at most 7 days)' }),
  })
  .meta({ id: 'ScimTokenRotation' });

const directoryColumns = `d."id", d."name", d."preset", d."defaultRole", d."enabled", d."lastRequestAt", d."createdAt", d."updatedAt",
  COALESCE((SELECT json_agg(json_build_object('id', t."id", 'start', t."start", 'expiresAt', t."expiresAt", 'lastUsedAt', t."lastUsedAt", 'createdAt', t."createdAt") ORDER BY t."createdAt")
              FROM "authstrap_scim_token" t WHERE t."directoryId" = d."id" AND (t."expiresAt" IS NULL OR t."expiresAt" > now())), '[]') AS "tokens"`;

export function scimDirectoriesRouter(deps: TenantDeps & { db: Database; config: Config }) {
  const { db, config } = deps;
  const router = Router();

  /** The caller's database, once they are known to be a person who is an owner or admin of the organization. */
  const asAdmin = async (req: Request) => {
    if (req.caller?.kind === 'service' || req.caller?.kind === 'key') throw forbidden('SCIM directories are managed by the owners and admins of an organization, not by a key');
    const caller = asCaller(db, req);
    await caller.checkNow();
    assertRole(req.role, ['owner', 'admin']);
    return caller;
  };
  const withBaseUrl = <Row extends { id: string }>(row: Row) => ({ ...row, baseUrl: `${config.authUrl}/scim/v2/${row.id}` });
  const directoryOf = async (tx: ScopedQueryable, id: string) => {
    const { rows } = await tx.query<{ id: string; name: string; defaultRole: 'member' | 'admin' }>(`SELECT ${directoryColumns} FROM "authstrap_scim_directory" d WHERE d."id" = $1 AND d."organizationId" = authstrap.organization_id()`, [id]);
    if (!rows[0]) throw notFound('SCIM directory', id);
    return withBaseUrl(rows[0]);
  };
  const event = (req: Request, type: string, entityId: string, data: Record<string, unknown> = {}) => (tx: ScopedQueryable) =>
    recordEvent(tx, { type, organizationId: req.organizationId, entity: 'scim_directory', entityId, data }, requestContext(req));

  router.get('/', async (req, res) => {
    const caller = await asAdmin(req);
    const { rows } = await caller.query<{ id: string }>(`SELECT ${directoryColumns} FROM "authstrap_scim_directory" d WHERE d."organizationId" = authstrap.organization_id() ORDER BY d."createdAt", d."id"`);
    sendData(res, rows.map(withBaseUrl));
  });

  router.post('/', async (req, res) => {
    const caller = await asAdmin(req);
    const input = parseBody('SCIM directory', ScimDirectoryInput, req);
    const { token, tokenHash, start } = newScimToken();
    const created = await caller.transaction(async (tx) => {
      const { rows } = await tx.query<{ id: string }>(
        `INSERT INTO "authstrap_scim_directory" ("organizationId", "name", "preset", "defaultRole", "createdBy") VALUES (authstrap.organization_id(), $1, $2, $3, authstrap.user_id()) RETURNING "id"`,
        [input.name, input.preset, input.defaultRole],
      );
      const id = rows[0]!.id;
      await tx.query(`INSERT INTO "authstrap_scim_token" ("directoryId", "organizationId", "tokenHash", "start", "createdBy") VALUES ($1, authstrap.organization_id(), $2, $3, authstrap.user_id())`, [id, tokenHash, start]);
      await event(req, 'directory.created', id, { name: input.name, preset: input.preset, defaultRole: input.defaultRole })(tx);
      return directoryOf(tx, id);
    });
    // Shown once: the identity provider keeps it from now on.
    sendData(res, { ...created, token }, 201);
  });

  /**
   * For the members page: which of `?userId=` (up to 100, repeated or comma-separated) a
   * directory provisioned and keeps as members, by which directory, and what it owns of them:
   * their role and their removal while it maps groups to roles (the member routes answer 409
   * DIRECTORY_MANAGED), their name and address when their address is in a verified domain.
   */
  router.get('/managed-members', async (req, res) => {
    const caller = await asAdmin(req);
    const userIds = [req.query.userId].flat().filter((value) => value !== undefined).flatMap((value) => String(value).split(',')).filter(Boolean);
    if (userIds.length > 100) throw validationFailed('At most 100 members at once', { userId: 'At most 100' });
    const invalid = userIds.find((userId) => !isUuid(userId));
    if (invalid !== undefined) throw validationFailed('Not a user id', { userId: `${invalid.slice(0, 50)} is not a uuid` });
    const { rows } = await caller.query(
      `SELECT su."userId", d."id" AS "directoryId", d."name" AS "directoryName",
              EXISTS (SELECT 1 FROM "authstrap_scim_role_mapping" r WHERE r."directoryId" = d."id") AS "rolesFromGroups",
              authstrap.directory_manages_profile(su."userId") AS "profileFromDirectory"
         FROM "authstrap_scim_user" su JOIN "authstrap_scim_directory" d ON d."id" = su."directoryId"
        WHERE su."userId" = ANY($1::uuid[]) AND su."deletedAt" IS NULL AND su."membership" = 'member'
        ORDER BY su."userId", su."createdAt"`,
      [userIds],
    );
    sendData(res, rows);
  });

  router.get('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    sendData(res, await directoryOf(caller, parseId('SCIM directory', req.params.id)));
  });

  router.patch('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('SCIM directory', req.params.id);
    const patch = parseBody('SCIM directory', ScimDirectoryUpdate, req);
    sendData(
      res,
      await caller.transaction(async (tx) => {
        await directoryOf(tx, id);
        await tx.query(
          `UPDATE "authstrap_scim_directory" SET "name" = COALESCE($2, "name"), "defaultRole" = COALESCE($3, "defaultRole"), "enabled" = COALESCE($4, "enabled"), "updatedAt" = now() WHERE "id" = $1`,
          [id, patch.name ?? null, patch.defaultRole ?? null, patch.enabled ?? null],
        );
        await event(req, 'directory.updated', id, { changedFields: Object.keys(patch).sort() })(tx);
        return directoryOf(tx, id);
      }),
    );
  });

  router.delete('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('SCIM directory', req.params.id);
    await caller.transaction(async (tx) => {
      const directory = await directoryOf(tx, id);
      // Its tokens, users and groups go with it (the foreign keys cascade); the memberships it
      // made stay, and the suspensions it made stay too, no longer any directory's.
      await tx.query(`UPDATE "authstrap_member_suspension" SET "directoryId" = NULL WHERE "directoryId" = $1`, [id]);
      await tx.query(`DELETE FROM "authstrap_scim_directory" WHERE "id" = $1`, [id]);
      await event(req, 'directory.deleted', id, { name: directory.name })(tx);
    });
    res.status(204).end();
  });

  router.post('/:id/tokens', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('SCIM directory', req.params.id);
    const { overlapSeconds } = parseBody('SCIM token', ScimTokenRotation, req);
    const { token, tokenHash, start } = newScimToken();
    const rotated = await caller.transaction(async (tx) => {
      await directoryOf(tx, id);
      // Two rotations at once would each leave a current token: one waits for the other.
      await lockUntilCommit(tx, `scim-tokens:${id}`);
      // At most two work at a time: the new one, and the current one for the overlap. One that was
      // already on its way out stops now.
      await tx.query(`UPDATE "authstrap_scim_token" SET "expiresAt" = now() WHERE "directoryId" = $1 AND "expiresAt" > now()`, [id]);
      const { rows: previous } = await tx.query<{ expiresAt: Date }>(
        `UPDATE "authstrap_scim_token" SET "expiresAt" = now() + make_interval(secs => $2) WHERE "directoryId" = $1 AND "expiresAt" IS NULL RETURNING "expiresAt"`,
        [id, overlapSeconds],
      );
      const { rows } = await tx.query<{ id: string }>(
        `INSERT INTO "authstrap_scim_token" ("directoryId", "organizationId", "tokenHash", "start", "createdBy") VALUES ($1, authstrap.organization_id(), $2, $3, authstrap.user_id()) RETURNING "id"`,
        [id, tokenHash, start],
      );
      await event(req, 'directory.token_rotated', id, { tokenId: rows[0]!.id, start, overlapSeconds })(tx);
      return { id: rows[0]!.id, start, previousExpiresAt: previous[0]?.expiresAt ?? null };
    });
    sendData(res, { ...rotated, token }, 201);
  });

  router.delete('/:id/tokens/:tokenId', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('SCIM directory', req.params.id);
    const tokenId = parseId('SCIM token', req.params.tokenId);
    await caller.transaction(async (tx) => {
      await directoryOf(tx, id);
      const { rowCount } = await tx.query(`DELETE FROM "authstrap_scim_token" WHERE "id" = $1 AND "directoryId" = $2`, [tokenId, id]);
      if (rowCount === 0) throw notFound('SCIM token', tokenId);
      await event(req, 'directory.token_revoked', id, { tokenId })(tx);
    });
    res.status(204).end();
  });

  /** A GET of one of the directory's lists: its owners' and admins', once the directory is known to be the organization's. */
  const directoryList = (list: (caller: ScopedQueryable, id: string) => Promise<unknown[]>) => async (req: Request, res: Response) => {
    const caller = await asAdmin(req);
    const id = parseId('SCIM directory', req.params.id);
    await directoryOf(caller, id);
    sendData(res, await list(caller, id));
  };
  const rowsOf = (text: string) => async (caller: ScopedQueryable, id: string) => (await caller.query(text, [id])).rows;
  const mappingsOf = rowsOf(
    `SELECT r."groupId", g."displayName", r."role" FROM "authstrap_scim_role_mapping" r JOIN "authstrap_scim_group" g ON g."id" = r."groupId" WHERE r."directoryId" = $1 ORDER BY lower(g."displayName")`,
  );

  router.get(
    '/:id/users',
    directoryList(
      rowsOf(`SELECT su."id", su."userId", su."attributes"->>'userName' AS "userName", su."externalId", su."email", su."displayName", su."active", su."membership", su."createdAt", su."updatedAt"
                FROM "authstrap_scim_user" su WHERE su."directoryId" = $1 AND su."deletedAt" IS NULL ORDER BY su."userName" LIMIT 1000`),
    ),
  );

  router.get(
    '/:id/groups',
    directoryList(
      rowsOf(`SELECT g."id", g."displayName", g."externalId", r."role",
                     (SELECT count(*)::int FROM "authstrap_scim_group_member" gm WHERE gm."groupId" = g."id") AS "members", g."createdAt", g."updatedAt"
                FROM "authstrap_scim_group" g LEFT JOIN "authstrap_scim_role_mapping" r ON r."groupId" = g."id"
               WHERE g."directoryId" = $1 ORDER BY lower(g."displayName"), g."id" LIMIT 1000`),
    ),
  );

  // The request log keeps 7 days and at most 1,000 rows a directory (request-log.ts); the console shows the last 200.
  router.get(
    '/:id/requests',
    directoryList(
      rowsOf(`SELECT "id", "method", "path", "status", "scimType", "detail", "durationMs", "createdAt" FROM "authstrap_scim_request"
               WHERE "directoryId" = $1 ORDER BY "createdAt" DESC, "id" DESC LIMIT 200`),
    ),
  );

  router.get('/:id/role-mappings', directoryList(mappingsOf));

  router.put('/:id/role-mappings', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('SCIM directory', req.params.id);
    const mappings = parseBody('role mappings', ScimRoleMappings, req);
    const mapped = await caller.transaction(async (tx) => {
      const directory = await directoryOf(tx, id);
      const { rows: current } = await tx.query<{ role: string }>(`SELECT "role" FROM "authstrap_scim_role_mapping" WHERE "directoryId" = $1`, [id]);
      // Who may be made an owner, or stop being one, by a group: an owner.
      if (req.role !== 'owner' && [...current, ...mappings].some((mapping) => mapping.role === 'owner')) throw forbidden('Only an owner maps a group to the owner role, or changes such a mapping');
      const groups = [...new Set(mappings.map((mapping) => mapping.groupId))];
      if (groups.length !== mappings.length) throw validationFailed('A group is mapped to one role', { groupId: 'Each group at most once' });
      const { rows: known } = await tx.query<{ id: string }>(`SELECT "id" FROM "authstrap_scim_group" WHERE "directoryId" = $1 AND "id" = ANY($2::uuid[])`, [id, groups]);
      const missing = groups.filter((group) => !known.some((row) => row.id === group));
      if (missing.length > 0) throw validationFailed('Not a group of this directory', { groupId: missing[0]! });
      await tx.query(`DELETE FROM "authstrap_scim_role_mapping" WHERE "directoryId" = $1`, [id]);
      if (mappings.length > 0) {
        await tx.query(
          `INSERT INTO "authstrap_scim_role_mapping" ("organizationId", "directoryId", "groupId", "role", "createdBy")
           SELECT authstrap.organization_id(), $1, x."groupId", x."role", authstrap.user_id() FROM unnest($2::uuid[], $3::text[]) AS x("groupId", "role")`,
          [id, mappings.map((mapping) => mapping.groupId), mappings.map((mapping) => mapping.role)],
        );
      }
      let changed;
      try {
        changed = await recomputeRoles(tx, { id, organizationId: req.organizationId!, defaultRole: directory.defaultRole });
      } catch (error) {
        if (error instanceof ScimError) throw new HttpError(409, 'LAST_OWNER', error.detail);
        throw error;
      }
      await event(req, 'directory.role_mappings_changed', id, { mappings: mappings.length, rolesChanged: changed.length })(tx);
      return mappingsOf(tx, id);
    });
    sendData(res, mapped);
  });

  return tenantScoped(deps, router);
}
