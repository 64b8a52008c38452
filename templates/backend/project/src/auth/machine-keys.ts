import { byUser, recordAuthEvent } from '../events/events.js';
import { randomBytes } from 'node:crypto';
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { KeyOperation } from '../db/scope.js';
import { keyEntities } from '../generated/key-entities.js';
import { sendData } from '../http/envelope.js';
import { forbidden, HttpError, validationFailed } from '../http/errors.js';
import { ruleFrom, type MachineKeyLimit } from '../http/machine-key-limit.js';
import { hashMachineKey } from '../http/session-token.js';
import { parseBody, parseId } from '../http/validate.js';
import { refuseWhileImpersonating } from './impersonation.js';
import { organizationManager } from './organization-manager.js';
import { RoleSchema, type Role, type SessionResolver } from './types.js';

/**
 * Machine keys: credentials of one organization for a cron job, another service or a customer's
 * integration, sent as `x-api-key`. An owner or admin makes one here (or through Better Auth's
 * api-key plugin with organization references: the same `apikey` table), naming what it may do
 * entity by entity, operation by operation; the key is shown once, in the answer that makes it,
 * and kept only as its SHA-256 (base64url, as Better Auth keeps it). It reaches its
 * organization's tenant-scoped routes and nothing else, each request checked in the round trip
 * of the route's own statement (db/scope.ts, machineKeyStatement): so a revoked, disabled or
 * expired key fails on its next request. docs/auth.md, "Machine keys", has the whole story.
 */

export const keyOperations = ['list', 'read', 'create', 'update', 'delete'] as const satisfies readonly KeyOperation[];

/** What a key may do: entity -> operations, Better Auth's shape (`{"Project":["list","read"]}`). */
export const KeyPermissions = z
  .record(z.string(), z.array(z.enum(keyOperations)).min(1))
  .meta({ id: 'MachineKeyPermissions', description: 'Entity -> the operations the key may do on it', example: { Project: ['list', 'read'] } });

export const MachineKeyInput = z
  .strictObject({
    name: z.string().min(1).max(200),
    /** The role the key acts with (row-level rules see it); at most the creator's own. */
    role: RoleSchema.default('member'),
    permissions: KeyPermissions,
    /** Seconds from now; without it the key does not expire. */
    expiresIn: z.int().min(60).max(5 * 365 * 24 * 60 * 60).optional(),
    /** At most this many requests while less than `rateLimitTimeWindow` ms pass between two of them (Better Auth's rule). */
    rateLimitMax: z.int().min(1).max(1_000_000).default(600),
    rateLimitTimeWindow: z.int().min(1000).max(24 * 60 * 60 * 1000).default(60_000),
  })
  .meta({ id: 'MachineKeyInput' });
export type MachineKeyInput = z.infer<typeof MachineKeyInput>;

/** A key as listed: everything but the key itself, which the backend does not have. */
export interface MachineKey {
  id: string;
  name: string | null;
  /** The key's first characters, to recognise it by. */
  start: string | null;
  prefix: string | null;
  role: Role;
  permissions: Record<string, string[]>;
  enabled: boolean;
  expiresAt: Date | null;
  lastRequest: Date | null;
  requestCount: number;
  rateLimitEnabled: boolean;
  rateLimitMax: number | null;
  rateLimitTimeWindow: number | null;
  remaining: number | null;
  createdAt: Date;
}

const keyPrefix = 'ask_';
/** How much of the key is kept in the clear (`start`): the prefix and a few characters. */
const shownCharacters = keyPrefix.length + 6;
const rank: Record<Role, number> = { member: 1, admin: 2, owner: 3 };

const keyColumns = `"id", "name", "start", "prefix", "role", "permissions", "enabled", "expiresAt", "lastRequest", "requestCount",
  "rateLimitEnabled", "rateLimitMax", "rateLimitTimeWindow", "remaining", "createdAt"`;

/** A row as stored: `permissions` is JSON text (Better Auth writes it so); unreadable JSON grants nothing. */
function keyOf(row: Omit<MachineKey, 'permissions'> & { permissions: string | null }): MachineKey {
  let permissions: Record<string, string[]> = {};
  try {
    permissions = row.permissions ? JSON.parse(row.permissions) : {};
  } catch {
    // The database's key_allows reads it the same way: nothing.
  }
  return { ...row, permissions };
}

