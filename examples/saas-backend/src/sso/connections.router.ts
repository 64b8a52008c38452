import { Router, type Request } from 'express';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { hasSqlState } from '../db/database.js';
import { lockUntilCommit } from '../db/locks.js';
import { recordEvent, requestContext } from '../events/events.js';
import { assertRole } from '../extensions/auth/auth.decorator.js';
import { asCaller, tenantScoped, type TenantDeps } from '../generated/guards/tenant.guard.js';
import { sendData } from '../http/envelope.js';
import { forbidden, HttpError, notFound, validationFailed } from '../http/errors.js';
import { parseBody, parseId } from '../http/validate.js';
import { endRefusedSessions } from '../auth/sign-in-policy.js';
import { connectionColumns, connectionSeal, presentConnection, type ConnectionRow } from './connections.js';
import { setBindingCookie, startFlow } from './flows.js';
import { discover, OidcProblem } from './oidc.js';

/**
 * An organization's single sign-on connections (OIDC in this step), for its owners and admins
 * (docs/sso.md):
 *
 *   GET    /sso-connections              the connections, with the values to copy into the IdP
 *   POST   /sso-connections              add one (discovery fetched now; disabled until tested and enabled)
 *   GET    /sso-connections/:id          one
 *   PATCH  /sso-connections/:id          change it (a change of what sign-in reads needs a new test)
 *   DELETE /sso-connections/:id          remove it; the sessions it made end
 *   POST   /sso-connections/:id/test     a test sign-in: the IdP's URL; the result lands in lastTest
 *   POST   /sso-connections/:id/enable   turn it on (409 NOT_TESTED without a pass since the last change)
 *   POST   /sso-connections/:id/disable  turn it off; the sessions it made end
 */

const presetNames = ['okta', 'entra', 'google', 'generic'] as const;
const AttributeMapping = z
  .strictObject({ subject: z.string().max(200), email: z.string().max(200), name: z.string().max(200), givenName: z.string().max(200), familyName: z.string().max(200), groups: z.string().max(200) })
  .partial();

const OidcInput = z.strictObject({
  issuer: z.url({ protocol: /^https?$/ }).max(2048).meta({ description: 'The issuer URL; discovery is fetched from <issuer>/.well-known/openid-configuration' }),
  clientId: z.string().min(1).max(500),
  clientSecret: z.string().min(1).max(2000).meta({ description: 'Sealed at rest, never answered (clientSecretSet)' }),
  scopes: z.string().max(500).regex(/(^|\s)openid(\s|$)/, 'must include openid').optional(),
  tokenEndpointAuthMethod: z.enum(['client_secret_basic', 'client_secret_post']).optional(),
  tenant: z.string().max(200).nullable().optional().meta({ description: "What a multi-tenant issuer's ID token must carry: Entra ID's tid, Google's hd" }),
});

export const SsoConnectionInput = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    protocol: z.literal('oidc'),
    preset: z.enum(presetNames).optional(),
    oidc: OidcInput,
    defaultRole: z.enum(['member', 'admin']).optional(),
    jitProvisioning: z.boolean().optional(),
    attributeMapping: AttributeMapping.optional(),
  })
  .meta({ id: 'SsoConnectionInput' });

export const SsoConnectionChange = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    preset: z.enum(presetNames),
    oidc: OidcInput.partial(),
    defaultRole: z.enum(['member', 'admin']),
    jitProvisioning: z.boolean(),
    attributeMapping: AttributeMapping,
  })
  .partial()
  .meta({ id: 'SsoConnectionChange' });

