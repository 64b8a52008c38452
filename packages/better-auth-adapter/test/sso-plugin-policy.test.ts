import { sso } from '@better-auth/sso';
import { betterAuth, type BetterAuthOptions } from 'better-auth';
import { organization } from 'better-auth/plugins';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedOrigin, apiClient, authSecret, databaseKinds, serviceApiKey, signUp } from '../../../examples/saas-backend/test/support/backend.js';
import { startReceiver, type Receiver } from '../../../examples/saas-backend/test/support/webhook-receiver.js';
import { authstrapAdapter, authstrapPassword, ssoActiveOrganization } from '../src/index.js';
import { collectionPathOf } from '../src/models.js';
import { schemaFollowingBackend } from './support/schema-following-backend.js';
import { startSsoStage } from './support/sso-plugin.js';

/**
 * The organization's policy on Better Auth's `sso` plugin (docs/sso.md, "Which path to use when"):
 * the plugin signs people in through the organization's identity provider (OIDC; SAML in the last
 * two tests) in the frontend's server, but the user, account, session and membership it makes are
 * rows of the backend, and the backend's sign-in rule judges the session (docs/enterprise-identity.md, 3.2 and section 7). So an address
 * that must use single sign-on signs in through the enforcing organization's provider only (not by
 * password, not through a provider someone else registered for its domain), and a user the
 * platform's operators banned or the organization's directory deprovisioned gets no session and no
 * membership through the plugin either. The verified domain and the policy are rows seeded by SQL
 * (their routes need the backend's own connection); the ban and the suspension come from their routes.
 */
const password = 'correct horse battery';

