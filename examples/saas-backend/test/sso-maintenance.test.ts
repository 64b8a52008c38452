import { webcrypto } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as x509 from '@peculiar/x509';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetadataRefresh, type RefreshDone } from '../src/sso/metadata-refresh.js';
import { apiClient, databaseKinds, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { startOidcProvider, type TestOidcProvider } from './support/oidc-provider.js';
import { freePort } from './support/process.js';
import { formOf, startSamlIdp, type TestSamlIdp } from './support/saml-idp.js';
import { TestBrowser } from './support/test-browser.js';

/**
 * The daily refresh of single sign-on connections (src/sso/metadata-refresh.ts, docs/sso.md
 * "Certificates and rollover"): each IdP read again from its metadata URL (SAML) or its discovery
 * and signing keys (OIDC), on loopback servers the tests change between rounds. The backend's own
 * worker is off (SSO_REFRESH_POLL_MS=0): the tests run one with their clock, so that "once a day"
 * is a day of that clock.
 */

interface Connection {
  id: string;
  enabled: boolean;
  tested: boolean;
  metadataRefreshedAt: string | null;
  metadataRefreshError: string | null;
  metadataNextRefreshAt: string;
  serviceProvider: { metadataUrl: string; acsUrl: string };
  certificates: { fingerprintSha256: string; subject: string | null; notAfter: string; source: string; expiresSoon: boolean }[];
}

interface AuditEvent {
  entityId: string;
  actorType: string;
  data: Record<string, unknown>;
  summary?: string;
}

const dayMs = 24 * 60 * 60 * 1000;
x509.cryptoProvider.set(webcrypto as unknown as Crypto);

/** A self-signed certificate whose end is `days` from now (base64 body, as metadata carries it). */
async function certificateEnding(days: number, name: string): Promise<string> {
  const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(8))).toString('hex').replace(/^[89a-f]/, '1'),
    name: `CN=${name}`,
    notBefore: new Date(Date.now() - dayMs),
    notAfter: new Date(Date.now() + days * dayMs),
    signingAlgorithm: algorithm,
    keys,
  });
  return certificate.toString('base64');
}

