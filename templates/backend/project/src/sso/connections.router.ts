import { randomUUID } from 'node:crypto';
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import { hasSqlState } from '../db/database.js';
import { lockUntilCommit } from '../db/locks.js';
import { recordEvent, requestContext } from '../events/events.js';
import { assertRole } from '../extensions/auth/auth.decorator.js';
import { asCaller, tenantScoped, type TenantDeps } from '../generated/guards/tenant.guard.js';
import { sendData } from '../http/envelope.js';
import { forbidden, HttpError, notFound, validationFailed } from '../http/errors.js';
import { parseBody, parseId } from '../http/validate.js';
import { endRefusedSessions } from '../auth/sign-in-policy.js';
import { certificateColumns, connectionColumns, connectionSeal, presentConnection, storeCertificates, type CertificateRow, type ConnectionRow } from './connections.js';
import { setBindingCookie, startFlow } from './flows.js';
import { discover, OidcProblem } from './oidc.js';
import { certificateFacts, fetchIdpMetadata, makeServiceProviderKeys, metadataLimitBytes, readIdpMetadata, SamlProblem, type IdpDescription } from './saml.js';

/**
 * An organization's single sign-on connections (OIDC and SAML), for its owners and admins
 * (docs/sso.md):
 *
 *   GET    /sso-connections              the connections, with the values to copy into the IdP
 *   POST   /sso-connections              add one (OIDC discovery or SAML metadata read now; disabled until tested and enabled)
 *   GET    /sso-connections/:id          one
 *   PATCH  /sso-connections/:id          change it (a change of what sign-in reads needs a new test)
 *   DELETE /sso-connections/:id          remove it; the sessions it made end
 *   POST   /sso-connections/:id/test     a test sign-in: the IdP's URL; the result lands in lastTest
 *   POST   /sso-connections/:id/refresh  read the OIDC discovery or SAML metadata (and certificates) again from its URL
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

const Certificate = z.string().min(1).max(20_000).meta({ description: 'A PEM certificate (or its base64 body)' });

/** Where a SAML IdP is described: its metadata's URL, the metadata itself, or its values typed. */
const SamlInput = z.union([
  z.strictObject({ metadataUrl: z.url({ protocol: /^https?$/ }).max(2048).meta({ description: 'Fetched now (through the address guard) and kept' }) }),
  z.strictObject({ metadataXml: z.string().min(1).max(metadataLimitBytes).meta({ description: 'The IdP metadata document, at most 100 KB' }) }),
  z.strictObject({
    entityId: z.string().min(1).max(1024),
    ssoUrl: z.url({ protocol: /^https?$/ }).max(2048).meta({ description: 'Single sign-on URL (HTTP-Redirect binding)' }),
    certificates: z.array(Certificate).min(1).max(10).meta({ description: "The IdP's signing certificates: several during a rollover" }),
  }),
]);

const common = {
  name: z.string().trim().min(1).max(200),
  preset: z.enum(presetNames).optional(),
  defaultRole: z.enum(['member', 'admin']).optional(),
  jitProvisioning: z.boolean().optional(),
  attributeMapping: AttributeMapping.optional(),
};

export const SsoConnectionInput = z
  .discriminatedUnion('protocol', [
    z.strictObject({ ...common, protocol: z.literal('oidc'), oidc: OidcInput }),
    z.strictObject({
      ...common,
      protocol: z.literal('saml'),
      saml: SamlInput,
      signAuthnRequests: z.boolean().optional().meta({ description: 'Sign AuthnRequests with the SP key (its certificate is in the SP metadata)' }),
      allowIdpInitiated: z.boolean().optional().meta({ description: "Accept sign-ins started at the IdP (no AuthnRequest): off unless the IdP's portal needs it" }),
    }),
  ])
  .meta({ id: 'SsoConnectionInput' });

