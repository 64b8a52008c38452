import { createHash, randomBytes } from 'node:crypto';
import type { Response } from 'express';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { connectionSeal, oidcSettingsOf, redirectUriOf, samlSettingsOf, type ConnectionRow } from './connections.js';
import { authorizationUrl } from './oidc.js';
import { authnRequestUrl } from './saml.js';

/**
 * A sign-in (or a connection's test) on its way through the identity provider: a row of
 * authstrap_sso_flow from start to callback (or ACS), holding the hashes of the state (SAML's
 * RelayState) and of the browser's binding cookie, OIDC's nonce and PKCE verifier, SAML's
 * AuthnRequest ID. Ten minutes; used up once by the callback.
 */

/** The browser-binding cookie: set at start, required at the callback (a callback in another browser is a login CSRF). */
export const bindingCookieName = 'authstrap_sso';
export const flowLifetimeMs = 10 * 60 * 1000;

/**
 * SAML's POST to the ACS comes from a form of the IdP's site, a cross-site request: only a
 * SameSite=None cookie goes with it, and browsers keep those only when Secure. So None and Secure
 * in production, and also for a backend on https or on a loopback name in development (Chromium
 * and Firefox keep a Secure cookie of http://localhost): else a SAML sign-in through a real
 * browser ends in SSO_BROWSER_MISMATCH. A plain-http backend elsewhere gets Lax: OIDC's callback,
 * a top-level GET, still carries it; SAML's POST does not.
 */
export function bindingCookieOptions(config: Pick<Config, 'nodeEnv' | 'authUrl'>) {
  const { protocol, hostname } = new URL(config.authUrl);
  const crossSite = config.nodeEnv === 'production' || protocol === 'https:' || ['localhost', '127.0.0.1', '[::1]'].includes(hostname);
  return { httpOnly: true, secure: crossSite, sameSite: crossSite ? ('none' as const) : ('lax' as const), path: '/api/auth/sso' };
}

export function setBindingCookie(res: Response, value: string, config: Pick<Config, 'nodeEnv' | 'authUrl'>): void {
  res.cookie(bindingCookieName, value, { ...bindingCookieOptions(config), maxAge: flowLifetimeMs });
}

export const sha256 = (value: string) => createHash('sha256').update(value).digest('base64url');

export interface FlowStart {
  connection: ConnectionRow;
  purpose: 'sign-in' | 'test';
  client: 'browser' | 'app';
  returnTo: string | null;
  appCodeChallenge: string | null;
  testerId: string | null;
}

/** Makes the flow row; the IdP's URL, and the binding cookie's value for a browser. */
export async function startFlow(db: Database, config: Config, start: FlowStart): Promise<{ url: string; binding: string | undefined }> {
  const { connection } = start;
  const request = connection.protocol === 'saml' ? await samlRequest(config, connection) : await oidcRequest(config, connection);
  const binding = start.client === 'browser' ? randomBytes(32).toString('base64url') : undefined;
  await db.query(
    `INSERT INTO "authstrap_sso_flow" ("connectionId", "organizationId", "purpose", "stateHash", "browserBindingHash", "oidcNonce", "oidcCodeVerifier",
                                       "samlRequestId", "returnTo", "client", "appCodeChallenge", "testerId", "expiresAt")
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
    [
      connection.id,
      connection.organizationId,
      start.purpose,
      sha256(request.state),
      binding ? sha256(binding) : null,
      request.oidcNonce,
      request.oidcCodeVerifier,
      request.samlRequestId,
      start.returnTo,
      start.client,
      start.appCodeChallenge,
      start.testerId,
      new Date(Date.now() + flowLifetimeMs),
    ],
  );
  return { url: request.url, binding };
}

/** The IdP's URL and what the callback checks the answer against. */
interface ProviderRequest {
  url: string;
  state: string;
  oidcNonce: string | null;
  oidcCodeVerifier: string | null;
  samlRequestId: string | null;
}

async function oidcRequest(config: Config, connection: ConnectionRow): Promise<ProviderRequest> {
  const oidc = await authorizationUrl(
    { ...oidcSettingsOf(connection, connectionSeal(config.authSecret)), scopes: connection.oidcScopes, redirectUri: redirectUriOf(config.authUrl, connection.id) },
    config.sso.allowPrivateAddresses,
  );
  return { url: oidc.url, state: oidc.state, oidcNonce: oidc.nonce, oidcCodeVerifier: oidc.codeVerifier, samlRequestId: null };
}

/** An AuthnRequest (HTTP-Redirect); its RelayState is random (never a URL), its ID node-saml's InResponseTo. */
async function samlRequest(config: Config, connection: ConnectionRow): Promise<ProviderRequest> {
  const relayState = randomBytes(32).toString('base64url');
  const saml = await authnRequestUrl(samlSettingsOf(connection, [], connectionSeal(config.authSecret), config), relayState);
  return { url: saml.url, state: relayState, oidcNonce: null, oidcCodeVerifier: null, samlRequestId: saml.requestId };
}

export interface FlowRow {
  id: string;
  connectionId: string;
  organizationId: string;
  purpose: 'sign-in' | 'test';
  browserBindingHash: string | null;
  oidcNonce: string;
  oidcCodeVerifier: string;
  samlRequestId: string | null;
  returnTo: string | null;
  client: 'browser' | 'app';
  appCodeChallenge: string | null;
  testerId: string | null;
  stateHash: string;
  createdAt: Date;
}

/** Uses the flow up: of two callbacks with one state, one gets it. Expired or unknown: undefined. */
export async function takeFlow(db: Database, connectionId: string, state: string): Promise<FlowRow | undefined> {
  const { rows } = await db.query<FlowRow>(
    `DELETE FROM "authstrap_sso_flow" WHERE "stateHash" = $1 AND "connectionId" = $2 AND "expiresAt" > now()
     RETURNING "id", "connectionId", "organizationId", "purpose", "browserBindingHash", "oidcNonce", "oidcCodeVerifier", "samlRequestId", "returnTo", "client",
               "appCodeChallenge", "testerId", "stateHash", "createdAt"`,
    [sha256(state), connectionId],
  );
  return rows[0];
}
