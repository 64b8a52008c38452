import { betterAuth } from 'better-auth';
import { emailOTP, magicLink } from 'better-auth/plugins';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, authSecret, databaseKinds, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';

/**
 * The organization's sign-in policy on Better Auth's path (the backend's
 * docs/enterprise-identity.md, 3.4): Better Auth checks passwords, links and codes in the
 * frontend's server, but every session and password it keeps is a row of the backend, written
 * through this adapter, and the backend's sign-in rule judges each one by the Better Auth endpoint
 * the adapter names. An address in a verified domain of an organization that requires single
 * sign-on gets no session and no password by any of Better Auth's ways; the answer is Better
 * Auth's own 403 with where to sign in instead; owners keep a password (break-glass). The domain,
 * the policy and the suspension are rows seeded by SQL: their routes come with later steps.
 */
const password = 'correct horse battery';

describe.each(databaseKinds)("the sign-in policy on Better Auth's path, %s database", (kind) => {
  let backend: TestBackend;
  let owner: SignedUp;
  let slug: string;
  const domain = `acme-ba-${kind}.example`;
  const at = (name: string) => `${name}@${domain}`;
  /** What Better Auth mailed, by address: the last link or code. */
  const mailed = new Map<string, string>();

  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const requireSso = (on: boolean) =>
    asOwner(
      `INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince", "breakGlass") VALUES ($1, $2, now(), 'owners')
       ON CONFLICT ("organizationId") DO UPDATE SET "ssoRequired" = $2`,
      [owner.organizationId, on],
    );
  /** The refusals on the record for an address: `session.sign_in_refused`, how and why. */
  const refusalsOf = async (email: string) =>
    (await asOwner(`SELECT "data"->>'method' AS "method", "data"->>'code' AS "code" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused' AND "data"->>'email' = $1`, [email])).rows;
  /** How the user's newest session was made, as the backend recorded it. */
  const newestMethod = async (email: string) =>
    (await asOwner(`SELECT s."authMethod" FROM "session" s JOIN "User" u ON u."id" = s."userId" WHERE u."email" = $1 ORDER BY s."createdAt" DESC LIMIT 1`, [email])).rows[0]?.authMethod;

  const makeAuth = () =>
    betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl: backend.url, serviceKey: serviceApiKey }),
      emailAndPassword: {
        enabled: true,
        password: authstrapPassword({ cost: 4 }),
        sendResetPassword: async ({ user, token }) => void mailed.set(user.email, token),
      },
      plugins: [
        magicLink({ sendMagicLink: async ({ email, token }) => void mailed.set(email, token) }),
        emailOTP({ sendVerificationOTP: async ({ email, otp }) => void mailed.set(email, otp) }),
      ],
      logger: { disabled: true },
    });
  let auth: ReturnType<typeof makeAuth>;

  /** The 403 Better Auth answers for an address that must use SSO, as the browser reads it. */
  async function expectSsoRequired(answer: Response) {
    expect(answer.status).toBe(403);
    expect(await answer.json()).toMatchObject({
      code: 'SSO_REQUIRED',
      message: `${domain} signs in with single sign-on`,
      organization: slug,
      signInWith: `http://localhost:5173/sign-in/sso?organization=${slug}`,
    });
  }
  const signInEmail = (email: string) => auth.api.signInEmail({ body: { email, password }, asResponse: true });

  beforeAll(async () => {
    backend = await startBackend(kind);
    auth = makeAuth();
    owner = await signUp(backend.url, at('owner'));
    slug = (await owner.api('GET', '/api/auth/get-session')).body.data.organizations[0].slug;
    for (const name of ['employee', 'resetter', 'linked', 'coded', 'leaver', 'retried']) await addMember(backend.url, owner, at(name), 'member');
    await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, $2, 'verified', 'token', now())`, [owner.organizationId, domain]);
  }, 60_000);
  afterAll(() => backend?.stop());

  it('records the Better Auth endpoint a session was made by, and refuses a password sign-in once SSO is required', async () => {
    await requireSso(false);
    expect((await signInEmail(at('employee'))).status).toBe(200);
    expect(await newestMethod(at('employee'))).toBe('better-auth:password');
    // A sign-in as the backend's own are: in the user's history, with its method.
    const recorded = await asOwner(
      `SELECT e."data"->>'method' AS "method" FROM "authstrap_event" e JOIN "User" u ON u."id" = e."userId" WHERE u."email" = $1 AND e."type" = 'session.signed_in' ORDER BY e."createdAt" DESC LIMIT 1`,
      [at('employee')],
    );
    expect(recorded.rows[0]?.method).toBe('better-auth:password');

    await requireSso(true);
    const sessionsBefore = (await asOwner(`SELECT count(*)::int AS n FROM "session"`)).rows[0]!.n;
    await expectSsoRequired(await signInEmail(at('employee')));
    expect((await asOwner(`SELECT count(*)::int AS n FROM "session"`)).rows[0]!.n).toBe(sessionsBefore);
  });

  it('refuses a sign-up in the domain whole: no user, account or organization is left', async () => {
    await requireSso(true);
    const signedUp = await auth.api.signUpEmail({ body: { email: at('newcomer'), password, name: 'Newcomer' }, asResponse: true });
    await expectSsoRequired(signedUp);
    expect((await asOwner(`SELECT 1 FROM "User" WHERE "email" = $1`, [at('newcomer')])).rowCount).toBe(0);
    // Outside the domain, Better Auth's sign-up works as ever.
    expect((await auth.api.signUpEmail({ body: { email: `newcomer-${kind}@elsewhere.example`, password, name: 'Elsewhere' }, asResponse: true })).status).toBe(200);
  });

  it('records a refused session once when the adapter sends it again after its answer was lost; each sign-in attempt on its own', async () => {
    await requireSso(true);
    // The answer to every other session create is lost on the way back (a reset connection): the
    // adapter sends it again with the same Idempotency-Key, and the backend answers the same 403.
    let sessionCreates = 0;
    const losingAnswers: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === 'POST' && new URL(String(input)).pathname === '/sessions' && sessionCreates++ % 2 === 0) {
        await response.arrayBuffer();
        throw new TypeError('fetch failed');
      }
      return response;
    };
    const lossy = betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl: backend.url, serviceKey: serviceApiKey, fetch: losingAnswers }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      logger: { disabled: true },
    });
    const signIn = () => lossy.api.signInEmail({ body: { email: at('retried'), password }, asResponse: true });
    await expectSsoRequired(await signIn());
    expect(sessionCreates).toBe(2);
    expect(await refusalsOf(at('retried'))).toEqual([{ method: 'better-auth:password', code: 'SSO_REQUIRED' }]);
    // Another sign-in is another attempt, on the record too.
    await expectSsoRequired(await signIn());
    expect(sessionCreates).toBe(4);
    expect(await refusalsOf(at('retried'))).toHaveLength(2);
  });

  it('refuses a reset link mailed before enforcement: the password is not changed', async () => {
    await requireSso(false);
    await auth.api.requestPasswordReset({ body: { email: at('resetter'), redirectTo: '/reset' } });
    const token = mailed.get(at('resetter'))!;
    expect(token).toBeTruthy();
    await requireSso(true);
    await expectSsoRequired(await auth.api.resetPassword({ body: { token, newPassword: 'a brand new password' }, asResponse: true }));
    // Nobody signed in: no refused sign-in on the record, as a reset on the backend's routes.
    expect(await refusalsOf(at('resetter'))).toEqual([]);
    await requireSso(false);
    expect((await auth.api.signInEmail({ body: { email: at('resetter'), password }, asResponse: true })).status).toBe(200);
  });

  it('refuses a magic link and an e-mail code in the domain, and lets them through elsewhere', async () => {
    await requireSso(true);
    await auth.api.signInMagicLink({ body: { email: at('linked') }, headers: new Headers() });
    const link = mailed.get(at('linked'))!;
    await expectSsoRequired(await auth.api.magicLinkVerify({ query: { token: link }, headers: new Headers(), asResponse: true }));

    await auth.api.sendVerificationOTP({ body: { email: at('coded'), type: 'sign-in' } });
    await expectSsoRequired(await auth.api.signInEmailOTP({ body: { email: at('coded'), otp: mailed.get(at('coded'))! }, asResponse: true }));
    // Each on the record once, with how Better Auth signed in.
    expect(await refusalsOf(at('linked'))).toEqual([{ method: 'better-auth:magic-link', code: 'SSO_REQUIRED' }]);
    expect(await refusalsOf(at('coded'))).toEqual([{ method: 'better-auth:email-otp', code: 'SSO_REQUIRED' }]);

    await requireSso(false);
    await auth.api.sendVerificationOTP({ body: { email: at('coded'), type: 'sign-in' } });
    expect((await auth.api.signInEmailOTP({ body: { email: at('coded'), otp: mailed.get(at('coded'))! }, asResponse: true })).status).toBe(200);
    expect(await newestMethod(at('coded'))).toBe('better-auth:email-otp');
  });

  it("lets the organization's owner in by password (break-glass), and records that it was, in the organization's audit log too", async () => {
    await requireSso(true);
    expect((await signInEmail(at('owner'))).status).toBe(200);
    expect(await newestMethod(at('owner'))).toBe('better-auth:password:break-glass');
    // As on the backend's own route: the organization that requires SSO sees it (its audit log, its webhooks), for that session.
    const { rows } = await asOwner(
      `SELECT e."organizationId", e."actorId", e."entityId", e."data"->>'method' AS "method" FROM "authstrap_event" e WHERE e."type" = 'sso.break_glass_used' AND e."userId" = $1`,
      [owner.user.id],
    );
    const newest = (await asOwner(`SELECT "id" FROM "session" WHERE "userId" = $1 ORDER BY "createdAt" DESC LIMIT 1`, [owner.user.id])).rows[0]!.id;
    expect(rows).toEqual([{ organizationId: owner.organizationId, actorId: owner.user.id, entityId: newest, method: 'better-auth:password:break-glass' }]);
    const audit = (await owner.api('GET', '/audit-events?limit=100')).body.data as { type: string; entityId: string }[];
    expect(audit.filter((event) => event.type === 'sso.break_glass_used')).toEqual([expect.objectContaining({ entityId: newest })]);
  });

  it('refuses a user their organization’s directory suspended, with SSO required or not, on the record once in each suspending organization’s audit log', async () => {
    await requireSso(false);
    const leaver = (await asOwner(`SELECT "id" FROM "User" WHERE "email" = $1`, [at('leaver')])).rows[0]!.id;
    const suspend = (organizationId: string) =>
      asOwner(
        `INSERT INTO "authstrap_member_suspension" ("id", "organizationId", "userId", "role", "memberCreatedAt", "reason") VALUES (gen_random_uuid(), $1, $2, 'member', now(), 'directory-inactive')`,
        [organizationId, leaver],
      );
    /** Where the leaver's DEPROVISIONED refusals are on the record: organization and method, by organization. */
    const recorded = async () =>
      (
        await asOwner(
          `SELECT "organizationId", "data"->>'method' AS "method" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused' AND "data"->>'email' = $1 AND "data"->>'code' = 'DEPROVISIONED' ORDER BY "organizationId", "createdAt"`,
          [at('leaver')],
        )
      ).rows;
    await suspend(owner.organizationId);
    const refused = await signInEmail(at('leaver'));
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'DEPROVISIONED', message: "Your access was turned off by your organization's directory" });
    // In the audit log of the organization whose directory turned them off, once; in no other (their personal organization's included).
    const audit = (await owner.api('GET', '/audit-events?type=session.sign_in_refused&limit=100')).body.data as { userId: string; data: Record<string, unknown> }[];
    expect(audit.filter((event) => event.data.email === at('leaver'))).toEqual([
      expect.objectContaining({ userId: leaver, data: { email: at('leaver'), method: 'better-auth:password', code: 'DEPROVISIONED' } }),
    ]);
    expect(await recorded()).toEqual([{ organizationId: owner.organizationId, method: 'better-auth:password' }]);

    // Suspended by their personal organization's directory too, and a session asked for there: once in each.
    const personal = (await asOwner(`SELECT "organizationId" FROM "member" WHERE "userId" = $1 AND "organizationId" <> $2`, [leaver, owner.organizationId])).rows[0]!.organizationId as string;
    await suspend(personal);
    const service = apiClient(backend.url, { token: serviceApiKey });
    const inPersonal = await service('POST', '/sessions', {
      body: { userId: leaver, token: `t-${Math.random()}`, expiresAt: new Date(Date.now() + 3_600_000).toISOString(), activeOrganizationId: personal },
      headers: { 'x-authstrap-better-auth-path': '/sign-in/email' },
    });
    expect(inPersonal.body.error?.code).toBe('DEPROVISIONED');
    expect(await recorded()).toEqual(
      [
        { organizationId: owner.organizationId, method: 'better-auth:password' },
        { organizationId: owner.organizationId, method: 'better-auth:password' },
        { organizationId: personal, method: 'better-auth:password' },
      ].sort((a, b) => a.organizationId.localeCompare(b.organizationId)),
    );
    await asOwner(`DELETE FROM "authstrap_member_suspension" WHERE "userId" = $1`, [leaver]);
    expect((await signInEmail(at('leaver'))).status).toBe(200);
  });

  it('ends a Better Auth session when the directory deactivates the user, refuses a new one, and lets them back in when reactivated', async () => {
    await requireSso(false);
    const made = await owner.api('POST', '/scim-directories', { body: { name: `Okta ${kind}` } });
    expect(made.status).toBe(201);
    const scim = (method: string, path: string, body?: unknown) =>
      fetch(`${backend.url}${new URL(made.body.data.baseUrl).pathname}${path}`, {
        method,
        headers: { authorization: `Bearer ${made.body.data.token}`, 'content-type': 'application/scim+json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(async (response) => ({ status: response.status, body: await response.json() }));
    await addMember(backend.url, owner, at('synced'), 'member');
    const signedIn = await auth.api.signInEmail({ body: { email: at('synced'), password }, returnHeaders: true });
    const headers = new Headers({ cookie: signedIn.headers.getSetCookie().map((cookie) => cookie.split(';')[0]!).join('; ') });
    expect(await auth.api.getSession({ headers })).not.toBeNull();
    const resource = await scim('POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: at('synced') });
    expect(resource.status).toBe(201);

    const started = Date.now();
    const patchOp = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] };
    expect((await scim('PATCH', `/Users/${resource.body.id}`, patchOp)).status).toBe(200);
    expect(await auth.api.getSession({ headers })).toBeNull();
    const refused = await signInEmail(at('synced'));
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'DEPROVISIONED' });
    expect(Date.now() - started).toBeLessThan(5000);

    await scim('PATCH', `/Users/${resource.body.id}`, { ...patchOp, Operations: [{ op: 'Replace', path: 'active', value: 'True' }] });
    expect((await signInEmail(at('synced'))).status).toBe(200);
  });

  it('judges a session the trusted server makes without naming a Better Auth endpoint as its own, whatever the body claims', async () => {
    await requireSso(true);
    const service = apiClient(backend.url, { token: serviceApiKey });
    const employee = (await asOwner(`SELECT "id" FROM "User" WHERE "email" = $1`, [at('employee')])).rows[0]!.id;
    const session = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      service('POST', '/sessions', { body: { userId: employee, token: `t-${Math.random()}`, expiresAt: new Date(Date.now() + 3_600_000).toISOString(), ...body }, headers });
    // The body cannot say it was single sign-on: the method is the server's to name.
    const claimed = await session({ authMethod: 'sso' });
    expect(claimed.status).toBe(403);
    expect(claimed.body.error.code).toBe('SSO_REQUIRED');
    // Better Auth's own sso plugin's callback, for a user with no account of the organization's providers: refused too.
    expect((await session({}, { 'x-authstrap-better-auth-path': '/sso/callback/okta' })).body.error.code).toBe('SSO_REQUIRED');

    await requireSso(false);
    const plain = await session({ authMethod: 'sso' });
    expect(plain.status).toBe(201);
    expect(plain.body.data.authMethod).toBe('service');
    const named = await session({}, { 'x-authstrap-better-auth-path': '/some-plugin/sign-in' });
    expect(named.body.data.authMethod).toBe('better-auth:other');
  });
});
