import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, databaseKinds, serviceApiKey, signUp, startBackend, type Api, type SignedUp, type TestBackend } from './support/backend.js';
import { tokenOf, type ReceivedMail } from './support/mailbox.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

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
  let keyId: string;
  let receiver: Receiver;
  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const platformLog = async (type: string) => (await support.api('GET', `/api/operator/events?type=${type}`)).body.data as { summary: string; actorId: string; data: Record<string, unknown>; entityId: string }[];

  beforeAll(async () => {
    receiver = await startReceiver();
    backend = await startBackend(kind, { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_MS: '50', OUTBOX_POLL_MS: '50' });
    support = await signUp(backend.url, 'support@platform.example', undefined, 'Support');
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [support.user.id]);
    owner = await signUp(backend.url, 'olivia@acme.example', undefined, 'Olivia Oakes');
    ivy = await addMember(backend.url, owner, 'ivy@acme.example', 'admin', 'Ivy Invitee');
    mia = await addMember(backend.url, owner, 'mia@acme.example', 'member', 'Mia Member');
    const key = await owner.api('POST', '/api/auth/api-keys', { body: { name: 'acme-ci', permissions: { Project: ['list'] } } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    keySecret = key.body.data.key;
    keyId = key.body.data.id;
  }, 60_000);
  afterAll(async () => {
    await backend?.stop();
    await receiver?.close();
  });

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

  describe("mailing a user a link through the backend's own flows", () => {
    /** The next mail to `email` after the `before` it had, matching `subject`. */
    const nextMail = async (email: string, before: number, subject: RegExp): Promise<ReceivedMail> => {
      let found: ReceivedMail | undefined;
      await expect.poll(() => (found = backend.mailbox.to(email).slice(before).find((mail) => subject.test(mail.subject))), { timeout: 10_000 }).toBeDefined();
      return found!;
    };

    it('mails a new verification link that verifies the address; refused for a verified one', async () => {
      const leo = await signUp(backend.url, 'leo@acme.example', undefined, 'Leo Late');
      const before = backend.mailbox.to('leo@acme.example').length;
      const sent = await support.api('POST', `/api/operator/users/${leo.user.id}/send-verification-mail`, { body: { reason: 'ticket 7: lost the first mail' } });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      expect(sent.body.data).toEqual({ userId: leo.user.id, email: 'leo@acme.example', queued: true });
      expect(JSON.stringify(sent.body)).not.toMatch(/token|link/i);
      const mail = await nextMail('leo@acme.example', before, /Confirm your e-mail address/);
      const verified = await apiClient(backend.url)('POST', '/api/auth/verify-email', { body: { token: tokenOf(mail) } });
      expect(verified.status, JSON.stringify(verified.body)).toBe(200);
      expect(verified.body.data.user.email_verified).toBe(true);
      expect((await platformLog('operator.sent_verification_mail'))[0]).toMatchObject({
        actorId: support.user.id,
        data: { email: 'leo@acme.example', reason: 'ticket 7: lost the first mail' },
        summary: 'Support (operator) sent leo@acme.example a new link to verify their address (reason: ticket 7: lost the first mail)',
      });
      const again = await support.api('POST', `/api/operator/users/${leo.user.id}/send-verification-mail`);
      expect(again.status).toBe(409);
      expect((await support.api('POST', '/api/operator/users/00000000-0000-4000-8000-00000000abcd/send-verification-mail')).status).toBe(404);
    });

    it('mails a password reset link the user resets with; the operator sees neither; nothing for a banned user', async () => {
      const before = backend.mailbox.to('mia@acme.example').length;
      const sent = await support.api('POST', `/api/operator/users/${mia.user.id}/send-password-reset`, {});
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      const mail = await nextMail('mia@acme.example', before, /Reset your password/);
      expect((await apiClient(backend.url)('POST', '/api/auth/reset-password', { body: { token: tokenOf(mail), newPassword: 'a brand new password' } })).status).toBe(200);
      expect((await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'mia@acme.example', password: 'a brand new password' } })).status).toBe(200);
      expect((await platformLog('operator.sent_password_reset'))[0]!.summary).toBe('Support (operator) sent mia@acme.example a link to reset their password');
      const own = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'mia@acme.example', password: 'a brand new password' } });
      const ownEvents = await apiClient(backend.url, { token: own.body.data.token })('GET', '/api/auth/security-events?type=operator.sent_password_reset');
      expect(ownEvents.body.data).toHaveLength(1);
      // The reset ended Mia's sessions: her client signs in again for the tests after this one.
      mia = { ...mia, api: apiClient(backend.url, { token: own.body.data.token, organizationId: owner.organizationId }) };

      const banned = await signUp(backend.url, 'banned-reset@bad.example');
      expect((await support.api('POST', `/api/operator/users/${banned.user.id}/ban`, { body: { reason: 'spam' } })).status).toBe(200);
      expect((await support.api('POST', `/api/operator/users/${banned.user.id}/send-password-reset`)).status).toBe(409);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(backend.mailbox.to('banned-reset@bad.example').filter((mail) => /Reset your password/.test(mail.subject))).toEqual([]);
    });
  });

  describe("acting in an organization", () => {
    let gus: SignedUp;
    let gusKeyId: string;
    const acmeLog = async (type: string) => (await owner.api('GET', `/audit-events?type=${type}`)).body.data as { summary: string; actorId: string; data: Record<string, unknown> }[];
    beforeAll(async () => {
      gus = await signUp(backend.url, 'gus@globex.example', undefined, 'Gus Globex');
      const key = await gus.api('POST', '/api/auth/api-keys', { body: { name: 'globex-ci', permissions: { Project: ['list'] } } });
      gusKeyId = key.body.data.id;
    });

    it("changes a member's role, in both audit logs in words; never the only owner's, never another organization's member", async () => {
      const changed = await support.api('POST', `/api/operator/organizations/${owner.organizationId}/members/${ivy.user.id}/role`, { body: { role: 'member', reason: 'asked by the owner' } });
      expect(changed.status, JSON.stringify(changed.body)).toBe(200);
      expect(changed.body.data).toEqual({ userId: ivy.user.id, from: 'admin', to: 'member' });
      // Ivy is a member now: the audit log, an admin's, is closed to her.
      expect((await ivy.api('GET', '/audit-events')).status).toBe(403);
      const [event] = await acmeLog('operator.changed_role');
      expect(event).toMatchObject({ actorId: support.user.id, summary: "Support (operator) changed Ivy Invitee's role from admin to member" });
      expect(event!.data.reason).toBeUndefined();
      expect((await platformLog('operator.changed_role'))[0]!.summary).toMatch(/^Support \(operator\) changed Ivy Invitee's role from admin to member in ".+" \(reason: asked by the owner\)$/);

      const role = (path: string, body: unknown) => support.api('POST', `/api/operator/organizations/${path}/role`, { body });
      expect((await role(`${owner.organizationId}/members/${owner.user.id}`, { role: 'admin' })).status).toBe(409);
      expect((await role(`${owner.organizationId}/members/${ivy.user.id}`, { role: 'member' })).status).toBe(409);
      const stranger = await role(`${owner.organizationId}/members/${gus.user.id}`, { role: 'admin' });
      expect(stranger.status).toBe(404);
      expect(stranger.body.error.message).toContain('not a member of this organization');
      expect((await role(`00000000-0000-4000-8000-00000000abcd/members/${ivy.user.id}`, { role: 'admin' })).status).toBe(404);
      expect((await role(`${owner.organizationId}/members/${ivy.user.id}`, { role: 'god' })).status).toBe(422);
      expect((await role(`${owner.organizationId}/members/${ivy.user.id}`, { role: 7 })).status).toBe(422);
      const roles = (await asOwner(`SELECT u."email", m."role" FROM "member" m JOIN "User" u ON u."id" = m."userId" WHERE m."organizationId" = $1 ORDER BY u."email"`, [owner.organizationId])).rows;
      expect(roles.filter((row) => row.role === 'owner').map((row) => row.email)).toEqual(['olivia@acme.example']);
      expect((await asOwner(`SELECT "role" FROM "member" WHERE "userId" = $1`, [gus.user.id])).rows.map((row) => row.role)).toEqual(['owner']);
    });

    it('transfers the ownership to a member; the owner becomes an admin', async () => {
      expect((await support.api('POST', `/api/operator/organizations/${owner.organizationId}/transfer-ownership`, { body: { userId: gus.user.id } })).status).toBe(404);
      const moved = await support.api('POST', `/api/operator/organizations/${owner.organizationId}/transfer-ownership`, { body: { userId: ivy.user.id } });
      expect(moved.status, JSON.stringify(moved.body)).toBe(200);
      expect(moved.body.data).toEqual({ owner: { userId: ivy.user.id, email: 'ivy@acme.example' }, previousOwners: [{ userId: owner.user.id, email: 'olivia@acme.example' }] });
      const roles = Object.fromEntries((await asOwner(`SELECT u."email", m."role" FROM "member" m JOIN "User" u ON u."id" = m."userId" WHERE m."organizationId" = $1`, [owner.organizationId])).rows.map((row) => [row.email, row.role]));
      expect(roles).toMatchObject({ 'ivy@acme.example': 'owner', 'olivia@acme.example': 'admin' });
      expect((await acmeLog('operator.transferred_ownership'))[0]!.summary).toBe('Support (operator) made Ivy Invitee the owner of the organization (olivia@acme.example is now an admin)');
      expect((await support.api('POST', `/api/operator/organizations/${owner.organizationId}/transfer-ownership`, { body: { userId: ivy.user.id } })).status).toBe(409);
    });

    it('disables a machine key, refused on its next request, and enables it again; never another organization\'s key', async () => {
      const withKey = () => apiClient(backend.url)('GET', '/Projects', { headers: { 'x-api-key': keySecret } });
      expect((await withKey()).status).toBe(200);
      const path = (action: string, id = keyId, organizationId = owner.organizationId) => `/api/operator/organizations/${organizationId}/machine-keys/${id}/${action}`;
      expect((await support.api('POST', path('disable', gusKeyId))).status).toBe(404);
      expect((await support.api('POST', path('disable'), { body: { reason: 'leaked in a public repository' } })).status).toBe(200);
      const refused = await withKey();
      expect(refused.status).toBe(401);
      expect((await support.api('POST', path('disable'))).status).toBe(409);
      expect((await acmeLog('operator.disabled_key'))[0]!.summary).toBe('Support (operator) disabled the machine key acme-ci');
      expect((await support.api('POST', path('enable'))).status).toBe(200);
      expect((await withKey()).status).toBe(200);
      expect((await asOwner(`SELECT "enabled" FROM "apikey" WHERE "id" = $1`, [gusKeyId])).rows[0]!.enabled).toBe(true);
    });

    it('disables a webhook endpoint, which gets nothing more, and enables it again', async () => {
      const made = await owner.api('POST', '/webhook-endpoints', { body: { url: receiver.url, eventTypes: ['project.created'] } });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      const endpointId = made.body.data.id as string;
      const path = (action: string) => `/api/operator/organizations/${owner.organizationId}/webhook-endpoints/${endpointId}/${action}`;
      expect((await support.api('POST', `/api/operator/organizations/${gus.organizationId}/webhook-endpoints/${endpointId}/disable`)).status).toBe(404);
      expect((await support.api('POST', path('disable'))).status).toBe(200);
      expect((await owner.api('GET', '/webhook-endpoints')).body.data.find((row: { id: string }) => row.id === endpointId)).toMatchObject({ enabled: false, disabledReason: 'disabled by an operator' });
      expect((await owner.api('POST', '/Projects', { body: { name: 'Quiet' } })).status).toBe(201);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.received).toHaveLength(0);
      expect((await support.api('POST', path('enable'))).status).toBe(200);
      expect((await owner.api('POST', '/Projects', { body: { name: 'Heard' } })).status).toBe(201);
      await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(1);
      expect((await acmeLog('operator.disabled_webhook_endpoint'))[0]!.summary).toBe(`Support (operator) disabled the webhook endpoint http://127.0.0.1:${receiver.port}/…`);
    });

    it("deletes a user with a typed confirmation: their own organization goes, every other organization's rows stay", async () => {
      const leo = await addMember(backend.url, owner, 'leo-delete@acme.example', 'member');
      const { rows: personal } = await asOwner(`SELECT m."organizationId" FROM "member" m WHERE m."userId" = $1 AND m."organizationId" <> $2`, [leo.user.id, owner.organizationId]);
      const leosOrganization = personal[0]!.organizationId as string;
      expect((await apiClient(backend.url, { token: leo.token, organizationId: leosOrganization })('POST', '/Projects', { body: { name: "Leo's" } })).status).toBe(201);
      const acmeBefore = (await asOwner(`SELECT count(*)::int AS n FROM "Project" WHERE "organizationId" = $1`, [owner.organizationId])).rows[0]!.n;

      const wrong = await support.api('DELETE', `/api/operator/users/${leo.user.id}`, { body: { confirm: 'someone@else.example' } });
      expect(wrong.status).toBe(422);
      expect(wrong.body.error.details).toEqual({ confirm: 'must be the address of the user to delete' });
      expect((await support.api('DELETE', `/api/operator/users/${leo.user.id}`, { body: {} })).status).toBe(422);
      expect((await asOwner(`SELECT count(*)::int AS n FROM "User" WHERE "id" = $1`, [leo.user.id])).rows[0]!.n).toBe(1);
      // Ivy owns Acme alone, with members: not deletable until she hands it over. An operator is not deletable either.
      expect((await support.api('DELETE', `/api/operator/users/${ivy.user.id}`, { body: { confirm: 'ivy@acme.example' } })).status).toBe(409);
      expect((await support.api('DELETE', `/api/operator/users/${support.user.id}`, { body: { confirm: 'support@platform.example' } })).status).toBe(409);

      const deleted = await support.api('DELETE', `/api/operator/users/${leo.user.id}`, { body: { confirm: 'LEO-DELETE@acme.example', reason: 'GDPR request' } });
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
      expect(deleted.body.data).toEqual({ userId: leo.user.id, email: 'leo-delete@acme.example', organizationsDeleted: 1 });
      const left = (await asOwner(`SELECT (SELECT count(*)::int FROM "User" WHERE "id" = $1) AS "users", (SELECT count(*)::int FROM "Organization" WHERE "id" = $2) AS "organizations",
        (SELECT count(*)::int FROM "Project" WHERE "organizationId" = $2) AS "leosProjects", (SELECT count(*)::int FROM "Project" WHERE "organizationId" = $3) AS "acmeProjects",
        (SELECT count(*)::int FROM "member" WHERE "organizationId" = $3) AS "acmeMembers"`, [leo.user.id, leosOrganization, owner.organizationId])).rows[0]!;
      expect(left).toEqual({ users: 0, organizations: 0, leosProjects: 0, acmeProjects: acmeBefore, acmeMembers: 3 });
      expect((await acmeLog('operator.deleted_user'))[0]!.summary).toBe('Support (operator) deleted the account of leo-delete@acme.example');
      expect((await platformLog('operator.deleted_user'))[0]).toMatchObject({ data: { email: 'leo-delete@acme.example', reason: 'GDPR request' }, summary: 'Support (operator) deleted the account of leo-delete@acme.example (reason: GDPR request)' });
    });

    it("deletes an organization with a typed confirmation: its rows and invitations go; its members and others' rows stay", async () => {
      const hank = await addMember(backend.url, gus, 'hank@globex.example', 'member');
      expect((await gus.api('POST', '/Projects', { body: { name: 'Globex plan' } })).status).toBe(201);
      expect((await gus.api('POST', '/members', { body: { email: 'later@globex.example' } })).status).toBe(202);
      const slug = (await asOwner(`SELECT "slug" FROM "Organization" WHERE "id" = $1`, [gus.organizationId])).rows[0]!.slug as string;
      const acmeProjects = (await asOwner(`SELECT count(*)::int AS n FROM "Project" WHERE "organizationId" = $1`, [owner.organizationId])).rows[0]!.n;

      expect((await support.api('DELETE', `/api/operator/organizations/${gus.organizationId}`, { body: { confirm: `${slug}-not` } })).status).toBe(422);
      expect((await support.api('DELETE', `/api/operator/organizations/${gus.organizationId}`, { body: { confirm: 42 } })).status).toBe(422);
      expect((await asOwner(`SELECT count(*)::int AS n FROM "Project" WHERE "organizationId" = $1`, [gus.organizationId])).rows[0]!.n).toBe(1);

      const deleted = await support.api('DELETE', `/api/operator/organizations/${gus.organizationId}`, { body: { confirm: slug } });
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
      expect(deleted.body.data).toMatchObject({ id: gus.organizationId, slug, members: 2 });
      const left = (await asOwner(`SELECT (SELECT count(*)::int FROM "Organization" WHERE "id" = $1) AS "organizations", (SELECT count(*)::int FROM "member" WHERE "organizationId" = $1) AS "members",
        (SELECT count(*)::int FROM "Project" WHERE "organizationId" = $1) AS "projects", (SELECT count(*)::int FROM "apikey" WHERE "referenceId" = $1) AS "keys",
        (SELECT count(*)::int FROM "verification" WHERE "identifier" LIKE 'invitation:%' AND split_part("value", ':', 2) = $1::text) AS "invitations",
        (SELECT count(*)::int FROM "User" WHERE "id" IN ($2, $3)) AS "users", (SELECT count(*)::int FROM "Project" WHERE "organizationId" = $4) AS "acmeProjects"`,
        [gus.organizationId, gus.user.id, hank.user.id, owner.organizationId])).rows[0]!;
      expect(left).toEqual({ organizations: 0, members: 0, projects: 0, keys: 0, invitations: 0, users: 2, acmeProjects });
      // Gus and Hank still sign in; Hank keeps his own organization.
      expect((await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'hank@globex.example', password: 'correct horse battery' } })).status).toBe(200);
      expect((await platformLog('operator.deleted_organization'))[0]!.summary).toMatch(/^Support \(operator\) deleted the organization ".+"$/);
      expect((await support.api('DELETE', `/api/operator/organizations/${gus.organizationId}`, { body: { confirm: slug } })).status).toBe(404);
    });

    it('refuses every action to everyone who is not an operator, and changes nothing', async () => {
      const organization = owner.organizationId;
      await expectRefused('POST', `/api/operator/users/${mia.user.id}/send-verification-mail`);
      await expectRefused('POST', `/api/operator/users/${mia.user.id}/send-password-reset`);
      await expectRefused('DELETE', `/api/operator/users/${mia.user.id}`, { confirm: 'mia@acme.example' });
      await expectRefused('POST', `/api/operator/organizations/${organization}/members/${mia.user.id}/role`, { role: 'owner' });
      await expectRefused('POST', `/api/operator/organizations/${organization}/transfer-ownership`, { userId: mia.user.id });
      await expectRefused('POST', `/api/operator/organizations/${organization}/machine-keys/${keyId}/disable`);
      await expectRefused('DELETE', `/api/operator/organizations/${organization}`, { confirm: 'x' });
      const state = (await asOwner(`SELECT (SELECT "role" FROM "member" WHERE "userId" = $1 AND "organizationId" = $2) AS "role", (SELECT "enabled" FROM "apikey" WHERE "id" = $3) AS "enabled",
        (SELECT count(*)::int FROM "Organization" WHERE "id" = $2) AS "organizations"`, [mia.user.id, organization, keyId])).rows[0]!;
      expect(state).toEqual({ role: 'member', enabled: true, organizations: 1 });
    });
  });
});