export function createMachineKeys(db: Database, limit: MachineKeyLimit) {
  return {
    /** Each key's own rate limit, counted where the other limits are (http/machine-key-limit.ts). */
    limit,

    /** Makes a key for `organizationId`; the answer holds the key itself, the one time it exists outside the caller. */
    async create(organizationId: string, creatorRole: Role, input: MachineKeyInput, creatorId: string): Promise<MachineKey & { key: string }> {
      if (rank[input.role] > rank[creatorRole]) throw forbidden(`A ${creatorRole} cannot make a key with the ${input.role} role`);
      const unknown = Object.keys(input.permissions).filter((entity) => !keyEntities.includes(entity));
      if (unknown.length > 0) {
        throw validationFailed('A machine key reaches the organization’s own entities only', {
          permissions: `Unknown entit${unknown.length === 1 ? 'y' : 'ies'} ${unknown.join(', ')}; known: ${keyEntities.join(', ')}`,
        });
      }
      const key = `${keyPrefix}${randomBytes(32).toString('base64url')}`;
      const { rows } = await db.transaction(async (tx) => {
        const made = await tx.query<Omit<MachineKey, 'permissions'> & { permissions: string | null }>(
        `INSERT INTO "apikey" ("referenceId", "name", "start", "prefix", "key", "role", "permissions", "expiresAt", "rateLimitMax", "rateLimitTimeWindow", "createdBy")
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         RETURNING ${keyColumns}`,
        [
          organizationId,
          input.name,
          key.slice(0, shownCharacters),
          keyPrefix,
          hashMachineKey(key),
          input.role,
          JSON.stringify(input.permissions),
          input.expiresIn === undefined ? null : new Date(Date.now() + input.expiresIn * 1000),
          input.rateLimitMax,
          input.rateLimitTimeWindow,
          // Its maker: a directory that suspends them stops the key too (db/scope.ts, creatorAllowed).
          creatorId,
        ],
      );
        // Its name, role and permissions: never the key or its hash.
        const data = { name: input.name, role: input.role, permissions: input.permissions };
        await recordAuthEvent(tx, { type: 'key.created', organizationId, entity: 'apikey', entityId: made.rows[0]!.id, data }, byUser(creatorId));
        return made;
      });
      // Its first request on this instance need not read the rule.
      limit.ruleSeen(hashMachineKey(key), ruleFrom({ enabled: rows[0]!.rateLimitEnabled, max: rows[0]!.rateLimitMax, windowMs: rows[0]!.rateLimitTimeWindow, hasQuota: rows[0]!.remaining !== null }));
      return { ...keyOf(rows[0]!), key };
    },

    /** The organization's keys, newest first, without their hashes. */
    async list(organizationId: string): Promise<MachineKey[]> {
      const { rows } = await db.query<Omit<MachineKey, 'permissions'> & { permissions: string | null }>(
        `SELECT ${keyColumns} FROM "apikey" WHERE "referenceId" = $1 ORDER BY "createdAt" DESC, "id"`,
        [organizationId],
      );
      return rows.map(keyOf);
    },

    /** Deletes one of the organization's keys: its next request is a 401. An admin cannot revoke an owner's key. */
    async revoke(organizationId: string, revokerRole: Role, id: string, revokerId: string): Promise<void> {
      await db.transaction(async (tx) => {
      const { rows } = await tx.query<{ role: Role; deleted: boolean }>(
        `WITH target AS (SELECT "id", "role" FROM "apikey" WHERE "id" = $1 AND "referenceId" = $2),
              deleted AS (DELETE FROM "apikey" WHERE "id" IN (SELECT "id" FROM target WHERE $3 >= CASE "role" WHEN 'owner' THEN 3 WHEN 'admin' THEN 2 ELSE 1 END) RETURNING "id")
         SELECT t."role", EXISTS (SELECT FROM deleted) AS "deleted" FROM target t`,
        [id, organizationId, rank[revokerRole]],
      );
      const target = rows[0];
      if (!target) throw new HttpError(404, 'NOT_FOUND', `apikey with id '${id}' not found`);
      if (!target.deleted) throw forbidden(`A ${revokerRole} cannot revoke a key with the ${target.role} role`);
      await recordAuthEvent(tx, { type: 'key.revoked', organizationId, entity: 'apikey', entityId: id, data: { role: target.role } }, byUser(revokerId));
      });
    },
  };
}

