import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, pooledDatabaseKinds, signUp, startBackend, type Api, type TestBackend } from './support/backend.js';
import { sha256 } from './support/secrets.js';
import { timingGapMs } from './support/timing.js';

const password = 'correct horse battery';

describe.each(pooledDatabaseKinds)('sign-up, sign-in and sessions on the %s database', (kind) => {
  let backend: TestBackend;
  let anonymous: Api;
  const count = async (table: string, where = 'true', params: unknown[] = []) =>
    (await backend.running.db.asOwner((tx) => tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE ${where}`, params))).rows[0]!.n;

  beforeAll(async () => {
    backend = await startBackend(kind);
    anonymous = apiClient(backend.url);
  });
  afterAll(() => backend?.stop());

  it('sign-up writes exactly a User, a credential account with a bcrypt hash, an organization, an owner membership and a session', async () => {
    const before = { users: await count('User'), accounts: await count('account'), orgs: await count('Organization'), members: await count('member'), sessions: await count('session') };
    const response = await anonymous('POST', '/api/auth/sign-up/email', { body: { email: 'Ada@Example.com', name: 'Ada', password } });
    expect(response.status).toBe(201);
    const { user, token } = response.body.data;
    expect(user).toMatchObject({ email: 'ada@example.com', name: 'Ada', email_verified: false, image: null });
    expect(Object.keys(user).sort()).toEqual(['createdAt', 'email', 'email_verified', 'id', 'image', 'name', 'updatedAt']);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);

    expect(await count('User')).toBe(before.users + 1);
    expect(await count('account')).toBe(before.accounts + 1);
    expect(await count('Organization')).toBe(before.orgs + 1);
    expect(await count('member')).toBe(before.members + 1);
    expect(await count('session')).toBe(before.sessions + 1);

    const { rows: accounts } = await backend.running.db.query<{ providerId: string; accountId: string; password: string }>(
      'SELECT "providerId", "accountId", "password" FROM "account" WHERE "userId" = $1',
      [user.id],
    );
    expect(accounts).toHaveLength(1);
    expect(accounts[0]!.providerId).toBe('credential');
    expect(accounts[0]!.accountId).toBe(user.id);
    // A bcrypt hash of the configured cost (the tests run bcrypt at cost 4).
    expect(accounts[0]!.password).toMatch(/^\$2b\$04\$[./A-Za-z0-9]{53}$/);
    const { rows: members } = await backend.running.db.query<{ role: string }>('SELECT "role" FROM "member" WHERE "userId" = $1', [user.id]);
    expect(members).toEqual([{ role: 'owner' }]);
    // The User table has no password column at all.
    const { rows: columns } = await backend.running.db.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'User'`,
    );
    expect(columns.map((column) => column.column_name)).not.toContain('password');
  });

  it('stores only the SHA-256 of the session secret, never the secret itself', async () => {
    const { token, user } = await signUp(backend.url, 'hashed@example.com');
    expect(await count('session', '"token" = $1', [token])).toBe(0);
    expect(await count('session', '"token" = $1 AND "userId" = $2', [sha256(token), user.id])).toBe(1);
  });

  it('signs in with the right password and gives the same 401 for a wrong password and an unknown email', async () => {
    await signUp(backend.url, 'grace@example.com', password);
    const ok = await anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'GRACE@example.com', password } });
    expect(ok.status).toBe(200);
    expect(ok.body.data.user.email).toBe('grace@example.com');
    expect(ok.body.data.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(ok.headers.get('set-cookie')).toContain(`session=${ok.body.data.token}`);

    const wrongPassword = await anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'grace@example.com', password: 'not the password' } });
    const unknownEmail = await anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'nobody@example.com', password: 'not the password' } });
    for (const response of [wrongPassword, unknownEmail]) {
      expect(response.status).toBe(401);
      expect(response.headers.get('set-cookie')).toBeNull();
    }
    expect(wrongPassword.body).toEqual({ success: false, error: { code: 'UNAUTHORIZED', message: 'Invalid email or password' } });
    expect(unknownEmail.body).toEqual(wrongPassword.body);
  });

  it('refuses a duplicate email with 409, whatever its case, and stores nothing more', async () => {
    await signUp(backend.url, 'taken@example.com');
    const users = await count('User');
    const orgs = await count('Organization');
    const duplicate = await anonymous('POST', '/api/auth/sign-up/email', { body: { email: 'Taken@Example.com', name: 'Again', password } });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error).toEqual({ code: 'CONFLICT', message: 'An account with this email already exists' });
    expect(await count('User')).toBe(users);
    expect(await count('Organization')).toBe(orgs);
  });

  it('ten concurrent sign-ups with one email give exactly one 201 and leave no orphan rows', async () => {
    const before = { users: await count('User'), accounts: await count('account'), orgs: await count('Organization'), sessions: await count('session') };
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, n) => anonymous('POST', '/api/auth/sign-up/email', { body: { email: 'race@example.com', name: `Racer ${n}`, password } })),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    expect(await count('User')).toBe(before.users + 1);
    expect(await count('account')).toBe(before.accounts + 1);
    expect(await count('Organization')).toBe(before.orgs + 1);
    expect(await count('session')).toBe(before.sessions + 1);
    expect(await count('Organization', `"id" NOT IN (SELECT "organizationId" FROM "member")`)).toBe(0);
  });

  it('validates sign-up input: email, name of 2+, password of 8 to 72 bytes, never truncated', async () => {
    const attempt = (body: object) => anonymous('POST', '/api/auth/sign-up/email', { body });
    const invalid = await attempt({ email: 'not-an-email', name: 'A', password: 'short' });
    expect(invalid.status).toBe(422);
    expect(Object.keys(invalid.body.error.details).sort()).toEqual(['email', 'name', 'password']);

    // 72 bytes is the most bcrypt reads; 73 would be silently cut, so it is refused.
    expect((await attempt({ email: 'long72@example.com', name: 'Long', password: 'a'.repeat(72) })).status).toBe(201);
    const tooLong = await attempt({ email: 'long73@example.com', name: 'Long', password: 'a'.repeat(73) });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error.details.password).toBe('Password must be at most 72 bytes');
    // Bytes, not characters, at both ends: 25 three-byte characters are 75 bytes ...
    expect((await attempt({ email: 'multibyte@example.com', name: 'Multi', password: '€'.repeat(25) })).status).toBe(422);
    // ... three are 9 bytes, enough; two emoji are 8 bytes, enough; seven plain letters are 7, too few.
    expect((await attempt({ email: 'euros@example.com', name: 'Euros', password: '€€€' })).status).toBe(201);
    expect((await attempt({ email: 'emoji@example.com', name: 'Emoji', password: '😀😀' })).status).toBe(201);
    const tooShort = await attempt({ email: 'seven@example.com', name: 'Seven', password: 'abcdefg' });
    expect(tooShort.status).toBe(422);
    expect(tooShort.body.error.details.password).toBe('Password must be at least 8 bytes (8 plain letters or digits)');

    // A password sharing the first 72 bytes with the real one does not sign in.
    const signIn = await anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'long72@example.com', password: 'a'.repeat(72) + 'b' } });
    expect(signIn.status).toBe(401);
  });

  it('get-session returns the session, the user and their organizations, and never the secret', async () => {
    const ada = await signUp(backend.url, 'session@example.com');
    const response = await anonymous('GET', '/api/auth/get-session', { token: ada.token });
    expect(response.status).toBe(200);
    const { session, user, organizations } = response.body.data;
    expect(user.id).toBe(ada.user.id);
    expect(session.userId).toBe(ada.user.id);
    expect(session).not.toHaveProperty('token');
    expect(organizations).toEqual([expect.objectContaining({ id: ada.organizationId, role: 'owner' })]);
    expect(JSON.stringify(response.body)).not.toContain(ada.token);
    expect(JSON.stringify(response.body)).not.toContain(sha256(ada.token));
    expect((await anonymous('GET', '/api/auth/get-session')).status).toBe(401);
  });

  it('accepts the session as a cookie or as a bearer token', async () => {
    const ada = await signUp(backend.url, 'both@example.com');
    const withCookie = await anonymous('GET', '/Projects', { organizationId: ada.organizationId, headers: { cookie: `theme=dark; session=${ada.token}` } });
    expect(withCookie.status).toBe(200);
    const withBearer = await anonymous('GET', '/Projects', { organizationId: ada.organizationId, token: ada.token });
    expect(withBearer.status).toBe(200);
  });

  it('refuses signed-out, expired and forged sessions with 401', async () => {
    const signedOut = await signUp(backend.url, 'signedout@example.com');
    const out = await anonymous('POST', '/api/auth/sign-out', { token: signedOut.token });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/session=;.*Expires=Thu, 01 Jan 1970/);
    expect(await count('session', '"token" = $1', [sha256(signedOut.token)])).toBe(0);
    expect((await signedOut.api('GET', '/Projects')).status).toBe(401);

    const expired = await signUp(backend.url, 'expired@example.com');
    await backend.running.db.query(`UPDATE "session" SET "expiresAt" = now() - interval '1 second' WHERE "token" = $1`, [sha256(expired.token)]);
    const expiredResponse = await expired.api('GET', '/Projects');
    expect(expiredResponse.status).toBe(401);
    expect(expiredResponse.body.error.code).toBe('UNAUTHORIZED');

    const forged = await signUp(backend.url, 'forged@example.com');
    const tampered = forged.token.slice(0, -1) + (forged.token.endsWith('A') ? 'B' : 'A');
    for (const token of [tampered, sha256(forged.token), 'x', "' OR 1=1 --"]) {
      expect((await anonymous('GET', '/Projects', { token, organizationId: forged.organizationId })).status, token).toBe(401);
    }
  });

  it('extends a session used with less than 6 days left to 7 days, and re-sends the cookie', async () => {
    const ada = await signUp(backend.url, 'sliding@example.com');
    const expiry = async () =>
      new Date((await backend.running.db.query<{ expiresAt: Date }>('SELECT "expiresAt" FROM "session" WHERE "token" = $1', [sha256(ada.token)])).rows[0]!.expiresAt).getTime();
    const day = 24 * 60 * 60 * 1000;

    // Fresh (7 days left): used as it is, no new cookie.
    const fresh = await anonymous('GET', '/Projects', { organizationId: ada.organizationId, headers: { cookie: `session=${ada.token}` } });
    expect(fresh.headers.get('set-cookie')).toBeNull();
    expect(await expiry()).toBeGreaterThan(Date.now() + 6.9 * day);

    await backend.running.db.query(`UPDATE "session" SET "expiresAt" = now() + interval '1 day' WHERE "token" = $1`, [sha256(ada.token)]);
    const renewed = await anonymous('GET', '/Projects', { organizationId: ada.organizationId, headers: { cookie: `session=${ada.token}` } });
    expect(renewed.status).toBe(200);
    expect(renewed.headers.get('set-cookie')).toContain('Max-Age=604800');
    expect(await expiry()).toBeGreaterThan(Date.now() + 6.9 * day);
  });

  it('no auth response carries a password or a hash', async () => {
    const email = 'nohash@example.com';
    const up = await anonymous('POST', '/api/auth/sign-up/email', { body: { email, name: 'No Hash', password } });
    const inResponse = await anonymous('POST', '/api/auth/sign-in/email', { body: { email, password } });
    const session = await anonymous('GET', '/api/auth/get-session', { token: inResponse.body.data.token });
    for (const response of [up, inResponse, session]) {
      const text = JSON.stringify(response.body);
      expect(text).not.toContain(password);
      expect(text).not.toContain('$2b$');
      expect(text).not.toMatch(/"password"/);
    }
  });
});