export const SsoConnectionChange = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    preset: z.enum(presetNames),
    oidc: OidcInput.partial(),
    saml: SamlInput,
    signAuthnRequests: z.boolean(),
    allowIdpInitiated: z.boolean(),
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

  /** The IdP a SAML input describes (metadata fetched or parsed now), or the 422 naming the field. */
  const described = async (input: z.output<typeof SamlInput>): Promise<{ idp: IdpDescription; source: 'metadata' | 'upload'; metadataUrl: string | null; metadataXml: string | null }> => {
    const field = 'metadataUrl' in input ? 'saml.metadataUrl' : 'metadataXml' in input ? 'saml.metadataXml' : 'saml.certificates';
    try {
      if ('metadataUrl' in input) {
        const fetched = await fetchIdpMetadata(input.metadataUrl, config.sso.allowPrivateAddresses);
        return { idp: fetched.idp, source: 'metadata', metadataUrl: input.metadataUrl, metadataXml: fetched.xml };
      }
      if ('metadataXml' in input) return { idp: readIdpMetadata(input.metadataXml), source: 'metadata', metadataUrl: null, metadataXml: input.metadataXml };
      return { idp: { entityId: input.entityId, ssoUrl: input.ssoUrl, certificates: input.certificates.map((pem) => certificateFacts(pem).pem) }, source: 'upload', metadataUrl: null, metadataXml: null };
    } catch (error) {
      if (error instanceof SamlProblem) throw validationFailed('Invalid sso-connection', { [field]: error.message });
      throw error;
    }
  };

  const findOne = async (caller: ReturnType<typeof asCaller>, id: string) => {
    const { rows } = await caller.query<ConnectionRow>(`SELECT ${connectionColumns} FROM "authstrap_sso_connection" WHERE "id" = $1 AND "organizationId" = authstrap.organization_id()`, [id]);
    if (!rows[0]) throw notFound('sso-connection', id);
    return rows[0];
  };

  /** A connection as answered, with its IdP certificates when it is SAML's. */
  const present = async (caller: Queryable, row: ConnectionRow) => presentConnection(row, config, row.protocol === 'saml' ? await certificatesOf(caller, row.id) : []);

  router.get('/', async (req, res) => {
    const caller = await asAdmin(req);
    const { rows } = await caller.query<ConnectionRow>(`SELECT ${connectionColumns} FROM "authstrap_sso_connection" WHERE "organizationId" = authstrap.organization_id() ORDER BY "createdAt", "id"`);
    const { rows: certificates } = await caller.query<CertificateRow & { connectionId: string }>(
      `SELECT ${certificateColumns}, "connectionId" FROM "authstrap_sso_certificate" WHERE "organizationId" = authstrap.organization_id() ORDER BY "notAfter", "id"`,
    );
    sendData(res, rows.map((row) => presentConnection(row, config, certificates.filter((certificate) => certificate.connectionId === row.id))));
  });

  router.post('/', async (req, res) => {
    const caller = await asAdmin(req);
    const input = parseBody('sso-connection', SsoConnectionInput, req);
    const organizationId = req.organizationId!;
    // Read before the transaction: a slow IdP holds no connection of the pool.
    const protocolColumns =
      input.protocol === 'oidc' ? await oidcColumns(input.oidc) : await samlColumns(input.saml, { signAuthnRequests: input.signAuthnRequests ?? false, allowIdpInitiated: input.allowIdpInitiated ?? false });
    const columns: Record<string, unknown> = {
      name: input.name,
      protocol: input.protocol,
      preset: input.preset ?? 'generic',
      defaultRole: input.defaultRole ?? 'member',
      jitProvisioning: input.jitProvisioning ?? true,
      attributeMapping: JSON.stringify(input.attributeMapping ?? {}),
      ...protocolColumns.values,
    };
    const names = Object.keys(columns);
    let created: ConnectionRow;
    try {
      created = await caller.transaction(async (tx) => {
        const { rows } = await tx.query<ConnectionRow>(
          `INSERT INTO "authstrap_sso_connection" ("organizationId", "createdBy", ${names.map((name) => `"${name}"`).join(', ')})
           VALUES (authstrap.organization_id(), authstrap.user_id(), ${names.map((_, index) => `$${index + 1}`).join(', ')})
           RETURNING ${connectionColumns}`,
          Object.values(columns),
        );
        const row = rows[0]!;
        if (protocolColumns.certificates) await storeCertificates(tx, row, protocolColumns.certificates);
        await recordEvent(tx, { type: 'sso_connection.created', organizationId, entity: 'sso_connection', entityId: row.id, data: { name: input.name, protocol: input.protocol } }, requestContext(req));
        return row;
      });
    } catch (error) {
      if (hasSqlState(error) && error.code === '23505') throw new HttpError(409, 'CONFLICT', `This organization has a connection named ${input.name} already`);
      throw error;
    }
    sendData(res, await present(caller, created), 201);
  });

  /** Read now (or nothing to read from): the daily refresh (metadata-refresh.ts) comes a day on. */
  const firstRefresh = (read: boolean) => ({
    metadataRefreshedAt: read ? new Date() : null,
    metadataNextRefreshAt: new Date(Date.now() + config.sso.refreshIntervalHours * 60 * 60 * 1000),
  });

  /** An OIDC connection's columns: the discovery document fetched now, the secret sealed. */
  const oidcColumns = async (oidc: z.output<typeof OidcInput>): Promise<{ values: Record<string, unknown>; certificates?: undefined }> => {
    const metadata = await discovered(oidc.issuer);
    return {
      values: {
        oidcIssuer: metadata.issuer ?? oidc.issuer,
        oidcClientId: oidc.clientId,
        oidcClientSecret: seal.seal(oidc.clientSecret),
        oidcScopes: oidc.scopes ?? 'openid email profile',
        oidcTokenAuthMethod: oidc.tokenEndpointAuthMethod ?? 'client_secret_basic',
        oidcTenant: oidc.tenant ?? null,
        oidcMetadata: JSON.stringify(metadata),
        oidcMetadataFetchedAt: new Date(),
        ...firstRefresh(true),
      },
    };
  };

  /** A SAML connection's columns: the IdP described, and a new SP key pair (the key sealed). */
  const samlColumns = async (saml: z.output<typeof SamlInput>, flags: { signAuthnRequests: boolean; allowIdpInitiated: boolean }) => {
    const { idp, source, metadataUrl, metadataXml } = await described(saml);
    const keys = await makeServiceProviderKeys(`authstrap SAML SP ${randomUUID()}`);
    return {
      values: {
        samlIdpEntityId: idp.entityId,
        samlIdpSsoUrl: idp.ssoUrl,
        samlIdpMetadataUrl: metadataUrl,
        samlIdpMetadataXml: metadataXml,
        samlMetadataFetchedAt: metadataUrl ? new Date() : null,
        samlSignAuthnRequests: flags.signAuthnRequests,
        allowIdpInitiated: flags.allowIdpInitiated,
        samlSpPrivateKey: seal.seal(keys.privateKey),
        samlSpCertificate: keys.certificate,
        ...firstRefresh(metadataUrl !== null),
      },
      certificates: { pems: idp.certificates, source },
    };
  };

  router.get('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    sendData(res, await present(caller, await findOne(caller, parseId('sso-connection', req.params.id))));
  });

  /**
   * A change to a connection, as PATCH has it: what the IdP's discovery or metadata says is read
   * first (outside the transaction), then the row, its certificates and the event in one.
   * `changedFields` says what the event records, when not the change's own fields.
   */
  const applyChange = async (req: Request, caller: ReturnType<typeof asCaller>, current: ConnectionRow, change: z.output<typeof SsoConnectionChange>, recorded?: string[]): Promise<ConnectionRow> => {
    const id = current.id;
    const other = current.protocol === 'oidc' ? ['saml', 'signAuthnRequests', 'allowIdpInitiated'].find((key) => key in change) : change.oidc !== undefined ? 'oidc' : undefined;
    if (other) throw validationFailed('Invalid sso-connection', { [other]: `not a field of ${current.protocol === 'oidc' ? 'an OIDC' : 'a SAML'} connection` });
    const metadata = change.oidc?.issuer !== undefined ? await discovered(change.oidc.issuer) : undefined;
    const saml = change.saml !== undefined ? await described(change.saml) : undefined;
    const sets: string[] = [];
    const params: unknown[] = [id];
    // The IdP was just read from its URL: what the daily refresh (metadata-refresh.ts) records of a read, and its next one a day on.
    const readAgain = [`"metadataRefreshedAt" = now()`, `"metadataRefreshError" = NULL`, `"metadataNextRefreshAt" = now() + make_interval(hours => ${config.sso.refreshIntervalHours})`];
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
      sets.push(`"oidcMetadataFetchedAt" = now()`, ...readAgain);
    }
    if (change.oidc?.clientId !== undefined) set('oidcClientId', change.oidc.clientId);
    if (change.oidc?.clientSecret !== undefined) set('oidcClientSecret', seal.seal(change.oidc.clientSecret));
    if (change.oidc?.scopes !== undefined) set('oidcScopes', change.oidc.scopes);
    if (change.oidc?.tokenEndpointAuthMethod !== undefined) set('oidcTokenAuthMethod', change.oidc.tokenEndpointAuthMethod);
    if (change.oidc?.tenant !== undefined) set('oidcTenant', change.oidc.tenant);
    if (saml) {
      set('samlIdpEntityId', saml.idp.entityId);
      set('samlIdpSsoUrl', saml.idp.ssoUrl);
      set('samlIdpMetadataUrl', saml.metadataUrl);
      set('samlIdpMetadataXml', saml.metadataXml);
      sets.push(...(saml.metadataUrl ? [`"samlMetadataFetchedAt" = now()`, ...readAgain] : [`"samlMetadataFetchedAt" = NULL`]));
    }
    if (change.signAuthnRequests !== undefined) set('samlSignAuthnRequests', change.signAuthnRequests);
    if (change.allowIdpInitiated !== undefined) set('allowIdpInitiated', change.allowIdpInitiated);
    // What sign-in reads changed: the test that enabled it no longer counts. A certificate rollover
    // is such a change too, but the connection stays enabled while it waits for a new test.
    const signInChanged = [change.oidc, change.saml, change.signAuthnRequests, change.allowIdpInitiated, change.attributeMapping, change.preset].some((value) => value !== undefined);
    if (signInChanged) sets.push(`"configChangedAt" = clock_timestamp()`);
    if (sets.length === 0) return current;
    sets.push(`"updatedAt" = now()`);
    const changedFields = recorded ?? [...Object.keys(change).filter((key) => key !== 'oidc'), ...Object.keys(change.oidc ?? {}).map((key) => `oidc.${key}`)];
    try {
      return await caller.transaction(async (tx) => {
        const { rows } = await tx.query<ConnectionRow>(`UPDATE "authstrap_sso_connection" SET ${sets.join(', ')} WHERE "id" = $1 AND "organizationId" = authstrap.organization_id() RETURNING ${connectionColumns}`, params);
        if (!rows[0]) throw notFound('sso-connection', id);
        if (saml) await storeCertificates(tx, rows[0], { pems: saml.idp.certificates, source: saml.source });
        await recordEvent(tx, { type: 'sso_connection.updated', organizationId: req.organizationId!, entity: 'sso_connection', entityId: id, data: { changedFields } }, requestContext(req));
        return rows[0];
      });
    } catch (error) {
      if (hasSqlState(error) && error.code === '23505') throw new HttpError(409, 'CONFLICT', `This organization has a connection named ${change.name} already`);
      throw error;
    }
  };

  router.patch('/:id', async (req, res) => {
    const caller = await asAdmin(req);
    const id = parseId('sso-connection', req.params.id);
    const change = parseBody('sso-connection', SsoConnectionChange, req);
    sendData(res, await present(caller, await applyChange(req, caller, await findOne(caller, id), change)));
  });

  /**
   * Reads the IdP's description again from where it came from: an OIDC issuer's discovery, or a
   * SAML IdP's metadata URL (its signing certificates with it: an IdP's key rollover). A SAML IdP
   * uploaded or typed has nowhere to read from: 409, PATCH its new metadata instead. As any change
   * of what sign-in reads, it needs a new test before the connection is enabled again, and an
   * enabled one stays enabled meanwhile.
   */
  router.post('/:id/refresh', async (req, res) => {
    const caller = await asAdmin(req);
    const current = await findOne(caller, parseId('sso-connection', req.params.id));
    if (current.protocol === 'oidc') {
      return sendData(res, await present(caller, await applyChange(req, caller, current, { oidc: { issuer: current.oidcIssuer! } }, ['oidc.metadata'])));
    }
    if (!current.samlIdpMetadataUrl) {
      throw new HttpError(409, 'NO_METADATA_URL', "This connection's IdP was uploaded or typed, not read from a metadata URL: send its new metadata with PATCH /sso-connections/{id}");
    }
    sendData(res, await present(caller, await applyChange(req, caller, current, { saml: { metadataUrl: current.samlIdpMetadataUrl } }, ['saml.metadata'])));
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
    const caller = asCaller(db, req);
    sendData(res, await present(caller, (await takeDown(req, false))!));
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
    sendData(res, await present(caller, updated));
  });

  router.post('/:id/test', async (req, res) => {
    const caller = await asAdmin(req);
    const connection = await findOne(caller, parseId('sso-connection', req.params.id));
    const tester = req.scope?.userId || null;
    // Building the provider's URL reads the stored discovery document only: nothing is fetched here.
    const flow = await startFlow(db, config, { connection, purpose: 'test', client: 'browser', returnTo: null, appCodeChallenge: null, testerId: tester });
    setBindingCookie(res, flow.binding!, config);
    sendData(res, { url: flow.url });
  });

  return tenantScoped(deps, router);
}

/** A SAML connection's IdP certificates, oldest expiry first. */
export async function certificatesOf(db: Queryable, connectionId: string): Promise<CertificateRow[]> {
  const { rows } = await db.query<CertificateRow>(`SELECT ${certificateColumns} FROM "authstrap_sso_certificate" WHERE "connectionId" = $1 ORDER BY "notAfter", "id"`, [connectionId]);
  return rows;
}