export type MachineKeys = ReturnType<typeof createMachineKeys>;

/**
 * /api/auth/api-keys: an owner or admin of the organization the request acts in (x-organization-id,
 * or the session's active organization) makes, lists and revokes its keys.
 */
export function machineKeysRouter({ auth, config, keys }: { auth: SessionResolver; config: Config; keys: MachineKeys }): Router {
  const router = Router();

  const manager = (req: Request) => organizationManager(req, { auth, config }, 'Machine keys are managed by the owners and admins of the organization');

  router.post('/', async (req, res) => {
    const { organizationId, role, userId, impersonatedBy } = await manager(req);
    // A key would outlive the impersonation that made it.
    refuseWhileImpersonating({ impersonatedBy }, 'make a machine key');
    sendData(res, await keys.create(organizationId, role, parseBody('api-key', MachineKeyInput, req), userId), 201);
  });
  router.get('/', async (req, res) => {
    const { organizationId } = await manager(req);
    sendData(res, await keys.list(organizationId));
  });
  router.delete('/:id', async (req, res) => {
    const { organizationId, role, userId } = await manager(req);
    await keys.revoke(organizationId, role, parseId('apikey', req.params.id), userId);
    res.status(204).end();
  });
  return router;
}

/** Describes /api/auth/api-keys in the OpenAPI document. */
export function registerMachineKeyRoutes(registry: OpenAPIRegistry): void {
  const MachineKey = z
    .object({
      id: z.uuid(),
      name: z.string().nullable(),
      start: z.string().nullable().meta({ description: 'The first characters of the key, to recognise it by' }),
      prefix: z.string().nullable(),
      role: RoleSchema,
      permissions: KeyPermissions,
      enabled: z.boolean(),
      expiresAt: z.date().nullable(),
      lastRequest: z.date().nullable().meta({ description: 'When the key was last used (written to the key about a second after the request)' }),
      requestCount: z.int().meta({ description: "Requests in the key's current rate-limit window (as of lastRequest)" }),
      rateLimitEnabled: z.boolean(),
      rateLimitMax: z.int().nullable(),
      rateLimitTimeWindow: z.number().nullable(),
      remaining: z.int().nullable(),
      createdAt: z.date(),
    })
    .meta({ id: 'MachineKey' });
  const envelope = (data: z.ZodType) => ({ content: { 'application/json': { schema: z.object({ success: z.literal(true), data }) } } });
  const tags = ['auth'];
  const security: Record<string, string[]>[] = [{ sessionCookie: [] }, { bearer: [] }];
  const header = z.object({ 'x-organization-id': z.uuid().optional().meta({ description: 'The organization; without it, the session’s active one' }) });
  const refused = {
    401: { description: 'Not signed in' },
    403: { description: 'Not an owner or admin of the organization (or a role above your own, or a machine key)' },
  };
  registry.registerPath({
    method: 'post',
    path: '/api/auth/api-keys',
    operationId: 'createMachineKey',
    tags,
    security,
    summary: 'Make a machine key of the organization: the key is in this answer only',
    description: 'Send it as `x-api-key` to the organization’s tenant-scoped routes. It may do what `permissions` names, with `role`, until `expiresIn` seconds have passed or it is revoked.',
    request: { headers: header, body: { content: { 'application/json': { schema: MachineKeyInput } } } },
    responses: {
      201: { description: 'Made', ...envelope(MachineKey.extend({ key: z.string().meta({ description: 'The key: shown once, kept only hashed' }) })) },
      ...refused,
      403: { description: `${refused[403].description}; or an operator signed in as the user (an impersonation session): a key would outlive it` },
      422: { description: 'Invalid input, or an entity the key cannot reach' },
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/auth/api-keys',
    operationId: 'listMachineKeys',
    tags,
    security,
    summary: "The organization's machine keys (never the keys themselves)",
    request: { headers: header },
    responses: { 200: { description: 'Keys, newest first', ...envelope(z.array(MachineKey)) }, ...refused },
  });
  registry.registerPath({
    method: 'delete',
    path: '/api/auth/api-keys/{id}',
    operationId: 'revokeMachineKey',
    tags,
    security,
    summary: 'Revoke a machine key: its next request is a 401',
    request: { headers: header, params: z.object({ id: z.uuid() }) },
    responses: { 204: { description: 'Revoked' }, ...refused, 404: { description: 'The organization has no key with this id' } },
  });
}
