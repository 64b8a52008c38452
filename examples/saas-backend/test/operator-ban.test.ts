import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, databaseKinds, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { tokenOf } from './support/mailbox.js';
import { openStream, type OpenStream } from './support/sse.js';

/**
 * Operators ban and unban a user (src/operator/, docs/operator.md): from the ban on, no path signs
 * them in (BANNED), their sessions are gone, their live streams end at the next recheck
 * (REALTIME_RECHECK_MS, 2 s by default) and the machine keys they made stop; all until the ban
 * ends or an operator lifts it. Better Auth's path is the adapter's test
 * (packages/better-auth-adapter/test/operator-ban.test.ts); the rule's SQL is
 * packages/cli/test/sign-in-rule.test.ts.
 */
const password = 'correct horse battery';

describe.each(databaseKinds)('operators ban and unban a user on the %s database', (kind) => {
  let backend: TestBackend;
  let support: SignedUp;
  let owner: SignedUp;
  let jane: SignedUp;
  let janesKey: string;
  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const anonymous = () => apiClient(backend.url);
  const signIn = (email: string) => anonymous()('POST', '/api/auth/sign-in/email', { body: { email, password } });
  const withJanesKey = () => anonymous()('GET', '/Projects', { headers: { 'x-api-key': janesKey } });
  const ban = (userId: string, body: unknown, by = support) => by.api('POST', `/api/operator/users/${userId}/ban`, { body });
  const unban = (userId: string, body?: unknown, by = support) => by.api('POST', `/api/operator/users/${userId}/unban`, body === undefined ? {} : { body });

  beforeAll(async () => {
    backend = await startBackend(kind);
    support = await signUp(backend.url, 'support@platform.example');
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [support.user.id]);
    owner = await signUp(backend.url, 'owner@acme.example');
    // Jane is an admin of Acme (so its audit log shows what support did) and makes a machine key there.
    jane = await addMember(backend.url, owner, 'jane@acme.example', 'admin');
    const key = await jane.api('POST', '/api/auth/api-keys', { body: { name: 'janes-ci', permissions: { Project: ['list'] } } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    janesKey = key.body.data.key;
  }, 60_000);
  afterAll(() => backend?.stop());

  it('stops a banned user within seconds: the session, the machine key they made and both their live streams; no new sign-in', async () => {
    expect((await withJanesKey()).status).toBe(200);
    const streams: OpenStream[] = [
      await openStream(backend.url, '/realtime?entity=Project', { authorization: `Bearer ${jane.token}`, 'x-organization-id': owner.organizationId }),
      await openStream(backend.url, '/realtime?entity=Project', { 'x-api-key': janesKey }),
    ];
    try {
      expect(streams.map((stream) => stream.status)).toEqual([200, 200]);
      const started = Date.now();
      const banned = await ban(jane.user.id, { reason: 'spam invitations' });
      expect(banned.status, JSON.stringify(banned.body)).toBe(200);
      expect(banned.body.data).toEqual({
        ban: { reason: 'spam invitations', expiresAt: null, bannedAt: expect.stringMatching(/Z$/), bannedBy: { id: support.user.id, email: 'support@platform.example' } },
        sessions: 1,
      });

      expect((await jane.api('GET', '/api/auth/get-session')).status).toBe(401);
      const keyRefused = await withJanesKey();
      expect(keyRefused.status).toBe(401);
      expect(keyRefused.body.error.message).toContain('banned');
      const [bySession, byKey] = await Promise.all(streams.map((stream) => stream.next((message) => message.event === 'end', 5000)));
      expect(JSON.parse(bySession!.data).code).toBe('SESSION_ENDED');
      expect(JSON.parse(byKey!.data)).toMatchObject({ code: 'KEY_REVOKED', message: expect.stringContaining('creator-banned') });
      expect(Date.now() - started).toBeLessThan(5000);

      const refused = await signIn('jane@acme.example');
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: 'BANNED', message: 'This account is banned' });
      // A wrong password is still the usual 401: the ban is told only to whoever knows the password.
      expect((await anonymous()('POST', '/api/auth/sign-in/email', { body: { email: 'jane@acme.example', password: 'not her password' } })).status).toBe(401);
      // No session was left behind by the refused sign-in.
      expect((await asOwner(`SELECT count(*)::int AS n FROM "session" WHERE "userId" = $1`, [jane.user.id])).rows[0]!.n).toBe(0);
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it('shows the ban to operators: in the user, in the list, and once in the platform\'s log with the reason', async () => {
    const user = await support.api('GET', `/api/operator/users/${jane.user.id}`);
    expect(user.body.data.ban).toMatchObject({ reason: 'spam invitations', expiresAt: null, bannedBy: { email: 'support@platform.example' } });
    expect(user.body.data.sessions).toEqual([]);
    const listed = await support.api('GET', '/api/operator/users?search=acme.example');
    expect(Object.fromEntries(listed.body.data.map((row: { email: string; banned: boolean }) => [row.email, row.banned]))).toEqual({ 'jane@acme.example': true, 'owner@acme.example': false });

    const log = await support.api('GET', '/api/operator/events?type=operator.banned_user');
    expect(log.body.meta.total).toBe(1);
    expect(log.body.data[0]).toMatchObject({
      userEmail: 'jane@acme.example',
      actorType: 'user',
      actorId: support.user.id,
      actorEmail: 'support@platform.example',
      data: { reason: 'spam invitations', expiresAt: null, sessions: 1 },
    });
  });

  it("records the ban in each organization of the user, so its owners see that support acted, without the reason or the operator's address", async () => {
    const audit = await owner.api('GET', '/audit-events?type=operator.banned_user');
    expect(audit.status).toBe(200);
    expect(audit.body.data).toHaveLength(1);
    expect(audit.body.data[0]).toMatchObject({ actorType: 'user', actorId: support.user.id, entity: 'User', entityId: jane.user.id, data: { email: 'jane@acme.example', sessions: 1, expiresAt: null } });
    expect(audit.body.data[0].data.reason).toBeUndefined();
    expect(audit.body.data[0].ipAddress ?? null).toBeNull();
    // Jane's personal organization has its copy too; nobody else's does.
    const organizationsOf = async (sql: string, params: unknown[]) => (await asOwner(sql, params)).rows.map((row) => row.organizationId as string).sort();
    const memberships = await organizationsOf(`SELECT "organizationId" FROM "member" WHERE "userId" = $1`, [jane.user.id]);
    expect(memberships).toHaveLength(2);
    expect(await organizationsOf(`SELECT "organizationId" FROM "authstrap_event" WHERE "type" = 'operator.banned_user' AND "organizationId" IS NOT NULL`, [])).toEqual(memberships);
    // Her sign-in the ban refused is the platform's business, not theirs (docs/operator.md): once,
    // in no organization's audit log, in her own security events.
    const refusals = await asOwner(`SELECT "organizationId", "userId", "data" FROM "authstrap_event" WHERE "type" = 'session.sign_in_refused'`);
    expect(refusals.rows).toEqual([{ organizationId: null, userId: jane.user.id, data: { email: 'jane@acme.example', method: 'password', code: 'BANNED' } }]);
  });

  it('lifts the ban: the user signs in again and the key they made works again; their sessions stay ended', async () => {
    const lifted = await unban(jane.user.id, { reason: 'appeal accepted' });
    expect(lifted.status, JSON.stringify(lifted.body)).toBe(200);
    expect(lifted.body.data.lifted).toMatchObject({ reason: 'spam invitations', expiresAt: null });
    expect((await jane.api('GET', '/api/auth/get-session')).status).toBe(401);
    expect((await signIn('jane@acme.example')).status).toBe(200);
    expect((await withJanesKey()).status).toBe(200);
    expect((await support.api('GET', `/api/operator/users/${jane.user.id}`)).body.data.ban).toBeNull();
    const log = await support.api('GET', '/api/operator/events?type=operator.unbanned_user');
    expect(log.body.data.map((event: { data: unknown }) => event.data)).toEqual([{ reason: 'appeal accepted', bannedAt: expect.any(String), expiresAt: null }]);
    // Lifting a ban that is not there is refused, saying so.
    const again = await unban(jane.user.id);
    expect(again.status).toBe(409);
    expect(again.body.error.message).toBe('This user is not banned');
  });

  it('lets a ban end by itself: one whose end has passed refuses nothing', async () => {
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const banned = await ban(jane.user.id, { reason: 'cooling off', expiresAt: until });
    expect(banned.status).toBe(200);
    expect(banned.body.data.ban.expiresAt).toBe(until);
    expect((await signIn('jane@acme.example')).body.error?.code).toBe('BANNED');
    expect((await withJanesKey()).status).toBe(401);

    await asOwner(`UPDATE "authstrap_user_ban" SET "expiresAt" = now() - interval '1 minute' WHERE "userId" = $1`, [jane.user.id]);
    expect((await signIn('jane@acme.example')).status).toBe(200);
    expect((await withJanesKey()).status).toBe(200);
    expect((await support.api('GET', `/api/operator/users/${jane.user.id}`)).body.data.ban).toBeNull();
    expect((await unban(jane.user.id)).status).toBe(409);
    // A new ban takes the place of the one that ended.
    expect((await ban(jane.user.id, { reason: 'again' })).status).toBe(200);
    expect((await signIn('jane@acme.example')).body.error?.code).toBe('BANNED');
    expect((await unban(jane.user.id)).status).toBe(200);
  });

  it('keeps a password reset from letting a banned user in: no link is mailed during the ban, and one mailed before is refused at the reset', async () => {
    const resetter = await signUp(backend.url, 'resetter@acme.example');
    const forgot = () => anonymous()('POST', '/api/auth/forgot-password', { body: { email: 'resetter@acme.example' } });
    const resetMails = () => backend.mailbox.to('resetter@acme.example').filter((mail) => /Reset your password/.test(mail.subject));
    expect((await forgot()).status).toBe(200);
    const before = await backend.mailbox.next('resetter@acme.example', /Reset your password/);
    expect((await ban(resetter.user.id, { reason: 'chargebacks' })).status).toBe(200);

    const reset = await anonymous()('POST', '/api/auth/reset-password', { body: { token: tokenOf(before), newPassword: 'a brand new password' } });
    expect(reset.status).toBe(403);
    expect(reset.body.error.code).toBe('BANNED');
    // The same answer as for anyone, and no link: the mail of the first request is the only one.
    expect((await forgot()).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(resetMails()).toHaveLength(1);

    expect((await unban(resetter.user.id)).status).toBe(200);
    expect((await signIn('resetter@acme.example')).status).toBe(200);
  });

  it('refuses the ban to everyone who is not an operator, and an operator as its target', async () => {
    const signedIn = await signIn('jane@acme.example');
    const janeNow = apiClient(backend.url, { token: signedIn.body.data.token });
    expect((await janeNow('POST', `/api/operator/users/${owner.user.id}/ban`, { body: { reason: 'revenge' } })).status).toBe(403);
    expect((await owner.api('POST', `/api/operator/users/${jane.user.id}/unban`)).status).toBe(403);
    expect((await anonymous()('POST', `/api/operator/users/${jane.user.id}/ban`, { body: { reason: 'x' } })).status).toBe(401);
    // A machine key reaches its organization's entities only, never the operators' routes.
    const byKey = await anonymous()('POST', `/api/operator/users/${owner.user.id}/ban`, { body: { reason: 'x' }, headers: { 'x-api-key': janesKey } });
    expect(byKey.status).toBe(403);

    // An operator cannot ban another operator, nor themselves.
    const colleague = await signUp(backend.url, 'colleague@platform.example');
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [colleague.user.id]);
    for (const target of [colleague, support]) {
      const refused = await ban(target.user.id, { reason: 'x' });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('An operator cannot be banned') });
    }
    expect((await colleague.api('GET', '/api/auth/get-session')).status).toBe(200);
    expect((await asOwner(`SELECT count(*)::int AS n FROM "authstrap_user_ban"`)).rows[0]!.n).toBe(0);
  });

  it('refuses a ban without a reason, with an end that is not in the future or not a time, and of nobody', async () => {
    const invalid = async (body: unknown) => {
      const answer = await ban(owner.user.id, body);
      expect(answer.status, JSON.stringify(body)).toBe(422);
      return answer.body.error.details;
    };
    expect(await invalid({})).toHaveProperty('reason');
    expect(await invalid({ reason: '   ' })).toHaveProperty('reason');
    expect((await invalid({ reason: 'x', expiresAt: new Date(Date.now() - 60_000).toISOString() })).expiresAt).toContain('future');
    expect(await invalid({ reason: 'x', expiresAt: 'next tuesday' })).toHaveProperty('expiresAt');
    expect(await invalid({ reason: 'x', until: '2030-01-01T00:00:00Z' })).toHaveProperty('until');
    expect((await unban(owner.user.id, { why: 'x' })).status).toBe(422);
    expect((await ban('00000000-0000-4000-8000-00000000abcd', { reason: 'x' })).status).toBe(404);
    expect((await unban('00000000-0000-4000-8000-00000000abcd')).status).toBe(404);
    // A malformed id is no user, as everywhere.
    expect((await support.api('POST', '/api/operator/users/not-an-id/ban', { body: { reason: 'x' } })).status).toBe(404);
    expect((await owner.api('GET', '/api/auth/get-session')).status).toBe(200);
  });

  it('keeps the bans from every request: a user reads and writes no row of them, their own included', async () => {
    await ban(jane.user.id, { reason: 'checking the wall' });
    try {
      const asRequest = async (sql: string) => {
        const outcome = await backend.running.db.pipeline([
          { text: `SELECT set_config('authstrap.user_id', $1, true), set_config('authstrap.organization_id', $2, true), set_config('authstrap.role', 'owner', true)`, params: [jane.user.id, owner.organizationId] },
          { text: sql, params: [] },
        ]);
        if (outcome.error) throw outcome.error;
        return outcome.results[1]!;
      };
      expect((await asRequest(`SELECT * FROM "authstrap_user_ban"`)).rows).toEqual([]);
      expect((await asRequest(`DELETE FROM "authstrap_user_ban"`)).rowCount).toBe(0);
      await expect(asRequest(`INSERT INTO "authstrap_user_ban" ("userId", "reason") VALUES ('${owner.user.id}', 'x')`)).rejects.toThrow(/row-level security/);
      expect((await signIn('jane@acme.example')).status).toBe(403);
    } finally {
      await unban(jane.user.id);
    }
  });
});