/** IdP metadata listing `certificates` as its signing keys. */
const metadataOf = (entityId: string, certificates: string[]) => `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${entityId}">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
${certificates.map((certificate) => `    <md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificate}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`).join('\n')}
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;

/** A loopback server whose answer the test sets: what an IdP publishes at its metadata URL. */
async function startPublisher() {
  let answer: () => Promise<{ status: number; body: string }> = async () => ({ status: 404, body: '' });
  const server = http.createServer((_req, res) => {
    void answer().then(({ status, body }) => res.writeHead(status, { 'content-type': 'application/samlmetadata+xml' }).end(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metadata`,
    serve(next: typeof answer) {
      answer = next;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The next UTC noon from now: a test's day, whatever the hour it runs at. */
function nextNoon(): Date {
  const noon = new Date();
  noon.setUTCHours(12, 0, 0, 0);
  return noon.getTime() < Date.now() ? new Date(noon.getTime() + dayMs) : noon;
}

describe.each(databaseKinds)('the daily refresh of single sign-on connections on the %s database', (kind) => {
  let backend: TestBackend;
  let owner: SignedUp;
  let idp: TestSamlIdp;
  let publisher: Awaited<ReturnType<typeof startPublisher>>;
  let counter = 0;
  const domain = `maintenance-${kind}.example`;

  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const eventsOf = async (type: string, connectionId: string) =>
    ((await owner.api('GET', `/audit-events?type=${type}&limit=100`)).body.data as AuditEvent[]).filter((event) => event.entityId === connectionId);
  const connectionOf = async (id: string) => {
    const answer = await owner.api('GET', `/sso-connections/${id}`);
    expect(answer.status).toBe(200);
    return answer.body.data as Connection;
  };

  /** One round of the worker at `at`, the connection made due then (as a day later would); what it found for that connection. */
  const refreshAt = async (connectionId: string, at: Date): Promise<RefreshDone | undefined> => {
    await asOwner(`UPDATE "authstrap_sso_connection" SET "metadataNextRefreshAt" = $2 WHERE "id" = $1`, [connectionId, at]);
    const worker = createMetadataRefresh({
      db: backend.running.db,
      logger: pino({ level: 'silent' }),
      settings: { intervalHours: 24, pollMs: 0, allowPrivateAddresses: true },
      clock: () => at,
    });
    return (await worker.runOnce()).find((done) => done.connectionId === connectionId);
  };

  const createSaml = async (metadataUrl: string) => {
    const answer = await owner.api('POST', '/sso-connections', { body: { name: `SAML ${++counter}`, protocol: 'saml', saml: { metadataUrl } } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return answer.body.data as Connection;
  };

  beforeAll(async () => {
    idp = await startSamlIdp();
    publisher = await startPublisher();
    const port = await freePort();
    backend = await startBackend(kind, { PORT: String(port), AUTH_URL: `http://127.0.0.1:${port}`, SSO_ALLOW_PRIVATE_ADDRESSES: 'true', SSO_REFRESH_POLL_MS: '0' });
    owner = await signUp(backend.url, `owner@${domain}`);
    await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, $2, 'verified', 'token', now())`, [owner.organizationId, domain]);
  }, 60_000);
  afterAll(async () => {
    await backend?.stop();
    await publisher?.close();
    await idp?.close();
  });

  it('reports an IdP certificate that ends in 10 days once a day, not at every refresh; the connection says its end and the refresh', async () => {
    const ending = await certificateEnding(10, 'ends soon');
    publisher.serve(async () => ({ status: 200, body: metadataOf('https://idp.example/ending', [ending]) }));
    const connection = await createSaml(publisher.url);
    const noon = nextNoon();

    const first = await refreshAt(connection.id, noon);
    expect(first).toMatchObject({ error: null, changed: false, events: ['sso_connection.certificate_expiring'] });
    const reported = await eventsOf('sso_connection.certificate_expiring', connection.id);
    expect(reported).toHaveLength(1);
    expect(reported[0]!.actorType).toBe('system');
    const [certificate] = reported[0]!.data.certificates as { notAfter: string; expired: boolean; subject: string }[];
    expect(certificate).toMatchObject({ expired: false, subject: 'CN=ends soon' });
    expect(new Date(certificate!.notAfter).getTime() - Date.now()).toBeGreaterThan(9 * dayMs);
    expect(reported[0]!.summary).toMatch(/signing certificate of the single sign-on connection "SAML \d+" expires on/);

    const read = await connectionOf(connection.id);
    expect(read.metadataRefreshedAt).toBe(noon.toISOString());
    expect(read.metadataRefreshError).toBeNull();
    expect(read.metadataNextRefreshAt).toBe(new Date(noon.getTime() + dayMs).toISOString());
    expect(read.certificates).toEqual([expect.objectContaining({ subject: 'CN=ends soon', notAfter: certificate!.notAfter, expiresSoon: true })]);

    // Refreshed again the same day (a refresh by hand, another instance's round): no second event.
    expect(await refreshAt(connection.id, new Date(noon.getTime() + 2 * 60 * 60 * 1000))).toMatchObject({ error: null, events: [] });
    expect(await eventsOf('sso_connection.certificate_expiring', connection.id)).toHaveLength(1);
    // The next day it is said again.
    expect(await refreshAt(connection.id, new Date(noon.getTime() + dayMs))).toMatchObject({ events: ['sso_connection.certificate_expiring'] });
    expect(await eventsOf('sso_connection.certificate_expiring', connection.id)).toHaveLength(2);
  });

  it("keeps both certificates when the metadata URL now serves a second one (a rollover), drops the one gone from it, and never reports certificates far from their end", async () => {
    const [current, next] = [await certificateEnding(365, 'current key'), await certificateEnding(730, 'next key')];
    publisher.serve(async () => ({ status: 200, body: metadataOf('https://idp.example/rollover', [current]) }));
    const connection = await createSaml(publisher.url);
    expect(connection.certificates.map((certificate) => certificate.subject)).toEqual(['CN=current key']);
    const noon = nextNoon();

    publisher.serve(async () => ({ status: 200, body: metadataOf('https://idp.example/rollover', [current, next]) }));
    expect(await refreshAt(connection.id, noon)).toMatchObject({ error: null, changed: true, events: [] });
    const both = await connectionOf(connection.id);
    expect(both.certificates.map((certificate) => certificate.subject)).toEqual(['CN=current key', 'CN=next key']);
    expect(both.certificates.every((certificate) => certificate.source === 'metadata' && !certificate.expiresSoon)).toBe(true);

    // Nothing new the day after: nothing changes (the connection's test still counts).
    expect(await refreshAt(connection.id, new Date(noon.getTime() + dayMs))).toMatchObject({ error: null, changed: false, events: [] });

    publisher.serve(async () => ({ status: 200, body: metadataOf('https://idp.example/rollover', [next]) }));
    expect(await refreshAt(connection.id, new Date(noon.getTime() + 2 * dayMs))).toMatchObject({ changed: true });
    expect((await connectionOf(connection.id)).certificates.map((certificate) => certificate.subject)).toEqual(['CN=next key']);
    expect(await eventsOf('sso_connection.certificate_expiring', connection.id)).toHaveLength(0);
  });

  it('records a metadata URL that fails without disabling the connection: sign-in goes on with the certificates read before; reported once a day; cleared when it answers again', async () => {
    // The real IdP's metadata, published at the address the test controls.
    let failing = false;
    publisher.serve(async () => (failing ? { status: 500, body: 'down' } : { status: 200, body: await (await fetch(idp.metadataUrl(['a']))).text() }));
    const connection = await createSaml(publisher.url);
    const metadata = await fetch(connection.serviceProvider.metadataUrl);
    await idp.registerServiceProvider(await metadata.text());
    const browser = () => new TestBrowser([new URL(idp.url).origin, new URL(backend.url).origin]);
    /** A whole sign-in through the IdP, started with `start` (a test, or a sign-in); the ACS's answer. */
    const through = async (start: string, init: RequestInit, email: string) => {
      const walker = browser();
      const started = await walker.request(start, init);
      expect(started.status, await started.clone().text()).toBe(200);
      await idp.next({ user: { nameId: email, email } });
      const form = formOf(await (await walker.request(((await started.json()) as { data: { url: string } }).data.url)).text());
      const answer = await walker.request(form.action, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(idp.url).origin },
        body: new URLSearchParams({ SAMLResponse: form.SAMLResponse, ...(form.RelayState ? { RelayState: form.RelayState } : {}) }).toString(),
      });
      return { answer, session: walker.cookie(new URL(backend.url).origin, 'session') };
    };
    await through(`${backend.url}/sso-connections/${connection.id}/test`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId } }, `tester@${domain}`);
    expect((await owner.api('POST', `/sso-connections/${connection.id}/enable`)).status).toBe(200);
    const noon = nextNoon();

    failing = true;
    const failed = await refreshAt(connection.id, noon);
    expect(failed?.error).toMatch(/500/);
    expect(failed?.events).toContain('sso_connection.refresh_failed');
    const read = await connectionOf(connection.id);
    expect(read).toMatchObject({ enabled: true, tested: true, metadataRefreshedAt: noon.toISOString() });
    expect(read.metadataRefreshError).toMatch(/500/);
    // A failure is tried again within the hour, not a day later.
    expect(new Date(read.metadataNextRefreshAt).getTime()).toBe(noon.getTime() + 60 * 60 * 1000);
    expect(read.certificates).toHaveLength(1);
    const signedIn = await through(`${backend.url}/api/auth/sso/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ connectionId: connection.id }) }, `after-failure@${domain}`);
    expect(signedIn.answer.status).toBe(303);
    const session = await apiClient(backend.url)('GET', '/api/auth/get-session', { token: signedIn.session! });
    expect(session.body.data.user.email).toBe(`after-failure@${domain}`);

    expect((await refreshAt(connection.id, new Date(noon.getTime() + 60 * 60 * 1000)))?.events).not.toContain('sso_connection.refresh_failed');
    const failures = await eventsOf('sso_connection.refresh_failed', connection.id);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.data).toMatchObject({ from: publisher.url });
    expect(failures[0]!.summary).toMatch(/could not be read .*500/);

    failing = false;
    expect(await refreshAt(connection.id, new Date(noon.getTime() + 2 * 60 * 60 * 1000))).toMatchObject({ error: null, changed: false });
    expect(await connectionOf(connection.id)).toMatchObject({ enabled: true, tested: true, metadataRefreshError: null });
  });

  it("reads an OIDC issuer's discovery and signing keys again; an issuer that stopped answering is recorded, the connection kept", async () => {
    const oidc: TestOidcProvider = await startOidcProvider();
    try {
      const client = oidc.newClient();
      const answer = await owner.api('POST', '/sso-connections', { body: { name: `OIDC ${++counter}`, protocol: 'oidc', oidc: { issuer: oidc.issuer, clientId: client.clientId, clientSecret: client.clientSecret } } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      const connection = answer.body.data as Connection;
      const noon = nextNoon();
      expect(await refreshAt(connection.id, noon)).toMatchObject({ error: null, changed: false, events: [] });
      expect(await connectionOf(connection.id)).toMatchObject({ metadataRefreshedAt: noon.toISOString(), metadataRefreshError: null });

      await oidc.close();
      const failed = await refreshAt(connection.id, new Date(noon.getTime() + dayMs));
      expect(failed?.error).toMatch(/discovery failed/);
      expect(failed?.events).toEqual(['sso_connection.refresh_failed']);
      expect((await connectionOf(connection.id)).metadataRefreshError).toMatch(/discovery failed/);
    } finally {
      await oidc.close().catch(() => {});
    }
  });
});
