import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, databaseKinds, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * An operator signs in as a user for a bounded time (src/operator/, docs/operator.md,
 * "Impersonation"): the session is the user's on every route, says who is behind it
 * (get-session's impersonatedBy, data.impersonatedBy on every event it makes), ends at its bound
 * and is never renewed, and is on the record where the user, their organizations and the
 * platform look. The session trigger's rule for it is also tested on its own in
 * packages/cli/test/sign-in-rule.test.ts.
 */
const password = 'correct horse battery';

describe.each(databaseKinds)('operators impersonate a user on the %s database', (kind) => {
  let backend: TestBackend;
  let support: SignedUp;
  let colleague: SignedUp;
  let owner: SignedUp;
  let jane: SignedUp;
  let janesKey: string;
  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const anonymous = () => apiClient(backend.url);
  const service = () => apiClient(backend.url, { token: serviceApiKey });
  const impersonate = (userId: string, body: unknown, by = support) => by.api('POST', `/api/operator/users/${userId}/impersonate`, { body });
  /** Jane as the operator sees her: her token, acting in Acme. */
  const asJaneBy = (token: string) => apiClient(backend.url, { token, organizationId: owner.organizationId });
  const sessionRow = async (id: string) =>
    (await asOwner(`SELECT "userId", "authMethod", "impersonatedBy", "expiresAt" FROM "session" WHERE "id" = $1`, [id])).rows[0] as
      | { userId: string; authMethod: string; impersonatedBy: string | null; expiresAt: Date }
      | undefined;

  beforeAll(async () => {
    backend = await startBackend(kind);
    support = await signUp(backend.url, 'support@platform.example');
    colleague = await signUp(backend.url, 'colleague@platform.example');
    for (const operator of [support, colleague]) {
      await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [operator.user.id]);
    }
    owner = await signUp(backend.url, 'owner@acme.example');
    jane = await addMember(backend.url, owner, 'jane@acme.example', 'member');
    const key = await owner.api('POST', '/api/auth/api-keys', { body: { name: 'acme-ci', permissions: { Project: ['list'] } } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    janesKey = key.body.data.key;
  }, 60_000);
  afterAll(() => backend?.stop());

  it("gives the operator a bearer token of the user, bounded (30 minutes by default), with no cookie, on the record in the user's and the platform's events", async () => {
    const before = Date.now();
    const started = await impersonate(jane.user.id, { reason: 'ticket 4711: cannot see her projects' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.headers.get('set-cookie')).toBeNull();
    const { token, sessionId, userId, expiresAt } = started.body.data;
    expect(userId).toBe(jane.user.id);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const minutesGranted = (Date.parse(expiresAt) - before) / 60_000;
    expect(minutesGranted).toBeGreaterThan(29.9);
    expect(minutesGranted).toBeLessThan(30.1);
    // The database keeps the user's session, marked, with the secret's hash only.
    const row = await sessionRow(sessionId);
    expect(row).toMatchObject({ userId: jane.user.id, authMethod: 'impersonation', impersonatedBy: support.user.id });
    expect((await asOwner(`SELECT count(*)::int AS n FROM "session" WHERE "token" = $1`, [token])).rows[0]!.n).toBe(0);

    const security = await jane.api('GET', '/api/auth/security-events?type=operator.impersonation_started');
    expect(security.status).toBe(200);
    expect(security.body.data).toHaveLength(1);
    expect(security.body.data[0]).toMatchObject({ userId: jane.user.id, actorType: 'user', actorId: support.user.id, data: { sessionId, expiresAt, reason: 'ticket 4711: cannot see her projects' } });
    const platform = await support.api('GET', '/api/operator/events?type=operator.impersonation_started');
    expect(platform.body.data).toHaveLength(1);
    expect(platform.body.data[0]).toMatchObject({ userEmail: 'jane@acme.example', actorEmail: 'support@platform.example', data: { sessionId } });
    // Acme's owners see that support signed in as their member, without the reason.
    const audit = await owner.api('GET', '/audit-events?type=operator.impersonation_started');
    expect(audit.body.data).toHaveLength(1);
    expect(audit.body.data[0]).toMatchObject({ actorId: support.user.id, entityId: jane.user.id, data: { email: 'jane@acme.example', sessionId } });
    expect(audit.body.data[0].data.reason).toBeUndefined();
    // The operator's page of the user shows the session as an impersonation.
    const seen = await support.api('GET', `/api/operator/users/${jane.user.id}`);
    expect(seen.body.data.sessions.find((session: { id: string }) => session.id === sessionId)).toMatchObject({ impersonatedBy: support.user.id, expiresAt });
    await support.api('POST', `/api/operator/impersonations/${sessionId}/end`);
  });

  it('is the user on tenant routes, says so in get-session, and marks every event its writes make with the operator', async () => {
    const started = await impersonate(jane.user.id, { reason: 'ticket 4712', minutes: 5 });
    const { token, sessionId, expiresAt } = started.body.data;
    const asJane = asJaneBy(token);

    const session = await asJane('GET', '/api/auth/get-session');
    expect(session.status).toBe(200);
    expect(session.body.data.user.id).toBe(jane.user.id);
    expect(session.body.data.impersonatedBy).toEqual({ id: support.user.id, email: 'support@platform.example', name: 'support' });
    expect(session.body.data.session).toMatchObject({ id: sessionId, impersonatedBy: support.user.id, expiresAt });
    // Jane's own session says nobody is behind it.
    expect((await jane.api('GET', '/api/auth/get-session')).body.data.impersonatedBy).toBeNull();

    expect((await asJane('GET', '/Projects')).status).toBe(200);
    const created = await asJane('POST', '/Projects', { body: { name: 'Made by support' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const projectId = created.body.data.id;
    const renamed = await asJane('PATCH', `/Projects/${projectId}`, { body: { name: 'Renamed by support' } });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    // Jane's own write, for contrast, carries no operator.
    expect((await jane.api('PATCH', `/Projects/${projectId}`, { body: { description: 'jane herself' } })).status).toBe(200);

    const audit = await owner.api('GET', `/audit-events?entityId=${projectId}&sort=createdAt&order=asc`);
    expect(audit.status).toBe(200);
    const byType = audit.body.data.map((event: { type: string; actorId: string; data: { impersonatedBy?: string } }) => [event.type, event.actorId, event.data.impersonatedBy ?? null]);
    expect(byType).toEqual([
      ['project.created', jane.user.id, support.user.id],
      ['project.updated', jane.user.id, support.user.id],
      ['project.updated', jane.user.id, null],
    ]);

    // Used, it is not renewed: its end stays the operator's bound.
    expect((await sessionRow(sessionId))!.expiresAt.toISOString()).toBe(expiresAt);
    // Nor can anyone push it further: the session's update trigger keeps the earlier end.
    await asOwner(`UPDATE "session" SET "expiresAt" = now() + interval '7 days', "impersonatedBy" = NULL, "authMethod" = 'password' WHERE "id" = $1`, [sessionId]);
    expect(await sessionRow(sessionId)).toMatchObject({ expiresAt: new Date(expiresAt), impersonatedBy: support.user.id, authMethod: 'impersonation' });

    // It ends at its bound (brought forward here rather than waited for).
    await asOwner(`UPDATE "session" SET "expiresAt" = now() - interval '1 second' WHERE "id" = $1`, [sessionId]);
    expect((await asJane('GET', '/Projects')).status).toBe(401);
    expect((await asJane('GET', '/api/auth/get-session')).status).toBe(401);
  });

  it('ends early from the operators\' routes (any operator) or at the operator\'s sign-out, each on the record', async () => {
    const first = (await impersonate(jane.user.id, { reason: 'ticket 4713' })).body.data;
    expect((await asJaneBy(first.token)('GET', '/Projects')).status).toBe(200);
    const ended = await colleague.api('POST', `/api/operator/impersonations/${first.sessionId}/end`);
    expect(ended.status, JSON.stringify(ended.body)).toBe(200);
    expect(ended.body.data).toEqual({ ended: true, sessionId: first.sessionId, userId: jane.user.id });
    expect((await asJaneBy(first.token)('GET', '/Projects')).status).toBe(401);
    expect((await colleague.api('POST', `/api/operator/impersonations/${first.sessionId}/end`)).status).toBe(404);
    // A user's own session is no impersonation to end.
    const janesOwn = (await jane.api('GET', '/api/auth/get-session')).body.data.session.id;
    expect((await support.api('POST', `/api/operator/impersonations/${janesOwn}/end`)).status).toBe(404);
    expect((await jane.api('GET', '/api/auth/get-session')).status).toBe(200);

    const second = (await impersonate(jane.user.id, { reason: 'ticket 4714' })).body.data;
    const signedOut = await asJaneBy(second.token)('POST', '/api/auth/sign-out');
    expect(signedOut.status).toBe(200);
    expect(await sessionRow(second.sessionId)).toBeUndefined();

    const log = await support.api('GET', '/api/operator/events?type=operator.impersonation_ended');
    const endings = log.body.data.map((event: { actorId: string; data: Record<string, unknown> }) => ({ actorId: event.actorId, ...event.data }));
    expect(endings).toEqual(
      expect.arrayContaining([
        { actorId: colleague.user.id, sessionId: first.sessionId, endedBy: 'operator', impersonatedBy: support.user.id },
        { actorId: support.user.id, sessionId: second.sessionId, endedBy: 'sign-out', impersonatedBy: support.user.id },
      ]),
    );
    const security = await jane.api('GET', '/api/auth/security-events?type=operator.impersonation_ended');
    expect(security.body.data.map((event: { data: { sessionId: string } }) => event.data.sessionId)).toEqual(expect.arrayContaining([first.sessionId, second.sessionId]));
    // No session.signed_out of Jane's was recorded for the operator's sign-out.
    expect((await jane.api('GET', '/api/auth/security-events?type=session.signed_out')).body.data).toHaveLength(0);
  });

  it('refuses an operator as the target (themselves included), a banned user, and anyone but an operator', async () => {
    for (const target of [colleague, support]) {
      const refused = await impersonate(target.user.id, { reason: 'x' });
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('CONFLICT');
    }
    expect((await impersonate(colleague.user.id, { reason: 'x' })).body.error.message).toBe('An operator cannot be impersonated: operators act as themselves');
    expect((await impersonate(support.user.id, { reason: 'x' })).body.error.message).toBe('You cannot impersonate yourself');

    const banned = await signUp(backend.url, 'banned@acme.example');
    expect((await support.api('POST', `/api/operator/users/${banned.user.id}/ban`, { body: { reason: 'spam' } })).status).toBe(200);
    const refusedBanned = await impersonate(banned.user.id, { reason: 'x' });
    expect(refusedBanned.status).toBe(403);
    expect(refusedBanned.body.error.message).toContain('This user is banned');
    expect((await asOwner(`SELECT count(*)::int AS n FROM "session" WHERE "userId" = $1`, [banned.user.id])).rows[0]!.n).toBe(0);

    // A ban ends an impersonation in progress too.
    const victim = await signUp(backend.url, 'victim@acme.example');
    const running = (await impersonate(victim.user.id, { reason: 'x' })).body.data;
    await support.api('POST', `/api/operator/users/${victim.user.id}/ban`, { body: { reason: 'compromised' } });
    expect((await apiClient(backend.url, { token: running.token })('GET', '/api/auth/get-session')).status).toBe(401);

    // Not an operator: a member, an owner, a machine key, the service key, nobody; and the impersonation's own token.
    expect((await jane.api('POST', `/api/operator/users/${owner.user.id}/impersonate`, { body: { reason: 'x' } })).status).toBe(403);
    expect((await owner.api('POST', `/api/operator/users/${jane.user.id}/impersonate`, { body: { reason: 'x' } })).status).toBe(403);
    expect((await anonymous()('POST', `/api/operator/users/${jane.user.id}/impersonate`, { body: { reason: 'x' }, headers: { 'x-api-key': janesKey } })).status).toBe(403);
    expect((await service()('POST', `/api/operator/users/${jane.user.id}/impersonate`, { body: { reason: 'x' } })).status).toBe(403);
    expect((await anonymous()('POST', `/api/operator/users/${jane.user.id}/impersonate`, { body: { reason: 'x' } })).status).toBe(401);
    const asJane = asJaneBy((await impersonate(jane.user.id, { reason: 'x' })).body.data.token);
    expect((await asJane('POST', `/api/operator/users/${owner.user.id}/impersonate`, { body: { reason: 'x' } })).status).toBe(403);
    expect((await asJane('GET', '/api/operator/me')).status).toBe(403);
    expect((await jane.api('POST', `/api/operator/impersonations/00000000-0000-4000-8000-00000000abcd/end`)).status).toBe(403);
  });

  it("leaves the account itself to the user: no password, address, account deletion, signing out the user's sessions or machine key while impersonating", async () => {
    const { token } = (await impersonate(owner.user.id, { reason: 'ticket 4715: help with machine keys' })).body.data;
    const asOwnerBySupport = apiClient(backend.url, { token, organizationId: owner.organizationId });
    const ownSessionId = (await owner.api('GET', '/api/auth/get-session')).body.data.session.id;
    const attempts: Array<[string, string, unknown]> = [
      ['POST', '/api/auth/change-password', { currentPassword: password, newPassword: 'support chose this one' }],
      ['POST', '/api/auth/change-email', { newEmail: 'support@attacker.example' }],
      ['POST', '/api/auth/delete-account', { password }],
      ['POST', '/api/auth/sessions/revoke-others', undefined],
      ['DELETE', `/api/auth/sessions/${ownSessionId}`, undefined],
      ['POST', '/api/auth/api-keys', { name: 'outlives-support', permissions: { Project: ['list'] } }],
    ];
    for (const [method, path, body] of attempts) {
      const refused = await asOwnerBySupport(method, path, body === undefined ? {} : { body });
      expect(refused.status, `${method} ${path}: ${JSON.stringify(refused.body)}`).toBe(403);
      expect(refused.body.error.message).toContain('An operator signed in as this user cannot');
    }
    // What the user sees and does in the product still works, and the owner's own session and sign-in are untouched.
    expect((await asOwnerBySupport('GET', '/api/auth/api-keys')).status).toBe(200);
    expect((await asOwnerBySupport('GET', '/api/auth/sessions')).body.data.find((session: { current: boolean }) => session.current)).toMatchObject({ impersonatedBy: support.user.id });
    expect((await owner.api('GET', '/api/auth/get-session')).status).toBe(200);
    expect((await anonymous()('POST', '/api/auth/sign-in/email', { body: { email: 'owner@acme.example', password } })).status).toBe(200);
    await asOwnerBySupport('POST', '/api/auth/sign-out');
  });

  it('refuses an impersonation without a reason, longer than OPERATOR_IMPERSONATION_MAX_MINUTES (60), or of nobody', async () => {
    expect((await impersonate(jane.user.id, {})).status).toBe(422);
    const tooLong = await impersonate(jane.user.id, { reason: 'x', minutes: 61 });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error.details).toHaveProperty('minutes');
    expect((await impersonate(jane.user.id, { reason: 'x', minutes: 0 })).status).toBe(422);
    expect((await impersonate(jane.user.id, { reason: 'x', as: 'owner' })).status).toBe(422);
    expect((await impersonate('00000000-0000-4000-8000-00000000abcd', { reason: 'x' })).status).toBe(404);
    const longest = await impersonate(jane.user.id, { reason: 'x', minutes: 60 });
    expect(longest.status).toBe(200);
    expect(Date.parse(longest.body.data.expiresAt) - Date.now()).toBeGreaterThan(59 * 60_000);
  });

  it('lets nobody else make or fake an impersonation: not the service API, not a statement of the backend\'s role', async () => {
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
    const inOneDay = () => new Date(Date.now() + 86_400_000).toISOString();
    // The service API writes the session's method itself and never an operator.
    const viaService = await service()('POST', '/sessions', {
      body: { userId: jane.user.id, token: sha256(randomBytes(32).toString('base64url')), expiresAt: inOneDay(), authMethod: 'impersonation', impersonatedBy: support.user.id },
    });
    expect(viaService.status, JSON.stringify(viaService.body)).toBe(201);
    expect(await sessionRow(viaService.body.data.id)).toMatchObject({ authMethod: 'service', impersonatedBy: null });
    // Nor does an update turn a session into one.
    const turned = await service()('PATCH', `/sessions/${viaService.body.data.id}`, { body: { impersonatedBy: support.user.id } });
    expect(turned.status).toBe(403);
    expect((await sessionRow(viaService.body.data.id))!.impersonatedBy).toBeNull();

    // A statement of the backend's own role meets the session trigger.
    const insert = (authMethod: string | null, impersonatedBy: string | null, userId = jane.user.id) =>
      backend.running.db
        .query(`INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod", "impersonatedBy") VALUES ($1, $2, now() + interval '1 hour', $3, $4)`, [
          userId,
          sha256(randomBytes(32).toString('hex')),
          authMethod,
          impersonatedBy,
        ])
        .then(
          () => 'made',
          (error: { code?: string; detail?: string }) => `${error.code} ${JSON.parse(error.detail ?? '{}').reason}`,
        );
    expect(await insert('impersonation', null)).toBe('AS403 not-marked');
    expect(await insert('password', support.user.id)).toBe('AS403 not-marked');
    expect(await insert('impersonation', owner.user.id)).toBe('AS403 not-an-operator');
    expect(await insert('impersonation', support.user.id, colleague.user.id)).toBe('AS403 operator-target');
    expect(await insert('impersonation', support.user.id)).toBe('made');
  });
});
