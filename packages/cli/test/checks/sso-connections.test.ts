import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeContext } from '../../src/checks/probe-context.js';
import { ssoConnections, ssoVerdict, type SsoConnectionFacts } from '../../src/checks/sso-connections.js';
import { openDatabase } from '../../src/verify/database.js';
import { httpClient } from '../../src/verify/http.js';
import { adminUrl, verifyProject } from '../support/check-cycle.js';
import { createResources, fixJson, healthyEnv, query, type Backend } from '../support/example-copies.js';

/**
 * The `sso-connections` check against a copy of the example, running on PostgreSQL with real SAML
 * connections whose IdP metadata a loopback server publishes (SSO_ALLOW_PRIVATE_ADDRESSES), each
 * breakage made as it happens (an OIDC connection beside them, its discovery served there too): the IdP's certificate expires (fix asks the backend to read the
 * metadata again, where the IdP now publishes its next one), a verified domain's TXT record is
 * gone, the backend's AUTH_URL is not where it answers. Verified, repaired where fix can, verified again.
 */

const dayMs = 24 * 60 * 60 * 1000;

/** A self-signed certificate (base64 body) valid from `fromDays` to `toDays` from now, made by @peculiar/x509 in the example's folder (Node makes none). */
function certificate(dir: string, name: string, fromDays: number, toDays: number): string {
  const script = `
    import { webcrypto } from 'node:crypto';
    import * as x509 from '@peculiar/x509';
    x509.cryptoProvider.set(webcrypto);
    const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
    const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
    const certificate = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01' + Date.now().toString(16), name: ${JSON.stringify(`CN=${name}`)},
      notBefore: new Date(Date.now() + ${fromDays * dayMs}), notAfter: new Date(Date.now() + ${toDays * dayMs}), signingAlgorithm: algorithm, keys,
    });
    process.stdout.write(certificate.toString('base64'));`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: dir, encoding: 'utf8' });
}