describe.each(databaseKinds)("the organization's policy on Better Auth's sso plugin, %s database", (kind) => {
  // Webhooks to a receiver on loopback, delivered at once.
  const backend = schemaFollowingBackend(kind, { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_MS: '50', OUTBOX_POLL_MS: '50' }, { inProcess: true });
  let receiver: Receiver;
  let stage: Awaited<ReturnType<typeof startSsoStage>>;
  let auth: ReturnType<typeof makeAuth>;
  const domain = `acme-sso-${kind}.example`;
  const at = (name: string) => `${name}@${domain}`;
  const providerId = `acme-${kind}`;
  let owner: { id: string; cookie: string };
  let organizationId: string;
  let slug: string;

  const plugins = [organization(), sso({ organizationProvisioning: { defaultRole: 'member' } }), ssoActiveOrganization()];
  const makeAuth = () =>
    betterAuth({
      baseURL: stage.appUrl,
      trustedOrigins: [...stage.idpOrigins, allowedOrigin],
      secret: authSecret,
      database: authstrapAdapter({ baseUrl: backend.url!, serviceKey: serviceApiKey, personalOrganization: false }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      plugins,
      logger: { disabled: true },
    });

  const asOwner = (sql: string, params: unknown[] = []) => backend.running!.db.asOwner((tx) => tx.query(sql, params));
  const service = () => apiClient(backend.url!, { token: serviceApiKey });
  const requireSso = (on: boolean) =>
    asOwner(
      `INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince", "breakGlass") VALUES ($1, $2, now(), 'owners')
       ON CONFLICT ("organizationId") DO UPDATE SET "ssoRequired" = $2`,
      [organizationId, on],
    );
  const userIdOf = async (email: string) => (await asOwner(`SELECT "id" FROM "User" WHERE "email" = $1`, [email])).rows[0]?.id as string | undefined;
  const isMember = async (userId: string) => (await asOwner(`SELECT 1 FROM "member" WHERE "userId" = $1 AND "organizationId" = $2`, [userId, organizationId])).rows.length === 1;

  /** A Better Auth provider of `by`'s, for the organization's domain, its client registered at the identity provider. */
  async function registerProvider(by: { cookie: string }, id: string, organization?: string) {
    const client = stage.idp.newClient();
    const registered = await auth.api.registerSSOProvider({
      body: { providerId: id, issuer: stage.idp.issuer, domain, organizationId: organization, oidcConfig: { clientId: client.clientId, clientSecret: client.clientSecret, pkce: true } },
      headers: new Headers({ cookie: by.cookie }),
    });
    stage.idp.registerClient(client, registered.redirectURI);
  }

  /**
   * A Better Auth SAML provider of `by`'s for the organization's domain, from the IdP's metadata
   * (its signing certificate; signed assertions required); the plugin's SP metadata uploaded at the
   * IdP, as the organization's admin would. The IdP sends the address under its OID, as
   * Shibboleth-style IdPs do: the provider maps it.
   */
  async function registerSamlProvider(by: { cookie: string }, id: string, organization?: string) {
    const metadata = await (await fetch(stage.samlIdp.metadataUrl())).text();
    await auth.api.registerSSOProvider({
      body: {
        providerId: id,
        issuer: `${stage.appUrl}/saml/${id}`,
        domain,
        organizationId: organization,
        samlConfig: {
          entryPoint: `${stage.samlIdp.url}/sso`,
          idpMetadata: { metadata },
          wantAssertionsSigned: true,
          mapping: { email: 'urn:oid:0.9.2342.19200300.100.1.3', name: 'urn:oid:2.16.840.1.113730.3.1.241' },
        },
      },
      headers: new Headers({ cookie: by.cookie }),
    });
    const spMetadata = await fetch(`${stage.appUrl}/api/auth/sso/saml2/sp/metadata?${new URLSearchParams({ providerId: id })}`);
    expect(spMetadata.status).toBe(200);
    await stage.samlIdp.registerServiceProvider(await spMetadata.text());
  }

  /**
   * A SCIM directory of the organization, made by its owner; `deprovision(email)` is what its IdP
   * sends when the person leaves (the user provisioned, then deactivated), which suspends their
   * membership.
   */
  async function scimDirectory(name: string) {
    const directory = await apiClient(backend.url!, { organizationId })('POST', '/scim-directories', { body: { name }, headers: { cookie: owner.cookie, origin: allowedOrigin } });
    expect(directory.status, JSON.stringify(directory.body)).toBe(201);
    const scim = (method: string, path: string, body: unknown) =>
      fetch(`${backend.url}${new URL(directory.body.data.baseUrl).pathname}${path}`, {
        method,
        headers: { authorization: `Bearer ${directory.body.data.token}`, 'content-type': 'application/scim+json' },
        body: JSON.stringify(body),
      }).then(async (response) => ({ status: response.status, body: await response.json() }));
    return {
      async deprovision(email: string) {
        const resource = await scim('POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: email });
        expect(resource.status, JSON.stringify(resource.body)).toBe(201);
        const deactivate = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'Replace', path: 'active', value: false }] };
        expect((await scim('PATCH', `/Users/${resource.body.id}`, deactivate)).status).toBe(200);
      },
    };
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    stage = await startSsoStage();
    const options = { plugins, database: authstrapAdapter({ baseUrl: 'http://127.0.0.1:9', serviceKey: serviceApiKey }) } satisfies BetterAuthOptions;
    const { code } = await options.database(options).createSchema!(options, 'better-auth.schema.json');
    await backend.migrateTo(JSON.parse(code));
    auth = makeAuth();
    stage.serve(auth);

    const signedUp = await auth.api.signUpEmail({ body: { email: at('owner'), password, name: 'Owner' }, returnHeaders: true });
    owner = { id: signedUp.response.user.id, cookie: signedUp.headers.getSetCookie().map((line) => line.split(';')[0]!).join('; ') };
    const made = (await auth.api.createOrganization({ body: { name: 'Acme', slug: `acme-${kind}` }, headers: new Headers({ cookie: owner.cookie }) }))!;
    organizationId = made.id;
    slug = made.slug;
    await registerProvider(owner, providerId, organizationId);
    // A colleague who signed up by password before the organization required single sign-on.
    await auth.api.signUpEmail({ body: { email: at('resident'), password, name: 'Resident' } });
    await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, $2, 'verified', 'token', now())`, [organizationId, domain]);
  }, 240_000);
  afterAll(async () => {
    await backend.stop();
    await stage?.close();
    await receiver?.close();
  });

  it("signs an employee in through the organization's provider, active in that organization, while SSO is required, and refuses a password sign-in for the domain with the plugin present", async () => {
    await requireSso(true);
    const signedIn = await stage.signIn(`employee-${kind}`, at('employee'), { email: at('employee') });
    expect(signedIn.error).toBeNull();
    expect(signedIn.session!.user.email).toBe(at('employee'));
    // Made by the plugin, active in the provider's organization (ssoActiveOrganization), as the backend's own SSO sessions are.
    expect((await service()('GET', `/sessions/${signedIn.session!.session.id}`)).body.data).toMatchObject({ authMethod: 'better-auth:sso', activeOrganizationId: organizationId });
    // In the audit log as any sign-in, with how it was made.
    const recorded = await asOwner(`SELECT "data"->>'method' AS "method" FROM "authstrap_event" WHERE "entityId" = $1 AND "type" = 'session.signed_in'`, [signedIn.session!.session.id]);
    expect(recorded.rows).toEqual([{ method: 'better-auth:sso' }]);
    // Just in time: the provider's organization, with the plugin's default role.
    expect(await isMember(signedIn.session!.user.id)).toBe(true);

    const refused = await auth.api.signInEmail({ body: { email: at('resident'), password }, asResponse: true });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'SSO_REQUIRED', organization: slug, signInWith: `${allowedOrigin}/sign-in/sso?organization=${slug}` });
    // The owner keeps a password (break-glass), as on the backend's path.
    expect((await auth.api.signInEmail({ body: { email: at('owner'), password }, asResponse: true })).status).toBe(200);
  });

  it("records a refused password sign-in and a refused sign-up once each in the organization's audit log and its webhooks, though their transactions roll back", async () => {
    await requireSso(false);
    const asTheOwner = apiClient(backend.url!, { organizationId });
    const ownersHeaders = { cookie: owner.cookie, origin: allowedOrigin };
    const endpoint = await asTheOwner('POST', '/webhook-endpoints', { body: { url: receiver.url, eventTypes: ['session.sign_in_refused'] }, headers: ownersHeaders });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    receiver.state.secret = endpoint.body.data.secret;
    const colleague = at('password-colleague');
    await auth.api.signUpEmail({ body: { email: colleague, password, name: 'Colleague' } });
    await requireSso(true);

    expect((await auth.api.signInEmail({ body: { email: colleague, password }, asResponse: true })).status).toBe(403);
    const newcomer = at('newcomer');
    const signUp = await auth.api.signUpEmail({ body: { email: newcomer, password, name: 'Newcomer' }, asResponse: true });
    expect(signUp.status).toBe(403);
    expect(await signUp.json()).toMatchObject({ code: 'SSO_REQUIRED', organization: slug });
    // The sign-up's user was rolled back with its password; its refusal is kept.
    expect(await userIdOf(newcomer)).toBeUndefined();

    const listed = await asTheOwner('GET', '/audit-events?type=session.sign_in_refused&limit=100', { headers: ownersHeaders });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const refusalsOf = (email: string) =>
      (listed.body.data as { userId: string | null; data: { email: string } }[]).filter((event) => event.data.email === email).map(({ userId, data }) => ({ userId, data }));
    expect(refusalsOf(colleague)).toEqual([{ userId: await userIdOf(colleague), data: { email: colleague, method: 'better-auth:password', code: 'SSO_REQUIRED' } }]);
    expect(refusalsOf(newcomer)).toEqual([{ userId: null, data: { email: newcomer, method: 'better-auth:sign-up', code: 'SSO_REQUIRED' } }]);

    const delivered = () => receiver.received.flatMap(({ verified }) => (verified ? [`${verified.type} ${verified.data.email} ${verified.data.method}`] : []));
    await expect.poll(() => delivered().sort(), { timeout: 10_000 }).toEqual([
      `session.sign_in_refused ${newcomer} better-auth:sign-up`,
      `session.sign_in_refused ${colleague} better-auth:password`,
    ]);
    // Every delivery was of one event, once.
    expect(new Set(receiver.verifiedIds()).size).toBe(receiver.received.length);
  });

  it("refuses a sign-in through a provider someone else registered for the organization's domain: nobody is made, nobody is signed in", async () => {
    await requireSso(true);
    // The plugin lets any signed-in user register a provider for any domain, with no organization or with their own.
    const signedUp = await auth.api.signUpEmail({ body: { email: `mallory-${kind}@elsewhere.example`, password, name: 'Mallory' }, returnHeaders: true });
    const mallory = { cookie: signedUp.headers.getSetCookie().map((line) => line.split(';')[0]!).join('; ') };
    const theirs = (await auth.api.createOrganization({ body: { name: 'Elsewhere', slug: `elsewhere-${kind}` }, headers: new Headers({ cookie: mallory.cookie }) }))!;
    await registerProvider(mallory, `rogue-${kind}`);
    await registerProvider(mallory, `rogue-org-${kind}`, theirs.id);
    expect((await service()('GET', `${collectionPathOf('ssoProvider')}?domain=${domain}`)).body.data).toHaveLength(3);

    for (const rogue of [`rogue-${kind}`, `rogue-org-${kind}`]) {
      const attempt = await stage.signIn(`victim-${rogue}`, at(`victim-${rogue}`), { providerId: rogue });
      expect(attempt).toMatchObject({ error: 'SSO_REQUIRED', landedOn: `${allowedOrigin}/sign-in`, session: null });
      expect(await userIdOf(at(`victim-${rogue}`))).toBeUndefined();
    }
    // The organization's own provider still signs the same person in.
    expect((await stage.signIn(`victim-${kind}`, at(`victim-rogue-${kind}`), { providerId })).session!.user.email).toBe(at(`victim-rogue-${kind}`));
  });

  it("refuses a user the platform's operators banned, through the organization's provider", async () => {
    await requireSso(true);
    const first = await stage.signIn(`banned-${kind}`, at('banned'), { providerId });
    const userId = first.session!.user.id;
    const support = await signUp(backend.url!, `support-${kind}@platform.example`);
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [support.user.id]);
    expect((await support.api('POST', `/api/operator/users/${userId}/ban`, { body: { reason: 'fraud' } })).status).toBe(200);
    // The session the plugin made before the ban is over too.
    expect(await auth.api.getSession({ headers: new Headers({ cookie: first.cookie }) })).toBeNull();

    expect(await stage.signIn(`banned-${kind}`, at('banned'), { providerId })).toMatchObject({ error: 'BANNED', session: null });
    expect((await support.api('POST', `/api/operator/users/${userId}/unban`)).status).toBe(200);
    expect((await stage.signIn(`banned-${kind}`, at('banned'), { providerId })).session!.user.id).toBe(userId);
  });

  it("refuses a user the organization's directory deprovisioned, inside its verified domain or outside it, gives them no membership back, and records it in that organization's audit log and webhooks only", async () => {
    await requireSso(false);
    const directory = await scimDirectory(`Okta ${kind}`);

    // One address the organization verified, one it did not (a contractor's own): both joined through the provider.
    for (const email of [at('leaver'), `contractor-${kind}@contractors.example`]) {
      const subject = `deprovisioned-${email}`;
      const joined = await stage.signIn(subject, email, { providerId });
      expect(await isMember(joined.session!.user.id)).toBe(true);
      await directory.deprovision(email);
      expect(await isMember(joined.session!.user.id)).toBe(false);

      const again = await stage.signIn(subject, email, { providerId });
      expect(again, email).toMatchObject({ error: 'DEPROVISIONED', session: null });
      // The plugin's provisioning never ran: the directory's suspension stands.
      expect(await isMember(joined.session!.user.id), email).toBe(false);
      // On the record once, in the audit log of the organization whose directory turned them off, and in no other.
      const recorded = await asOwner(`SELECT "organizationId", "userId", "data" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused' AND "data"->>'email' = $1`, [email]);
      expect(recorded.rows, email).toEqual([{ organizationId, userId: joined.session!.user.id, data: { email, method: 'better-auth:sso', code: 'DEPROVISIONED' } }]);
    }
    const listed = await apiClient(backend.url!, { organizationId })('GET', '/audit-events?type=session.sign_in_refused&limit=100', { headers: { cookie: owner.cookie, origin: allowedOrigin } });
    const deprovisioned = (listed.body.data as { data: { email: string; code: string } }[]).filter((event) => event.data.code === 'DEPROVISIONED').map((event) => event.data.email);
    expect(deprovisioned.sort()).toEqual([at('leaver'), `contractor-${kind}@contractors.example`].sort());
    // And at the organization's webhook endpoint (the refusals' test made it), once each.
    const delivered = () => receiver.received.flatMap(({ verified }) => (verified?.data.code === 'DEPROVISIONED' ? [`${verified.data.email} ${verified.data.method}`] : []));
    await expect.poll(() => delivered().sort(), { timeout: 10_000 }).toEqual([`${at('leaver')} better-auth:sso`, `contractor-${kind}@contractors.example better-auth:sso`].sort());
  });

  it("keeps an organization's provider, and its sign-in, when the admin who registered it is deleted", async () => {
    await requireSso(true);
    const signedUp = await auth.api.signUpEmail({ body: { email: `it-admin-${kind}@contractors.example`, password, name: 'IT admin' }, returnHeaders: true });
    const admin = { id: signedUp.response.user.id, cookie: signedUp.headers.getSetCookie().map((line) => line.split(';')[0]!).join('; ') };
    await auth.api.addMember({ body: { userId: admin.id, role: 'admin', organizationId } });
    const adminsProvider = `admin-registered-${kind}`;
    await registerProvider(admin, adminsProvider, organizationId);
    const providerRow = async () => (await service()('GET', `${collectionPathOf('ssoProvider')}?providerId=${adminsProvider}`)).body.data as { userId: string | null }[];
    expect(await providerRow()).toMatchObject([{ userId: admin.id }]);

    // Better Auth's deleteUser, as its adapter sends it.
    expect((await service()('DELETE', `${collectionPathOf('user')}/${admin.id}`)).status).toBe(204);
    expect(await userIdOf(`it-admin-${kind}@contractors.example`)).toBeUndefined();
    expect(await providerRow()).toMatchObject([{ userId: null }]);
    const signedIn = await stage.signIn(`after-admin-${kind}`, at('after-admin'), { providerId: adminsProvider });
    expect(signedIn.error).toBeNull();
    expect(signedIn.session!.user.email).toBe(at('after-admin'));
  });

  it("signs an employee in through the organization's SAML provider, active in that organization, while SSO is required; a SAML provider someone else registered signs nobody in", async () => {
    await requireSso(true);
    const samlProviderId = `acme-saml-${kind}`;
    await registerSamlProvider(owner, samlProviderId, organizationId);
    const email = at('saml-employee');
    const signedIn = await stage.signInWithSaml({ nameId: `saml-employee-${kind}`, email, name: 'Sam Employee' }, { providerId: samlProviderId });
    expect(signedIn.form.action).toBe(`${stage.appUrl}/api/auth/sso/saml2/sp/acs/${samlProviderId}`);
    expect(signedIn.error).toBeNull();
    expect(signedIn.landedOn).toBe(`${allowedOrigin}/dashboard`);
    expect(signedIn.session!.user).toMatchObject({ email, name: 'Sam Employee' });
    // Made by the plugin's ACS (better-auth:sso), active in the provider's organization (ssoActiveOrganization).
    expect((await service()('GET', `/sessions/${signedIn.session!.session.id}`)).body.data).toMatchObject({ authMethod: 'better-auth:sso', activeOrganizationId: organizationId });
    const recorded = await asOwner(`SELECT "data"->>'method' AS "method" FROM "authstrap_event" WHERE "entityId" = $1 AND "type" = 'session.signed_in'`, [signedIn.session!.session.id]);
    expect(recorded.rows).toEqual([{ method: 'better-auth:sso' }]);
    expect(await isMember(signedIn.session!.user.id)).toBe(true);
    // The account is the SAML provider's: what the rule's generated part allows a session by.
    expect((await asOwner(`SELECT "providerId" FROM "account" WHERE "userId" = $1`, [signedIn.session!.user.id])).rows).toEqual([{ providerId: samlProviderId }]);
    // The plugin keeps its AuthnRequest's ID and the assertion's as verification rows of the
    // backend; the first answer used the request's up, so the same response posted again is
    // refused before anything is made.
    const sessions = async () => (await asOwner(`SELECT count(*)::int AS n FROM "session" WHERE "userId" = $1`, [signedIn.session!.user.id])).rows[0]!.n;
    expect((await asOwner(`SELECT count(*)::int AS n FROM "verification" WHERE "identifier" LIKE 'saml-used-assertion:%'`)).rows[0]!.n).toBeGreaterThan(0);
    expect(await sessions()).toBe(1);
    expect(await stage.replaySaml(signedIn.form)).toMatchObject({ error: 'invalid_saml_response', session: null });
    expect(await sessions()).toBe(1);

    // Someone else's SAML provider for the domain: the IdP asserts the address, the rule refuses the session.
    const signedUp = await auth.api.signUpEmail({ body: { email: `eve-${kind}@elsewhere.example`, password, name: 'Eve' }, returnHeaders: true });
    const eve = { cookie: signedUp.headers.getSetCookie().map((line) => line.split(';')[0]!).join('; ') };
    await registerSamlProvider(eve, `rogue-saml-${kind}`);
    const victim = at('saml-victim');
    const attempt = await stage.signInWithSaml({ nameId: `saml-victim-${kind}`, email: victim }, { providerId: `rogue-saml-${kind}` });
    expect(attempt).toMatchObject({ error: 'SSO_REQUIRED', landedOn: `${allowedOrigin}/sign-in`, session: null });
    expect(await userIdOf(victim)).toBeUndefined();
    const refusals = await asOwner(`SELECT "organizationId", "data" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused' AND "data"->>'email' = $1`, [victim]);
    expect(refusals.rows).toEqual([{ organizationId, data: { email: victim, method: 'better-auth:sso', code: 'SSO_REQUIRED' } }]);
  });

  it("refuses through the organization's SAML provider a user its directory deprovisioned (on the record in its audit log, once) and one the operators banned (in no organization's)", async () => {
    await requireSso(true);
    const samlProviderId = `acme-saml-${kind}`;
    /** Where the refusals of `email` are on the record: organization, method and code. */
    const refusalsOf = async (email: string) =>
      (await asOwner(`SELECT "organizationId", "data"->>'method' AS "method", "data"->>'code' AS "code" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused' AND "data"->>'email' = $1`, [email])).rows;

    const leaver = { nameId: `saml-leaver-${kind}`, email: at('saml-leaver') };
    const joined = await stage.signInWithSaml(leaver, { providerId: samlProviderId });
    expect(await isMember(joined.session!.user.id)).toBe(true);
    await (await scimDirectory(`SAML directory ${kind}`)).deprovision(leaver.email);
    expect(await auth.api.getSession({ headers: new Headers({ cookie: joined.cookie }) })).toBeNull();
    expect(await stage.signInWithSaml(leaver, { providerId: samlProviderId })).toMatchObject({ error: 'DEPROVISIONED', session: null });
    expect(await isMember(joined.session!.user.id)).toBe(false);
    expect(await refusalsOf(leaver.email)).toEqual([{ organizationId, method: 'better-auth:sso', code: 'DEPROVISIONED' }]);

    const banned = { nameId: `saml-banned-${kind}`, email: at('saml-banned') };
    const first = await stage.signInWithSaml(banned, { providerId: samlProviderId });
    const support = await signUp(backend.url!, `saml-support-${kind}@platform.example`);
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [support.user.id]);
    expect((await support.api('POST', `/api/operator/users/${first.session!.user.id}/ban`, { body: { reason: 'fraud' } })).status).toBe(200);
    expect(await auth.api.getSession({ headers: new Headers({ cookie: first.cookie }) })).toBeNull();
    expect(await stage.signInWithSaml(banned, { providerId: samlProviderId })).toMatchObject({ error: 'BANNED', session: null });
    expect(await refusalsOf(banned.email)).toEqual([{ organizationId: null, method: 'better-auth:sso', code: 'BANNED' }]);
  });
});
