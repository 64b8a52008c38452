import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, databaseKinds, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

/**
 * What an operator sees of one organization (src/operator/organizations.ts; docs/operator.md):
 * its members, invitations, machine keys and webhook endpoints with their delivery health, and its
 * audit log with the sentences its owners read. Never a secret; never another organization's rows.
 */
describe.each(databaseKinds)("an organization's details for operators on the %s database", (kind) => {
  let backend: TestBackend;
  let receiver: Receiver;
  let support: SignedUp;
  let owner: SignedUp;
  let ivy: SignedUp;
  let other: SignedUp;
  let keyId: string;
  let keySecret: string;
  let endpoint: { id: string; secret: string };
  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));

  beforeAll(async () => {
    receiver = await startReceiver();
    backend = await startBackend(kind, { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_MS: '50', WEBHOOK_MAX_ATTEMPTS: '2', WEBHOOK_TIMEOUT_MS: '500', WEBHOOK_DISABLE_AFTER: '50', OUTBOX_POLL_MS: '50', INVITATIONS_PENDING_MAX: '2' });
    support = await signUp(backend.url, 'support@platform.example', undefined, 'Support');
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [support.user.id]);
    owner = await signUp(backend.url, 'olivia@acme.example', undefined, 'Olivia Oakes');
    ivy = await addMember(backend.url, owner, 'ivy@acme.example', 'admin', 'Ivy Invitee');
    expect((await owner.api('POST', '/members', { body: { email: 'pending@acme.example', role: 'member' } })).status).toBe(202);
    const key = await owner.api('POST', '/api/auth/api-keys', { body: { name: 'acme-ci', permissions: { Project: ['list'] } } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    keyId = key.body.data.id;
    keySecret = key.body.data.key;
    const made = await owner.api('POST', '/webhook-endpoints', { body: { url: receiver.url, eventTypes: ['project.created'] } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    endpoint = made.body.data;
    // Another organization, with a member, a key and an endpoint of its own: none of it shows in Acme's.
    other = await signUp(backend.url, 'gus@globex.example');
    await addMember(backend.url, other, 'hank@globex.example', 'member');
    expect((await other.api('POST', '/api/auth/api-keys', { body: { name: 'globex-ci', permissions: { Project: ['list'] } } })).status).toBe(201);
    expect((await other.api('POST', '/webhook-endpoints', { body: { url: `${receiver.url}/globex` } })).status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await backend?.stop();
    await receiver?.close();
  });

  const detailsOf = async (organizationId: string) => {
    const response = await support.api('GET', `/api/operator/organizations/${organizationId}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data;
  };

  it('shows its members with roles, its pending invitations and its machine keys, and nothing of another organization', async () => {
    const acme = await detailsOf(owner.organizationId);
    expect(acme).toMatchObject({ id: owner.organizationId });
    expect(acme.members.map((member: { email: string; role: string; banned: boolean }) => [member.email, member.role, member.banned])).toEqual([
      ['olivia@acme.example', 'owner', false],
      ['ivy@acme.example', 'admin', false],
    ]);
    expect(acme.invitations).toEqual([
      { id: expect.any(String), email: 'pending@acme.example', role: 'member', invitedBy: { id: owner.user.id, email: 'olivia@acme.example' }, createdAt: expect.stringMatching(/Z$/), expiresAt: expect.stringMatching(/Z$/) },
    ]);
    expect(acme.machineKeys).toEqual([
      expect.objectContaining({ id: keyId, name: 'acme-ci', role: 'member', permissions: { Project: ['list'] }, enabled: true, createdBy: { id: owner.user.id, email: 'olivia@acme.example' } }),
    ]);
    expect(acme.webhookEndpoints.map((hook: { id: string }) => hook.id)).toEqual([endpoint.id]);
    const globex = await detailsOf(other.organizationId);
    expect(globex.members.map((member: { email: string }) => member.email)).toEqual(['gus@globex.example', 'hank@globex.example']);
    expect(globex.machineKeys.map((key: { name: string }) => key.name)).toEqual(['globex-ci']);
    expect(globex.invitations).toEqual([]);
  });

  it("never shows a key's secret or hash, nor a webhook endpoint's secret", async () => {
    const text = JSON.stringify(await detailsOf(owner.organizationId));
    const { rows } = await asOwner(`SELECT "key" FROM "apikey" WHERE "id" = $1`, [keyId]);
    const { rows: hooks } = await asOwner(`SELECT "secret" FROM "authstrap_webhook_endpoint" WHERE "id" = $1`, [endpoint.id]);
    for (const secret of [keySecret, rows[0]!.key as string, endpoint.secret, hooks[0]!.secret as string]) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/"(key|secret|previousSecret|value|token)"/);
  });

  it("shows each webhook endpoint's delivery health: the last success, then failures and the last error", async () => {
    expect((await detailsOf(owner.organizationId)).webhookEndpoints[0].deliveries).toEqual({ failedLast7Days: 0, retrying: 0, lastSuccessAt: null, lastError: null });
    expect((await owner.api('POST', '/Projects', { body: { name: 'Delivered' } })).status).toBe(201);
    await expect.poll(async () => (await detailsOf(owner.organizationId)).webhookEndpoints[0].deliveries.lastSuccessAt, { timeout: 10_000 }).toMatch(/Z$/);
    receiver.state.fallback = 500;
    try {
      expect((await owner.api('POST', '/Projects', { body: { name: 'Refused' } })).status).toBe(201);
      // The delivery's failure and the endpoint's count are two writes (the outbox's, then the
      // webhook channel's `failed`): a read between them sees the first only, so wait for both.
      await expect
        .poll(async () => (await detailsOf(owner.organizationId)).webhookEndpoints[0], { timeout: 10_000 })
        .toMatchObject({ enabled: true, failureCount: 1, deliveries: { failedLast7Days: 1, lastError: expect.stringContaining('500') } });
    } finally {
      receiver.state.fallback = 'ok';
    }
  });

  it("pages the organization's audit log, newest first, each event in the sentence its owners read", async () => {
    const log = await support.api('GET', `/api/operator/organizations/${owner.organizationId}/events?limit=2`);
    expect(log.status, JSON.stringify(log.body)).toBe(200);
    expect(log.body.meta).toMatchObject({ page: 1, limit: 2 });
    expect(log.body.meta.total).toBeGreaterThan(2);
    expect(log.body.data.every((event: { organizationId: string }) => event.organizationId === owner.organizationId)).toBe(true);
    const own = await owner.api('GET', '/audit-events?limit=100');
    const all = await support.api('GET', `/api/operator/organizations/${owner.organizationId}/events?limit=100`);
    expect(all.body.meta.total).toBe(own.body.meta.total);
    expect(all.body.data.map((event: { id: string; summary: string }) => [event.id, event.summary])).toEqual(own.body.data.map((event: { id: string; summary: string }) => [event.id, event.summary]));
    const joined = await support.api('GET', `/api/operator/organizations/${owner.organizationId}/events?type=member.created`);
    expect(joined.body.data.map((event: { summary: string }) => event.summary)).toEqual(['Ivy Invitee joined the organization as admin', 'Olivia Oakes joined the organization as owner']);
    // Another organization's log holds none of Acme's events.
    const globex = await support.api('GET', `/api/operator/organizations/${other.organizationId}/events?limit=100`);
    expect(globex.body.data.some((event: { organizationId: string }) => event.organizationId !== other.organizationId)).toBe(false);
  });

  it('charts sign-ups, active users and new organizations per day, past days counted from the events once', async () => {
    // An action of Ivy's two days ago (as the event table would hold it), before any overview counted that day.
    await asOwner(`INSERT INTO "authstrap_event" ("type", "organizationId", "actorType", "actorId", "createdAt") VALUES ('project.updated', $1, 'user', $2, now() - interval '2 days')`, [owner.organizationId, ivy.user.id]);
    // The hourly count (src/server.ts), as the backend's own role runs it: the two past days, once.
    const countDays = async () => (await backend.running.db.query<{ counted: number }>('SELECT authstrap.count_activity_days(3) AS "counted"')).rows[0]!.counted;
    expect(await countDays()).toBe(2);
    expect(await countDays()).toBe(0);
    const overview = await support.api('GET', '/api/operator/overview?days=3');
    expect(overview.status, JSON.stringify(overview.body)).toBe(200);
    const days = overview.body.data.days as { day: string; signUps: number; activeUsers: number; newOrganizations: number }[];
    const today = new Date().toISOString().slice(0, 10);
    expect(days.map((day) => day.day)).toEqual([new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10), new Date(Date.now() - 86_400_000).toISOString().slice(0, 10), today]);
    expect(days[0]).toMatchObject({ signUps: 0, activeUsers: 1, newOrganizations: 0 });
    const { rows } = await asOwner(`SELECT (SELECT count(*)::int FROM "User") AS "users", (SELECT count(*)::int FROM "Organization") AS "organizations"`);
    expect(days[2]).toMatchObject({ signUps: rows[0]!.users, newOrganizations: rows[0]!.organizations });
    expect(days[2]!.activeUsers).toBeGreaterThanOrEqual(5);
    // A day that is over is counted once and kept: what happens to its events later changes nothing.
    await asOwner(`DELETE FROM "authstrap_event" WHERE "createdAt" < now() - interval '1 day'`);
    expect((await support.api('GET', '/api/operator/overview?days=3')).body.data.days[0]).toMatchObject({ activeUsers: 1 });
  });

  it('lists failing webhook endpoints and organizations near their limits', async () => {
    // Globex: two pending invitations of INVITATIONS_PENDING_MAX=2; Acme's key with 5 requests left of 100.
    for (const email of ['one@globex.example', 'two@globex.example']) expect((await other.api('POST', '/members', { body: { email } })).status).toBe(202);
    await asOwner(`UPDATE "apikey" SET "remaining" = 5, "refillAmount" = 100 WHERE "id" = $1`, [keyId]);
    const { data } = (await support.api('GET', '/api/operator/overview')).body;
    expect(data.days).toHaveLength(30);
    expect(data.failingWebhookEndpoints).toEqual([
      expect.objectContaining({ id: endpoint.id, enabled: true, failureCount: 1, organization: expect.objectContaining({ id: owner.organizationId }) }),
    ]);
    expect(data.organizationsNearLimits).toEqual([
      { organization: expect.objectContaining({ id: owner.organizationId }), limit: 'machineKeyQuota', current: 5, maximum: 100, keyId },
      { organization: expect.objectContaining({ id: other.organizationId, slug: expect.any(String) }), limit: 'pendingInvitations', current: 2, maximum: 2, keyId: null },
    ]);
    for (const days of ['0', '367', 'week']) expect((await support.api('GET', `/api/operator/overview?days=${days}`)).status, days).toBe(400);
    expect((await support.api('GET', '/api/operator/overview?from=2026-01-01')).body.error.details).toEqual({ from: 'Unknown query parameter' });
  });

  it('answers an unknown organization with 404, a malformed id or a bad query with a clear error', async () => {
    const unknown = '00000000-0000-4000-8000-00000000abcd';
    expect((await support.api('GET', `/api/operator/organizations/${unknown}`)).status).toBe(404);
    expect((await support.api('GET', `/api/operator/organizations/${unknown}/events`)).status).toBe(404);
    expect((await support.api('GET', '/api/operator/organizations/not-an-id')).status).toBe(404);
    const badType = await support.api('GET', `/api/operator/organizations/${owner.organizationId}/events?type=%27;drop`);
    expect(badType.status).toBe(400);
    const unknownParameter = await support.api('GET', `/api/operator/organizations/${owner.organizationId}/events?actorId=x`);
    expect(unknownParameter.status).toBe(400);
    expect(unknownParameter.body.error.details).toEqual({ actorId: 'Unknown query parameter' });
  });

  it('refuses the routes to owners, admins, members, machine keys and the service key', async () => {
    const member = await addMember(backend.url, owner, 'mia@acme.example', 'member');
    const callers = [
      owner.api,
      ivy.api,
      member.api,
      apiClient(backend.url, { token: serviceApiKey }),
      (method: 'GET', path: string) => apiClient(backend.url)(method, path, { headers: { 'x-api-key': keySecret } }),
    ];
    for (const path of [`/api/operator/organizations/${owner.organizationId}`, `/api/operator/organizations/${owner.organizationId}/events`, '/api/operator/overview']) {
      for (const [index, call] of callers.entries()) expect((await call('GET', path)).status, `${path} by caller ${index}`).toBe(403);
    }
    expect((await apiClient(backend.url)('GET', `/api/operator/organizations/${owner.organizationId}`)).status).toBe(401);
  });
});