const metadataOf = (entityId: string, certificates: string[]) => `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${entityId}">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
${certificates.map((body) => `    <md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${body}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`).join('\n')}
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;

describe.runIf(adminUrl)('sso-connections: single sign-on connections on a running backend', () => {
  const resources = createResources({ adminUrl, name: 'sso_check', backendEnv: { SSO_ALLOW_PRIVATE_ADDRESSES: 'true', SSO_REFRESH_POLL_MS: '200' } });
  let dir: string;
  let backend: Backend;
  let published = '';
  // The SAML IdP's metadata at /idp/metadata; an OIDC issuer's discovery and keys at /oidc (what a connection reads when it is made).
  const signingKey = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'RS256' };
  const publisher = http.createServer((req, res) => {
    const issuer = `http://127.0.0.1:${(publisher.address() as AddressInfo).port}/oidc`;
    if (req.url === '/oidc/.well-known/openid-configuration') {
      const discovery = { issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks`, response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['RS256'] };
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(discovery));
    }
    if (req.url === '/oidc/jwks') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [signingKey] }));
    res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(published);
  });
  let metadataUrl: string;
  let owner: { token: string; organizationId: string };
  let connectionId: string;
  let oidcConnectionId: string;

  const api = async (method: string, path: string, body?: unknown, to = backend) => {
    const response = await fetch(new URL(path, to.url), {
      method,
      headers: { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, body: (await response.json().catch(() => undefined)) as any };
  };
  /** The check's probe (verify's database part), as verify runs it against `to`. */
  const probe = async (to = backend) => {
    const db = await openDatabase({ kind: 'postgres', url: to.databaseUrl });
    try {
      return await ssoConnections.probe!.run({ ...probeContext(httpClient(to.url), undefined), db });
    } finally {
      await db.close();
    }
  };
  const verdictOf = (report: { checks: { id: string; status: string; message: string; fix?: string }[] }) => report.checks.find((check) => check.id === 'sso-connections')!;

  beforeAll(async () => {
    await new Promise<void>((resolve) => publisher.listen(0, '127.0.0.1', resolve));
    metadataUrl = `http://127.0.0.1:${(publisher.address() as AddressInfo).port}/idp/metadata`;
    dir = resources.copyOfExample(healthyEnv);
    backend = await resources.startBackend(dir);
    const signedUp = await fetch(new URL('/api/auth/sign-up/email', backend.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'owner@corp.example', name: 'Owner', password: 'a long enough password' }),
    });
    const { token } = ((await signedUp.json()) as { data: { token: string } }).data;
    const session = (await (await fetch(new URL('/api/auth/get-session', backend.url), { headers: { authorization: `Bearer ${token}` } })).json()) as { data: { organizations: { id: string }[] } };
    owner = { token, organizationId: session.data.organizations[0]!.id };
  }, 180_000);
  afterAll(async () => {
    await new Promise((resolve) => publisher.close(resolve));
    await resources.cleanup();
  }, 60_000);

  it('passes a project without connections, then one whose IdP certificate and addresses are right', async () => {
    expect(await probe()).toEqual({ status: 'pass', message: 'no enabled single sign-on connection: nothing to check; the redirect URIs and ACS URLs reach this backend' });
    published = metadataOf('https://idp.example/corp', [certificate(dir, 'current', -1, 365)]);
    const created = await api('POST', '/sso-connections', { name: 'Corp IdP', protocol: 'saml', saml: { metadataUrl } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    connectionId = created.body.data.id;
    // Enabled as a passed test would (the test sign-in needs an IdP that signs: sso-saml.test.ts in the example).
    await query(backend.databaseUrl, `UPDATE "authstrap_sso_connection" SET "enabled" = true WHERE "id" = $1`, [connectionId]);
    // Verified, its next DNS check a month away (this machine's resolver has no such record: the backend's own check would find it gone).
    await query(backend.databaseUrl, `INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt", "nextCheckAt") VALUES ($1, 'corp.example', 'verified', 'token123', now(), now() + interval '30 days')`, [owner.organizationId]);
    const oidc = await api('POST', '/sso-connections', { name: 'Corp OIDC', protocol: 'oidc', oidc: { issuer: metadataUrl.replace('/idp/metadata', '/oidc'), clientId: 'client', clientSecret: 'secret' } });
    expect(oidc.status, JSON.stringify(oidc.body)).toBe(201);
    oidcConnectionId = oidc.body.data.id;
    await query(backend.databaseUrl, `UPDATE "authstrap_sso_connection" SET "enabled" = true WHERE "id" = ANY($1::uuid[])`, [[connectionId, oidcConnectionId]]);
    const outcome = await probe();
    expect(outcome.status, outcome.message).toBe('pass');
    expect(outcome.message).toContain('2 enabled connections: IdP read at the last refresh, certificates in date');
  });

  it("fails an expired IdP certificate; fix asks the backend to read the metadata again, where the IdP publishes its next one; then passes", async () => {
    // The IdP's certificate ran out; it has published its next one, which the backend reads only at its next daily refresh.
    const expired = certificate(dir, 'expired', -400, -2);
    await query(backend.databaseUrl, `DELETE FROM "authstrap_sso_certificate" WHERE "connectionId" = $1`, [connectionId]);
    published = metadataOf('https://idp.example/corp', [expired]);
    const refreshed = await api('POST', `/sso-connections/${connectionId}/refresh`);
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    published = metadataOf('https://idp.example/corp', [expired, certificate(dir, 'next', -1, 365)]);

    const verified = await verifyProject(dir, backend);
    const broken = verdictOf(verified.report);
    expect(broken.status, verified.output).toBe('fail');
    expect(broken.message).toMatch(/"Corp IdP" \(.+\): its IdP certificate expired on \d{4}-\d\d-\d\d, so every sign-in through it is refused; the IdP must publish its next certificate at http:\/\/127\.0\.0\.1:\d+\/idp\/metadata/);
    expect(broken.fix).toMatch(/authstrap fix repairs it: read the IdP of 1 connection again now \("Corp IdP"\)/);

    const dryRun = await fixJson(['--dry-run', '--database-url', backend.databaseUrl], dir);
    expect(verdictOf(dryRun.report).status).toBe('fail');
    expect((dryRun.report.checks.find((check) => check.id === "sso-connections") as { repair?: { sql: string[] } }).repair?.sql).toEqual([`UPDATE "authstrap_sso_connection" SET "metadataNextRefreshAt" = now() WHERE "id" IN ('${connectionId}')`]);
    const fixed = await fixJson(['--database-url', backend.databaseUrl], dir);
    // Asked, not done: the backend's worker reads the IdP within SSO_REFRESH_POLL_MS, and fix says so.
    expect(verdictOf(fixed.report).message, fixed.output).toMatch(/a refresh is queued|repaired: read the IdP of 1 connection again now/);

    // The worker polls every 200 ms; on a loaded machine (the whole suite at load 20) a read of the
    // IdP has taken past 10 s, so the bound is a deadline of 60 s.
    let outcome = await probe();
    for (const deadline = Date.now() + 60_000; outcome.status !== 'pass' && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      outcome = await probe();
    }
    expect(outcome.status, outcome.message).toBe('pass');
    expect(outcome.message).toContain('an expired IdP certificate is still listed beside a valid one');
    const again = await fixJson(['--dry-run', '--database-url', backend.databaseUrl], dir);
    expect(verdictOf(again.report).status).toBe('pass');
  }, 180_000);

  it("warns of a verified domain whose TXT record is gone, naming the record to publish again", async () => {
    // What the backend's scheduled check writes when the record is gone (docs/domains.md: failing, then lapsed).
    await query(backend.databaseUrl, `UPDATE "authstrap_domain" SET "state" = 'failing', "failingSince" = now() WHERE "domain" = 'corp.example'`);
    const outcome = await probe();
    expect(outcome.status, outcome.message).toBe('warn');
    expect(outcome.message, outcome.message).toMatch(/^corp\.example \(.+\): its TXT record is gone since \d{4}-\d\d-\d\d; publish _authstrap-verification\.corp\.example TXT "authstrap-domain-verification=token123" again before it lapses$/);
    await query(backend.databaseUrl, `UPDATE "authstrap_domain" SET "state" = 'verified', "failingSince" = NULL WHERE "domain" = 'corp.example'`);
    expect((await probe()).status).toBe('pass');
  });

  it("fails an ACS URL that does not reach the backend (AUTH_URL elsewhere), saying to set AUTH_URL; passes once it is the backend's address", async () => {
    await backend.stop();
    const misplaced = createResources({ adminUrl, name: 'sso_check_url', backendEnv: { SSO_ALLOW_PRIVATE_ADDRESSES: 'true', SSO_REFRESH_POLL_MS: '0', AUTH_URL: 'http://127.0.0.1:9' } });
    try {
      const wrong = await misplaced.startBackend(dir, backend.databaseUrl);
      const outcome = await probe(wrong);
      expect(outcome.status).toBe('fail');
      expect(outcome.message).toContain(`the IdP posts to the ACS URL http://127.0.0.1:9/api/auth/sso/${connectionId}/saml/acs, which does not reach this backend; set AUTH_URL to this backend's public address (${new URL(wrong.url).origin})`);
      expect(outcome.message).toContain(`the IdP sends browsers back to http://127.0.0.1:9/api/auth/sso/${oidcConnectionId}/oidc/callback, which does not reach this backend; set AUTH_URL to this backend's public address (${new URL(wrong.url).origin}) and give the IdP the new redirect URI`);
      // fix reads no running backend: nothing for it to repair here, and it says nothing failed.
      expect(verdictOf((await fixJson(['--dry-run', '--database-url', backend.databaseUrl], dir)).report).status).toBe('pass');
      await wrong.stop();
    } finally {
      await misplaced.cleanup();
    }
    backend = await resources.startBackend(dir, backend.databaseUrl);
    const outcome = await probe();
    expect(outcome.status, outcome.message).toBe('pass');
  }, 180_000);
});

