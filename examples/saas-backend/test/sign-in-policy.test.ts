import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { betterAuthMethodOf, endRefusedSessions } from '../src/auth/sign-in-policy.js';
import { withScope } from '../src/db/scope.js';
import { tokenOf } from './support/mailbox.js';
import { addMember, apiClient, databaseKinds, invitationTokenFor, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * The organization's sign-in policy on the backend's own routes (docs/enterprise-identity.md, 3.3):
 * an address in a verified domain of an organization that requires single sign-on gets no
 * password path (sign-up, sign-in, forgot/reset/change password, invitation, change of address),
 * and the answer says where to sign in instead; its owners keep one (break-glass), audited. The
 * domain and the policy are rows seeded by SQL: their routes come with later steps.
 */
const password = 'correct horse battery';

describe.each(databaseKinds)('the sign-in policy on the %s database', (kind) => {
  let backend: TestBackend;
  let owner: SignedUp;
  let employee: SignedUp;
  let outsider: SignedUp;
  let slug: string;
  const domain = `acme-${kind}.example`;
  const at = (name: string) => `${name}@${domain}`;
  const anonymous = () => apiClient(backend.url);
  const signIn = (email: string, secret = password) => anonymous()('POST', '/api/auth/sign-in/email', { body: { email, password: secret } });
  const signInWith = (email: string, headers: Record<string, string>) => anonymous()('POST', '/api/auth/sign-in/email', { body: { email, password }, headers });
  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  /** Requires SSO for the domain (verified) of the owner's organization, or stops requiring it. */
  const requireSso = (on: boolean, breakGlass: 'owners' | 'none' = 'owners') =>
    asOwner(
      `INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince", "breakGlass") VALUES ($1, $2, now(), $3)
       ON CONFLICT ("organizationId") DO UPDATE SET "ssoRequired" = $2, "breakGlass" = $3`,
      [owner.organizationId, on, breakGlass],
    );
  const ssoRequired = () => ({
    code: 'SSO_REQUIRED',
    message: `${domain} signs in with single sign-on`,
    details: { organization: slug, signInWith: `http://localhost:5173/sign-in/sso?organization=${slug}` },
  });
  const sessionIdOf = async (token: string) => (await anonymous()('GET', '/api/auth/get-session', { token })).body.data.session.id as string;
  const auditEvents = async () => ((await owner.api('GET', '/audit-events?limit=100')).body.data as { type: string; data: Record<string, unknown> }[]).map((event) => event);

  beforeAll(async () => {
    backend = await startBackend(kind);
    owner = await signUp(backend.url, at('owner'));
    employee = await addMember(backend.url, owner, at('employee'), 'member');
    outsider = await addMember(backend.url, owner, `outsider-${kind}@elsewhere.example`, 'member');
    slug = (await owner.api('GET', '/api/auth/get-session')).body.data.organizations[0].slug;
    await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, $2, 'verified', 'token', now())`, [owner.organizationId, domain]);
  }, 60_000);
  afterAll(() => backend?.stop());

  it('refuses a password sign-in in the domain with where to sign in, the same for a right or wrong password and for an address without an account', async () => {
    await requireSso(true);
    const answers = [await signIn(employee.user.email), await signIn(employee.user.email, 'a wrong password'), await signIn(at('nobody'))];
    for (const answer of answers) {
      expect(answer.status).toBe(403);
      expect(answer.body.error).toEqual(ssoRequired());
    }
    // An address outside the domain, in the same organization, is not concerned.
    expect((await signIn(outsider.user.email)).status).toBe(200);
    // The organization's audit log shows the refusal.
    const refused = (await auditEvents()).filter((event) => event.type === 'session.sign_in_refused');
    expect(refused.map((event) => event.data)).toContainEqual({ email: employee.user.email, method: 'password', code: 'SSO_REQUIRED' });
  });

  it('refuses a sign-up and an invitation to a new account in the domain, before making anything', async () => {
    await requireSso(true);
    const signedUp = await anonymous()('POST', '/api/auth/sign-up/email', { body: { email: at('newcomer'), name: 'Newcomer', password } });
    expect(signedUp.status).toBe(403);
    expect(signedUp.body.error).toEqual(ssoRequired());

    await requireSso(false);
    const sent = backend.mailbox.to(at('invitee')).length;
    expect((await owner.api('POST', '/members', { body: { email: at('invitee'), role: 'member' } })).status).toBe(202);
    const token = await invitationTokenFor(backend.url, at('invitee'), sent);
    await requireSso(true);
    const accepted = await anonymous()('POST', '/api/auth/invitations/accept', { body: { token, email: at('invitee'), name: 'Invitee', password } });
    expect(accepted.status).toBe(403);
    expect(accepted.body.error).toEqual(ssoRequired());
    const users = await asOwner(`SELECT 1 FROM "User" WHERE "email" IN ($1, $2)`, [at('newcomer'), at('invitee')]);
    expect(users.rowCount).toBe(0);
  });

  it('answers forgot-password the same for every address of the domain, and mails a link to no one but an owner', async () => {
    await requireSso(true);
    const forgot = (email: string) => anonymous()('POST', '/api/auth/forgot-password', { body: { email } });
    const before = backend.mailbox.to(employee.user.email).length;
    const known = await forgot(employee.user.email);
    const unknown = await forgot(at('nobody'));
    expect(known.status).toBe(403);
    expect(known.body).toEqual(unknown.body);
    expect(known.body.error).toEqual(ssoRequired());
    // The owner's answer is the same (it tells no one who the owners are), but the link goes: break-glass.
    expect((await forgot(owner.user.email)).body).toEqual(known.body);
    const mail = await backend.mailbox.next(owner.user.email, /password/i);
    expect(mail.link!.pathname).toBe('/reset-password');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(backend.mailbox.to(employee.user.email).slice(before).filter((message) => /reset/i.test(message.subject))).toEqual([]);
  });

  it('uses up a reset link mailed before enforcement without setting the password, and refuses a password change', async () => {
    await requireSso(false);
    const before = backend.mailbox.to(employee.user.email).length;
    expect((await anonymous()('POST', '/api/auth/forgot-password', { body: { email: employee.user.email } })).status).toBe(200);
    await expect.poll(() => backend.mailbox.to(employee.user.email).length).toBeGreaterThan(before);
    const link = tokenOf(backend.mailbox.to(employee.user.email).at(-1)!);
    await requireSso(true);
    const reset = (token: string) => anonymous()('POST', '/api/auth/reset-password', { body: { token, newPassword: 'a brand new password' } });
    const refused = await reset(link);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toEqual(ssoRequired());
    expect((await reset(link)).body.error.code).toBe('INVALID_TOKEN');

    // The employee's session from before is still valid (only a policy change through its route ends it).
    const changed = await employee.api('POST', '/api/auth/change-password', { body: { currentPassword: password, newPassword: 'a brand new password' } });
    expect(changed.status).toBe(403);
    expect(changed.body.error).toEqual(ssoRequired());
    await requireSso(false);
    expect((await signIn(employee.user.email)).status).toBe(200);
  });

  it("lets an owner sign in by password (break-glass), recorded as such, until the organization turns break-glass off", async () => {
    await requireSso(true);
    const signedIn = await signIn(owner.user.email);
    expect(signedIn.status).toBe(200);
    const [session] = (await asOwner(`SELECT "authMethod" FROM "session" WHERE "id" = $1`, [await sessionIdOf(signedIn.body.data.token)])).rows;
    expect(session).toEqual({ authMethod: 'password:break-glass' });
    // In the organization's audit log, and in the owner's own security events.
    expect((await auditEvents()).map((event) => event.type)).toContain('sso.break_glass_used');
    const own = (await owner.api('GET', '/api/auth/security-events?limit=100')).body.data as { type: string; data: Record<string, unknown> }[];
    expect(own.find((event) => event.type === 'session.signed_in' && event.data.method === 'password:break-glass')).toBeDefined();
    // A wrong password of an owner is answered as any other address of the domain.
    expect((await signIn(owner.user.email, 'a wrong password')).body.error).toEqual(ssoRequired());

    await requireSso(true, 'none');
    const refused = await signIn(owner.user.email);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toEqual(ssoRequired());
    await requireSso(true);
  });

  it("refuses a session row the trusted server writes for an address that must use SSO, with the policy's 403", async () => {
    await requireSso(true);
    const service = apiClient(backend.url, { token: serviceApiKey });
    const written = await service('POST', '/sessions', { body: { userId: employee.user.id, token: `x${Date.now()}`, expiresAt: new Date(Date.now() + 86_400_000).toISOString() } });
    expect(written.status).toBe(403);
    expect(written.body.error).toEqual(ssoRequired());
    // Better Auth's reset mail for such an address is refused too; an owner's goes (break-glass).
    const mail = (to: string) => service('POST', '/api/auth/send-mail', { body: { kind: 'reset-password', to, link: 'http://localhost:5173/reset-password?token=x' } });
    const refusedMail = await mail(employee.user.email);
    expect(refusedMail.status).toBe(403);
    expect(refusedMail.body.error).toEqual(ssoRequired());
    expect((await mail(owner.user.email)).status).toBe(202);
  });

  it('records a refused attempt sent again with its Idempotency-Key once, answering the same 403; without a key, every attempt', async () => {
    await requireSso(false);
    const repeater = await addMember(backend.url, owner, at(`repeater-${Date.now()}`), 'member');
    await requireSso(true);
    const refusalsOf = async (email: string) =>
      Number((await asOwner(`SELECT count(*) AS "refusals" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused' AND "data"->>'email' = $1`, [email])).rows[0]!.refusals);
    const service = apiClient(backend.url, { token: serviceApiKey });
    const sessionFor = { userId: repeater.user.id, token: `x${Date.now()}`, expiresAt: new Date(Date.now() + 86_400_000).toISOString() };
    const newcomer = at(`keyed-newcomer-${Date.now()}`);
    const sessionsOf = async () => (await asOwner(`SELECT 1 FROM "session" WHERE "userId" = $1`, [repeater.user.id])).rowCount;
    const sessions = await sessionsOf();
    // The backend's sign-in (refused by the session's trigger once the password matched) and sign-up
    // (refused before anything is made), and the service API's session create (Better Auth's path).
    const attempts = [
      { send: (headers: Record<string, string>) => signInWith(repeater.user.email, headers), email: repeater.user.email },
      { send: (headers: Record<string, string>) => anonymous()('POST', '/api/auth/sign-up/email', { body: { email: newcomer, name: 'Newcomer', password }, headers }), email: newcomer },
      { send: (headers: Record<string, string>) => service('POST', '/sessions', { body: sessionFor, headers }), email: repeater.user.email },
    ];
    for (const { send, email } of attempts) {
      const before = await refusalsOf(email);
      const key = { 'idempotency-key': randomUUID() };
      const first = await send(key);
      const again = await send(key);
      expect(first.status).toBe(403);
      expect(first.body.error).toEqual(ssoRequired());
      expect(again.status).toBe(403);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await refusalsOf(email)).toBe(before + 1);

      // Without a key each attempt is one of its own.
      expect((await send({})).status).toBe(403);
      expect((await send({})).status).toBe(403);
      expect(await refusalsOf(email)).toBe(before + 3);
    }
    // Nothing was made by any of them.
    expect((await asOwner(`SELECT 1 FROM "User" WHERE "email" = $1`, [newcomer])).rowCount).toBe(0);
    expect(await sessionsOf()).toBe(sessions);
  });

  it('ends the password sessions of the domain when the organization turns enforcement on, keeping the owner who did', async () => {
    await requireSso(false);
    const employeeSession = (await signIn(employee.user.email)).body.data.token as string;
    const ownerSession = (await signIn(owner.user.email)).body.data.token as string;
    const outsiderSession = (await signIn(outsider.user.email)).body.data.token as string;
    const alive = async (token: string) => (await anonymous()('GET', '/api/auth/get-session', { token })).status;
    expect(await alive(employeeSession)).toBe(200);

    const keepSessionId = await sessionIdOf(ownerSession);
    // What the policy route does (a later step): in the owner's scope, the change and the sweep in one transaction.
    const ended = await withScope(backend.running.db, { organizationId: owner.organizationId, userId: owner.user.id, role: 'owner' }).transaction(async (tx) => {
      await tx.query(`UPDATE "authstrap_sso_policy" SET "ssoRequired" = true WHERE "organizationId" = $1`, [owner.organizationId]);
      return endRefusedSessions(tx, { kind: 'sso-required', organizationId: owner.organizationId, keepSessionId });
    });
    expect(ended).toBeGreaterThan(0);
    expect(await alive(employeeSession)).toBe(401);
    expect(await alive(employee.token)).toBe(401);
    expect(await alive(ownerSession)).toBe(200);
    expect(await alive(outsiderSession)).toBe(200);
  });

  it('refuses moving an account into the domain: the link to the new address is used up, and the address stays', async () => {
    await requireSso(false);
    const mover = await signUp(backend.url, `mover-${kind}@elsewhere.example`);
    expect((await mover.api('POST', '/api/auth/change-email', { body: { newEmail: at('mover') } })).status).toBe(200);
    const mail = await backend.mailbox.next(at('mover'));
    await requireSso(true);
    const confirm = () => anonymous()('POST', '/api/auth/change-email/confirm', { body: { token: tokenOf(mail) } });
    const refused = await confirm();
    expect(refused.status).toBe(403);
    expect(refused.body.error).toEqual(ssoRequired());
    expect((await confirm()).body.error.code).toBe('INVALID_TOKEN');
    expect((await mover.api('GET', '/api/auth/get-session')).body.data.user.email).toBe(mover.user.email);
  });

  it('ends the sessions a suspension, a disabled connection and a newly verified domain make refusable, and no others', async () => {
    await requireSso(false);
    // The owner's first session ended with enforcement above: a new one.
    const token = (await signIn(owner.user.email)).body.data.token as string;
    owner = { ...owner, token, api: apiClient(backend.url, { token, organizationId: owner.organizationId }) };
    const secondDomain = `acme-${kind}-two.example`;
    const suspended = await addMember(backend.url, owner, at('suspended'), 'member');
    const elsewhere = await addMember(backend.url, owner, `member-${kind}@elsewhere.example`, 'member');
    // A second session of the member from elsewhere, acting in the owner's organization.
    const actingHere = (await signIn(elsewhere.user.email)).body.data.token as string;
    await asOwner(`UPDATE "session" SET "activeOrganizationId" = $1 WHERE "id" = $2`, [owner.organizationId, await sessionIdOf(actingHere)]);
    const newcomer = await signUp(backend.url, `newcomer@${secondDomain}`);
    const connectionId = (
      await asOwner(
        `INSERT INTO "authstrap_sso_connection" ("organizationId", "name", "protocol", "enabled", "oidcIssuer", "oidcClientId", "oidcClientSecret")
         VALUES ($1, 'Okta', 'oidc', true, 'https://idp.example', 'client', 'sealed:v1:x') RETURNING "id"`,
        [owner.organizationId],
      )
    ).rows[0]!.id as string;
    await asOwner(`INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod", "ssoConnectionId") VALUES ($1, 'made-by-sso', now() + interval '1 day', 'sso', $2)`, [
      outsider.user.id,
      connectionId,
    ]);
    await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "txtToken") VALUES ($1, $2, 'token')`, [owner.organizationId, secondDomain]);
    await requireSso(true);
    const alive = async (token: string) => (await anonymous()('GET', '/api/auth/get-session', { token })).status;
    const ownersScope = withScope(backend.running.db, { organizationId: owner.organizationId, userId: owner.user.id, role: 'owner' });
    const organizationId = owner.organizationId;

    // The organization owns the suspended member's address: every session of theirs ends.
    expect(await ownersScope.transaction((tx) => endRefusedSessions(tx, { kind: 'suspended', organizationId, userId: suspended.user.id }))).toBe(1);
    expect(await alive(suspended.token)).toBe(401);
    // It does not own the other's: only the session acting in it ends.
    expect(await ownersScope.transaction((tx) => endRefusedSessions(tx, { kind: 'suspended', organizationId, userId: elsewhere.user.id }))).toBe(1);
    expect(await alive(actingHere)).toBe(401);
    expect(await alive(elsewhere.token)).toBe(200);

    expect(await ownersScope.transaction((tx) => endRefusedSessions(tx, { kind: 'connection-disabled', organizationId, connectionId }))).toBe(1);
    expect((await asOwner(`SELECT 1 FROM "session" WHERE "token" = 'made-by-sso'`)).rowCount).toBe(0);

    const verified = await ownersScope.transaction(async (tx) => {
      await tx.query(`UPDATE "authstrap_domain" SET "state" = 'verified', "verifiedAt" = now() WHERE "domain" = $1`, [secondDomain]);
      return endRefusedSessions(tx, { kind: 'domain-verified', organizationId, domain: secondDomain });
    });
    expect(verified).toBe(1);
    expect(await alive(newcomer.token)).toBe(401);
    expect(await alive(outsider.token)).toBe(200);
  });

  it("refuses a user the organization that owns the address suspended, once the password matched, on the record in that organization's audit log only", async () => {
    await requireSso(false);
    await asOwner(
      `INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason")
       SELECT "id", "organizationId", "userId", "role", "createdAt", 'directory-inactive' FROM "member" WHERE "organizationId" = $1 AND "userId" = $2`,
      [owner.organizationId, employee.user.id],
    );
    await asOwner(`DELETE FROM "member" WHERE "organizationId" = $1 AND "userId" = $2`, [owner.organizationId, employee.user.id]);
    const refused = await signIn(employee.user.email);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'DEPROVISIONED', message: "Your access was turned off by your organization's directory" });
    // A wrong password learns nothing of it.
    expect((await signIn(employee.user.email, 'a wrong password')).status).toBe(401);
    // Once, in the audit log of the organization whose directory turned them off; not in their
    // personal organization's, though the session would have acted there (their first membership).
    const refusals = (await auditEvents()).filter((event) => event.type === 'session.sign_in_refused' && event.data.code === 'DEPROVISIONED');
    expect(refusals.map((event) => event.data)).toEqual([{ email: employee.user.email, method: 'password', code: 'DEPROVISIONED' }]);
    const everywhere = await asOwner(`SELECT "organizationId" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused' AND "data"->>'email' = $1 AND "data"->>'code' = 'DEPROVISIONED'`, [employee.user.email]);
    expect(everywhere.rows).toEqual([{ organizationId: owner.organizationId }]);
  });
});

describe("the method of a session Better Auth made, by the endpoint its adapter names", () => {
  it.each([
    ['/sign-in/email', 'better-auth:password'],
    ['/sign-in/username', 'better-auth:password'],
    ['/two-factor/verify-totp', 'better-auth:password'],
    ['/sign-up/email', 'better-auth:sign-up'],
    ['/reset-password', 'better-auth:password-reset'],
    ['/magic-link/verify', 'better-auth:magic-link'],
    ['/sign-in/email-otp', 'better-auth:email-otp'],
    ['/email-otp/verify-email', 'better-auth:email-otp'],
    ['/callback/google', 'better-auth:social'],
    ['/oauth2/callback/okta', 'better-auth:social'],
    ['/passkey/verify-authentication', 'better-auth:passkey'],
    ['/sso/callback/acme', 'better-auth:sso'],
    ['/sso/saml2/callback/acme', 'better-auth:sso'],
    ['/sign-in/email/../../sso/callback/x', 'better-auth:other'],
    ['/anything-else', 'better-auth:other'],
    [undefined, 'service'],
  ])('%s is %s', (path, method) => {
    expect(betterAuthMethodOf(path)).toBe(method);
  });
});