/**
 * A failed sign-in tells nobody whether the address has an account: the same 401, the same work
 * (a bcrypt comparison of the same cost, one `session.sign_in_failed` event recorded the same
 * way), so about the same time (test/support/timing.ts: alternating pairs, 10 ms between the lower quartiles).
 */
describe.each([false, true])('a failed sign-in, known address or not (REQUIRE_EMAIL_VERIFICATION=%s)', (requireVerification) => {
  let backend: TestBackend;
  const wrongPassword = 'wrong password!';
  let known: string;
  let unverified: string;
  beforeAll(async () => {
    // A realistic cost, so that skipping the hash for an unknown address would show.
    backend = await startBackend('embedded', { BCRYPT_COST: '10', REQUIRE_EMAIL_VERIFICATION: String(requireVerification) });
    const api = apiClient(backend.url);
    [known, unverified] = [`known-${requireVerification}@example.com`, `unverified-${requireVerification}@example.com`];
    for (const email of [known, unverified]) {
      expect((await api('POST', '/api/auth/sign-up/email', { body: { email, name: 'Timing', password } })).status).toBe(201);
    }
    await backend.running.db.asOwner((tx) => tx.query(`UPDATE "User" SET "email_verified" = true WHERE "email" = $1`, [known]));
  }, 60_000);
  afterAll(() => backend?.stop());

  const signIn = async (email: string) => {
    const response = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email, password: wrongPassword } });
    expect(response.status).toBe(401);
    expect(response.body.error.message).toBe('Invalid email or password');
  };
  const failedSignIns = async () =>
    (
      await backend.running.db.asOwner((tx) =>
        tx.query<{ userId: string | null; entity: string; data: { email: string }; actorType: string }>(
          `SELECT "userId", "entity", "data", "actorType" FROM "authstrap_event" WHERE "type" = 'session.sign_in_failed' ORDER BY "createdAt", "id"`,
        ),
      )
    ).rows;

  it('records one failed attempt for each, the same way: the address as typed, and the user when there is one', async () => {
    const before = (await failedSignIns()).length;
    await signIn('Nobody-Here@example.com');
    await signIn(known);
    await signIn(unverified);
    const recorded = (await failedSignIns()).slice(before);
    const { rows: users } = await backend.running.db.asOwner((tx) => tx.query<{ id: string; email: string }>(`SELECT "id", "email" FROM "User" WHERE "email" = ANY($1)`, [[known, unverified]]));
    const idOf = (email: string) => users.find((user) => user.email === email)!.id;
    expect(recorded).toEqual([
      { userId: null, entity: 'User', data: { email: 'nobody-here@example.com' }, actorType: 'system' },
      { userId: idOf(known), entity: 'User', data: { email: known }, actorType: 'system' },
      { userId: idOf(unverified), entity: 'User', data: { email: unverified }, actorType: 'system' },
    ]);
  });

  for (const which of ['a wrong password', 'an unverified address with a wrong password'] as const) {
    it(`takes about as long for an unknown address as for ${which}`, { timeout: 120_000 }, async () => {
      const address = which === 'a wrong password' ? known : unverified;
      // A warm-up of each first (the dummy hash is made at the first unknown address).
      await signIn('warm-up@example.com');
      await signIn(address);
      let round = 0;
      const gap = await timingGapMs({ rounds: 15, attempts: 3, boundMs: 10 }, {
        a: () => signIn(address),
        b: () => signIn(`unknown-${round++}@example.com`),
      });
      expect(gap.smallest, `lower quartiles of known - unknown (ms): ${gap.gaps.join(', ')}`).toBeLessThan(10);
    });
  }
});
