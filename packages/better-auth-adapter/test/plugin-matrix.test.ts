import { createHmac, createPublicKey, verify } from 'node:crypto';
import { apiKey } from '@better-auth/api-key';
import { passkey } from '@better-auth/passkey';
import { sso } from '@better-auth/sso';
import { betterAuth, type BetterAuthOptions } from 'better-auth';
import { admin, emailOTP, jwt, magicLink, multiSession, organization, twoFactor, username } from 'better-auth/plugins';
import { createAccessControl } from 'better-auth/plugins/access';
import { adminAc, defaultStatements, memberAc, ownerAc } from 'better-auth/plugins/organization/access';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedOrigin, apiClient, authSecret, databaseKinds, serviceApiKey } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';
import { collectionPathOf } from '../src/models.js';
import { schemaFollowingBackend } from './support/schema-following-backend.js';
import { startSsoStage } from './support/sso-plugin.js';

/**
 * The plugins teams use most, together on one Better Auth, on the adapter: the adapter's
 * createSchema makes one schema of all their tables, `authstrap generate` turns it into the
 * backend's tables and a restart applies it; then each plugin's main flow runs against that
 * backend. docs/better-auth.md has the table of what works and what does not.
 */
const statements = { ...defaultStatements, project: ['create', 'read', 'update', 'delete'] } as const;
const ac = createAccessControl(statements);
const roles = {
  owner: ac.newRole({ ...ownerAc.statements, project: ['create', 'read', 'update', 'delete'] }),
  admin: ac.newRole({ ...adminAc.statements, project: ['create', 'read', 'update'] }),
  member: ac.newRole({ ...memberAc.statements, project: ['read'] }),
};

/** What the mail-sending plugins sent, newest last. */
const sent: { to: string; kind: string; secret: string }[] = [];
const lastSecret = (to: string, kind: string) => [...sent].reverse().find((mail) => mail.to === to && mail.kind === kind)!.secret;

const plugins = [
  organization({ teams: { enabled: true }, dynamicAccessControl: { enabled: true }, ac, roles }),
  admin(),
  // Keys of users (the default), and keys of organizations, which the backend's routes take.
  apiKey([{ configId: 'default' }, { configId: 'organization', references: 'organization' }]),
  jwt(),
  twoFactor({ issuer: 'authstrap' }),
  passkey({ rpID: 'localhost', rpName: 'authstrap', origin: 'http://localhost:3100' }),
  username(),
  magicLink({ sendMagicLink: async ({ email, token }) => void sent.push({ to: email, kind: 'magic-link', secret: token }) }),
  emailOTP({ sendVerificationOTP: async ({ email, otp, type }) => void sent.push({ to: email, kind: `otp-${type}`, secret: otp }) }),
  multiSession(),
  // Providers registered by an organization's owners and admins; new users join it as members.
  sso({ organizationProvisioning: { defaultRole: 'member' } }),
];

const password = 'correct horse battery';

