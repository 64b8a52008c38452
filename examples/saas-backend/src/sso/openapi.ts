import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { SsoConnectionChange, SsoConnectionInput } from './connections.router.js';
import { SsoPolicyInput } from './policy.router.js';
import { SsoStartInput, SsoTokenInput } from './sign-in.router.js';

// Unnamed, as the domains' answers (domains/openapi.ts): not a generated collection for `authstrap verify`.
const SsoConnection = z.object({
  id: z.uuid(),
  organizationId: z.uuid(),
  name: z.string(),
  protocol: z.enum(['oidc', 'saml']),
  preset: z.enum(['okta', 'entra', 'google', 'generic']),
  enabled: z.boolean(),
  configChangedAt: z.date(),
  testedAt: z.date().nullable(),
  tested: z.boolean().meta({ description: 'Passed a test since the last change of what sign-in reads: it may be enabled' }),
  lastTest: z.object({ at: z.string(), ok: z.boolean(), error: z.string().optional(), profile: z.record(z.string(), z.unknown()).optional() }).nullable(),
  defaultRole: z.enum(['member', 'admin']),
  jitProvisioning: z.boolean(),
  attributeMapping: z.record(z.string(), z.string()),
  oidcIssuer: z.string().nullable(),
  oidcClientId: z.string().nullable(),
  clientSecretSet: z.boolean().meta({ description: 'The client secret is stored (sealed); it is never answered' }),
  oidcScopes: z.string(),
  oidcTokenAuthMethod: z.enum(['client_secret_basic', 'client_secret_post']),
  oidcTenant: z.string().nullable(),
  oidcMetadataFetchedAt: z.date().nullable(),
  allowIdpInitiated: z.boolean(),
  samlIdpEntityId: z.string().nullable(),
  samlIdpSsoUrl: z.string().nullable(),
  samlIdpMetadataUrl: z.string().nullable(),
  samlMetadataFetchedAt: z.date().nullable(),
  samlSignAuthnRequests: z.boolean(),
  samlSpCertificate: z.string().nullable().meta({ description: "The SP's certificate (PEM), also in its metadata; its private key is sealed and never answered" }),
  metadataRefreshedAt: z.date().nullable().meta({ description: "When the daily refresh last read the IdP again (its SAML metadata URL, or its OIDC discovery and signing keys)" }),
  metadataRefreshError: z.string().nullable().meta({ description: 'Why that refresh could not read the IdP; null when it could. The connection keeps what was read before' }),
  metadataNextRefreshAt: z.date().meta({ description: 'When the next refresh is due' }),
  serviceProvider: z.object({
    redirectUri: z.string().optional().meta({ description: "OIDC: what the identity provider's admin registers as the redirect (sign-in) URI" }),
    entityId: z.string().optional().meta({ description: "SAML: the SP's entity ID (its metadata's URL)" }),
    acsUrl: z.string().optional().meta({ description: 'SAML: the assertion consumer service (HTTP-POST)' }),
    metadataUrl: z.string().optional().meta({ description: "SAML: the SP metadata to upload to the IdP" }),
    loginUrl: z.string().meta({ description: 'A link that starts a sign-in through this connection' }),
  }),
  certificates: z
    .array(z.object({ id: z.uuid(), fingerprintSha256: z.string(), subject: z.string().nullable(), notBefore: z.date(), notAfter: z.date(), source: z.enum(['metadata', 'upload']), expiresSoon: z.boolean() }))
    .optional()
    .meta({ description: "SAML: the IdP's signing certificates; every one valid now verifies (a rollover lists two)" }),
  createdBy: z.uuid().nullable(),
  createdAt: z.date(),
  updatedAt: z.date(),
});

const SsoPolicy = z.object({ ssoRequired: z.boolean(), breakGlass: z.enum(['owners', 'none']), requiredSince: z.date().nullable(), updatedAt: z.date().nullable() });

