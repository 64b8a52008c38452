import type { Config } from '../config.js';
import type { Queryable } from '../db/database.js';
import { secretSeal, type SecretSeal } from '../events/webhook-secrets.js';
import type { OidcSettings } from './oidc.js';
import { certificateFacts, type SamlSettings } from './saml.js';

/**
 * A single sign-on connection as stored (authstrap_sso_connection) and as answered: never its
 * client secret (`clientSecretSet` instead), its SP private key, nor the cached discovery document
 * or metadata; with the values the identity provider's admin copies (`serviceProvider`) and, for
 * SAML, the IdP's signing certificates (authstrap_sso_certificate).
 */

export const connectionColumns = `"id", "organizationId", "name", "protocol", "preset", "enabled", "configChangedAt", "testedAt", "lastTest", "defaultRole",
  "jitProvisioning", "attributeMapping", "oidcIssuer", "oidcClientId", "oidcClientSecret", "oidcScopes", "oidcTokenAuthMethod", "oidcTenant",
  "oidcMetadata", "oidcMetadataFetchedAt", "allowIdpInitiated", "samlIdpEntityId", "samlIdpSsoUrl", "samlIdpMetadataUrl", "samlIdpMetadataXml",
  "samlMetadataFetchedAt", "samlSignAuthnRequests", "samlSpPrivateKey", "samlSpCertificate", "metadataRefreshedAt", "metadataRefreshError", "metadataNextRefreshAt",
  "certificateWarnedAt", "refreshFailureWarnedAt", "createdBy", "createdAt", "updatedAt"`;

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
  allowIdpInitiated: boolean;
  samlIdpEntityId: string | null;
  samlIdpSsoUrl: string | null;
  samlIdpMetadataUrl: string | null;
  samlIdpMetadataXml: string | null;
  samlMetadataFetchedAt: Date | null;
  samlSignAuthnRequests: boolean;
  samlSpPrivateKey: string | null;
  samlSpCertificate: string | null;
  /** The daily refresh's last run (src/sso/metadata-refresh.ts) and why it failed (null: it read the IdP). */
  metadataRefreshedAt: Date | null;
  metadataRefreshError: string | null;
  metadataNextRefreshAt: Date;
  /** When the expiry and refresh-failure events were last recorded: once a day at most. */
  certificateWarnedAt: Date | null;
  refreshFailureWarnedAt: Date | null;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The key that seals connections' secrets at rest (HKDF info of their own). */
export const connectionSeal = (authSecret: string | undefined): SecretSeal => secretSeal(authSecret, 'sso connection secrets');

/** Where the identity provider sends the browser back: what its admin registers as the redirect URI. */
export const redirectUriOf = (authUrl: string, connectionId: string) => `${authUrl.replace(/\/+$/, '')}/api/auth/sso/${connectionId}/oidc/callback`;

/** The SAML service provider's addresses: its entity ID is its metadata's URL (what most IdPs expect), the ACS takes the HTTP-POST binding. */
export const samlUrlsOf = (authUrl: string, connectionId: string) => {
  const base = `${authUrl.replace(/\/+$/, '')}/api/auth/sso/${connectionId}/saml`;
  return { entityId: `${base}/metadata`, metadataUrl: `${base}/metadata`, acsUrl: `${base}/acs` };
};

/** A SAML connection's IdP certificate as answered; `expiresSoon` within 30 days. */
export interface CertificateRow {
  id: string;
  pem: string;
  fingerprintSha256: string;
  subject: string | null;
  notBefore: Date;
  notAfter: Date;
  source: 'metadata' | 'upload';
}

/** How far ahead an IdP certificate's end is reported (the console, the daily refresh's event, `verify`). */
export const expiryWarningMs = 30 * 24 * 60 * 60 * 1000;

/** A connection as answered (`certificates`: a SAML connection's, read beside it). */
export function presentConnection(row: ConnectionRow, config: Pick<Config, 'authUrl'>, certificates: CertificateRow[] = []) {
  const { oidcClientSecret, oidcMetadata: _metadata, samlSpPrivateKey: _key, samlIdpMetadataXml: _xml, certificateWarnedAt: _warned, refreshFailureWarnedAt: _failureWarned, ...rest } = row;
  const base = config.authUrl.replace(/\/+$/, '');
  const saml = row.protocol === 'saml' ? samlUrlsOf(base, row.id) : undefined;
  return {
    ...rest,
    clientSecretSet: oidcClientSecret !== null,
    // Passed since the last change of what sign-in reads: enabling is allowed.
    tested: row.testedAt !== null && row.testedAt.getTime() >= row.configChangedAt.getTime(),
    serviceProvider: {
      ...(saml ? { entityId: saml.entityId, acsUrl: saml.acsUrl, metadataUrl: saml.metadataUrl } : { redirectUri: redirectUriOf(base, row.id) }),
      loginUrl: `${base}/api/auth/sso/start?${new URLSearchParams({ connectionId: row.id })}`,
    },
    ...(saml
      ? {
          certificates: certificates.map(({ id, fingerprintSha256, subject, notBefore, notAfter, source }) => ({
            id,
            fingerprintSha256,
            subject,
            notBefore,
            notAfter,
            source,
            expiresSoon: notAfter.getTime() - Date.now() < expiryWarningMs,
          })),
        }
      : {}),
  };
}

/** What the service provider needs of a stored SAML connection (its key opened, the certificates valid now). */
export function samlSettingsOf(row: ConnectionRow, certificates: CertificateRow[], seal: SecretSeal, config: Pick<Config, 'authUrl' | 'sso'>): SamlSettings {
  const urls = samlUrlsOf(config.authUrl, row.id);
  const now = Date.now();
  return {
    spEntityId: urls.entityId,
    acsUrl: urls.acsUrl,
    spPrivateKey: seal.open(row.samlSpPrivateKey!),
    spCertificate: row.samlSpCertificate!,
    idpEntityId: row.samlIdpEntityId!,
    idpSsoUrl: row.samlIdpSsoUrl!,
    idpCertificates: certificates.filter((certificate) => certificate.notBefore.getTime() <= now && certificate.notAfter.getTime() > now).map((certificate) => certificate.pem),
    signAuthnRequests: row.samlSignAuthnRequests,
    allowIdpInitiated: row.allowIdpInitiated,
    clockSkewSeconds: config.sso.clockSkewSeconds,
  };
}

export const certificateColumns = `"id", "pem", "fingerprintSha256", "subject", "notBefore", "notAfter", "source"`;

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

/**
 * The certificates of one source become `pems`: new ones added, the source's others removed (the
 * other source's stay). Several at once is a rollover: every one valid now verifies.
 */
export async function storeCertificates(tx: Queryable, connection: ConnectionRow, given: { pems: string[]; source: 'metadata' | 'upload' }): Promise<void> {
  const facts = given.pems.map((pem) => certificateFacts(pem));
  await tx.query(`DELETE FROM "authstrap_sso_certificate" WHERE "connectionId" = $1 AND "source" = $2 AND NOT ("fingerprintSha256" = ANY($3::text[]))`, [
    connection.id,
    given.source,
    facts.map((fact) => fact.fingerprintSha256),
  ]);
  for (const fact of facts) {
    await tx.query(
      `INSERT INTO "authstrap_sso_certificate" ("connectionId", "organizationId", "pem", "fingerprintSha256", "subject", "notBefore", "notAfter", "source")
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT ("connectionId", "fingerprintSha256") DO NOTHING`,
      [connection.id, connection.organizationId, fact.pem, fact.fingerprintSha256, fact.subject, fact.notBefore, fact.notAfter, given.source],
    );
  }
}