export function ssoConnectionsRouter(deps: TenantDeps & { db: Database; config: Config }) {
  const { db, config } = deps;
  const seal = connectionSeal(config.authSecret);
  const router = Router();

  const asAdmin = async (req: Request) => {
    if (req.caller?.kind === 'service') throw forbidden('Single sign-on is managed by the owners and admins of an organization, not the service key');
    const caller = asCaller(db, req);
    await caller.checkNow();
    assertRole(req.role, ['owner', 'admin']);
    return caller;
  };

  /** The discovery document, or the 422 naming the field. */
  const discovered = async (issuer: string) => {
    try {
      return await discover(issuer, config.sso.allowPrivateAddresses);
    } catch (error) {
      if (error instanceof OidcProblem) throw validationFailed('Invalid sso-connection', { 'oidc.issuer': error.message });
      throw error;
    }
  };

  const findOne = async (caller: ReturnType<typeof asCaller>, id: string) => {
    const { rows } = await caller.query<ConnectionRow>(`SELECT ${connectionColumns} FROM "authstrap_sso_connection" WHERE "id" = $1 AND "organizationId" = authstrap.organization_id()`, [id]);
    if (!rows[0]) throw notFound('sso-connection', id);
    return rows[0];
  };

  router.get('/', async (req, res) => {
    const caller = await asAdmin(req);
    const { rows } = await caller.query<ConnectionRow>(`SELECT ${connectionColumns} FROM "authstrap_sso_connection" WHERE "organizationId" = authstrap.organization_id() ORDER BY "createdAt", "id"`);
    sendData(res, rows.map((row) => presentConnection(row, config)));
  });

  router.post('/', async (req, res) => {
    const caller = await asAdmin(req);
    const input = parseBody('sso-connection', SsoConnectionInput, req);
    const metadata = await discovered(input.oidc.issuer);
    const organizationId = req.organizationId!;
    let created: ConnectionRow;
    try {
      created = await caller.transaction(async (tx) => {
        const { rows } = await tx.query<ConnectionRow>(
          `INSERT INTO "authstrap_sso_connection" ("organizationId", "name", "protocol", "preset", "defaultRole", "jitProvisioning", "attributeMapping",
                  "oidcIssuer", "oidcClientId", "oidcClientSecret", "oidcScopes", "oidcTokenAuthMethod", "oidcTenant", "oidcMetadata", "oidcMetadataFetchedAt", "createdBy")
           VALUES (authstrap.organization_id(), $1, 'oidc', $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12::jsonb, now(), authstrap.user_id())
           RETURNING ${connectionColumns}`,
          [
            input.name,
            input.preset ?? 'generic',
            input.defaultRole ?? 'member',
            input.jitProvisioning ?? true,
            JSON.stringify(input.attributeMapping ?? {}),
            metadata.issuer ?? input.oidc.issuer,
            input.oidc.clientId,
            seal.seal(input.oidc.clientSecret),
            input.oidc.scopes ?? 'openid email profile',
            input.oidc.tokenEndpointAuthMethod ?? 'client_secret_basic',
            input.oidc.tenant ?? null,
            JSON.stringify(metadata),
          ],
        );
        await recordEvent(tx, { type: 'sso_connection.created', organizationId, entity: 'sso_connection', entityId: rows[0]!.id, data: { name: input.name, protocol: 'oidc' } }, requestContext(req));
        return rows[0]!;
      });
    } catch (error) {
      if (hasSqlState(error) && error.code === '23505') throw new HttpError(409, 'CONFLICT', `This organization has a connection named ${input.name} already`);
      throw error;
    }
    sendData(res, presentConnection(created, config), 201);
  });

  router.get('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    sendData(res, presentConnection(await findOne(caller, parseId('sso-connection', req.params.id)), config));
  });

  router.patch('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('sso-connection', req.params.id);
    const change = parseBody('sso-connection', SsoConnectionChange, req);
    const current = await findOne(caller, id);
    const metadata = change.oidc?.issuer !== undefined ? await discovered(change.oidc.issuer) : undefined;
    const sets: string[] = [];
    const params: unknown[] = [id];
    const set = (column: string, value: unknown, cast = '') => {
      params.push(value);
      sets.push(`"${column}" = $${params.length}${cast}`);
    };
    if (change.name !== undefined) set('name', change.name);
    if (change.preset !== undefined) set('preset', change.preset);
    if (change.defaultRole !== undefined) set('defaultRole', change.defaultRole);
    if (change.jitProvisioning !== undefined) set('jitProvisioning', change.jitProvisioning);
    if (change.attributeMapping !== undefined) set('attributeMapping', JSON.stringify(change.attributeMapping), '::jsonb');
    if (metadata) {
      set('oidcIssuer', metadata.issuer ?? change.oidc!.issuer);
      set('oidcMetadata', JSON.stringify(metadata), '::jsonb');
      sets.push(`"oidcMetadataFetchedAt" = now()`);
    }
    if (change.oidc?.clientId !== undefined) set('oidcClientId', change.oidc.clientId);
    if (change.oidc?.clientSecret !== undefined) set('oidcClientSecret', seal.seal(change.oidc.clientSecret));
    if (change.oidc?.scopes !== undefined) set('oidcScopes', change.oidc.scopes);
    if (change.oidc?.tokenEndpointAuthMethod !== undefined) set('oidcTokenAuthMethod', change.oidc.tokenEndpointAuthMethod);
    if (change.oidc?.tenant !== undefined) set('oidcTenant', change.oidc.tenant);
    // What sign-in reads changed: the test that enabled it no longer counts.
    const signInChanged = change.oidc !== undefined || change.attributeMapping !== undefined || change.preset !== undefined;
    if (signInChanged) sets.push(`"configChangedAt" = clock_timestamp()`);
    if (sets.length === 0) return sendData(res, presentConnection(current, config));
    sets.push(`"updatedAt" = now()`);
    const changedFields = [...Object.keys(change).filter((key) => key !== 'oidc'), ...Object.keys(change.oidc ?? {}).map((key) => `oidc.${key}`)];
    let updated: ConnectionRow;
    try {
      updated = await caller.transaction(async (tx) => {
        const { rows } = await tx.query<ConnectionRow>(`UPDATE "authstrap_sso_connection" SET ${sets.join(', ')} WHERE "id" = $1 AND "organizationId" = authstrap.organization_id() RETURNING ${connectionColumns}`, params);
        if (!rows[0]) throw notFound('sso-connection', id);
        await recordEvent(tx, { type: 'sso_connection.updated', organizationId: req.organizationId!, entity: 'sso_connection', entityId: id, data: { changedFields } }, requestContext(req));
        return rows[0];
      });
    } catch (error) {
      if (hasSqlState(error) && error.code === '23505') throw new HttpError(409, 'CONFLICT', `This organization has a connection named ${change.name} already`);
      throw error;
    }
    sendData(res, presentConnection(updated, config));
  });

  /** Turns a connection off (or removes it), ending the sessions it made; refused while it is the last enabled one of an organization that requires SSO. */
  const takeDown = async (req: Request, remove: boolean) => {
    const caller = await asAdmin(req);
    const id = parseId('sso-connection', req.params.id);
    const organizationId = req.organizationId!;
    return caller.transaction(async (tx) => {
      await lockUntilCommit(tx, `sign-in:org:${organizationId}`);
      const { rows } = await tx.query<ConnectionRow & { othersEnabled: number; ssoRequired: boolean }>(
        `SELECT ${connectionColumns.replace(/"(\w+)"/g, 'c."$1"')},
                (SELECT count(*)::int FROM "authstrap_sso_connection" o WHERE o."organizationId" = c."organizationId" AND o."id" <> c."id" AND o."enabled") AS "othersEnabled",
                COALESCE((SELECT p."ssoRequired" FROM "authstrap_sso_policy" p WHERE p."organizationId" = c."organizationId"), false) AS "ssoRequired"
           FROM "authstrap_sso_connection" c WHERE c."id" = $1 AND c."organizationId" = authstrap.organization_id()`,
        [id],
      );
      const connection = rows[0];
      if (!connection) throw notFound('sso-connection', id);
      if (connection.enabled && connection.ssoRequired && connection.othersEnabled === 0) {
        throw new HttpError(409, 'LAST_CONNECTION', 'This is the last enabled connection of an organization that requires single sign-on: stop requiring it first');
      }
      const sessionsEnded = await endRefusedSessions(tx, { kind: 'connection-disabled', organizationId, connectionId: id });
      let row: ConnectionRow | undefined;
      if (remove) {
        await tx.query(`DELETE FROM "authstrap_sso_connection" WHERE "id" = $1 AND "organizationId" = authstrap.organization_id()`, [id]);
      } else {
        row = (await tx.query<ConnectionRow>(`UPDATE "authstrap_sso_connection" SET "enabled" = false, "updatedAt" = now() WHERE "id" = $1 RETURNING ${connectionColumns}`, [id])).rows[0];
      }
      await recordEvent(tx, { type: remove ? 'sso_connection.deleted' : 'sso_connection.disabled', organizationId, entity: 'sso_connection', entityId: id, data: { name: connection.name, sessionsEnded } }, requestContext(req));
      return row;
    });
  };

  router.delete('/:id', async (req, res) => {
    await takeDown(req, true);
    res.status(204).end();
  });

  router.post('/:id/disable', async (req, res) => {
    sendData(res, presentConnection((await takeDown(req, false))!, config));
  });

  router.post('/:id/enable', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('sso-connection', req.params.id);
    const updated = await caller.transaction(async (tx) => {
      const { rows } = await tx.query<ConnectionRow>(`SELECT ${connectionColumns} FROM "authstrap_sso_connection" WHERE "id" = $1 AND "organizationId" = authstrap.organization_id() FOR UPDATE`, [id]);
      const connection = rows[0];
      if (!connection) throw notFound('sso-connection', id);
      if (connection.testedAt === null || connection.testedAt < connection.configChangedAt) {
        throw new HttpError(409, 'NOT_TESTED', 'Test the connection first (POST /sso-connections/{id}/test): it has not passed a test since its last change');
      }
      if (connection.enabled) return connection;
      const { rows: enabled } = await tx.query<ConnectionRow>(`UPDATE "authstrap_sso_connection" SET "enabled" = true, "updatedAt" = now() WHERE "id" = $1 RETURNING ${connectionColumns}`, [id]);
      await recordEvent(tx, { type: 'sso_connection.enabled', organizationId: req.organizationId!, entity: 'sso_connection', entityId: id, data: { name: connection.name } }, requestContext(req));
      return enabled[0]!;
    });
    sendData(res, presentConnection(updated, config));
  });

  router.post('/:id/test', async (req, res) => {
    const caller = await asAdmin(req);
    const connection = await findOne(caller, parseId('sso-connection', req.params.id));
    const tester = req.scope?.userId || null;
    // Building the provider's URL reads the stored discovery document only: nothing is fetched here.
    const flow = await startFlow(db, config, { connection, purpose: 'test', client: 'browser', returnTo: null, appCodeChallenge: null, testerId: tester });
    setBindingCookie(res, flow.binding!, config.nodeEnv === 'production');
    sendData(res, { url: flow.url });
  });

  return tenantScoped(deps, router);
}
