import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, databaseKinds, serviceApiKey, signUp, startBackend, type Api, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * What operators do beyond bans and impersonation (src/operator/; docs/operator.md): grant and
 * revoke the role among themselves, and act on users and organizations, each on the record with the
 * operator as the actor. Every route is refused to everyone who is not an operator.
 */
describe.each(databaseKinds)('operators act on the %s database', (kind) => {
  let backend: TestBackend;
  let support: SignedUp;
  let owner: SignedUp;
  let ivy: SignedUp;
  let mia: SignedUp;
  let keySecret: string;
  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const platformLog = async (type: string) => (await support.api('GET', `/api/operator/events?type=${type}`)).body.data as { summary: string; actorId: string; data: Record<string, unknown>; entityId: string }[];

  beforeAll(async () => {
    backend = await startBackend(kind);
    support = await signUp(backend.url, 'support@platform.example', undefined, 'Support');
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [support.user.id]);
    owner = await signUp(backend.url, 'olivia@acme.example', undefined, 'Olivia Oakes');
    ivy = await addMember(backend.url, owner, 'ivy@acme.example', 'admin', 'Ivy Invitee');
    mia = await addMember(backend.url, owner, 'mia@acme.example', 'member', 'Mia Member');
    const key = await owner.api('POST', '/api/auth/api-keys', { body: { name: 'acme-ci', permissions: { Project: ['list'] } } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    keySecret = key.body.data.key;
  }, 60_000);
  afterAll(() => backend?.stop());

  /** Everyone who is not an operator: an owner, an admin, a member, a machine key, the service key. */
  const nonOperators = (): [string, Api][] => [
    ['owner', owner.api],
    ['admin', ivy.api],
    ['member', mia.api],
    ['service key', apiClient(backend.url, { token: serviceApiKey })],
    ['machine key', ((method, path, options = {}) => apiClient(backend.url)(method, path, { ...options, headers: { ...options.headers, 'x-api-key': keySecret } })) as Api],
  ];
  const expectRefused = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) => {
    for (const [who, api] of nonOperators()) expect((await api(method, path, body === undefined ? {} : { body })).status, `${method} ${path} by ${who}`).toBe(403);
  };

  describe('granting and revoking the operator role', () => {
    it('lists the operators with who granted them', async () => {
      const listed = await support.api('GET', '/api/operator/operators');
      expect(listed.status).toBe(200);
      expect(listed.body.data).toEqual([{ userId: support.user.id, email: 'support@platform.example', name: 'Support', grantedAt: expect.stringMatching(/Z$/), grantedBy: { commandLine: true, id: null, email: null } }]);
    });

    it('grants the role by address, on the record, and the new operator reaches the routes at once', async () => {
      const jane = await signUp(backend.url, 'jane@platform.example', undefined, 'Jane Doe');
      expect((await jane.api('GET', '/api/operator/me')).status).toBe(403);
      const granted = await support.api('POST', '/api/operator/operators', { body: { email: 'JANE@platform.example' } });
      expect(granted.status, JSON.stringify(granted.body)).toBe(201);
      expect(granted.body.data).toEqual({ userId: jane.user.id, email: 'jane@platform.example' });
      expect((await jane.api('GET', '/api/operator/me')).status).toBe(200);
      const listed = (await support.api('GET', '/api/operator/operators')).body.data;
      expect(listed[1]).toMatchObject({ userId: jane.user.id, grantedBy: { commandLine: false, id: support.user.id, email: 'support@platform.example' } });
      const [event] = await platformLog('operator.granted');
      expect(event).toMatchObject({ actorId: support.user.id, entityId: jane.user.id, summary: 'Support (operator) made jane@platform.example an operator of the platform' });
      const own = await jane.api('GET', '/api/auth/security-events?type=operator.granted');
      expect(own.body.data.map((row: { actorId: string }) => row.actorId)).toEqual([support.user.id]);

      // Again: a 409 that changes nothing; an unknown or malformed address: nothing granted.
      expect((await support.api('POST', '/api/operator/operators', { body: { email: 'jane@platform.example' } })).status).toBe(409);
      expect((await support.api('POST', '/api/operator/operators', { body: { email: 'nobody@platform.example' } })).status).toBe(404);
      expect((await support.api('POST', '/api/operator/operators', { body: { email: 42 } })).status).toBe(422);
      expect((await support.api('POST', '/api/operator/operators', { body: { email: 'mia@acme.example', role: 'admin' } })).status).toBe(422);
      expect((await platformLog('operator.granted')).length).toBe(1);
      expect((await asOwner(`SELECT count(*)::int AS n FROM "authstrap_operator"`)).rows[0]!.n).toBe(2);
    });

    it('refuses to make a banned user an operator', async () => {
      const banned = await signUp(backend.url, 'banned@bad.example');
      expect((await support.api('POST', `/api/operator/users/${banned.user.id}/ban`, { body: { reason: 'spam' } })).status).toBe(200);
      const refused = await support.api('POST', '/api/operator/operators', { body: { email: 'banned@bad.example' } });
      expect(refused.status).toBe(409);
      expect(refused.body.error.message).toContain('banned');
    });

    it("revokes another operator: refused from their next request, the sessions they held as users ended; never the last operator", async () => {
      const jane = (await support.api('GET', '/api/operator/operators')).body.data[1] as { userId: string };
      const janeSignIn = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'jane@platform.example', password: 'correct horse battery' } });
      const janeApi = apiClient(backend.url, { token: janeSignIn.body.data.token });
      const impersonation = await janeApi('POST', `/api/operator/users/${mia.user.id}/impersonate`, { body: { reason: 'ticket 1' } });
      expect(impersonation.status, JSON.stringify(impersonation.body)).toBe(200);
      const asMia = apiClient(backend.url, { token: impersonation.body.data.token });
      expect((await asMia('GET', '/api/auth/get-session')).status).toBe(200);

      expect((await support.api('DELETE', `/api/operator/operators/${mia.user.id}`)).status).toBe(409);
      expect((await support.api('DELETE', '/api/operator/operators/00000000-0000-4000-8000-00000000abcd')).status).toBe(404);
      const revoked = await support.api('DELETE', `/api/operator/operators/${jane.userId}`);
      expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
      expect(revoked.body.data).toEqual({ userId: jane.userId, email: 'jane@platform.example', impersonationsEnded: 1 });
      expect((await janeApi('GET', '/api/operator/me')).status).toBe(403);
      expect((await asMia('GET', '/api/auth/get-session')).status).toBe(401);
      expect((await platformLog('operator.revoked'))[0]).toMatchObject({ actorId: support.user.id, summary: 'Support (operator) took the operator role from jane@platform.example' });

      // Support is the last operator now: not even they can revoke themselves.
      const last = await support.api('DELETE', `/api/operator/operators/${support.user.id}`);
      expect(last.status).toBe(409);
      expect(last.body.error.message).toContain('last operator');
      expect((await support.api('GET', '/api/operator/me')).status).toBe(200);
    });

    it('refuses the three routes to everyone who is not an operator', async () => {
      await expectRefused('GET', '/api/operator/operators');
      await expectRefused('POST', '/api/operator/operators', { email: 'mia@acme.example' });
      await expectRefused('DELETE', `/api/operator/operators/${support.user.id}`);
      expect((await asOwner(`SELECT count(*)::int AS n FROM "authstrap_operator"`)).rows[0]!.n).toBe(1);
    });
  });
});
