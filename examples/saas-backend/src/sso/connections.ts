import type { Config } from '../config.js';
import { secretSeal, type SecretSeal } from '../events/webhook-secrets.js';
import type { OidcSettings } from './oidc.js';

/**
 * A single sign-on connection as stored (authstrap_sso_connection) and as answered: never its
 * client secret (`clientSecretSet` instead) nor the cached discovery document; with the values the
 * identity provider's admin copies (`serviceProvider`).
 */

export const connectionColumns = `"id", "organizationId", "name", "protocol", "preset", "enabled", "configChangedAt", "testedAt", "lastTest", "defaultRole",
  "jitProvisioning", "attributeMapping", "oidcIssuer", "oidcClientId", "oidcClientSecret", "oidcScopes", "oidcTokenAuthMethod", "oidcTenant",
  "oidcMetadata", "oidcMetadataFetchedAt", "createdBy", "createdAt", "updatedAt"`;

export interface ConnectionRow {
  id: string;
  organizationId: string;
  name: string;
  protocol: 'oidc' | 'saml';
  preset: 'okta' | 'entra' | 'google' | 'generic';
  enabled: boolean;
  configChangedAt: Date;
  testedAt: Date | null;
  lastTest: { at: string; ok: boolean; error?: string; profile?: Record<string, unknown> } | null;
  defaultRole: 'member' | 'admin';
  jitProvisioning: boolean;
  attributeMapping: Record<string, string>;
  oidcIssuer: string | null;
  oidcClientId: string | null;
  oidcClientSecret: string | null;
  oidcScopes: string;
  oidcTokenAuthMethod: 'client_secret_basic' | 'client_secret_post';
  oidcTenant: string | null;
  oidcMetadata: Record<string, unknown> | null;
  oidcMetadataFetchedAt: Date | null;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The key that seals connections' secrets at rest (HKDF info of their own). */
export const connectionSeal = (authSecret: string | undefined): SecretSeal => secretSeal(authSecret, 'sso connection secrets');

/** Where the identity provider sends the browser back: what its admin registers as the redirect URI. */
export const redirectUriOf = (authUrl: string, connectionId: string) => `${authUrl.replace(/\/+$/, '')}/api/auth/sso/${connectionId}/oidc/callback`;

/** A connection as answered. */
export function presentConnection(row: ConnectionRow, config: Pick<Config, 'authUrl'>) {
  const { oidcClientSecret, oidcMetadata: _metadata, ...rest } = row;
  const base = config.authUrl.replace(/\/+$/, '');
  return {
    ...rest,
    clientSecretSet: oidcClientSecret !== null,
    // Passed since the last change of what sign-in reads: enabling is allowed.
    tested: row.testedAt !== null && row.testedAt.getTime() >= row.configChangedAt.getTime(),
    serviceProvider: {
      redirectUri: redirectUriOf(base, row.id),
      loginUrl: `${base}/api/auth/sso/start?${new URLSearchParams({ connectionId: row.id })}`,
    },
  };
}

/** What the relying party needs of a stored OIDC connection (its secret opened). */
export function oidcSettingsOf(row: ConnectionRow, seal: SecretSeal): OidcSettings {
  return {
    issuer: row.oidcIssuer!,
    clientId: row.oidcClientId!,
    clientSecret: seal.open(row.oidcClientSecret!),
    tokenAuthMethod: row.oidcTokenAuthMethod,
    metadata: row.oidcMetadata ?? {},
  };
}