/** The single sign-on routes (src/sso/). */
export function registerSsoRoutes(registry: OpenAPIRegistry): void {
  const tags = ['sso'];
  const tenant = z.object({ 'x-organization-id': z.uuid().optional() });
  const id = z.object({ id: z.uuid() });
  const one = (item: z.ZodType) => ({ content: { 'application/json': { schema: z.object({ success: z.literal(true), data: item }) } } });
  const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
  const adminOnly = { 401: { description: 'Not signed in' }, 403: { description: 'Not an owner or admin of the organization (or a machine key, or the service key)' } };
  const noSuch = { 404: { description: 'No such connection in this organization' } };
  const open: Record<string, string[]>[] = [];

  registry.registerPath({ method: 'get', path: '/sso-connections', operationId: 'listSsoConnections', tags, summary: "The organization's single sign-on connections, with the values to copy into the identity provider", request: { headers: tenant }, responses: { 200: { description: 'Connections, oldest first', ...one(z.array(SsoConnection)) }, ...adminOnly } });
  registry.registerPath({
    method: 'post', path: '/sso-connections', operationId: 'createSsoConnection', tags,
    summary: 'Add an OIDC or SAML connection: discovery or metadata is read now, a SAML SP key pair made; disabled until tested and enabled',
    request: { headers: tenant, body: json(SsoConnectionInput) },
    responses: { 201: { description: 'Added (disabled)', ...one(SsoConnection) }, ...adminOnly, 409: { description: 'CONFLICT: a connection with this name exists' }, 413: { description: 'PAYLOAD_TOO_LARGE: metadata over the body limit' }, 422: { description: "Invalid input, or discovery or metadata failed: details['oidc.issuer'], details['saml.metadataUrl'] (and the other saml fields) say why (unreachable, a loopback or private address, no asymmetric ID token algorithm, a DOCTYPE, no signing certificate)" } },
  });
  registry.registerPath({ method: 'get', path: '/sso-connections/{id}', operationId: 'getSsoConnection', tags, summary: 'One connection', request: { headers: tenant, params: id }, responses: { 200: { description: 'The connection', ...one(SsoConnection) }, ...adminOnly, ...noSuch } });
  registry.registerPath({
    method: 'patch', path: '/sso-connections/{id}', operationId: 'updateSsoConnection', tags,
    summary: 'Change a connection: a new clientSecret replaces the sealed one; a change of what sign-in reads needs a new test before enabling',
    request: { headers: tenant, params: id, body: json(SsoConnectionChange) },
    responses: { 200: { description: 'Changed', ...one(SsoConnection) }, ...adminOnly, ...noSuch, 409: { description: 'CONFLICT: a connection with this name exists' }, 422: { description: 'Invalid input, or discovery failed' } },
  });
  registry.registerPath({ method: 'delete', path: '/sso-connections/{id}', operationId: 'deleteSsoConnection', tags, summary: 'Remove a connection: the sessions it made end', request: { headers: tenant, params: id }, responses: { 204: { description: 'Removed' }, ...adminOnly, ...noSuch, 409: { description: 'LAST_CONNECTION: the last enabled connection while SSO is required' } } });
  registry.registerPath({ method: 'post', path: '/sso-connections/{id}/test', operationId: 'testSsoConnection', tags, summary: "A test sign-in: open the answer's URL in the browser; the result lands in lastTest (no user, no session)", request: { headers: tenant, params: id }, responses: { 200: { description: "The identity provider's URL; a browser-binding cookie is set", ...one(z.object({ url: z.string() })) }, ...adminOnly, ...noSuch } });
  registry.registerPath({ method: 'post', path: '/sso-connections/{id}/refresh', operationId: 'refreshSsoConnection', tags, summary: "Read the identity provider's description again from its URL: an OIDC issuer's discovery, or a SAML IdP's metadata with its signing certificates (a key rollover); a change sign-in reads, so a new test is needed before it is enabled again (an enabled one stays enabled)", request: { headers: tenant, params: id }, responses: { 200: { description: 'The connection as read again', ...one(SsoConnection) }, ...adminOnly, ...noSuch, 409: { description: 'NO_METADATA_URL: a SAML IdP uploaded or typed has no URL to read from (PATCH its new metadata)' }, 422: { description: 'The discovery or metadata could not be fetched or read: the field named' } } });
  registry.registerPath({ method: 'post', path: '/sso-connections/{id}/enable', operationId: 'enableSsoConnection', tags, summary: 'Turn a connection on', request: { headers: tenant, params: id }, responses: { 200: { description: 'Enabled', ...one(SsoConnection) }, ...adminOnly, ...noSuch, 409: { description: 'NOT_TESTED: no passing test since the last change' } } });
  registry.registerPath({ method: 'post', path: '/sso-connections/{id}/disable', operationId: 'disableSsoConnection', tags, summary: 'Turn a connection off: the sessions it made end', request: { headers: tenant, params: id }, responses: { 200: { description: 'Disabled', ...one(SsoConnection) }, ...adminOnly, ...noSuch, 409: { description: 'LAST_CONNECTION: the last enabled connection while SSO is required' } } });

  registry.registerPath({ method: 'get', path: '/sso-policy', operationId: 'getSsoPolicy', tags, summary: "The organization's single sign-on policy (any member)", request: { headers: tenant }, responses: { 200: { description: 'The policy', ...one(SsoPolicy) }, 401: { description: 'Not signed in' }, 403: { description: 'Not a member (or the service key)' } } });
  registry.registerPath({
    method: 'put', path: '/sso-policy', operationId: 'setSsoPolicy', tags,
    summary: 'Require single sign-on for the verified domains (owners): the sessions it refuses end, but the caller\'s own',
    request: { headers: tenant, body: json(SsoPolicyInput) },
    responses: { 200: { description: 'The policy, and how many sessions ended', ...one(SsoPolicy.extend({ sessionsEnded: z.int() })) }, 401: { description: 'Not signed in' }, 403: { description: 'Not an owner' }, 409: { description: 'NO_ENABLED_CONNECTION or NO_VERIFIED_DOMAIN' } },
  });

  const startResponses = { 404: { description: 'SSO_NOT_CONFIGURED: no verified domain or no enabled connection' }, 409: { description: "CHOOSE_CONNECTION: several enabled connections; details: each one's id and name; send one as connectionId" }, 422: { description: 'Invalid input' } };
  registry.registerPath({ method: 'get', path: '/api/auth/sso/start', operationId: 'startSsoFromLink', tags, security: open, summary: 'Start a single sign-on: 303 to the identity provider', request: { query: z.object({ email: z.string().optional(), organization: z.string().optional(), connectionId: z.uuid().optional(), returnTo: z.string().optional(), client: z.enum(['browser', 'app']).optional(), codeChallenge: z.string().optional() }) }, responses: { 303: { description: "To the identity provider; a browser-binding cookie is set" }, ...startResponses } });
  registry.registerPath({ method: 'post', path: '/api/auth/sso/start', operationId: 'startSso', tags, security: open, summary: "Start a single sign-on: the identity provider's URL", request: { body: json(SsoStartInput) }, responses: { 200: { description: "The identity provider's URL; a browser-binding cookie is set", ...one(z.object({ url: z.string() })) }, ...startResponses } });
  registry.registerPath({ method: 'get', path: '/api/auth/sso/{connectionId}/oidc/callback', operationId: 'ssoOidcCallback', tags, security: open, summary: 'Where the identity provider sends the browser back', request: { params: z.object({ connectionId: z.uuid() }), query: z.object({ code: z.string().optional(), state: z.string().optional() }) }, responses: { 303: { description: 'Signed in: the session cookie and returnTo (an app: returnTo?code=...); refused: <APP_URL>/sign-in?error=<CODE>' } } });
  const connectionId = z.object({ connectionId: z.uuid() });
  registry.registerPath({
    method: 'get', path: '/api/auth/sso/{connectionId}/saml/metadata', operationId: 'ssoSamlMetadata', tags, security: open,
    summary: "A SAML connection's SP metadata, for the IdP's admin: entity ID, ACS, the SP certificate (encryption; signing when it signs AuthnRequests)",
    request: { params: connectionId },
    responses: { 200: { description: 'The metadata', content: { 'application/samlmetadata+xml': { schema: z.string() } } }, 404: { description: 'No SAML connection with this id' } },
  });
  registry.registerPath({
    method: 'post', path: '/api/auth/sso/{connectionId}/saml/acs', operationId: 'ssoSamlAcs', tags, security: open,
    summary: "The assertion consumer service: the IdP's SAML response (HTTP-POST binding), at most 512 KB; no CSRF origin check (the RelayState and the binding cookie tie it to the browser)",
    request: { params: connectionId, body: { content: { 'application/x-www-form-urlencoded': { schema: z.object({ SAMLResponse: z.string(), RelayState: z.string().optional() }) } } } },
    responses: {
      303: { description: 'Signed in: the session cookie and returnTo (an app: returnTo?code=...; IdP-initiated: APP_URL); refused: <APP_URL>/sign-in?error=<CODE> (SSO_FAILED, SSO_INVALID_STATE, SSO_BROWSER_MISMATCH, SSO_IDP_INITIATED_NOT_ALLOWED, ...); a test: the console page' },
      413: { description: 'PAYLOAD_TOO_LARGE: a body over 512 KB' },
    },
  });
  registry.registerPath({ method: 'post', path: '/api/auth/sso/token', operationId: 'exchangeSsoCode', tags, security: open, summary: "An app's one-time code and PKCE verifier for a session token", request: { body: json(SsoTokenInput) }, responses: { 200: { description: 'Signed in', ...one(z.object({ user: z.record(z.string(), z.unknown()), token: z.string(), session: z.record(z.string(), z.unknown()) })) }, 400: { description: 'INVALID_CODE: used, expired or another verifier' }, 403: { description: "SSO_REQUIRED, DEPROVISIONED: refused by the organization's policy" }, 422: { description: 'Invalid input' } } });
}
