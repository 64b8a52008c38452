import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DOMParser, XMLSerializer } from '@xmldom/xmldom';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certificateColumns, connectionColumns, connectionSeal, samlSettingsOf, type CertificateRow, type ConnectionRow } from '../src/sso/connections.js';
import { fetchIdpMetadata, readIdpMetadata, SamlProblem, verifyResponse } from '../src/sso/saml.js';
import { apiClient, authSecret, databaseKinds, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { TestBrowser } from './support/test-browser.js';
import { freePort } from './support/process.js';
import { formOf, startSamlIdp, type PostedForm, type ResponseOptions, type SamlUser, type TestSamlIdp } from './support/saml-idp.js';

/**
 * Single sign-on with SAML (docs/sso.md; docs/enterprise-identity.md, step 8), against a real
 * identity provider on loopback: pysaml2 signing with xmlsec1 (test/support/saml-idp.py), another
 * XML stack than node-saml's. Connections from metadata, sign-in with just-in-time provisioning,
 * certificate rollover, encrypted assertions, IdP-initiated sign-in; and every attack of issue 48
 * made from a real signed response of that IdP: each refused, and each followed by the untouched
 * response signing in (so the refusal is the tampering's, not a broken setup's).
 */

interface Connection {
  id: string;
  name: string;
  protocol: 'saml';
  enabled: boolean;
  tested: boolean;
  defaultRole: string;
  allowIdpInitiated: boolean;
  samlIdpEntityId: string;
  lastTest: { ok: boolean; error?: string; profile?: Record<string, unknown> } | null;
  serviceProvider: { entityId: string; acsUrl: string; metadataUrl: string; loginUrl: string };
  certificates: { fingerprintSha256: string; notAfter: string; source: string; expiresSoon: boolean }[];
}

const protocolNs = 'urn:oasis:names:tc:SAML:2.0:protocol';
const assertionNs = 'urn:oasis:names:tc:SAML:2.0:assertion';
const dsigNs = 'http://www.w3.org/2000/09/xmldsig#';

/** A response's XML, changed by `change` on its DOM, base64 again: the tampering of an attacker who holds a real signed response. */
function tampered(form: PostedForm, change: (document: Document) => void): PostedForm {
  const document = new DOMParser().parseFromString(Buffer.from(form.SAMLResponse, 'base64').toString('utf8'), 'text/xml') as unknown as Document;
  change(document);
  return { ...form, SAMLResponse: Buffer.from(new XMLSerializer().serializeToString(document as never)).toString('base64') };
}

const one = (document: Document | Element, namespace: string, name: string) => (document.getElementsByTagNameNS(namespace, name) as unknown as ArrayLike<Element>)[0]!;
const childOf = (parent: Element, namespace: string, name: string) => Array.from(parent.childNodes as unknown as ArrayLike<Element>).find((node) => node.namespaceURI === namespace && node.localName === name)!;

/** A copy of the signed assertion made the victim's: another ID, the victim's NameID and address, no signature. */
function evilAssertion(document: Document, victim: string): Element {
  const original = one(document, assertionNs, 'Assertion');
  const evil = original.cloneNode(true) as Element;
  evil.setAttribute('ID', `_evil${Date.now()}`);
  const signature = childOf(evil, dsigNs, 'Signature');
  if (signature) evil.removeChild(signature);
  one(evil, assertionNs, 'NameID').textContent = victim;
  for (const value of Array.from(evil.getElementsByTagNameNS(assertionNs, 'AttributeValue') as unknown as ArrayLike<Element>)) {
    if (value.textContent?.includes('@')) value.textContent = victim;
  }
  return evil;
}

describe.each(databaseKinds)('single sign-on with SAML on the %s database', (kind) => {
  let backend: TestBackend;
  let idp: TestSamlIdp;
  let owner: SignedUp;
  let counter = 0;
  const domain = `corp-${kind}.example`;
  const address = (local: string) => `${local}-${++counter}@${domain}`;

  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const browser = () => new TestBrowser([new URL(idp.url).origin, new URL(backend.url).origin]);
  const errorOf = (response: Response) => new URL(response.headers.get('location')!).searchParams.get('error');
  const sessionOf = async (token: string) => apiClient(backend.url)('GET', '/api/auth/get-session', { token });

  /** A SAML connection of the owner's organization; its SP metadata registered at the IdP, as its admin would upload it. */
  const createConnection = async (saml: Record<string, unknown> = { metadataUrl: idp.metadataUrl() }, extra: Record<string, unknown> = {}) => {
    const answer = await owner.api('POST', '/sso-connections', { body: { name: `SAML ${++counter}`, protocol: 'saml', preset: 'generic', saml, ...extra } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    const connection = answer.body.data as Connection;
    const metadata = await fetch(connection.serviceProvider.metadataUrl);
    expect(metadata.status).toBe(200);
    await idp.registerServiceProvider(await metadata.text());
    return connection;
  };

  /** Posts an IdP's form to the backend's ACS, as the browser would (from the IdP's origin). */
  const post = (walker: TestBrowser, form: PostedForm) =>
    walker.request(form.action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(idp.url).origin },
      body: new URLSearchParams({ SAMLResponse: form.SAMLResponse, ...(form.RelayState ? { RelayState: form.RelayState } : {}) }).toString(),
    });

  /** The IdP's form for a sign-in started at the backend (SP-initiated); the browser holds the binding cookie. */
  const startAt = async (start: string, options: ResponseOptions, walker = browser(), init: RequestInit = { method: 'POST', headers: { 'content-type': 'application/json' } }) => {
    const started = await walker.request(start, init);
    expect(started.status, await started.clone().text()).toBe(200);
    await idp.next(options);
    const page = await walker.request(((await started.json()) as { data: { url: string } }).data.url);
    return { walker, form: formOf(await page.text()) };
  };
  const formFor = (connection: Connection, options: ResponseOptions, walker = browser()) =>
    startAt(`${backend.url}/api/auth/sso/start`, options, walker, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ connectionId: connection.id }) });

  /** A whole SP-initiated sign-in: the ACS's answer and the session cookie it set. */
  const signIn = async (connection: Connection, options: ResponseOptions) => {
    const { walker, form } = await formFor(connection, options);
    const answer = await post(walker, form);
    return { answer, session: walker.cookie(new URL(backend.url).origin, 'session'), form };
  };

  /** A tested and enabled connection. */
  const enabledConnection = async (saml?: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const connection = await createConnection(saml, extra);
    const { walker, form } = await startAt(`${backend.url}/sso-connections/${connection.id}/test`, { user: { nameId: address('tester'), email: address('tester') } }, browser(), {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId },
    });
    const landed = await post(walker, form);
    expect(landed.headers.get('location')).toBe(`${backend.running.config.mail.appUrl}/settings/sso/${connection.id}?test=done`);
    const enabled = await owner.api('POST', `/sso-connections/${connection.id}/enable`);
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    return enabled.body.data as Connection;
  };

  const userOfSession = async (token: string | undefined) => {
    expect(token).toBeDefined();
    const session = await sessionOf(token!);
    expect(session.status).toBe(200);
    return session.body.data.user as { id: string; email: string };
  };

  const expectRefused = (answer: Response, session: string | undefined, code = 'SSO_FAILED') => {
    expect(answer.status).toBe(303);
    expect(errorOf(answer)).toBe(code);
    expect(session).toBeUndefined();
  };

  beforeAll(async () => {
    idp = await startSamlIdp();
    const port = await freePort();
    backend = await startBackend(kind, { PORT: String(port), AUTH_URL: `http://127.0.0.1:${port}`, SSO_ALLOW_PRIVATE_ADDRESSES: 'true', SSO_CLOCK_SKEW_SECONDS: '5', SSO_APP_REDIRECTS: 'myapp://sso-done' });
    owner = await signUp(backend.url, `owner@${domain}`);
    await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, $2, 'verified', 'token', now())`, [owner.organizationId, domain]);
  }, 60_000);
  afterAll(async () => {
    await backend?.stop();
    await idp?.close();
  });

  it("adds a connection from the IdP's metadata URL: an SP key pair made (the key sealed, never answered), the IdP's certificate, the SP metadata to upload", async () => {
    const connection = await createConnection();
    expect(connection).toMatchObject({ protocol: 'saml', enabled: false, tested: false, samlIdpEntityId: `${idp.url}/metadata`, allowIdpInitiated: false });
    expect(connection.serviceProvider.acsUrl).toBe(`${backend.running.config.authUrl}/api/auth/sso/${connection.id}/saml/acs`);
    expect(connection.certificates).toHaveLength(1);
    expect(connection.certificates[0]).toMatchObject({ source: 'metadata', expiresSoon: true });
    expect(JSON.stringify(connection)).not.toMatch(/samlSpPrivateKey|PRIVATE KEY|samlIdpMetadataXml/);
    const stored = (await asOwner(`SELECT "samlSpPrivateKey", "samlSpCertificate" FROM "authstrap_sso_connection" WHERE "id" = $1`, [connection.id])).rows[0] as { samlSpPrivateKey: string; samlSpCertificate: string };
    expect(stored.samlSpPrivateKey).toMatch(/^sealed:v1:/);
    const metadata = await (await fetch(connection.serviceProvider.metadataUrl)).text();
    expect(metadata).toContain(`entityID="${connection.serviceProvider.entityId}"`);
    expect(metadata).toContain(`Location="${connection.serviceProvider.acsUrl}"`);
    expect(metadata).toContain('use="encryption"');
    expect(metadata).toContain(stored.samlSpCertificate.split('\n')[1]);
    expect(metadata).not.toContain('AuthnRequestsSigned="true"');
    expect((await fetch(`${backend.url}/api/auth/sso/${crypto.randomUUID()}/saml/metadata`)).status).toBe(404);
  });

  it('adds connections from uploaded metadata and from typed values; refuses a DOCTYPE, a document over 100 KB, a bad certificate, and a loopback URL without the flag', async () => {
    const xml = await (await fetch(idp.metadataUrl(['a', 'b']))).text();
    const uploaded = await createConnection({ metadataXml: xml });
    expect(uploaded.certificates).toHaveLength(2);
    const idpValues = readIdpMetadata(xml);
    const typed = await createConnection({ entityId: idpValues.entityId, ssoUrl: idpValues.ssoUrl, certificates: [idpValues.certificates[0]] });
    expect(typed.certificates).toEqual([expect.objectContaining({ source: 'upload' })]);
    const refusedWith = async (saml: Record<string, unknown>) => {
      const answer = await owner.api('POST', '/sso-connections', { body: { name: `Refused ${++counter}`, protocol: 'saml', saml } });
      expect(answer.status).toBe(422);
      return JSON.stringify(answer.body.error.details);
    };
    expect(await refusedWith({ metadataXml: `<!DOCTYPE x [<!ENTITY e "e">]>${xml}` })).toMatch(/DOCTYPE/);
    // Over 100 KB: the request's body limit answers first (413); the parser's own limit holds for a fetched document.
    const oversized = await owner.api('POST', '/sso-connections', { body: { name: `Refused ${++counter}`, protocol: 'saml', saml: { metadataXml: `${xml}<!--${'x'.repeat(100 * 1024)}-->` } } });
    expect([413, 422]).toContain(oversized.status);
    expect(() => readIdpMetadata(`${xml}<!--${'x'.repeat(100 * 1024)}-->`)).toThrow(/larger than 100 KB/);
    expect(await refusedWith({ metadataXml: '<EntityDescriptor' })).toMatch(/well-formed/);
    expect(await refusedWith({ entityId: 'x', ssoUrl: idpValues.ssoUrl, certificates: ['not a certificate'] })).toMatch(/certificate/);
    await expect(fetchIdpMetadata(idp.metadataUrl(), false)).rejects.toThrow(SamlProblem);
    await expect(fetchIdpMetadata(idp.metadataUrl(), false)).rejects.toThrow(/https|loopback|private/);
  });

  it('tests a connection (the mapped profile in lastTest, no user made), then signs a new employee in: JIT with the default role, the session, the event', async () => {
    const connection = await enabledConnection(undefined, { defaultRole: 'admin' });
    const tested = await owner.api('GET', `/sso-connections/${connection.id}`);
    expect(tested.body.data.lastTest).toMatchObject({ ok: true, profile: { email: expect.stringMatching(/^tester-/) } });
    expect((await asOwner(`SELECT count(*)::int AS n FROM "User" WHERE "email" = $1`, [tested.body.data.lastTest.profile.email])).rows[0]).toEqual({ n: 0 });

    const email = address('employee');
    const { answer, session } = await signIn(connection, { user: { nameId: email, email, name: 'Employee One' } });
    expect(answer.status).toBe(303);
    expect(answer.headers.get('location')).toBe(backend.running.config.mail.appUrl);
    const user = await userOfSession(session);
    expect(user.email).toBe(email);
    const rows = await asOwner(
      `SELECT m."role", s."authMethod", s."ssoConnectionId", u."email_verified", u."name" FROM "member" m JOIN "session" s ON s."userId" = m."userId" JOIN "User" u ON u."id" = m."userId" WHERE m."userId" = $1 AND m."organizationId" = $2`,
      [user.id, owner.organizationId],
    );
    expect(rows.rows).toEqual([{ role: 'admin', authMethod: 'sso', ssoConnectionId: connection.id, email_verified: true, name: 'Employee One' }]);
    const event = await asOwner(`SELECT "data" FROM "authstrap_event" WHERE "type" = 'session.signed_in' AND "userId" = $1`, [user.id]);
    expect(event.rows[0]).toMatchObject({ data: { method: 'sso', protocol: 'saml', connectionId: connection.id, connectionName: connection.name } });
    // The second sign-in is the same user, through the identity.
    const again = await signIn(connection, { user: { nameId: email, email } });
    expect((await userOfSession(again.session)).id).toBe(user.id);
  });

  it('records a failing test in lastTest (why, no user) and keeps the connection from being enabled', async () => {
    const connection = await createConnection();
    const { walker, form } = await startAt(`${backend.url}/sso-connections/${connection.id}/test`, { user: { nameId: address('tester'), email: address('tester') }, key: 'evil' }, browser(), {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId },
    });
    const landed = await post(walker, form);
    expect(landed.headers.get('location')).toBe(`${backend.running.config.mail.appUrl}/settings/sso/${connection.id}?test=done`);
    const tested = await owner.api('GET', `/sso-connections/${connection.id}`);
    expect(tested.body.data).toMatchObject({ tested: false, lastTest: { ok: false, error: expect.stringMatching(/signature/i) } });
    expect((await owner.api('POST', `/sso-connections/${connection.id}/enable`)).body.error.code).toBe('NOT_TESTED');
  });

  it("gives an app a one-time code at the ACS, which it exchanges with its PKCE verifier for a session", async () => {
    const connection = await enabledConnection();
    const email = address('app');
    const verifier = randomBytes(32).toString('base64url');
    const codeChallenge = createHash('sha256').update(verifier).digest('base64url');
    const start = { connectionId: connection.id, client: 'app', codeChallenge, returnTo: 'myapp://sso-done' };
    const { walker, form } = await startAt(`${backend.url}/api/auth/sso/start`, { user: { nameId: email, email } }, browser(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(start) });
    const landed = await post(walker, form);
    const target = new URL(landed.headers.get('location')!);
    expect(target.protocol).toBe('myapp:');
    const exchanged = await apiClient(backend.url)('POST', '/api/auth/sso/token', { body: { code: target.searchParams.get('code'), codeVerifier: verifier } });
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
    expect((await userOfSession(exchanged.body.data.token)).email).toBe(email);
    const events = await asOwner(`SELECT "data" FROM "authstrap_event" WHERE "type" = 'session.signed_in' AND "userId" = $1 AND "data"->>'client' = 'app'`, [exchanged.body.data.user.id]);
    expect(events.rows).toEqual([{ data: expect.objectContaining({ protocol: 'saml', client: 'app' }) }]);
  });

  it('signs AuthnRequests when the connection says so (its certificate then in the SP metadata)', async () => {
    const connection = await enabledConnection(undefined, { signAuthnRequests: true });
    expect(await (await fetch(connection.serviceProvider.metadataUrl)).text()).toContain('AuthnRequestsSigned="true"');
    const email = address('signed');
    const { session } = await signIn(connection, { user: { nameId: email, email } });
    expect((await userOfSession(session)).email).toBe(email);
    expect(await idp.lastRequest()).toMatchObject({ signed: true, issuer: connection.serviceProvider.entityId, acs: connection.serviceProvider.acsUrl });
  });

  it('rolls the IdP certificate over without downtime: both keys sign in while both are listed, the old one is refused once removed', async () => {
    const connection = await enabledConnection({ metadataUrl: idp.metadataUrl(['a']) });
    const email = address('rollover');
    const user = { nameId: email, email };
    expect((await userOfSession((await signIn(connection, { user, key: 'a' })).session)).email).toBe(email);
    const early = await signIn(connection, { user, key: 'b' });
    expectRefused(early.answer, early.session);

    const both = await owner.api('PATCH', `/sso-connections/${connection.id}`, { body: { saml: { metadataUrl: idp.metadataUrl(['a', 'b']) } } });
    expect(both.status, JSON.stringify(both.body)).toBe(200);
    expect(both.body.data).toMatchObject({ enabled: true });
    expect(both.body.data.certificates).toHaveLength(2);
    expect((await userOfSession((await signIn(connection, { user, key: 'b' })).session)).email).toBe(email);
    expect((await userOfSession((await signIn(connection, { user, key: 'a' })).session)).email).toBe(email);

    const newOnly = await owner.api('PATCH', `/sso-connections/${connection.id}`, { body: { saml: { metadataUrl: idp.metadataUrl(['b']) } } });
    expect(newOnly.body.data.certificates).toHaveLength(1);
    const late = await signIn(connection, { user, key: 'a' });
    expectRefused(late.answer, late.session);
    expect((await userOfSession((await signIn(connection, { user, key: 'b' })).session)).email).toBe(email);
  });

  it("reads the IdP's metadata again from its URL (a key rollover at the same address) when refreshed; an uploaded IdP has nothing to refresh from", async () => {
    // The IdP publishes its metadata at one address whose content it changes: a loopback server
    // that serves the real IdP's metadata for the keys the test says.
    let keys: ('a' | 'b')[] = ['a'];
    const publisher = http.createServer((_req, res) => {
      void fetch(idp.metadataUrl(keys)).then(async (answer) => res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(await answer.text()));
    });
    await new Promise<void>((resolve) => publisher.listen(0, '127.0.0.1', resolve));
    try {
      const connection = await enabledConnection({ metadataUrl: `http://127.0.0.1:${(publisher.address() as AddressInfo).port}/idp/metadata` });
      const email = address('refresh');
      const user = { nameId: email, email };
      const early = await signIn(connection, { user, key: 'b' });
      expectRefused(early.answer, early.session);

      keys = ['a', 'b'];
      const refreshed = await owner.api('POST', `/sso-connections/${connection.id}/refresh`);
      expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
      expect(refreshed.body.data).toMatchObject({ enabled: true });
      expect(refreshed.body.data.certificates).toHaveLength(2);
      expect((await userOfSession((await signIn(connection, { user, key: 'b' })).session)).email).toBe(email);
      const recorded = (await owner.api('GET', '/audit-events?type=sso_connection.updated&limit=100')).body.data as { entityId: string; data: { changedFields: string[] } }[];
      expect(recorded.find((event) => event.entityId === connection.id)?.data.changedFields).toEqual(['saml.metadata']);

      const uploaded = await createConnection({ metadataXml: await (await fetch(idp.metadataUrl(['a']))).text() });
      const nothingToRead = await owner.api('POST', `/sso-connections/${uploaded.id}/refresh`);
      expect(nothingToRead.status).toBe(409);
      expect(nothingToRead.body.error.code).toBe('NO_METADATA_URL');
    } finally {
      await new Promise((resolve) => publisher.close(resolve));
    }
  });

  it('decrypts an encrypted assertion with the SP key', async () => {
    const connection = await enabledConnection();
    const email = address('encrypted');
    const { form, session } = await signIn(connection, { user: { nameId: email, email }, encrypt: true });
    const xml = Buffer.from(form.SAMLResponse, 'base64').toString('utf8');
    expect(xml).toContain('EncryptedAssertion');
    expect(xml).not.toContain(email);
    expect((await userOfSession(session)).email).toBe(email);
  });

  it("refuses an IdP-initiated response unless the connection allows it; then it lands on APP_URL, whatever the IdP's RelayState", async () => {
    const connection = await enabledConnection();
    const email = address('portal');
    const walker = browser();
    const refused = await post(walker, await idp.idpInitiated(connection.serviceProvider.entityId, { user: { nameId: email, email } }));
    expectRefused(refused, walker.cookie(new URL(backend.url).origin, 'session'), 'SSO_IDP_INITIATED_NOT_ALLOWED');
    const allowed = await owner.api('PATCH', `/sso-connections/${connection.id}`, { body: { allowIdpInitiated: true } });
    expect(allowed.body.data).toMatchObject({ allowIdpInitiated: true, enabled: true });
    const form = await idp.idpInitiated(connection.serviceProvider.entityId, { user: { nameId: email, email } });
    const landed = await post(walker, { ...form, RelayState: 'https://evil.example/phish' });
    expect(landed.headers.get('location')).toBe(backend.running.config.mail.appUrl);
    expect((await userOfSession(walker.cookie(new URL(backend.url).origin, 'session'))).email).toBe(email);
  });

  describe('attacks, each made from a real signed response of the IdP', () => {
    let connection: Connection;
    let victim: { id: string; email: string };
    let mallory: SamlUser;

    beforeAll(async () => {
      // IdP-initiated allowed: an attacker's response needs no flow, and the untouched one signs in after the tampered one is refused.
      connection = await enabledConnection(undefined, { allowIdpInitiated: true });
      const email = address('victim');
      const { session } = await signIn(connection, { user: { nameId: email, email } });
      victim = await userOfSession(session);
      const malloryEmail = address('mallory');
      mallory = { nameId: malloryEmail, email: malloryEmail };
    });

    /** Mallory's real response, tampered: refused with no session; the untouched response then signs Mallory (not the victim) in. */
    const refusedThenControl = async (options: Partial<ResponseOptions>, change: (document: Document) => void, layers: { nodeSamlAlone?: boolean } = {}) => {
      const real = await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, ...options });
      const walker = browser();
      const forged = tampered(real, change);
      const answer = await post(walker, forged);
      expectRefused(answer, walker.cookie(new URL(backend.url).origin, 'session'));
      if (layers.nodeSamlAlone) {
        // Defence in depth: node-saml refuses it too without the algorithm policy in front (which refuses every wrapping shape with two assertions).
        const settings = await settingsOf(connection);
        await expect(verifyResponse(settings, forged.SAMLResponse, null)).rejects.toThrow(SamlProblem);
        await expect(verifyResponse(settings, real.SAMLResponse, null)).resolves.toMatchObject({ claims: { nameID: mallory.nameId } });
      }
      const control = browser();
      await post(control, real);
      const user = await userOfSession(control.cookie(new URL(backend.url).origin, 'session'));
      expect(user.email).toBe(mallory.email);
      expect(user.id).not.toBe(victim.id);
    };

    /** The connection's service provider settings, as the ACS makes them. */
    const settingsOf = async (of: Connection) => {
      const row = (await asOwner(`SELECT ${connectionColumns} FROM "authstrap_sso_connection" WHERE "id" = $1`, [of.id])).rows[0] as unknown as ConnectionRow;
      const certificates = (await asOwner(`SELECT ${certificateColumns} FROM "authstrap_sso_certificate" WHERE "connectionId" = $1`, [of.id])).rows as unknown as CertificateRow[];
      return samlSettingsOf(row, certificates, connectionSeal(authSecret), backend.running.config);
    };

    /** An unsigned copy of the signed Response with the victim's assertion becomes the document; `place` puts the original (signed) Response in it. */
    const evilResponse = (document: Document, place: (evil: Element, signature: Element, original: Element) => void) => {
      const original = document.documentElement;
      const evil = original.cloneNode(true) as Element;
      evil.setAttribute('ID', '_evilresponse');
      evil.replaceChild(evilAssertion(document, victim.email), one(evil, assertionNs, 'Assertion'));
      document.removeChild(original);
      place(evil, childOf(evil, dsigNs, 'Signature'), original);
      document.appendChild(evil);
    };

    // The eight XML signature wrapping shapes of SAMLRaider: the signed part left intact, an unsigned part the victim's.
    it('XSW1: an unsigned copy of the signed Response wraps it, the original inside its Signature', async () => {
      await refusedThenControl({ signResponse: true }, (document) => evilResponse(document, (evil, signature, original) => signature.appendChild(original)), { nodeSamlAlone: true });
    });
    it('XSW2: an unsigned copy of the signed Response, the original beside its Signature', async () => {
      await refusedThenControl({ signResponse: true }, (document) => evilResponse(document, (evil, signature, original) => evil.insertBefore(original, signature)), { nodeSamlAlone: true });
    });
    it("XSW3: the victim's assertion before the signed one", async () => {
      await refusedThenControl({}, (document) => {
        const signed = one(document, assertionNs, 'Assertion');
        document.documentElement.insertBefore(evilAssertion(document, victim.email), signed);
      }, { nodeSamlAlone: true });
    });
    it("XSW4: the victim's assertion wraps the signed one", async () => {
      await refusedThenControl({}, (document) => {
        const signed = one(document, assertionNs, 'Assertion');
        const evil = evilAssertion(document, victim.email);
        document.documentElement.replaceChild(evil, signed);
        evil.appendChild(signed);
      }, { nodeSamlAlone: true });
    });
    it("XSW5: the victim's assertion carries the signature, the signed one appended unsigned", async () => {
      await refusedThenControl({}, (document) => {
        const signed = one(document, assertionNs, 'Assertion');
        const evil = evilAssertion(document, victim.email);
        const signature = childOf(signed, dsigNs, 'Signature');
        evil.insertBefore(signature, one(evil, assertionNs, 'Subject'));
        document.documentElement.replaceChild(evil, signed);
        document.documentElement.appendChild(signed);
      }, { nodeSamlAlone: true });
    });
    it("XSW6: the victim's assertion carries the signature, the signed assertion inside it", async () => {
      await refusedThenControl({}, (document) => {
        const signed = one(document, assertionNs, 'Assertion');
        const evil = evilAssertion(document, victim.email);
        const signature = childOf(signed, dsigNs, 'Signature').cloneNode(true) as Element;
        evil.insertBefore(signature, one(evil, assertionNs, 'Subject'));
        document.documentElement.replaceChild(evil, signed);
        signature.appendChild(signed);
      }, { nodeSamlAlone: true });
    });
    it("XSW7: the signed assertion hidden in an Extensions element, the victim's in its place", async () => {
      await refusedThenControl({}, (document) => {
        const signed = one(document, assertionNs, 'Assertion');
        const evil = evilAssertion(document, victim.email);
        const extensions = document.createElementNS(protocolNs, 'samlp:Extensions');
        document.documentElement.replaceChild(evil, signed);
        extensions.appendChild(signed);
        document.documentElement.insertBefore(extensions, evil);
      }, { nodeSamlAlone: true });
    });
    it("XSW8: the signed assertion inside an Object of the victim's assertion's signature", async () => {
      await refusedThenControl({}, (document) => {
        const signed = one(document, assertionNs, 'Assertion');
        const evil = evilAssertion(document, victim.email);
        const signature = childOf(signed, dsigNs, 'Signature').cloneNode(true) as Element;
        const object = document.createElementNS(dsigNs, 'ds:Object');
        signature.appendChild(object);
        evil.insertBefore(signature, one(evil, assertionNs, 'Subject'));
        document.documentElement.replaceChild(evil, signed);
        object.appendChild(signed);
      }, { nodeSamlAlone: true });
    });

    it("a comment inside the NameID: the whole signed value is the subject, never the part before the comment (the victim's)", async () => {
      // Mallory's IdP account is named like the victim plus a suffix; a comment changes no digest (exclusive c14n drops comments).
      const suffixed = { nameId: `${victim.email}.evil.test`, email: address('mallory-comment') };
      const real = await idp.idpInitiated(connection.serviceProvider.entityId, { user: suffixed });
      const walker = browser();
      await post(
        walker,
        tampered(real, (document) => {
          const nameId = one(document, assertionNs, 'NameID');
          nameId.textContent = victim.email;
          nameId.appendChild(document.createComment(''));
          nameId.appendChild(document.createTextNode('.evil.test'));
        }),
      );
      const session = walker.cookie(new URL(backend.url).origin, 'session');
      // Signed in as the account the IdP asserted (its own address), or refused: never the victim.
      if (session) {
        const user = await userOfSession(session);
        expect(user.id).not.toBe(victim.id);
        expect(user.email).toBe(suffixed.email);
        const identity = await asOwner(`SELECT "subject" FROM "authstrap_sso_identity" WHERE "userId" = $1`, [user.id]);
        expect(identity.rows).toEqual([{ subject: suffixed.nameId }]);
      }
      const victimIdentity = await asOwner(`SELECT "userId" FROM "authstrap_sso_identity" WHERE "subject" = $1 AND "connectionId" = $2`, [victim.email, connection.id]);
      expect(victimIdentity.rows).toEqual([{ userId: victim.id }]);
    });

    it('a signature over several references is refused', async () => {
      await refusedThenControl({}, (document) => {
        const reference = one(document, dsigNs, 'Reference');
        const second = reference.cloneNode(true) as Element;
        second.setAttribute('URI', '#_other');
        reference.parentNode!.appendChild(second);
      });
    });

    it('a certificate in KeyInfo is ignored: an assertion signed by a key the connection does not list is refused', async () => {
      const walker = browser();
      const form = await idp.idpInitiated(connection.serviceProvider.entityId, { user: { nameId: victim.email, email: victim.email }, key: 'evil' });
      expect(Buffer.from(form.SAMLResponse, 'base64').toString('utf8')).toContain('X509Certificate');
      expectRefused(await post(walker, form), walker.cookie(new URL(backend.url).origin, 'session'));
      const control = browser();
      await post(control, await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, key: 'a' }));
      expect((await userOfSession(control.cookie(new URL(backend.url).origin, 'session'))).email).toBe(mallory.email);
    });

    it('SHA-1 signatures are refused by the algorithm policy, inside an encrypted assertion too', async () => {
      const plain = await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, sha1: true });
      expect(Buffer.from(plain.SAMLResponse, 'base64').toString('utf8')).toContain('xmldsig#rsa-sha1');
      const encrypted = await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, sha1: true, encrypt: true });
      expect(Buffer.from(encrypted.SAMLResponse, 'base64').toString('utf8')).not.toContain('xmldsig#rsa-sha1');
      for (const form of [plain, encrypted]) {
        const walker = browser();
        expectRefused(await post(walker, form), walker.cookie(new URL(backend.url).origin, 'session'));
      }
      const control = browser();
      await post(control, await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, encrypt: true }));
      expect((await userOfSession(control.cookie(new URL(backend.url).origin, 'session'))).email).toBe(mallory.email);
    });

    it('an unsigned assertion is refused, even in a signed response', async () => {
      for (const options of [{ signAssertion: false, signResponse: true }, { signAssertion: false, signResponse: false }]) {
        const walker = browser();
        expectRefused(await post(walker, await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, ...options })), walker.cookie(new URL(backend.url).origin, 'session'));
      }
    });

    it(`a replayed assertion is refused${kind === 'postgres' ? ' on a second backend instance' : ''}`, async () => {
      const form = await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory });
      const first = browser();
      await post(first, form);
      expect((await userOfSession(first.cookie(new URL(backend.url).origin, 'session'))).email).toBe(mallory.email);
      // The embedded database belongs to one process: there the replay goes to the same instance.
      const second = kind === 'postgres' ? await startBackend(kind, { AUTH_URL: backend.running.config.authUrl, SSO_ALLOW_PRIVATE_ADDRESSES: 'true', DATABASE_URL: backend.running.config.databaseUrl! }) : undefined;
      try {
        const replayer = browser();
        const target = second ? `${second.url}/api/auth/sso/${connection.id}/saml/acs` : form.action;
        const answer = await replayer.request(target, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ SAMLResponse: form.SAMLResponse }).toString() });
        expectRefused(answer, replayer.cookie(new URL(target).origin, 'session'));
      } finally {
        await second?.stop();
      }
      const remembered = await asOwner(`SELECT "expiresAt" FROM "authstrap_saml_assertion" WHERE "connectionId" = $1`, [connection.id]);
      expect(remembered.rows.length).toBeGreaterThan(0);
    });

    it('a response for another audience is refused', async () => {
      const walker = browser();
      expectRefused(await post(walker, await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, audience: 'https://another-sp.example/metadata' })), walker.cookie(new URL(backend.url).origin, 'session'));
    });

    it("a response for another ACS (its Destination and the assertion's Recipient) is refused, and so is a Destination changed in transit", async () => {
      const walker = browser();
      const other = await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, destination: `${backend.url}/api/auth/sso/${crypto.randomUUID()}/saml/acs` });
      expectRefused(await post(walker, { ...other, action: connection.serviceProvider.acsUrl }), walker.cookie(new URL(backend.url).origin, 'session'));
      await refusedThenControl({}, (document) => document.documentElement.setAttribute('Destination', 'https://another-sp.example/acs'));
    });

    it("an assertion signed with the trusted key but issued in another IdP entity's name is refused (a multi-tenant IdP's other tenant)", async () => {
      const walker = browser();
      const form = await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, issuer: 'https://another-tenant.idp.example/metadata' });
      expect(Buffer.from(form.SAMLResponse, 'base64').toString('utf8')).toContain('another-tenant.idp.example');
      expectRefused(await post(walker, form), walker.cookie(new URL(backend.url).origin, 'session'));
    });

    it('an expired assertion is refused', async () => {
      const walker = browser();
      expectRefused(await post(walker, await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, expired: true })), walker.cookie(new URL(backend.url).origin, 'session'));
    });

    it("a response to another sign-in's request (a foreign InResponseTo) is refused", async () => {
      const spOnly = await enabledConnection();
      // The first sign-in's request, left unanswered.
      await formFor(spOnly, { user: mallory });
      const foreign = (await idp.lastRequest()).id;
      const { walker, form } = await formFor(spOnly, { user: mallory, inResponseTo: foreign });
      expectRefused(await post(walker, form), walker.cookie(new URL(backend.url).origin, 'session'));
      // Without a flow, on the connection that takes IdP-initiated responses: an answer to a request nobody here made.
      const unsolicited = browser();
      const answered = await idp.idpInitiated(connection.serviceProvider.entityId, { user: mallory, inResponseTo: foreign });
      expectRefused(await post(unsolicited, answered), unsolicited.cookie(new URL(backend.url).origin, 'session'));
    });
  });

  describe('bad input', () => {
    let connection: Connection;
    beforeAll(async () => {
      connection = await enabledConnection();
    });
    const acs = () => connection.serviceProvider.acsUrl;
    const postRaw = (body: string) => fetch(acs(), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, redirect: 'manual' });

    it('malformed base64, malformed XML, a DOCTYPE, a response over 256 KB: a redirect with SSO_FAILED; a body over 512 KB: 413; and a sign-in after them works', async () => {
      const users = (await asOwner(`SELECT count(*)::int AS n FROM "User"`)).rows[0];
      const encoded = (xml: string) => new URLSearchParams({ SAMLResponse: Buffer.from(xml).toString('base64') }).toString();
      for (const body of [
        'SAMLResponse=%%%not-base64%%%',
        encoded('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"'),
        encoded('<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">&x;</samlp:Response>'),
        encoded(`<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"><!--${'x'.repeat(300 * 1024)}--></samlp:Response>`),
        '',
      ]) {
        const answer = await postRaw(body);
        expect(answer.status).toBe(303);
        expect(new URL(answer.headers.get('location')!).searchParams.get('error')).toMatch(/^SSO_/);
      }
      const huge = await postRaw(`SAMLResponse=${'A'.repeat(600 * 1024)}`);
      expect(huge.status).toBe(413);
      expect(await huge.json()).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
      expect((await asOwner(`SELECT count(*)::int AS n FROM "User"`)).rows[0]).toEqual(users);
      const email = address('after');
      expect((await userOfSession((await signIn(connection, { user: { nameId: email, email } })).session)).email).toBe(email);
    });
  });
});
