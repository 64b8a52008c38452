import { createHash, createPublicKey, randomBytes, randomUUID, type JsonWebKey } from 'node:crypto';
import { decodeJwt, importJWK, SignJWT, UnsecuredJWT, type JWK, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { discover, OidcProblem } from '../src/sso/oidc.js';
import { addMember, allowedOrigin, apiClient, databaseKinds, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { freePort } from './support/process.js';
import { startOidcProvider, TestBrowser, type TestOidcProvider } from './support/oidc-provider.js';

/**
 * Single sign-on with OIDC (docs/sso.md; docs/enterprise-identity.md, step 7), against a real
 * OpenID provider on loopback (oidc-provider): connections made, tested and enabled by an owner;
 * sign-in end to end with just-in-time provisioning and linking; an app's one-time code; the
 * organization's policy; and the attacks on the flow the backend must refuse.
 */

interface Connection {
  id: string;
  name: string;
  enabled: boolean;
  tested: boolean;
  clientSecretSet: boolean;
  defaultRole: string;
  lastTest: { ok: boolean; error?: string; profile?: Record<string, unknown> } | null;
  serviceProvider: { redirectUri: string; loginUrl: string };
}

const appRedirect = 'myapp://sso-done';

describe.each(databaseKinds)('single sign-on with OIDC on the %s database', (kind) => {
  let backend: TestBackend;
  let idp: TestOidcProvider;
  let owner: SignedUp;
  let admin: SignedUp;
  let member: SignedUp;
  let counter = 0;
  const domain = `acme-${kind}.example`;
  const address = (local: string) => `${local}-${++counter}@${domain}`;
  const appLanding = new URL(allowedOrigin).origin;

  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const verifyDomain = (organizationId: string, name: string) =>
    asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, $2, 'verified', 'token', now())`, [organizationId, name]);
  const browser = () => new TestBrowser([new URL(idp.issuer).origin, new URL(backend.url).origin]);

  /** An OIDC connection of `by`'s organization, its client registered at the provider. */
  const createConnection = async (by: SignedUp, options: { defaultRole?: 'member' | 'admin'; name?: string } = {}) => {
    const client = idp.newClient();
    const answer = await by.api('POST', '/sso-connections', {
      body: { name: options.name ?? `Okta ${++counter}`, protocol: 'oidc', preset: 'okta', oidc: { issuer: idp.issuer, clientId: client.clientId, clientSecret: client.clientSecret }, defaultRole: options.defaultRole },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    const connection = answer.body.data as Connection;
    idp.registerClient(client, connection.serviceProvider.redirectUri);
    return connection;
  };

  /** The owner's test sign-in through the connection, as `subject`: where the browser lands. */
  const testConnection = async (by: SignedUp, connection: Connection, subject: string) => {
    const walker = browser();
    const started = await walker.request(`${backend.url}/sso-connections/${connection.id}/test`, { method: 'POST', headers: { authorization: `Bearer ${by.token}`, 'x-organization-id': by.organizationId } });
    expect(started.status).toBe(200);
    idp.signInAs(subject);
    return walker.follow(((await started.json()) as { data: { url: string } }).data.url);
  };

  /** A tested and enabled connection. */
  const enabledConnection = async (by: SignedUp, options: { defaultRole?: 'member' | 'admin' } = {}) => {
    const connection = await createConnection(by, options);
    const tester = `tester-${++counter}`;
    idp.setAccount(tester, { email: address('tester') });
    await testConnection(by, connection, tester);
    const enabled = await by.api('POST', `/sso-connections/${connection.id}/enable`);
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    return enabled.body.data as Connection;
  };

  /** A browser sign-in started with `start` (POST /api/auth/sso/start's body) as `subject`. */
  const signInThroughIdp = async (start: Record<string, unknown>, subject: string, walker = browser()) => {
    const started = await walker.request(`${backend.url}/api/auth/sso/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(start) });
    expect(started.status, await started.clone().text()).toBe(200);
    idp.signInAs(subject);
    const landed = await walker.follow(((await started.json()) as { data: { url: string } }).data.url);
    return { walker, landed, session: walker.cookie(new URL(backend.url).origin, 'session') };
  };
  const sessionOf = async (token: string) => apiClient(backend.url)('GET', '/api/auth/get-session', { token });
  const errorOf = (location: string) => new URL(location).searchParams.get('error');

  beforeAll(async () => {
    idp = await startOidcProvider();
    // The identity provider sends the browser back to AUTH_URL: the backend's real address, so a port known before it starts.
    const port = await freePort();
    backend = await startBackend(kind, { PORT: String(port), AUTH_URL: `http://127.0.0.1:${port}`, SSO_ALLOW_PRIVATE_ADDRESSES: 'true', SSO_APP_REDIRECTS: appRedirect });
    owner = await signUp(backend.url, `owner@${domain}`);
    admin = await addMember(backend.url, owner, `admin-${kind}@admins.example`, 'admin');
    member = await addMember(backend.url, owner, `member-${kind}@members.example`, 'member');
    await verifyDomain(owner.organizationId, domain);
  }, 60_000);
  afterAll(async () => {
    await backend?.stop();
    await idp?.close();
  });

  it('adds a connection: discovery fetched, the secret sealed and never answered, the redirect URI to copy; owners and admins only', async () => {
    const connection = await createConnection(admin);
    expect(connection).toMatchObject({ enabled: false, tested: false, clientSecretSet: true, defaultRole: 'member' });
    expect(connection.serviceProvider.redirectUri).toBe(`${backend.running.config.authUrl}/api/auth/sso/${connection.id}/oidc/callback`);
    const listed = await owner.api('GET', '/sso-connections');
    expect(listed.body.data.map((one: Connection) => one.id)).toContain(connection.id);
    expect(JSON.stringify(listed.body)).not.toMatch(/oidcClientSecret|oidcMetadata"/);
    const stored = (await asOwner(`SELECT "oidcClientSecret" FROM "authstrap_sso_connection" WHERE "id" = $1`, [connection.id])).rows[0] as { oidcClientSecret: string };
    expect(stored.oidcClientSecret).toMatch(/^sealed:v1:/);

    expect((await member.api('GET', '/sso-connections')).status).toBe(403);
    expect((await member.api('POST', '/sso-connections', { body: { name: 'x', protocol: 'oidc', oidc: { issuer: idp.issuer, clientId: 'x', clientSecret: 'y' } } })).status).toBe(403);
    expect((await apiClient(backend.url)('GET', '/sso-connections', { token: serviceApiKey, organizationId: owner.organizationId })).status).toBe(403);
    // Another organization sees nothing of it.
    const stranger = await signUp(backend.url, `stranger-${kind}@elsewhere.example`);
    expect((await stranger.api('GET', `/sso-connections/${connection.id}`)).status).toBe(404);
  });

  it("reads the issuer's discovery again when refreshed (owners and admins only), on the record", async () => {
    const connection = await createConnection(owner);
    const before = (await asOwner(`SELECT "oidcMetadataFetchedAt" FROM "authstrap_sso_connection" WHERE "id" = $1`, [connection.id])).rows[0]!.oidcMetadataFetchedAt as Date;
    const member = await addMember(backend.url, owner, `refresher-${kind}@members.example`, 'member');
    expect((await member.api('POST', `/sso-connections/${connection.id}/refresh`)).status).toBe(403);
    const refreshed = await owner.api('POST', `/sso-connections/${connection.id}/refresh`);
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.data.id).toBe(connection.id);
    const after = (await asOwner(`SELECT "oidcMetadataFetchedAt" FROM "authstrap_sso_connection" WHERE "id" = $1`, [connection.id])).rows[0]!.oidcMetadataFetchedAt as Date;
    expect(after.getTime()).toBeGreaterThan(before.getTime());
    const recorded = (await owner.api('GET', '/audit-events?type=sso_connection.updated&limit=100')).body.data as { entityId: string; data: { changedFields: string[] } }[];
    expect(recorded.find((event) => event.entityId === connection.id)?.data.changedFields).toEqual(['oidc.metadata']);
    expect((await owner.api('POST', `/sso-connections/${randomUUID()}/refresh`)).status).toBe(404);
  });

  it('refuses an issuer whose discovery fails, naming the field', async () => {
    const answer = await owner.api('POST', '/sso-connections', { body: { name: 'Nowhere', protocol: 'oidc', oidc: { issuer: `${idp.issuer}/nowhere`, clientId: 'x', clientSecret: 'y' } } });
    expect(answer.status).toBe(422);
    expect(Object.keys(answer.body.error.details)).toEqual(['oidc.issuer']);
  });

  it('refuses loopback and private issuers without SSO_ALLOW_PRIVATE_ADDRESSES; production refuses to start with it', async () => {
    await expect(discover(idp.issuer, false)).rejects.toThrow(OidcProblem);
    await expect(discover(idp.issuer.replace('http:', 'https:'), false)).rejects.toThrow(/127\.0\.0\.1.*loopback, private/);
    await expect(discover('https://10.1.2.3', false)).rejects.toThrow(/private/);
    expect((await discover(idp.issuer, true)).issuer).toBe(idp.issuer);
    const production = { NODE_ENV: 'production', AUTH_SECRET: randomBytes(32).toString('base64'), DATABASE_URL: 'postgres://x@127.0.0.1/x' };
    expect(() => loadConfig({ ...production, SSO_ALLOW_PRIVATE_ADDRESSES: 'true' }, '.')).toThrow(ConfigError);
    expect(() => loadConfig({ ...production, SSO_ALLOW_PRIVATE_ADDRESSES: 'true' }, '.')).toThrow(/SSO_ALLOW_PRIVATE_ADDRESSES/);
  });

  it('enables a connection only after a passing test since its last change', async () => {
    const connection = await createConnection(owner);
    const early = await owner.api('POST', `/sso-connections/${connection.id}/enable`);
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('NOT_TESTED');

    const tester = `tester-${++counter}`;
    const testerAddress = address('tester');
    idp.setAccount(tester, { email: testerAddress, name: 'Tess Tester' });
    const landed = await testConnection(owner, connection, tester);
    expect(landed.location).toBe(`${appLanding}/settings/sso/${connection.id}?test=done`);
    const tested = (await owner.api('GET', `/sso-connections/${connection.id}`)).body.data as Connection;
    expect(tested.tested).toBe(true);
    expect(tested.lastTest).toMatchObject({ ok: true, profile: { subject: tester, email: testerAddress, name: 'Tess Tester' } });
    // A test makes no user.
    expect((await asOwner(`SELECT 1 FROM "User" WHERE "email" = $1`, [testerAddress])).rows).toHaveLength(0);

    // A change of what sign-in reads needs a new test.
    expect((await owner.api('PATCH', `/sso-connections/${connection.id}`, { body: { oidc: { scopes: 'openid email' } } })).body.data.tested).toBe(false);
    expect((await owner.api('POST', `/sso-connections/${connection.id}/enable`)).body.error.code).toBe('NOT_TESTED');
    await testConnection(owner, connection, tester);
    const enabled = await owner.api('POST', `/sso-connections/${connection.id}/enable`);
    expect(enabled.status).toBe(200);
    expect(enabled.body.data.enabled).toBe(true);
    // The name alone is no change of what sign-in reads.
    expect((await owner.api('PATCH', `/sso-connections/${connection.id}`, { body: { name: `Renamed ${++counter}` } })).body.data.tested).toBe(true);
    await owner.api('POST', `/sso-connections/${connection.id}/disable`);
  });

  describe('sign-in', () => {
    let connection: Connection;
    beforeAll(async () => {
      connection = await enabledConnection(owner, { defaultRole: 'admin' });
    });

    it('signs a new employee in by their address: a user made just in time, a membership with the default role, the session and the event', async () => {
      const subject = `employee-${++counter}`;
      const email = address('employee');
      idp.setAccount(subject, { email, name: 'Eve Employee' });
      const { landed, session } = await signInThroughIdp({ email, returnTo: '/dashboard' }, subject);
      expect(landed.location).toBe(`${appLanding}/dashboard`);
      expect(session).toBeDefined();
      const current = await sessionOf(session!);
      expect(current.status).toBe(200);
      expect(current.body.data.user).toMatchObject({ email, name: 'Eve Employee', email_verified: true });
      expect(current.body.data.session.activeOrganizationId).toBe(owner.organizationId);
      expect(current.body.data.organizations).toEqual([expect.objectContaining({ id: owner.organizationId, role: 'admin' })]);
      const row = (await asOwner(`SELECT "authMethod", "ssoConnectionId" FROM "session" WHERE "userId" = $1`, [current.body.data.user.id])).rows[0];
      expect(row).toEqual({ authMethod: 'sso', ssoConnectionId: connection.id });
      const events = (await owner.api('GET', '/audit-events?type=session.signed_in&limit=100')).body.data as { userId: string; data: Record<string, unknown> }[];
      expect(events.find((event) => event.userId === current.body.data.user.id)?.data).toEqual({ method: 'sso', protocol: 'oidc', connectionId: connection.id, connectionName: connection.name });

      // The same identity again: the same user, no second membership.
      const again = await signInThroughIdp({ organization: (await owner.api('GET', '/api/auth/get-session')).body.data.organizations[0].slug }, subject);
      expect((await sessionOf(again.session!)).body.data.user.id).toBe(current.body.data.user.id);
    });

    it("refuses a member the organization's directory suspended with DEPROVISIONED, on the record once, in that organization's audit log", async () => {
      const subject = `leaver-${++counter}`;
      const email = address('leaver');
      idp.setAccount(subject, { email });
      const first = await signInThroughIdp({ email }, subject);
      const userId = (await sessionOf(first.session!)).body.data.user.id as string;
      // What the directory's deactivation leaves: the membership moved to a suspension.
      await asOwner(
        `INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason")
         SELECT "id", "organizationId", "userId", "role", "createdAt", 'directory-inactive' FROM "member" WHERE "organizationId" = $1 AND "userId" = $2`,
        [owner.organizationId, userId],
      );
      await asOwner(`DELETE FROM "member" WHERE "organizationId" = $1 AND "userId" = $2`, [owner.organizationId, userId]);

      const refused = await signInThroughIdp({ email }, subject);
      expect(errorOf(refused.landed.location)).toBe('DEPROVISIONED');
      expect(refused.session).toBeUndefined();
      const refusals = (await owner.api('GET', '/audit-events?type=session.sign_in_refused&limit=100')).body.data as { userId: string; data: Record<string, unknown> }[];
      expect(refusals.filter((event) => event.data.email === email)).toEqual([expect.objectContaining({ userId, data: { email, method: 'sso', code: 'DEPROVISIONED' } })]);
      const everywhere = await asOwner(`SELECT "organizationId" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused' AND "data"->>'email' = $1`, [email]);
      expect(everywhere.rows).toEqual([{ organizationId: owner.organizationId }]);
    });

    it("a known identity's new address follows on the account only in a verified domain, and never onto another account's", async () => {
      const subject = `renamed-${++counter}`;
      const first = address('maiden');
      idp.setAccount(subject, { email: first });
      const signedIn = async () => (await sessionOf((await signInThroughIdp({ connectionId: connection.id }, subject)).session!)).body.data.user as { id: string; email: string; email_verified: boolean };
      const user = await signedIn();
      expect(user.email).toBe(first);

      // Renamed in the identity provider, in the organization's domain: the address follows, proven.
      const renamed = address('married');
      idp.setAccount(subject, { email: renamed });
      expect(await signedIn()).toMatchObject({ id: user.id, email: renamed, email_verified: true });
      // On the person's own record (their security page), not the organization's log.
      const changes = await asOwner(`SELECT "data" FROM "authstrap_event" WHERE "type" = 'user.email_changed' AND "userId" = $1`, [user.id]);
      expect(changes.rows.map((row) => row.data)).toEqual([{ method: 'sso' }]);

      // An address outside the verified domains signs the same person in, and changes nothing.
      idp.setAccount(subject, { email: `elsewhere-${counter}-${kind}@gmail.example` });
      expect(await signedIn()).toMatchObject({ id: user.id, email: renamed });

      // Another account's address: neither is merged, nor taken over.
      const other = await signUp(backend.url, address('namesake'));
      idp.setAccount(subject, { email: other.user.email });
      expect(await signedIn()).toMatchObject({ id: user.id, email: renamed });
      expect((await sessionOf(other.token)).body.data.user.email).toBe(other.user.email);
    });

    it('a returnTo outside APP_URL and ALLOWED_ORIGINS lands on APP_URL', async () => {
      const subject = `wanderer-${++counter}`;
      idp.setAccount(subject, { email: address('wanderer') });
      const { landed } = await signInThroughIdp({ connectionId: connection.id, returnTo: 'https://evil.example/steal' }, subject);
      expect(landed.location).toBe(`${appLanding}/`);
    });

    it('links an existing password account only when its address is in a domain the organization verified', async () => {
      const insider = await signUp(backend.url, address('insider'));
      const subject = `insider-${++counter}`;
      idp.setAccount(subject, { email: insider.user.email });
      const { session } = await signInThroughIdp({ email: insider.user.email }, subject);
      expect((await sessionOf(session!)).body.data.user.id).toBe(insider.user.id);

      // Outside the organization's verified domains: never linked.
      const outsider = await signUp(backend.url, `outsider-${++counter}-${kind}@gmail.example`);
      const other = `outsider-${counter}`;
      idp.setAccount(other, { email: outsider.user.email });
      const refused = await signInThroughIdp({ connectionId: connection.id }, other);
      expect(errorOf(refused.landed.location)).toBe('ACCOUNT_EXISTS');
      expect(refused.session).toBeUndefined();
      expect((await asOwner(`SELECT 1 FROM "authstrap_sso_identity" WHERE "userId" = $1`, [outsider.user.id])).rows).toHaveLength(0);

      // In the domain, but the provider says the address is not verified: not linked either.
      const unproved = await signUp(backend.url, address('unproved'));
      const third = `unproved-${++counter}`;
      idp.setAccount(third, { email: unproved.user.email, email_verified: false });
      expect(errorOf((await signInThroughIdp({ connectionId: connection.id }, third)).landed.location)).toBe('ACCOUNT_EXISTS');
    });

    it("an app gets a one-time code, exchanged once with its PKCE verifier for a bearer session", async () => {
      const subject = `mobile-${++counter}`;
      const email = address('mobile');
      idp.setAccount(subject, { email });
      const verifier = randomBytes(32).toString('base64url');
      const codeChallenge = createHash('sha256').update(verifier).digest('base64url');
      const walker = browser();
      const started = await walker.request(`${backend.url}/api/auth/sso/start`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, client: 'app', codeChallenge, returnTo: appRedirect }),
      });
      expect(started.status).toBe(200);
      idp.signInAs(subject);
      const landed = await walker.follow(((await started.json()) as { data: { url: string } }).data.url);
      expect(landed.location.startsWith(`${appRedirect}?code=`)).toBe(true);
      const code = new URL(landed.location).searchParams.get('code')!;
      const anonymous = apiClient(backend.url);

      expect((await anonymous('POST', '/api/auth/sso/token', { body: { code: 'x'.repeat(43), codeVerifier: verifier } })).body.error.code).toBe('INVALID_CODE');
      const exchanged = await anonymous('POST', '/api/auth/sso/token', { body: { code, codeVerifier: verifier } });
      expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
      expect(exchanged.body.data.user.email).toBe(email);
      expect((await sessionOf(exchanged.body.data.token)).body.data.user.email).toBe(email);
      // Used once.
      const twice = await anonymous('POST', '/api/auth/sso/token', { body: { code, codeVerifier: verifier } });
      expect(twice.status).toBe(400);
      expect(twice.body.error.code).toBe('INVALID_CODE');
    });

    it("an app's code with another verifier is refused, and used up", async () => {
      const subject = `mobile-${++counter}`;
      idp.setAccount(subject, { email: address('mobile') });
      const verifier = randomBytes(32).toString('base64url');
      const walker = browser();
      const started = await walker.request(`${backend.url}/api/auth/sso/start`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ connectionId: connection.id, client: 'app', codeChallenge: createHash('sha256').update(verifier).digest('base64url'), returnTo: appRedirect }),
      });
      idp.signInAs(subject);
      const code = new URL((await walker.follow(((await started.json()) as { data: { url: string } }).data.url)).location).searchParams.get('code')!;
      const anonymous = apiClient(backend.url);
      expect((await anonymous('POST', '/api/auth/sso/token', { body: { code, codeVerifier: randomBytes(32).toString('base64url') } })).body.error.code).toBe('INVALID_CODE');
      expect((await anonymous('POST', '/api/auth/sso/token', { body: { code, codeVerifier: verifier } })).body.error.code).toBe('INVALID_CODE');
    });

    it('prunes expired flows and one-time codes hourly (authstrap.prune_identity), never a live one', async () => {
      const start = () => apiClient(backend.url)('POST', '/api/auth/sso/start', { body: { connectionId: connection.id } });
      expect((await start()).status).toBe(200);
      const count = async (table: string) => Number((await asOwner(`SELECT count(*) AS "n" FROM "${table}"`)).rows[0]!.n);
      // Everything so far made to look old, except one flow started now, after it.
      await asOwner(`UPDATE "authstrap_sso_flow" SET "expiresAt" = now() - interval '1 minute'`);
      await asOwner(`INSERT INTO "authstrap_sso_code" ("codeHash", "organizationId", "userId", "connectionId", "codeChallenge", "expiresAt") SELECT 'expired-code', "organizationId", $1, $2, 'challenge', now() - interval '1 second' FROM "authstrap_sso_connection" WHERE "id" = $2`, [owner.user.id, connection.id]);
      expect((await start()).status).toBe(200);
      const flowsBefore = await count('authstrap_sso_flow');
      expect(flowsBefore).toBeGreaterThan(1);
      const expiredCodes = Number((await asOwner(`SELECT count(*) AS "n" FROM "authstrap_sso_code" WHERE "expiresAt" < now()`)).rows[0]!.n);
      expect(expiredCodes).toBeGreaterThanOrEqual(1);
      const { rows } = await backend.running.db.query<{ pruned: number }>('SELECT authstrap.prune_identity() AS "pruned"');
      expect(rows[0]!.pruned).toBe(flowsBefore - 1 + expiredCodes);
      expect(await count('authstrap_sso_flow')).toBe(1);
      expect((await asOwner(`SELECT 1 FROM "authstrap_sso_code" WHERE "codeHash" = 'expired-code'`)).rows).toEqual([]);
    });

    it('an app may return only to SSO_APP_REDIRECTS', async () => {
      const answer = await apiClient(backend.url)('POST', '/api/auth/sso/start', { body: { connectionId: connection.id, client: 'app', codeChallenge: 'a'.repeat(43), returnTo: 'https://evil.example/' } });
      expect(answer.status).toBe(422);
    });

    it('an address without a verified domain, or an organization without an enabled connection, is SSO_NOT_CONFIGURED', async () => {
      const anonymous = apiClient(backend.url);
      const byAddress = await anonymous('POST', '/api/auth/sso/start', { body: { email: 'someone@unclaimed.example' } });
      expect(byAddress.status).toBe(404);
      expect(byAddress.body.error.code).toBe('SSO_NOT_CONFIGURED');
      const stranger = await signUp(backend.url, `nosso-${kind}@elsewhere.example`);
      const slug = (await stranger.api('GET', '/api/auth/get-session')).body.data.organizations[0].slug;
      expect((await anonymous('POST', '/api/auth/sso/start', { body: { organization: slug } })).body.error.code).toBe('SSO_NOT_CONFIGURED');
    });

    it("an organization with two enabled connections answers CHOOSE_CONNECTION with each one's id and name, and starts the one sent", async () => {
      const second = await enabledConnection(owner);
      try {
        const anonymous = apiClient(backend.url);
        for (const body of [{ email: address('chooser') }, { organization: (await owner.api('GET', '/api/auth/get-session')).body.data.organizations[0].slug }]) {
          const answer = await anonymous('POST', '/api/auth/sso/start', { body });
          expect(answer.status).toBe(409);
          expect(answer.body.error).toMatchObject({ code: 'CHOOSE_CONNECTION', details: { [connection.id]: connection.name, [second.id]: second.name } });
          expect(Object.keys(answer.body.error.details)).toEqual([connection.id, second.id]);
        }
        const chosen = await anonymous('POST', '/api/auth/sso/start', { body: { connectionId: second.id } });
        expect(chosen.status).toBe(200);
        expect(new URL(chosen.body.data.url).searchParams.get('redirect_uri')).toBe(second.serviceProvider.redirectUri);
      } finally {
        // The tests after this one route the domain to its first connection.
        expect((await owner.api('POST', `/sso-connections/${second.id}/disable`)).status).toBe(200);
      }
    });

    describe('attacks on the flow', () => {
      /** A sign-in walked up to the callback, which is not requested: the test sends it its own way. */
      const upToCallback = async (subject: string) => {
        const walker = browser();
        const started = await walker.request(`${backend.url}/api/auth/sso/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ connectionId: connection.id }) });
        idp.signInAs(subject);
        const stopped = await walker.follow(((await started.json()) as { data: { url: string } }).data.url, (url) => url.pathname.endsWith('/oidc/callback'));
        return { walker, callback: new URL(stopped.location) };
      };
      const newSubject = () => {
        const subject = `target-${++counter}`;
        idp.setAccount(subject, { email: address('target') });
        return subject;
      };

      it('a callback whose state is not the flow\'s is refused', async () => {
        const { walker, callback } = await upToCallback(newSubject());
        callback.searchParams.set('state', randomBytes(32).toString('base64url'));
        const landed = await walker.follow(callback.href);
        expect(errorOf(landed.location)).toBe('SSO_INVALID_STATE');
        expect(walker.cookie(new URL(backend.url).origin, 'session')).toBeUndefined();
      });

      it('a callback in another browser than the one that started (no binding cookie) is refused: login CSRF', async () => {
        const { callback } = await upToCallback(newSubject());
        const victim = browser();
        const landed = await victim.follow(callback.href);
        expect(errorOf(landed.location)).toBe('SSO_BROWSER_MISMATCH');
        expect(victim.cookie(new URL(backend.url).origin, 'session')).toBeUndefined();
      });

      it('a callback used twice signs in once', async () => {
        const { walker, callback } = await upToCallback(newSubject());
        const first = await walker.follow(callback.href);
        expect(errorOf(first.location)).toBeNull();
        const replay = browser();
        for (const [origin, cookies] of walker.jar) replay.jar.set(origin, new Map(cookies));
        replay.jar.get(new URL(backend.url).origin)?.delete('session');
        const second = await replay.follow(callback.href);
        expect(errorOf(second.location)).toBe('SSO_INVALID_STATE');
        expect(replay.cookie(new URL(backend.url).origin, 'session')).toBeUndefined();
      });

      describe('ID tokens a provider (or someone in between) forged', () => {
        const privateKey = () => importJWK(idp.signingKey as JWK, 'RS256');
        /** A sign-in whose token answer carries what `forge` makes of the real ID token: where it lands, and whether a session came. */
        const signInWithForged = async (forge: (claims: JWTPayload, original: string) => Promise<string>) => {
          idp.forgeNextIdToken(async (original) => forge(decodeJwt(original), original));
          const { landed, session } = await signInThroughIdp({ connectionId: connection.id }, newSubject());
          return { error: errorOf(landed.location), session };
        };
        const resigned = async (claims: JWTPayload) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'test-rs256' }).sign(await privateKey());

        it('the real claims signed again with the provider key sign in (the forging itself changes nothing)', async () => {
          const outcome = await signInWithForged((claims) => resigned(claims));
          expect(outcome.error).toBeNull();
          expect(outcome.session).toBeDefined();
        });

        it("alg: none is refused", async () => {
          const outcome = await signInWithForged(async (claims) => new UnsecuredJWT(claims).encode());
          expect(outcome).toEqual({ error: 'SSO_FAILED', session: undefined });
        });

        it('HS256 signed with the provider public key as the secret is refused', async () => {
          const publicPem = createPublicKey({ key: idp.signingKey as JsonWebKey, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
          const outcome = await signInWithForged((claims) => new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: 'test-rs256' }).sign(new TextEncoder().encode(String(publicPem))));
          expect(outcome).toEqual({ error: 'SSO_FAILED', session: undefined });
        });

        it('an ID token for another client (aud) is refused', async () => {
          const outcome = await signInWithForged((claims) => resigned({ ...claims, aud: 'another-client', azp: 'another-client' }));
          expect(outcome).toEqual({ error: 'SSO_FAILED', session: undefined });
        });

        it('an ID token from another issuer (mix-up) is refused', async () => {
          const outcome = await signInWithForged((claims) => resigned({ ...claims, iss: 'https://other-idp.example' }));
          expect(outcome).toEqual({ error: 'SSO_FAILED', session: undefined });
        });

        it("an ID token with another sign-in's nonce (a replayed token) is refused", async () => {
          const outcome = await signInWithForged((claims) => resigned({ ...claims, nonce: randomBytes(32).toString('base64url') }));
          expect(outcome).toEqual({ error: 'SSO_FAILED', session: undefined });
        });

        it('an expired ID token is refused', async () => {
          const past = Math.floor(Date.now() / 1000) - 3600;
          const outcome = await signInWithForged((claims) => resigned({ ...claims, iat: past - 600, exp: past }));
          expect(outcome).toEqual({ error: 'SSO_FAILED', session: undefined });
        });
      });

      it("another flow's code (its nonce and PKCE verifier) is refused", async () => {
        const mine = await upToCallback(newSubject());
        const theirs = await upToCallback(newSubject());
        // Their code, with my state and my browser: my flow's nonce and verifier do not fit it.
        const swapped = new URL(mine.callback);
        swapped.searchParams.set('code', theirs.callback.searchParams.get('code')!);
        const landed = await mine.walker.follow(swapped.href);
        expect(errorOf(landed.location)).toBe('SSO_FAILED');
        expect(mine.walker.cookie(new URL(backend.url).origin, 'session')).toBeUndefined();
      });
    });
  });

  describe('the organization requires SSO', () => {
    it('turning it on needs an owner, an enabled connection and a verified domain', async () => {
      const lonely = await signUp(backend.url, `lonely-${kind}@lonely.example`);
      const refused = await lonely.api('PUT', '/sso-policy', { body: { ssoRequired: true } });
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('NO_ENABLED_CONNECTION');
      expect((await admin.api('PUT', '/sso-policy', { body: { ssoRequired: false } })).status).toBe(403);
      expect((await member.api('GET', '/sso-policy')).body.data).toMatchObject({ ssoRequired: false, breakGlass: 'owners' });
    });

    it('keeps SSO sessions and the owner\'s, ends password sessions in the domain, and refuses a password sign-in with SSO_REQUIRED', async () => {
      const connection = (await owner.api('GET', '/sso-connections')).body.data.find((one: Connection) => one.enabled) as Connection;
      const subject = `kept-${++counter}`;
      idp.setAccount(subject, { email: address('kept') });
      const sso = await signInThroughIdp({ connectionId: connection.id }, subject);
      const byPassword = await signUp(backend.url, address('password'));
      const outsider = await signUp(backend.url, `outside-${++counter}-${kind}@other.example`);

      const turnedOn = await owner.api('PUT', '/sso-policy', { body: { ssoRequired: true } });
      expect(turnedOn.status, JSON.stringify(turnedOn.body)).toBe(200);
      expect(turnedOn.body.data).toMatchObject({ ssoRequired: true, breakGlass: 'owners' });
      expect(turnedOn.body.data.sessionsEnded).toBeGreaterThanOrEqual(1);

      expect((await sessionOf(sso.session!)).status).toBe(200);
      expect((await sessionOf(owner.token)).status).toBe(200);
      expect((await sessionOf(byPassword.token)).status).toBe(401);
      expect((await sessionOf(outsider.token)).status).toBe(200);

      const signIn = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: byPassword.user.email, password: 'correct horse battery' } });
      expect(signIn.status).toBe(403);
      expect(signIn.body.error.code).toBe('SSO_REQUIRED');
      // Break-glass: the owner keeps the password path, unless the policy says none.
      const ownerSignIn = () => apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: owner.user.email, password: 'correct horse battery' } });
      expect((await ownerSignIn()).status).toBe(200);
      expect((await owner.api('PUT', '/sso-policy', { body: { ssoRequired: true, breakGlass: 'none' } })).body.data.breakGlass).toBe('none');
      const noGlass = await ownerSignIn();
      expect(noGlass.status).toBe(403);
      expect(noGlass.body.error.code).toBe('SSO_REQUIRED');
      expect((await owner.api('PUT', '/sso-policy', { body: { ssoRequired: true, breakGlass: 'owners' } })).status).toBe(200);
      // SSO still signs them in.
      const again = await signInThroughIdp({ email: address('again') }, subject);
      expect((await sessionOf(again.session!)).status).toBe(200);

      // Disabling the last enabled connection while SSO is required is refused.
      const disable = await owner.api('POST', `/sso-connections/${connection.id}/disable`);
      expect(disable.status).toBe(409);
      expect(disable.body.error.code).toBe('LAST_CONNECTION');
      const remove = await owner.api('DELETE', `/sso-connections/${connection.id}`);
      expect(remove.status).toBe(409);
      expect(remove.body.error.code).toBe('LAST_CONNECTION');
    });

    it("another organization's connection signs no one of the domain in", async () => {
      const rival = await signUp(backend.url, `rival-${kind}@rival.example`);
      const rivalConnection = await enabledConnection(rival);
      const subject = `intruder-${++counter}`;
      const intruder = address('intruder');
      idp.setAccount(subject, { email: intruder });
      // The address routes to its own organization's connection, never the rival's.
      const walker = browser();
      const routed = await walker.request(`${backend.url}/api/auth/sso/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: address('intruder') }) });
      const url = new URL(((await routed.json()) as { data: { url: string } }).data.url);
      expect(url.searchParams.get('redirect_uri')).not.toContain(rivalConnection.id);
      // Through the rival's connection by id: refused, the domain's organization requires SSO.
      const refused = await signInThroughIdp({ connectionId: rivalConnection.id }, subject);
      expect(errorOf(refused.landed.location)).toBe('SSO_REQUIRED');
      expect(refused.session).toBeUndefined();
      const refusals = (await owner.api('GET', '/audit-events?type=session.sign_in_refused&limit=100')).body.data as { data: Record<string, unknown> }[];
      expect(refusals.map((event) => event.data)).toContainEqual({ email: intruder, method: 'sso', code: 'SSO_REQUIRED' });
    });

    it('disabling or deleting a connection ends the sessions it made', async () => {
      await owner.api('PUT', '/sso-policy', { body: { ssoRequired: false } });
      const second = await enabledConnection(owner);
      const subject = `leaver-${++counter}`;
      idp.setAccount(subject, { email: address('leaver') });
      const signedIn = await signInThroughIdp({ connectionId: second.id }, subject);
      expect((await sessionOf(signedIn.session!)).status).toBe(200);
      expect((await owner.api('POST', `/sso-connections/${second.id}/disable`)).status).toBe(200);
      expect((await sessionOf(signedIn.session!)).status).toBe(401);
      expect((await owner.api('DELETE', `/sso-connections/${second.id}`)).status).toBe(204);
      expect((await owner.api('GET', `/sso-connections/${second.id}`)).status).toBe(404);
    });
  });
}, 120_000);

describe.each(databaseKinds)('the single sign-on rate limit on the %s database', (kind) => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend(kind, { RATE_LIMIT_AUTH_MAX: '2', RATE_LIMIT_SSO_MAX: '3' });
  }, 60_000);
  afterAll(async () => {
    await backend?.stop();
  });

  it("counts the start and callbacks by RATE_LIMIT_SSO_MAX, not the sign-in limit; the code exchange by the sign-in limit", async () => {
    const anonymous = apiClient(backend.url);
    const start = () => anonymous('POST', '/api/auth/sso/start', { body: { email: 'someone@unclaimed.example' } });
    for (let attempt = 0; attempt < 3; attempt++) expect((await start()).status).toBe(404);
    const limited = await start();
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    const exchange = () => anonymous('POST', '/api/auth/sso/token', { body: { code: 'x'.repeat(43), codeVerifier: 'y'.repeat(43) } });
    expect((await exchange()).status).toBe(400);
    expect((await exchange()).status).toBe(400);
    expect((await exchange()).status).toBe(429);
  });
});