describe('sso-connections: the verdict on the facts', () => {
  const now = new Date('2026-12-06T12:00:00Z');
  const connection = (certificates: SsoConnectionFacts['certificates'], extra: Partial<SsoConnectionFacts> = {}): SsoConnectionFacts => ({
    id: '00000000-0000-4000-8000-000000000001',
    name: 'Okta',
    organization: 'Acme',
    protocol: 'saml',
    readFrom: null,
    refreshedAt: null,
    refreshError: null,
    refreshDue: false,
    certificates,
    ...extra,
  });
  const inDays = (days: number) => ({ subject: 'CN=idp', notAfter: new Date(now.getTime() + days * dayMs) });

  it('warns of a certificate ending within 30 days, unless a later one is listed (a rollover under way)', () => {
    expect(ssoVerdict({ now, connections: [connection([inDays(10)])], domains: [] })).toMatchObject({ status: 'warn', message: expect.stringContaining('expires on 2026-12-16 (in 10 days) and no later one is listed') });
    expect(ssoVerdict({ now, connections: [connection([inDays(10), inDays(400)])], domains: [] }).status).toBe('pass');
  });

  it('says where an uploaded IdP gets its new certificate (fix cannot read it again), and offers no repair', () => {
    const finding = ssoVerdict({ now, connections: [connection([inDays(-1)])], domains: [] });
    expect(finding.status).toBe('fail');
    expect(finding.message).toContain('PATCH /sso-connections/00000000-0000-4000-8000-000000000001 with saml.metadataXml or saml.certificates');
    expect(finding.repair).toBeUndefined();
  });

  it('fails an IdP that could not be read, with the refresh as the repair, and not twice once it is queued', () => {
    const failing = connection([inDays(200)], { protocol: 'oidc', readFrom: 'https://login.example', refreshError: 'discovery failed: ECONNREFUSED', refreshedAt: now });
    const finding = ssoVerdict({ now, connections: [failing], domains: [] });
    expect(finding).toMatchObject({ status: 'fail', message: expect.stringContaining('its issuer https://login.example could not be read on 2026-12-06 (discovery failed: ECONNREFUSED)') });
    expect(finding.repair?.sql).toEqual([`UPDATE "authstrap_sso_connection" SET "metadataNextRefreshAt" = now() WHERE "id" IN ('${failing.id}')`]);
    const queued = ssoVerdict({ now, connections: [{ ...failing, refreshDue: true }], domains: [] });
    expect(queued.message).toContain('a refresh is queued');
    expect(queued.repair).toBeUndefined();
  });
});