/** RFC 6238's six digits for now, from an otpauth:// URI's base32 secret. */
function totp(uri: string): string {
  const secret = new URL(uri).searchParams.get('secret')!;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const character of secret.replace(/=+$/, '').toUpperCase()) bits += alphabet.indexOf(character).toString(2).padStart(5, '0');
  const key = Buffer.from(bits.match(/.{8}/g)!.map((byte) => parseInt(byte, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 30_000)));
  const digest = createHmac('sha1', key).update(counter).digest();
  const offset = digest[digest.length - 1]! & 0xf;
  return String((digest.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

/** The cookies a response sets, as a request's Cookie header (merged over `previous`). */
function cookiesFrom(headers: Headers, previous = ''): string {
  const jar = new Map(previous.split('; ').filter(Boolean).map((pair) => [pair.split('=')[0]!, pair] as const));
  for (const cookie of headers.getSetCookie()) {
    const pair = cookie.split(';')[0]!;
    const name = pair.split('=')[0]!;
    if (/max-age=0/i.test(cookie) || pair.endsWith('=')) jar.delete(name);
    else jar.set(name, pair);
  }
  return [...jar.values()].join('; ');
}

describe.each(databaseKinds)('the plugin matrix on the %s database', (kind) => {
  const backend = schemaFollowingBackend(kind);
  let auth: ReturnType<typeof makeAuth>;
  /** The sso plugin's identity provider, and Better Auth served over HTTP for it. */
  let stage: Awaited<ReturnType<typeof startSsoStage>>;
  const makeAuth = (baseUrl: string) =>
    betterAuth({
      baseURL: stage.appUrl,
      // The identity provider on loopback (the sso plugin refuses private addresses otherwise), and the app.
      trustedOrigins: [stage.idp.issuer, allowedOrigin],
      secret: authSecret,
      // The organization plugin decides who belongs where: no personal organizations.
      database: authstrapAdapter({ baseUrl, serviceKey: serviceApiKey, personalOrganization: false }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      user: { deleteUser: { enabled: true } },
      plugins,
      logger: { disabled: true },
    });
  const service = () => apiClient(backend.url!, { token: serviceApiKey });

  /** Signs a new user up through Better Auth: their id, token and cookie headers. */
  async function newUser(email: string, extra: Record<string, string> = {}) {
    const signedUp = await auth.api.signUpEmail({ body: { email, password, name: email.split('@')[0]!, ...extra }, returnHeaders: true });
    return { id: signedUp.response.user.id, token: signedUp.response.token!, headers: new Headers({ cookie: cookiesFrom(signedUp.headers) }) };
  }

  beforeAll(async () => {
    stage = await startSsoStage();
    // createSchema of the adapter, as `authstrap-better-auth-schema` runs it; then generate and a restart.
    const options = { plugins, database: authstrapAdapter({ baseUrl: 'http://127.0.0.1:9', serviceKey: serviceApiKey }) } satisfies BetterAuthOptions;
    const { code } = await options.database(options).createSchema!(options, 'better-auth.schema.json');
    await backend.migrateTo(JSON.parse(code));
    auth = makeAuth(backend.url!);
    stage.serve(auth);
  }, 180_000);
  afterAll(async () => {
    await backend.stop();
    await stage?.close();
  });

  it('organization: an organization with a team and a member in it; a dynamic role stored; the backend scopes by the organization', async () => {
    const owner = await newUser(`org-owner-${kind}@example.com`);
    const organization = await auth.api.createOrganization({ body: { name: 'Engines', slug: `engines-${kind}` }, headers: owner.headers });
    const team = await auth.api.createTeam({ body: { name: 'Gears', organizationId: organization!.id }, headers: owner.headers });
    expect(team).toMatchObject({ name: 'Gears', organizationId: organization!.id });
    const colleague = await newUser(`org-colleague-${kind}@example.com`);
    await auth.api.addMember({ body: { userId: colleague.id, role: 'member', organizationId: organization!.id, teamId: team.id } });
    const teams = await auth.api.listUserTeams({ headers: colleague.headers });
    expect(teams.map((listed) => listed.id)).toEqual([team.id]);
    expect((await service()('GET', `${collectionPathOf('teamMember')}?teamId=${team.id}`)).body.data).toEqual([expect.objectContaining({ userId: colleague.id })]);

    // Dynamic access control: a role of the organization's own, kept in the backend.
    const role = await auth.api.createOrgRole({ body: { role: 'auditor', permission: { project: ['read'] }, organizationId: organization!.id }, headers: owner.headers });
    expect(role.success).toBe(true);
    expect((await service()('GET', `${collectionPathOf('organizationRole')}?organizationId=${organization!.id}`)).body.data).toEqual([expect.objectContaining({ role: 'auditor' })]);
    // ... which a member cannot hold: the backend's member.role is owner, admin or member.
    await expect(auth.api.updateMemberRole({ body: { memberId: (await memberRow(colleague.id, organization!.id)).id, role: 'auditor', organizationId: organization!.id }, headers: owner.headers })).rejects.toThrow(/\/members\/.*role: Invalid option: expected one of "owner"\|"admin"\|"member"/);

    // The backend's tenant-scoped routes take Better Auth's session in that organization.
    const project = await apiClient(backend.url!, { organizationId: organization!.id })('POST', '/Projects', { body: { name: 'Mill' }, headers: { cookie: owner.headers.get('cookie')!, origin: allowedOrigin } });
    expect(project.status, JSON.stringify(project.body)).toBe(201);
  });

  async function memberRow(userId: string, organizationId: string): Promise<{ id: string; role: string }> {
    return (await service()('GET', `/members?userId=${userId}&organizationId=${organizationId}`)).body.data[0];
  }

  it('admin: an admin lists users, bans one (who then cannot sign in) and sets a role', async () => {
    const boss = await newUser(`admin-boss-${kind}@example.com`);
    expect((await service()('PATCH', `/Users/${boss.id}`, { body: { role: 'admin' } })).status).toBe(200);
    const target = await newUser(`admin-target-${kind}@example.com`);
    const listed = await auth.api.listUsers({ query: { searchField: 'email', searchValue: `admin-target-${kind}` }, headers: boss.headers });
    expect(listed.users.map((user) => user.id)).toEqual([target.id]);
    await auth.api.banUser({ body: { userId: target.id, banReason: 'spam' }, headers: boss.headers });
    await expect(auth.api.signInEmail({ body: { email: `admin-target-${kind}@example.com`, password } })).rejects.toThrow(/banned/i);
    await auth.api.setRole({ body: { userId: target.id, role: 'admin' }, headers: boss.headers });
    expect((await service()('GET', `/Users/${target.id}`)).body.data).toMatchObject({ role: 'admin', banned: true, banReason: 'spam' });
  });

  it('api-key: a key made for a user verifies, its secret stored hashed; a deleted one does not', async () => {
    const owner = await newUser(`apikey-${kind}@example.com`);
    const created = await auth.api.createApiKey({ body: { name: 'ci' }, headers: owner.headers });
    expect(created.key).toEqual(expect.any(String));
    expect((await auth.api.verifyApiKey({ body: { key: created.key } })).valid).toBe(true);
    const stored = (await service()('GET', `${collectionPathOf('apikey')}/${created.id}`)).body.data;
    expect(JSON.stringify(stored)).not.toContain(created.key);
    await auth.api.deleteApiKey({ body: { keyId: created.id }, headers: owner.headers });
    expect((await auth.api.verifyApiKey({ body: { key: created.key } })).valid).toBe(false);
  });

  it("api-key, organization references: a key Better Auth made for an organization reaches that organization's entities on the backend, as its permissions say, until deleted", async () => {
    const owner = await newUser(`apikey-org-${kind}@example.com`);
    const organization = (await auth.api.createOrganization({ body: { name: 'Machines', slug: `machines-${kind}` }, headers: owner.headers }))!;
    // Permissions are a server-only property in Better Auth: made on the server, for the owner.
    const created = await auth.api.createApiKey({
      body: { configId: 'organization', organizationId: organization.id, userId: owner.id, name: 'etl', permissions: { Project: ['list', 'create'] } },
    });
    const withKey = (method: string, path: string, body?: unknown) => apiClient(backend.url!)(method, path, { body, headers: { 'x-api-key': created.key } });
    const made = await withKey('POST', '/Projects', { name: 'Loaded' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect((await withKey('GET', '/Projects')).body.data.map((project: { name: string }) => project.name)).toEqual(['Loaded']);
    const refused = await withKey('DELETE', `/Projects/${made.body.data.id}`);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/may not delete Project/);
    // The backend's record of the key is Better Auth's: the same row, counting the two requests it
    // let through, written by the backend within MACHINE_KEY_USAGE_FLUSH_MS (1 s) of the last.
    const storedKey = async () => (await service()('GET', `${collectionPathOf('apikey')}/${created.id}`)).body.data;
    await expect.poll(storedKey, { timeout: 3000, interval: 100 }).toMatchObject({ referenceId: organization.id, configId: 'organization', requestCount: 2 });
    await auth.api.deleteApiKey({ body: { keyId: created.id, configId: 'organization' }, headers: owner.headers });
    expect((await withKey('GET', '/Projects')).status).toBe(401);
  });

  it('jwt: a token for the session, signed by a key the JWKS publishes (kept in the backend, the private half encrypted)', async () => {
    const user = await newUser(`jwt-${kind}@example.com`);
    const { token } = await auth.api.getToken({ headers: user.headers });
    const { keys } = await auth.api.getJwks();
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const { kid } = JSON.parse(Buffer.from(header, 'base64url').toString());
    const key = createPublicKey({ key: keys.find((candidate) => candidate.kid === kid)! as never, format: 'jwk' });
    expect(verify(null, Buffer.from(`${header}.${payload}`), key, Buffer.from(signature, 'base64url'))).toBe(true);
    expect(JSON.parse(Buffer.from(payload, 'base64url').toString())).toMatchObject({ sub: user.id, email: `jwt-${kind}@example.com` });
    const stored = (await service()('GET', `${collectionPathOf('jwks')}?where=${encodeURIComponent(JSON.stringify([{ field: 'id', value: kid }]))}`)).body.data;
    expect(stored).toHaveLength(1);
    expect(stored[0].privateKey).not.toContain('"d"');
  });

  it('two-factor: enabled with a TOTP app, then a sign-in asks for the code, which completes it; a backup code works once', async () => {
    const user = await newUser(`2fa-${kind}@example.com`);
    const enabled = await auth.api.enableTwoFactor({ body: { password }, headers: user.headers });
    if (enabled.method !== 'totp') throw new Error('expected a TOTP set-up');
    await auth.api.verifyTOTP({ body: { code: totp(enabled.totpURI) }, headers: user.headers });
    expect((await service()('GET', `/Users/${user.id}`)).body.data.twoFactorEnabled).toBe(true);

    const signIn = await auth.api.signInEmail({ body: { email: `2fa-${kind}@example.com`, password }, returnHeaders: true });
    expect(signIn.response).toMatchObject({ twoFactorRedirect: true });
    const pending = new Headers({ cookie: cookiesFrom(signIn.headers) });
    const verified = await auth.api.verifyTOTP({ body: { code: totp(enabled.totpURI) }, headers: pending, returnHeaders: true });
    expect(verified.response.token).toEqual(expect.any(String));

    const again = await auth.api.signInEmail({ body: { email: `2fa-${kind}@example.com`, password }, returnHeaders: true });
    const backup = enabled.backupCodes[0]!;
    const first = await auth.api.verifyBackupCode({ body: { code: backup }, headers: new Headers({ cookie: cookiesFrom(again.headers) }) });
    expect(first.token).toEqual(expect.any(String));
    const third = await auth.api.signInEmail({ body: { email: `2fa-${kind}@example.com`, password }, returnHeaders: true });
    await expect(auth.api.verifyBackupCode({ body: { code: backup }, headers: new Headers({ cookie: cookiesFrom(third.headers) }) })).rejects.toThrow();
  });

  it('passkey (schema and storage): registration options keep their challenge; a stored passkey is listed, renamed and deleted', async () => {
    const user = await newUser(`passkey-${kind}@example.com`);
    const options = await auth.api.generatePasskeyRegistrationOptions({ headers: user.headers });
    expect(options.challenge).toEqual(expect.any(String));
    expect((await service()('GET', `/verifications?where=${encodeURIComponent(JSON.stringify([{ field: 'value', operator: 'contains', value: options.challenge }]))}`)).body.data).toHaveLength(1);
    // What a verified registration stores (an authenticator's answer cannot be made here).
    const stored = await service()('POST', collectionPathOf('passkey'), {
      body: { name: 'laptop', userId: user.id, publicKey: 'pQECAyYgASFYIA', credentialID: `cred-${kind}`, counter: 0, deviceType: 'singleDevice', backedUp: false, transports: 'internal' },
    });
    expect(stored.status, JSON.stringify(stored.body)).toBe(201);
    const listed = await auth.api.listPasskeys({ headers: user.headers });
    expect(listed.map((entry) => entry.name)).toEqual(['laptop']);
    await auth.api.updatePasskey({ body: { id: listed[0]!.id, name: 'work laptop' }, headers: user.headers });
    await auth.api.deletePasskey({ body: { id: listed[0]!.id }, headers: user.headers });
    expect(await auth.api.listPasskeys({ headers: user.headers })).toEqual([]);
  });

  it('username: sign up with one, sign in with it', async () => {
    await newUser(`username-${kind}@example.com`, { username: `ada_${kind}` });
    expect((await auth.api.isUsernameAvailable({ body: { username: `ada_${kind}` } })).available).toBe(false);
    const signedIn = await auth.api.signInUsername({ body: { username: `ADA_${kind}`, password } });
    expect(signedIn!.user).toMatchObject({ email: `username-${kind}@example.com`, username: `ada_${kind}` });
  });

  it('magic-link: the link signs in once', async () => {
    const email = `magic-${kind}@example.com`;
    await newUser(email);
    await auth.api.signInMagicLink({ body: { email }, headers: new Headers() });
    const token = lastSecret(email, 'magic-link');
    const [first, second] = await Promise.allSettled([
      auth.api.magicLinkVerify({ query: { token }, headers: new Headers(), returnHeaders: true }),
      auth.api.magicLinkVerify({ query: { token }, headers: new Headers(), returnHeaders: true }),
    ]);
    // Of two uses at once, one signs in (the token is consumed in one statement).
    const outcomes = [first, second].map((outcome) => (outcome.status === 'fulfilled' && outcome.value.response.token ? 'in' : 'refused'));
    expect(outcomes.sort()).toEqual(['in', 'refused']);
  });

  it('email-otp: a code by mail signs in; a wrong one does not', async () => {
    const email = `otp-${kind}@example.com`;
    await newUser(email);
    await auth.api.sendVerificationOTP({ body: { email, type: 'sign-in' } });
    await expect(auth.api.signInEmailOTP({ body: { email, otp: '000000' === lastSecret(email, 'otp-sign-in') ? '111111' : '000000' } })).rejects.toThrow();
    const signedIn = await auth.api.signInEmailOTP({ body: { email, otp: lastSecret(email, 'otp-sign-in') } });
    expect(signedIn.user.email).toBe(email);
  });

  it('multi-session: two accounts signed in in one browser, listed, and switched between', async () => {
    const first = await newUser(`multi-a-${kind}@example.com`);
    await newUser(`multi-b-${kind}@example.com`);
    const second = await auth.api.signInEmail({ body: { email: `multi-b-${kind}@example.com`, password }, headers: first.headers, returnHeaders: true });
    const browser = new Headers({ cookie: cookiesFrom(second.headers, first.headers.get('cookie')!) });
    const sessions = await auth.api.listDeviceSessions({ headers: browser });
    expect(sessions.map((entry) => entry.user.email).sort()).toEqual([`multi-a-${kind}@example.com`, `multi-b-${kind}@example.com`]);
    const switched = await auth.api.setActiveSession({ body: { sessionToken: first.token }, headers: browser });
    expect(switched!.user.email).toBe(`multi-a-${kind}@example.com`);
  });

  it("sso: an organization's admin registers an OIDC provider (a member may not); an employee signs in through the identity provider and lands in the organization", async () => {
    const owner = await newUser(`sso-owner-${kind}@example.com`);
    const organization = (await auth.api.createOrganization({ body: { name: 'Foundry', slug: `foundry-${kind}` }, headers: owner.headers }))!;
    const colleague = await newUser(`sso-member-${kind}@example.com`);
    await auth.api.addMember({ body: { userId: colleague.id, role: 'member', organizationId: organization.id } });
    const { idp, appUrl } = stage;
    const client = idp.newClient();
    const domain = `foundry-${kind}.example`;
    const provider = (by: { headers: Headers }, providerId: string) =>
      auth.api.registerSSOProvider({
        body: { providerId, issuer: idp.issuer, domain, organizationId: organization.id, oidcConfig: { clientId: client.clientId, clientSecret: client.clientSecret, pkce: true } },
        headers: by.headers,
      });
    // The plugin's advisory before 1.6.11: any signed-in user could register one.
    await expect(provider(colleague, `foundry-member-${kind}`)).rejects.toThrow(/must be an organization owner or admin/);
    const registered = await provider(owner, `foundry-${kind}`);
    idp.registerClient(client, registered.redirectURI);
    expect(registered.redirectURI).toBe(`${appUrl}/api/auth/sso/callback/foundry-${kind}`);
    // createSchema made its table; the backend keeps the row, in the organization.
    const stored = (await service()('GET', `${collectionPathOf('ssoProvider')}?providerId=foundry-${kind}`)).body.data;
    expect(stored).toEqual([expect.objectContaining({ organizationId: organization.id, userId: owner.id, domain, issuer: idp.issuer })]);
    expect((await service()('GET', `${collectionPathOf('ssoProvider')}?providerId=foundry-member-${kind}`)).body.data).toEqual([]);
    // Its client secret is in that row: no user reads it through the backend, not even the organization's owner.
    const asOwner = apiClient(backend.url!, { organizationId: organization.id });
    expect((await asOwner('GET', collectionPathOf('ssoProvider'), { headers: { cookie: owner.headers.get('cookie')!, origin: allowedOrigin } })).status).toBe(403);

    // The browser: Better Auth's sign-in, the provider's login and consent, Better Auth's callback.
    const email = `employee@${domain}`;
    const { landedOn, error, session, cookie } = await stage.signIn(`employee-${kind}`, email, { email });
    expect({ landedOn, error }).toEqual({ landedOn: `${allowedOrigin}/dashboard`, error: null });
    expect(session!.user).toMatchObject({ email, name: `employee-${kind}` });

    // The session, the account and the membership are the backend's rows.
    expect((await service()('GET', `/sessions/${session!.session.id}`)).body.data.authMethod).toBe('better-auth:sso');
    expect((await service()('GET', `/accounts?userId=${session!.user.id}`)).body.data).toEqual([expect.objectContaining({ providerId: `foundry-${kind}`, accountId: `employee-${kind}` })]);
    expect(await memberRow(session!.user.id, organization.id)).toMatchObject({ role: 'member' });
    // ... and the backend's tenant routes take that session in the organization.
    const projects = await apiClient(backend.url!, { organizationId: organization.id })('GET', '/Projects', { headers: { cookie, origin: allowedOrigin } });
    expect(projects.status, JSON.stringify(projects.body)).toBe(200);
  });

  it('delete user: the user, their sessions, accounts and memberships go; no organization is left without a member', async () => {
    const leaving = await newUser(`leaving-${kind}@example.com`);
    const organization = await auth.api.createOrganization({ body: { name: 'Solo', slug: `solo-${kind}` }, headers: leaving.headers });
    await auth.api.deleteUser({ body: { password }, headers: leaving.headers });
    expect((await service()('GET', `/Users/${leaving.id}`)).status).toBe(404);
    expect((await service()('GET', `/sessions?userId=${leaving.id}`)).body.data).toEqual([]);
    expect((await service()('GET', `/Organizations/${organization!.id}`)).status).toBe(404);
  });
});
