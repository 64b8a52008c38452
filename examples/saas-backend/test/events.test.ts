import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent } from '../src/events/events.js';
import { addMember, apiClient, databaseKinds, invitationTokenFor, mailboxOf, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/** An event as the API sends it: its time as text. */
type Event = Omit<AuditEvent, 'createdAt'> & { createdAt: string };

// Alice owns organization A, with Mia as a member and Adam as an admin; Bob owns organization B.
describe.each(databaseKinds)('events and the audit log on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  let bob: SignedUp;
  let mia: SignedUp;
  let adam: SignedUp;

  const auditLog = async (who: SignedUp, query = '') => {
    const response = await who.api('GET', `/audit-events${query}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data as Event[];
  };

  beforeAll(async () => {
    backend = await startBackend(kind);
    alice = await signUp(backend.url, 'alice@example.com');
    bob = await signUp(backend.url, 'bob@example.com');
    mia = await addMember(backend.url, alice, 'mia@example.com', 'member');
    adam = await addMember(backend.url, alice, 'adam@example.com', 'admin');
  });
  afterAll(() => backend?.stop());

  it("records a record's creation, the names of the fields an update changed, and its deletion, with the request they came from", async () => {
    const created = await alice.api('POST', '/Projects', { body: { name: 'Apollo' }, headers: { 'user-agent': 'events-test/1', 'x-request-id': 'req-create-1' } });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    await alice.api('PATCH', `/Projects/${id}`, { body: { name: 'Apollo 11', status: 'active' } });
    // A write that changes nothing is no event.
    await alice.api('PATCH', `/Projects/${id}`, { body: { name: 'Apollo 11' } });
    await mia.api('DELETE', `/Projects/${id}`);

    const events = await auditLog(alice, `?entityId=${id}&order=asc`);
    expect(events.map((event) => event.type)).toEqual(['project.created', 'project.updated', 'project.deleted']);
    const [creation, update, deletion] = events;
    expect(creation).toMatchObject({ organizationId: alice.organizationId, actorType: 'user', actorId: alice.user.id, entity: 'Project', requestId: 'req-create-1', userAgent: 'events-test/1', ipAddress: '127.0.0.1' });
    expect((creation!.data.record as { name: string }).name).toBe('Apollo');
    expect(update!.data.changedFields).toEqual(['name']);
    expect(deletion).toMatchObject({ actorId: mia.user.id, entityId: id });
  });

  it("records a member's joining, role change (with the role before) and removal once each, as member.created, .updated and .deleted", async () => {
    const rita = await addMember(backend.url, alice, 'rita@example.com', 'member');
    const row = (await alice.api('GET', '/members?limit=100')).body.data.find((member: { userId: string }) => member.userId === rita.user.id);
    expect((await alice.api('PATCH', `/members/${row.id}`, { body: { role: 'admin' } })).status).toBe(200);
    expect((await alice.api('DELETE', `/members/${row.id}`)).status).toBe(204);

    const events = await auditLog(alice, `?entity=member&entityId=${row.id}&order=asc`);
    expect(events.map((event) => event.type)).toEqual(['member.created', 'member.updated', 'member.deleted']);
    const [joined, promoted, removed] = events;
    expect(joined).toMatchObject({ actorId: rita.user.id, data: { record: { userId: rita.user.id, role: 'member' } } });
    expect(promoted).toMatchObject({ actorId: alice.user.id, data: { changedFields: ['role'], previous: { role: 'member' }, record: { role: 'admin' } } });
    expect(removed).toMatchObject({ actorId: alice.user.id, organizationId: alice.organizationId });
  });

  it("withdraws a pending invitation (invitation.revoked, its link dead); another organization's owner gets 404 and changes nothing, a member 403", async () => {
    const pending = async (id: string) =>
      (await backend.running.db.asOwner((tx) => tx.query(`SELECT 1 FROM "verification" WHERE "id" = $1`, [id]))).rows.length === 1;
    const before = mailboxOf(backend.url).to('zoe@example.com').length;
    const invited = await alice.api('POST', '/members', { body: { email: 'zoe@example.com' } });
    expect(invited.status).toBe(202);
    const { id } = invited.body.data as { id: string };
    const token = await invitationTokenFor(backend.url, 'zoe@example.com', before);
    const withdraw = (who: SignedUp, invitationId = id) => who.api('DELETE', `/api/auth/organization/invitations/${invitationId}`);

    // Listed for the organization's owners and admins, with who sent it; never to a member, nor another organization.
    const listed = await alice.api('GET', '/api/auth/organization/invitations?limit=100');
    expect(listed.status).toBe(200);
    expect(listed.body.data.filter((invitation: { id: string }) => invitation.id === id)).toEqual([
      { id, email: 'zoe@example.com', role: 'member', invitedBy: { id: alice.user.id, name: expect.any(String) }, createdAt: expect.any(String), expiresAt: expect.any(String) },
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(token);
    expect((await adam.api('GET', '/api/auth/organization/invitations')).body.data.map((invitation: { id: string }) => invitation.id)).toContain(id);
    expect((await mia.api('GET', '/api/auth/organization/invitations')).status).toBe(403);
    expect((await bob.api('GET', '/api/auth/organization/invitations')).body.data.map((invitation: { id: string }) => invitation.id)).not.toContain(id);
    const pastTheEnd = await alice.api('GET', '/api/auth/organization/invitations?limit=1&page=1000');
    expect(pastTheEnd.body).toMatchObject({ data: [], meta: { page: 1000, limit: 1, total: listed.body.meta.total } });

    expect((await withdraw(bob)).status).toBe(404);
    expect((await withdraw(mia)).status).toBe(403);
    expect((await withdraw(alice, randomUUID())).status).toBe(404);
    expect(await pending(id)).toBe(true);
    // An admin cannot withdraw an invitation to become an owner, as they cannot send one.
    const toOwner = await alice.api('POST', '/members', { body: { email: 'olga@example.com', role: 'owner' } });
    expect((await withdraw(adam, toOwner.body.data.id)).status).toBe(403);
    expect(await pending(toOwner.body.data.id)).toBe(true);

    expect((await withdraw(adam)).status).toBe(204);
    expect(await pending(id)).toBe(false);
    const afterwards = await alice.api('GET', '/api/auth/organization/invitations?limit=100');
    expect(afterwards.body.data.map((invitation: { id: string }) => invitation.id)).not.toContain(id);
    // Olga's came since, Zoe's went.
    expect(afterwards.body.meta.total).toBe(listed.body.meta.total);
    expect((await withdraw(adam)).status).toBe(404);
    const [revoked, ...more] = await auditLog(alice, `?type=invitation.revoked&entityId=${id}`);
    expect(more).toEqual([]);
    expect(revoked).toMatchObject({ organizationId: alice.organizationId, actorType: 'user', actorId: adam.user.id, entity: 'invitation', data: { email: 'zoe@example.com', role: 'member' } });
    const zoe = await signUp(backend.url, 'zoe@example.com');
    expect((await zoe.api('POST', '/api/auth/invitations/accept', { body: { token } })).status).toBe(404);
    expect((await auditLog(bob, '?type=invitation.revoked')).length).toBe(0);
  });

  it('leaves no event behind a change that was rolled back', async () => {
    const service = apiClient(backend.url, { token: 'test-service-key-0123456789abcdef0123456789' });
    // A held transaction of the trusted server: the write is made, then rolled back.
    const inTransaction = { 'x-authstrap-transaction': randomUUID() };
    const begun = await service('POST', '/api/service/transactions', { headers: inTransaction });
    expect(begun.status, JSON.stringify(begun.body)).toBe(201);
    const made = await service('POST', '/Organizations', { body: { name: 'Rolled back', slug: `rolled-back-${Date.now()}` }, headers: inTransaction });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect((await service('POST', '/api/service/transactions/rollback', { headers: inTransaction })).status).toBe(200);

    const rows = await backend.running.db.asOwner((tx) => tx.query<{ type: string }>(`SELECT "type" FROM "authstrap_event" WHERE "entityId" = $1`, [made.body.data.id]));
    expect(rows.rows).toEqual([]);
    // The same write committed is an event: the check above could have found one.
    const committed = await service('POST', '/Organizations', { body: { name: 'Kept', slug: `kept-${Date.now()}` } });
    const kept = await backend.running.db.asOwner((tx) => tx.query<{ type: string; actorType: string }>(`SELECT "type", "actorType" FROM "authstrap_event" WHERE "entityId" = $1`, [committed.body.data.id]));
    expect(kept.rows).toEqual([{ type: 'organization.created', actorType: 'service' }]);
  });

  it('records auth events, and never a password, hash or token', async () => {
    const carol = await signUp(backend.url, 'carol@example.com', 'first password 1');
    const anonymous = apiClient(backend.url);
    expect((await anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'carol@example.com', password: 'wrong password' } })).status).toBe(401);
    const signedIn = await anonymous('POST', '/api/auth/sign-in/email', { body: { email: 'carol@example.com', password: 'first password 1' } });
    expect(signedIn.status).toBe(200);
    expect((await carol.api('POST', '/api/auth/change-password', { body: { currentPassword: 'first password 1', newPassword: 'second password 2' } })).status).toBe(200);

    const own = await carol.api('GET', '/api/auth/security-events?order=asc');
    expect(own.status).toBe(200);
    const types = (own.body.data as Event[]).map((event) => event.type);
    // Sign-up starts a session of its own: that is no sign-in.
    expect(types).toEqual(['user.signed_up', 'session.sign_in_failed', 'session.signed_in', 'user.password_changed']);
    expect((own.body.data as Event[]).every((event) => event.userId === carol.user.id)).toBe(true);

    const everything = await backend.running.db.asOwner((tx) => tx.query<{ row: string }>(`SELECT row_to_json(e)::text AS "row" FROM "authstrap_event" e`));
    const dump = everything.rows.map((row) => row.row).join('\n');
    for (const secret of ['first password 1', 'second password 2', 'wrong password', carol.token, signedIn.body.data.token, '$2b$']) {
      expect(dump.includes(secret), secret).toBe(false);
    }
  });

  it("shows an organization's events to its owners and admins only, and never another organization's", async () => {
    await bob.api('POST', '/Projects', { body: { name: 'Bob only' } });
    const ofAlice = await auditLog(alice, '?limit=100');
    expect(ofAlice.length).toBeGreaterThan(0);
    expect(ofAlice.every((event) => event.organizationId === alice.organizationId)).toBe(true);
    expect(ofAlice.some((event) => event.type === 'invitation.sent')).toBe(true);
    expect((await auditLog(adam, '?limit=100')).map((event) => event.id).sort()).toEqual(ofAlice.map((event) => event.id).sort());

    const ofBob = await auditLog(bob, '?limit=100');
    expect(ofBob.some((event) => event.type === 'project.created')).toBe(true);
    expect(ofBob.every((event) => event.organizationId === bob.organizationId)).toBe(true);

    // Bob naming A: not a member there.
    expect((await bob.api('GET', '/audit-events', { organizationId: alice.organizationId })).status).toBe(403);
    const asMember = await mia.api('GET', '/audit-events');
    expect(asMember.status).toBe(403);
    expect((await apiClient(backend.url)('GET', '/audit-events')).status).toBe(401);
  });

  it('filters the audit log through the list parameters: type, actor, time range, paging', async () => {
    const before = new Date(Date.now() - 1000).toISOString();
    await adam.api('POST', '/Projects', { body: { name: 'By Adam' } });
    const byAdam = await auditLog(alice, `?actorId=${adam.user.id}&type=project.created&createdAt[gte]=${before}`);
    expect(byAdam.map((event) => event.type)).toEqual(['project.created']);
    const page = await alice.api('GET', '/audit-events?limit=1&page=2');
    expect(page.body.meta).toMatchObject({ page: 2, limit: 1 });
    expect(page.body.meta.total).toBeGreaterThan(2);
    expect((await alice.api('GET', '/audit-events?createdAt[lt]=2000-01-01T00:00:00Z')).body.data).toEqual([]);
    expect((await alice.api('GET', '/audit-events?nosuchfield=1')).status).toBe(400);
  });

  it("records a machine key's making and revoking, and names the key as the actor of its writes", async () => {
    const made = await alice.api('POST', '/api/auth/api-keys', { body: { name: 'ci', permissions: { Project: ['create'] } } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const { id, key } = made.body.data as { id: string; key: string };
    const created = await apiClient(backend.url)('POST', '/Projects', { body: { name: 'By a key' }, headers: { 'x-api-key': key } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await alice.api('DELETE', `/api/auth/api-keys/${id}`)).status).toBe(204);

    const [creation] = await auditLog(alice, `?entityId=${created.body.data.id}`);
    expect(creation).toMatchObject({ type: 'project.created', actorType: 'machine_key', actorId: id });
    const keyEvents = await auditLog(alice, `?entityId=${id}&order=asc`);
    expect(keyEvents.map((event) => [event.type, event.actorType, event.actorId])).toEqual([
      ['key.created', 'user', alice.user.id],
      ['key.revoked', 'user', alice.user.id],
    ]);
    expect(JSON.stringify(keyEvents)).not.toContain(key);
  });

  it('deletes events past their retention, and requests may not delete or change one', async () => {
    await backend.running.db.asOwner((tx) => tx.query(`UPDATE "authstrap_event" SET "createdAt" = now() - interval '400 days' WHERE "type" = 'user.signed_up' AND "userId" = $1`, [bob.user.id]));
    const pruned = await backend.running.db.query<{ pruned: number }>('SELECT authstrap.prune_events(365) AS "pruned"');
    expect(pruned.rows[0]!.pruned).toBe(1);
    // As the requests' role: no policy lets it write the log.
    const deleted = await backend.running.db.query(`DELETE FROM "authstrap_event"`);
    expect(deleted.rowCount).toBe(0);
    await expect(backend.running.db.query(`INSERT INTO "authstrap_event" ("type", "actorType") VALUES ('forged', 'user')`)).rejects.toThrow(/row-level security/);
  });
});
