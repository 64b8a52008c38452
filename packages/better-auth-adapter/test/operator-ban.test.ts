import { betterAuth } from 'better-auth';
import { magicLink } from 'better-auth/plugins';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, authSecret, databaseKinds, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';

/**
 * A user the platform's operators banned (the backend's POST /api/operator/users/:id/ban,
 * docs/operator.md) on Better Auth's path: Better Auth checks the password in the frontend's
 * server, but the session it would make is a row of the backend, which the sign-in rule refuses
 * (BANNED) whatever the method; the answer is Better Auth's own 403. The session Better Auth made
 * before the ban is gone for it too. No admin plugin, no `banned` column: the backend's own ban.
 */
const password = 'correct horse battery';

describe.each(databaseKinds)("a banned user on Better Auth's path, %s database", (kind) => {
  let backend: TestBackend;
  let support: SignedUp;
  const mailed = new Map<string, string>();

  const makeAuth = () =>
    betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl: backend.url, serviceKey: serviceApiKey }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      plugins: [magicLink({ sendMagicLink: async ({ email, token }) => void mailed.set(email, token) })],
      logger: { disabled: true },
    });
  let auth: ReturnType<typeof makeAuth>;

  beforeAll(async () => {
    backend = await startBackend(kind);
    auth = makeAuth();
    support = await signUp(backend.url, 'support@platform.example');
    await backend.running.db.asOwner((tx) => tx.query(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [support.user.id]));
  }, 60_000);
  afterAll(() => backend?.stop());

  it('refuses every Better Auth sign-in of a banned user with its own 403, ends the session it made, and lets them in once unbanned', async () => {
    const email = `banned-${kind}@example.com`;
    const signedUp = await auth.api.signUpEmail({ body: { email, password, name: 'Banned' } });
    // A verified address: Better Auth's magic link removes the password of an unverified one (its
    // revokeUnprovenAccountAccess) even when the session is then refused, which is not what is tested here.
    await backend.running.db.asOwner((tx) => tx.query(`UPDATE "User" SET "email_verified" = true WHERE "id" = $1`, [signedUp.user.id]));
    const signedIn = await auth.api.signInEmail({ body: { email, password }, returnHeaders: true });
    const headers = new Headers({ cookie: signedIn.headers.getSetCookie().map((cookie) => cookie.split(';')[0]!).join('; ') });
    expect((await auth.api.getSession({ headers }))?.user.email).toBe(email);

    const banned = await support.api('POST', `/api/operator/users/${signedUp.user.id}/ban`, { body: { reason: 'fraud' } });
    expect(banned.status, JSON.stringify(banned.body)).toBe(200);
    // Both sessions Better Auth made (sign-up's and sign-in's) ended.
    expect(banned.body.data.sessions).toBe(2);
    expect(await auth.api.getSession({ headers })).toBeNull();

    const refused = await auth.api.signInEmail({ body: { email, password }, asResponse: true });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'BANNED', message: 'This account is banned' });
    // Another method of Better Auth's meets the same rule.
    await auth.api.signInMagicLink({ body: { email }, headers: new Headers() });
    const link = await auth.api.magicLinkVerify({ query: { token: mailed.get(email)! }, headers: new Headers(), asResponse: true });
    expect(link.status).toBe(403);
    expect(await link.json()).toMatchObject({ code: 'BANNED' });
    // And the trusted server itself, writing a session without naming a Better Auth endpoint.
    const service = apiClient(backend.url, { token: serviceApiKey });
    const direct = await service('POST', '/sessions', { body: { userId: signedUp.user.id, token: `t-${kind}`, expiresAt: new Date(Date.now() + 3_600_000).toISOString() } });
    expect(direct.status).toBe(403);
    expect(direct.body.error.code).toBe('BANNED');
    expect((await backend.running.db.asOwner((tx) => tx.query(`SELECT 1 FROM "session" WHERE "userId" = $1`, [signedUp.user.id]))).rowCount).toBe(0);
    // A ban's refusals are the platform's, not an organization's (docs/operator.md): each once, in no
    // organization's audit log (their personal organization's included), in the user's own events.
    const refusals = await backend.running.db.asOwner((tx) =>
      tx.query(`SELECT "organizationId", "userId", "data"->>'method' AS "method" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused' AND "data"->>'code' = 'BANNED' ORDER BY "createdAt"`),
    );
    expect(refusals.rows).toEqual(['better-auth:password', 'better-auth:magic-link', 'service'].map((method) => ({ organizationId: null, userId: signedUp.user.id, method })));

    expect((await support.api('POST', `/api/operator/users/${signedUp.user.id}/unban`)).status).toBe(200);
    const again = await auth.api.signInEmail({ body: { email, password }, asResponse: true });
    expect(again.status, await again.clone().text()).toBe(200);
  });
});
