import { createHash, randomBytes } from 'node:crypto';
import type { Response } from 'express';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { connectionSeal, oidcSettingsOf, redirectUriOf, type ConnectionRow } from './connections.js';
import { authorizationUrl } from './oidc.js';

/**
 * A sign-in (or a connection's test) on its way through the identity provider: a row of
 * authstrap_sso_flow from start to callback, holding the hashes of the state and of the browser's
 * binding cookie, the nonce and the PKCE verifier. Ten minutes; used up once by the callback.
 */

/** The browser-binding cookie: set at start, required at the callback (a callback in another browser is a login CSRF). */
export const bindingCookieName = 'authstrap_sso';
export const flowLifetimeMs = 10 * 60 * 1000;

export function bindingCookieOptions(secure: boolean) {
  // SameSite=None in production: SAML's POST to the ACS is a cross-site request (step 8).
  return { httpOnly: true, secure, sameSite: secure ? ('none' as const) : ('lax' as const), path: '/api/auth/sso' };
}

export function setBindingCookie(res: Response, value: string, secure: boolean): void {
  res.cookie(bindingCookieName, value, { ...bindingCookieOptions(secure), maxAge: flowLifetimeMs });
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
  const oidc = await authorizationUrl(
    { ...oidcSettingsOf(connection, connectionSeal(config.authSecret)), scopes: connection.oidcScopes, redirectUri: redirectUriOf(config.authUrl, connection.id) },
    config.sso.allowPrivateAddresses,
  );
  const binding = start.client === 'browser' ? randomBytes(32).toString('base64url') : undefined;
  await db.query(
    `INSERT INTO "authstrap_sso_flow" ("connectionId", "organizationId", "purpose", "stateHash", "browserBindingHash", "oidcNonce", "oidcCodeVerifier",
                                       "returnTo", "client", "appCodeChallenge", "testerId", "expiresAt")
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      connection.id,
      connection.organizationId,
      start.purpose,
      sha256(oidc.state),
      binding ? sha256(binding) : null,
      oidc.nonce,
      oidc.codeVerifier,
      start.returnTo,
      start.client,
      start.appCodeChallenge,
      start.testerId,
      new Date(Date.now() + flowLifetimeMs),
    ],
  );
  return { url: oidc.url, binding };
}

export interface FlowRow {
  id: string;
  connectionId: string;
  organizationId: string;
  purpose: 'sign-in' | 'test';
  browserBindingHash: string | null;
  oidcNonce: string;
  oidcCodeVerifier: string;
  returnTo: string | null;
  client: 'browser' | 'app';
  appCodeChallenge: string | null;
  testerId: string | null;
  stateHash: string;
}

/** Uses the flow up: of two callbacks with one state, one gets it. Expired or unknown: undefined. */
export async function takeFlow(db: Database, connectionId: string, state: string): Promise<FlowRow | undefined> {
  const { rows } = await db.query<FlowRow>(
    `DELETE FROM "authstrap_sso_flow" WHERE "stateHash" = $1 AND "connectionId" = $2 AND "expiresAt" > now()
     RETURNING "id", "connectionId", "organizationId", "purpose", "browserBindingHash", "oidcNonce", "oidcCodeVerifier", "returnTo", "client", "appCodeChallenge", "testerId", "stateHash"`,
    [sha256(state), connectionId],
  );
  return rows[0];
}
