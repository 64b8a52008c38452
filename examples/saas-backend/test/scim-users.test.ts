import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, databaseKinds, invitationTokenFor, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { scimClient } from './support/scim.js';
import { openStream } from './support/sse.js';

/**
 * SCIM 2.0 Users of a directory (docs/scim.md; docs/enterprise-identity.md, 5.3 and 6): the
 * management of directories and tokens, the requests Okta and Entra ID send as their docs show
 * them (quirks included), deprovisioning end to end, and a directory's token reaching nothing but
 * its own directory. The organization's domain is a row seeded by SQL (domains have routes of their
 * own, tested in domains.test.ts).
 */
const password = 'correct horse battery';
const patchOp = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const coreUser = 'urn:ietf:params:scim:schemas:core:2.0:User';
const enterpriseUser = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

describe.each(databaseKinds)('SCIM users on the %s database', (kind) => {
  let backend: TestBackend;
  let owner: SignedUp;
  const domain = `acme-scim-${kind}.example`;
  const at = (name: string) => `${name}@${domain}`;
  /** The directory's base path on the backend, and its client. */
  let directory: { id: string; path: string; token: string };
  let scim: ReturnType<typeof scimClient>;
  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const anonymous = () => apiClient(backend.url);

  async function newDirectory(admin: SignedUp, name: string) {
    const made = await admin.api('POST', '/scim-directories', { body: { name, preset: 'okta' } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const { id, token, baseUrl } = made.body.data;
    return { id, token, path: new URL(baseUrl).pathname };
  }

  beforeAll(async () => {
    backend = await startBackend(kind);
    owner = await signUp(backend.url, at('owner'));
    await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, $2, 'verified', 'token', now())`, [owner.organizationId, domain]);
    directory = await newDirectory(owner, 'Okta');
    scim = scimClient(backend.url, directory.token);
  }, 60_000);
  afterAll(() => backend?.stop());

  describe('directories and their tokens', () => {
    it('are an owner’s or admin’s: a member gets 403, a machine key too; the token is shown once', async () => {
      const member = await addMember(backend.url, owner, at('plain-member'), 'member');
      expect((await member.api('GET', '/scim-directories')).status).toBe(403);
      expect((await member.api('POST', '/scim-directories', { body: { name: 'Mine' } })).status).toBe(403);
      const key = await owner.api('POST', '/api/auth/api-keys', { body: { name: 'ci', permissions: { Project: ['list'] } } });
      const withKey = await apiClient(backend.url)('GET', '/scim-directories', { headers: { 'x-api-key': key.body.data.key } });
      expect(withKey.status).toBe(403);

      const listed = await owner.api('GET', '/scim-directories');
      expect(listed.status).toBe(200);
      const mine = listed.body.data.find((candidate: { id: string }) => candidate.id === directory.id);
      expect(mine).toMatchObject({ name: 'Okta', preset: 'okta', defaultRole: 'member', enabled: true });
      expect(new URL(mine.baseUrl).pathname).toBe(`/scim/v2/${directory.id}`);
      expect(mine.tokens).toHaveLength(1);
      expect(mine.tokens[0].start).toBe(directory.token.slice(0, 10));
      expect(JSON.stringify(listed.body)).not.toContain(directory.token);
    });

    it('rotate with an overlap, revoke at once, and stop when the directory is turned off', async () => {
      const rotating = await newDirectory(owner, 'Rotating');
      const first = scimClient(backend.url, rotating.token);
      expect((await first('GET', `${rotating.path}/Users`)).status).toBe(200);
      const rotated = await owner.api('POST', `/scim-directories/${rotating.id}/tokens`, { body: { overlapSeconds: 3600 } });
      expect(rotated.status).toBe(201);
      const second = scimClient(backend.url, rotated.body.data.token);
      // Both work during the overlap.
      expect((await first('GET', `${rotating.path}/Users`)).status).toBe(200);
      expect((await second('GET', `${rotating.path}/Users`)).status).toBe(200);
      // A rotation without overlap ends the current token now; the one on its way out ends too.
      const again = await owner.api('POST', `/scim-directories/${rotating.id}/tokens`, { body: { overlapSeconds: 0 } });
      const third = scimClient(backend.url, again.body.data.token);
      expect((await first('GET', `${rotating.path}/Users`)).status).toBe(401);
      expect((await second('GET', `${rotating.path}/Users`)).status).toBe(401);
      expect((await third('GET', `${rotating.path}/Users`)).status).toBe(200);

      await owner.api('PATCH', `/scim-directories/${rotating.id}`, { body: { enabled: false } });
      const off = await third('GET', `${rotating.path}/Users`);
      expect(off.status).toBe(401);
      expect(off.body.detail).toMatch(/turned off/);
      await owner.api('PATCH', `/scim-directories/${rotating.id}`, { body: { enabled: true } });
      expect((await third('GET', `${rotating.path}/Users`)).status).toBe(200);

      expect((await owner.api('DELETE', `/scim-directories/${rotating.id}/tokens/${again.body.data.id}`)).status).toBe(204);
      expect((await third('GET', `${rotating.path}/Users`)).status).toBe(401);
    });
  });

  describe('the token', () => {
    it('works on its own directory only: not on the REST API, not on another directory, and no other credential works here', async () => {
      const other = await newDirectory(owner, 'Other');
      expect((await scim('GET', `${other.path}/Users`)).status).toBe(401);
      // The REST API does not know a directory token.
      expect((await anonymous()('GET', '/Projects', { token: directory.token, organizationId: owner.organizationId })).status).toBe(401);
      expect((await anonymous()('GET', '/api/auth/get-session', { token: directory.token })).status).toBe(401);
      // A session is not a directory's token.
      const withSession = await scimClient(backend.url, owner.token)('GET', `${directory.path}/Users`);
      expect(withSession.status).toBe(401);
      expect(withSession.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(withSession.headers.get('content-type')).toMatch(/^application\/scim\+json/);
      expect(withSession.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '401' });
      expect((await scimClient(backend.url, 'scim_nothing')('GET', `${directory.path}/Users`)).status).toBe(401);
    });
  });

  it('describes itself: ServiceProviderConfig, ResourceTypes and Schemas, as SCIM JSON', async () => {
    const config = await scim('GET', `${directory.path}/ServiceProviderConfig`);
    expect(config.status).toBe(200);
    expect(config.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(config.body).toMatchObject({ patch: { supported: true }, bulk: { supported: false }, filter: { supported: true, maxResults: 200 }, etag: { supported: true } });
    const types = await scim('GET', `${directory.path}/ResourceTypes`);
    expect(types.body.Resources.map((type: { id: string }) => type.id)).toEqual(['User', 'Group']);
    const schema = await scim('GET', `${directory.path}/Schemas/${coreUser}`);
    expect(schema.body.attributes.map((attribute: { name: string }) => attribute.name)).toContain('userName');
    expect((await scim('GET', `${directory.path}/Bulk`)).status).toBe(501);
  });

  it("Okta's sequence: look up, create, read, update, deactivate by PUT, reactivate by PATCH", async () => {
    const email = at('okta.person');
    // Okta asks first whether the user exists.
    const lookup = await scim('GET', `${directory.path}/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}&startIndex=1&count=100`);
    expect(lookup.status).toBe(200);
    expect(lookup.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 0, Resources: [] });

    const body = {
      schemas: [coreUser],
      userName: email,
      name: { givenName: 'Okta', familyName: 'Person' },
      emails: [{ primary: true, value: email, type: 'work' }],
      displayName: 'Okta Person',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: 'never kept',
      active: true,
    };
    const created = await scim('POST', `${directory.path}/Users`, body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(new URL(created.headers.get('location')!).pathname).toBe(`${directory.path}/Users/${created.body.id}`);
    expect(created.body.meta.location).toBe(created.headers.get('location'));
    expect(created.body).toMatchObject({ schemas: [coreUser], userName: email, active: true, externalId: '00ujl29u0le5T6Aj10h7', meta: { resourceType: 'User', version: 'W/"1"' } });
    expect(created.body.password).toBeUndefined();
    const id = created.body.id as string;
    // A new account in the organization's verified domain, a member with the default role, its address verified.
    const account = (await asOwner(`SELECT u."id", u."name", u."email_verified", m."role" FROM "User" u JOIN "member" m ON m."userId" = u."id" AND m."organizationId" = $2 WHERE u."email" = $1`, [email, owner.organizationId])).rows[0]!;
    expect(account).toMatchObject({ name: 'Okta Person', email_verified: true, role: 'member' });
    expect(id).not.toBe(account.id);

    // The same create again: 409 uniqueness.
    const again = await scim('POST', `${directory.path}/Users`, body);
    expect(again.status).toBe(409);
    expect(again.body.scimType).toBe('uniqueness');

    const read = await scim('GET', `${directory.path}/Users/${id}`);
    expect(read.status).toBe(200);
    expect(read.headers.get('etag')).toBe('W/"1"');
    const found = await scim('GET', `${directory.path}/Users?filter=${encodeURIComponent(`userName eq "${email.toUpperCase()}"`)}`);
    expect(found.body.totalResults).toBe(1);

    // Okta's profile update: a PATCH of the name.
    const renamed = await scim('PATCH', `${directory.path}/Users/${id}`, { schemas: [patchOp], Operations: [{ op: 'replace', value: { name: { givenName: 'Oktavia', familyName: 'Person' }, displayName: 'Oktavia Person' } }] });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect(renamed.body.meta.version).toBe('W/"2"');
    expect((await asOwner(`SELECT "name" FROM "User" WHERE "id" = $1`, [account.id])).rows[0]!.name).toBe('Oktavia Person');
    // The same PATCH twice changes nothing.
    const same = await scim('PATCH', `${directory.path}/Users/${id}`, { schemas: [patchOp], Operations: [{ op: 'replace', value: { name: { givenName: 'Oktavia', familyName: 'Person' }, displayName: 'Oktavia Person' } }] });
    expect(same.body.meta.version).toBe('W/"2"');

    // Okta's deactivation: a PUT of the whole user with active false.
    const deactivated = await scim('PUT', `${directory.path}/Users/${id}`, { ...body, name: { givenName: 'Oktavia', familyName: 'Person' }, displayName: 'Oktavia Person', active: false });
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.active).toBe(false);
    expect((await asOwner(`SELECT 1 FROM "member" WHERE "userId" = $1 AND "organizationId" = $2`, [account.id, owner.organizationId])).rowCount).toBe(0);
    expect((await asOwner(`SELECT "role", "reason" FROM "authstrap_member_suspension" WHERE "userId" = $1`, [account.id])).rows).toEqual([{ role: 'member', reason: 'directory-inactive' }]);

    // Reactivation: the membership comes back, with its id and role.
    const reactivated = await scim('PATCH', `${directory.path}/Users/${id}`, { schemas: [patchOp], Operations: [{ op: 'replace', value: { active: true } }] });
    expect(reactivated.body.active).toBe(true);
    expect((await asOwner(`SELECT "role" FROM "member" WHERE "userId" = $1 AND "organizationId" = $2`, [account.id, owner.organizationId])).rows).toEqual([{ role: 'member' }]);

    // The audit log says the directory did it.
    const events = (await owner.api('GET', '/audit-events?limit=100')).body.data as { type: string; actorType: string; actorId: string }[];
    const directoryEvents = events.filter((event) => event.type.startsWith('directory.user_'));
    expect(directoryEvents.map((event) => event.type)).toEqual(
      expect.arrayContaining(['directory.user_provisioned', 'directory.user_updated', 'directory.user_deprovisioned', 'directory.user_reactivated']),
    );
    expect(directoryEvents.every((event) => event.actorType === 'directory' && event.actorId === directory.id)).toBe(true);
    // In words, by the directory's name (row-level security lets the organization's owner read it) and the person's address.
    const said = (type: string) => (events as unknown as { type: string; summary: string }[]).filter((event) => event.type === type).map((event) => event.summary);
    expect(said('directory.user_provisioned')).toContain(`The Okta directory provisioned ${email}`);
    expect(said('directory.user_deprovisioned')).toContain(`The Okta directory deactivated ${email}`);
    expect(said('directory.user_reactivated')).toContain(`The Okta directory reactivated ${email}`);
  });

  it('keeps a log of what the directory asked and what it was answered, without the addresses of its filters', async () => {
    const email = at('logged');
    await scim('GET', `${directory.path}/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}`);
    await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: email });
    await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: email });
    const requests = async () => (await owner.api('GET', `/scim-directories/${directory.id}/requests`)).body.data as { method: string; path: string; status: number; scimType: string | null }[];
    await expect.poll(async () => (await requests()).filter((entry) => entry.scimType === 'uniqueness').length, { timeout: 5000 }).toBeGreaterThan(0);
    const log = await requests();
    expect(log).toEqual(expect.arrayContaining([
      expect.objectContaining({ method: 'GET', path: `${directory.path}/Users`, status: 200 }),
      expect.objectContaining({ method: 'POST', path: `${directory.path}/Users`, status: 201 }),
      expect.objectContaining({ method: 'POST', path: `${directory.path}/Users`, status: 409, scimType: 'uniqueness' }),
    ]));
    expect(JSON.stringify(log)).not.toContain(email);
    // A request its token was not accepted for is not the directory's: not in its log.
    await scimClient(backend.url, 'scim_wrong')('GET', `${directory.path}/Users`);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await requests()).filter((entry) => entry.status === 401)).toEqual([]);
    // Kept seven days and 1,000 rows a directory: the oldest go first.
    const old = { directoryId: directory.id, method: 'GET', path: '/old', status: 200, durationMs: 1, createdAt: new Date(Date.now() - 8 * 86_400_000) };
    const many = Array.from({ length: 1005 }, (_, index) => ({ directoryId: directory.id, method: 'GET', path: `/many/${index}`, status: 200, durationMs: 1, createdAt: new Date(Date.now() - (1005 - index) * 1000) }));
    await asOwner('SELECT authstrap.record_scim_requests($1::jsonb)', [JSON.stringify([old, ...many])]);
    const kept = (await asOwner(`SELECT "path" FROM "authstrap_scim_request" WHERE "directoryId" = $1 ORDER BY "createdAt"`, [directory.id])).rows.map((row) => row.path);
    expect(kept).toHaveLength(1000);
    expect(kept).not.toContain('/old');
    expect(kept).not.toContain('/many/0');
    expect(kept).toContain('/many/1004');
    // Only its owners and admins read it.
    const member = await addMember(backend.url, owner, at('log-reader'), 'member');
    expect((await member.api('GET', `/scim-directories/${directory.id}/requests`)).status).toBe(403);
  });

  it("Entra ID's sequence: externalId lookup, enterprise extension, PATCH with Replace and \"False\", then DELETE", async () => {
    const email = at('entra.person');
    const lookup = await scim('GET', `${directory.path}/Users?filter=${encodeURIComponent('externalId eq "58342554-38d6-4ec8-948c-50044d0a33fd"')}`);
    expect(lookup.body.totalResults).toBe(0);
    const created = await scim('POST', `${directory.path}/Users`, {
      schemas: [coreUser, enterpriseUser],
      externalId: '58342554-38d6-4ec8-948c-50044d0a33fd',
      userName: email,
      active: true,
      displayName: 'Entra Person',
      emails: [{ primary: true, type: 'work', value: email }],
      meta: { resourceType: 'User' },
      name: { formatted: 'Entra Person', familyName: 'Person', givenName: 'Entra' },
      roles: [],
      [enterpriseUser]: { department: 'Sales', employeeNumber: '42' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.schemas).toEqual([coreUser, enterpriseUser]);
    expect(created.body[enterpriseUser]).toEqual({ department: 'Sales', employeeNumber: '42' });
    const id = created.body.id as string;

    const patched = await scim('PATCH', `${directory.path}/Users/${id}`, {
      schemas: [patchOp],
      Operations: [
        { op: 'Replace', path: 'displayName', value: 'Entra Renamed' },
        { op: 'Replace', path: `${enterpriseUser}:department`, value: 'Marketing' },
        { op: 'Add', path: 'emails[type eq "work"].value', value: email },
      ],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ displayName: 'Entra Renamed', [enterpriseUser]: { department: 'Marketing' } });

    const deactivated = await scim('PATCH', `${directory.path}/Users/${id}`, { schemas: [patchOp], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] });
    expect(deactivated.body.active).toBe(false);

    expect((await scim('DELETE', `${directory.path}/Users/${id}`)).status).toBe(204);
    expect((await scim('GET', `${directory.path}/Users/${id}`)).status).toBe(404);
    // Nothing is lost: the account is there, its membership suspended.
    const account = (await asOwner(`SELECT u."id", s."reason" FROM "User" u JOIN "authstrap_member_suspension" s ON s."userId" = u."id" WHERE u."email" = $1`, [email])).rows[0]!;
    expect(account.reason).toBe('directory-deleted');
  });

  it('provisions an account outside the verified domains as new and unverified, and never joins an existing one to the organization', async () => {
    const outsider = await signUp(backend.url, `outsider-${kind}@elsewhere.example`);
    const linked = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: outsider.user.email, emails: [{ value: outsider.user.email, primary: true }] });
    expect(linked.status).toBe(201);
    expect((await asOwner(`SELECT "membership" FROM "authstrap_scim_user" WHERE "id" = $1`, [linked.body.id])).rows[0]!.membership).toBe('invited');
    expect((await asOwner(`SELECT 1 FROM "member" WHERE "userId" = $1 AND "organizationId" = $2`, [outsider.user.id, owner.organizationId])).rowCount).toBe(0);

    const fresh = `fresh-${kind}@elsewhere.example`;
    expect((await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: fresh })).status).toBe(201);
    expect((await asOwner(`SELECT "email_verified" FROM "User" WHERE "email" = $1`, [fresh])).rows[0]!.email_verified).toBe(false);
  });

  it('mails an invitation to a person with an account outside the domains, once; its link joins them, and the resource becomes a member', async () => {
    // A directory of its own: its role mappings recompute the roles of everyone it provisioned.
    const invites = await newDirectory(owner, 'Okta invites');
    const call = scimClient(backend.url, invites.token);
    const invitee = await signUp(backend.url, `invitee-${kind}@elsewhere.example`);
    const email = invitee.user.email;
    const accept = (token: string) => invitee.api('POST', '/api/auth/invitations/accept', { body: { token }, organizationId: '' });
    /** The invitations written for the address (the outbox keeps every mail, sent or not). */
    const invitationsWritten = async () =>
      (await asOwner(`SELECT count(*)::int AS "n" FROM "authstrap_outbox" WHERE "channel" = 'mail' AND "payload"->>'kind' = 'invitation' AND "payload"->>'to' = $1`, [email])).rows[0]!.n;
    const membershipOf = async (id: string) => (await asOwner(`SELECT "membership" FROM "authstrap_scim_user" WHERE "id" = $1`, [id])).rows[0]!.membership;
    const setActive = (id: string, value: string) => call('PATCH', `${invites.path}/Users/${id}`, { schemas: [patchOp], Operations: [{ op: 'Replace', path: 'active', value }] });

    const created = await call('POST', `${invites.path}/Users`, { schemas: [coreUser], userName: email, displayName: 'Ivy Invitee', emails: [{ value: email, primary: true }] });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect(await membershipOf(id)).toBe('invited');
    const mail = await backend.mailbox.next(email, /invited to join/);
    expect(mail.text).toContain('The directory "Okta invites" invited you to join the organization');
    expect(mail.text).toContain('Hello Ivy Invitee');
    expect(mail.link?.pathname).toBe('/accept-invitation');
    const firstToken = await invitationTokenFor(backend.url, email, 0);
    // The directory is the actor of the invitation.
    const sent = await asOwner(`SELECT "actorType", "actorId" FROM "authstrap_event" WHERE "type" = 'invitation.sent' AND "organizationId" = $1 AND "data"->>'email' = $2`, [owner.organizationId, email]);
    expect(sent.rows).toEqual([{ actorType: 'directory', actorId: invites.id }]);

    // Not among the organization's pending invitations: the directory's page shows them as invited.
    const pending = await owner.api('GET', '/api/auth/organization/invitations');
    expect(pending.status).toBe(200);
    expect(pending.body.data.map((row: { email: string }) => row.email)).not.toContain(email);

    // The same create again, a change, the same PATCH twice, off and on again while it stands: no second mail.
    expect((await call('POST', `${invites.path}/Users`, { schemas: [coreUser], userName: email })).status).toBe(409);
    expect((await call('PATCH', `${invites.path}/Users/${id}`, { schemas: [patchOp], Operations: [{ op: 'Replace', path: 'title', value: 'Engineer' }] })).status).toBe(200);
    expect((await setActive(id, 'True')).status).toBe(200);
    expect((await setActive(id, 'False')).status).toBe(200);
    expect((await setActive(id, 'True')).status).toBe(200);
    expect(await invitationsWritten()).toBe(1);

    // Unassigned in the identity provider, the invitation no longer stands (and is used up by the try).
    await setActive(id, 'False');
    expect((await accept(firstToken)).status).toBe(404);
    expect((await asOwner(`SELECT 1 FROM "member" WHERE "userId" = $1 AND "organizationId" = $2`, [invitee.user.id, owner.organizationId])).rowCount).toBe(0);
    // Assigned again: a new invitation. Pushed meanwhile in a group mapped to admin (which gives
    // nothing before they join), they join with the role the group gives.
    const mailedBefore = backend.mailbox.to(email).length;
    await setActive(id, 'True');
    expect(await invitationsWritten()).toBe(2);
    const group = await call('POST', `${invites.path}/Groups`, { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Invited admins', members: [{ value: id }] });
    expect(group.status).toBe(201);
    expect((await owner.api('PUT', `/scim-directories/${invites.id}/role-mappings`, { body: [{ groupId: group.body.id, role: 'admin' }] })).status).toBe(200);
    const accepted = await accept(await invitationTokenFor(backend.url, email, mailedBefore));
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect((await asOwner(`SELECT "role" FROM "member" WHERE "userId" = $1 AND "organizationId" = $2`, [invitee.user.id, owner.organizationId])).rows).toEqual([{ role: 'admin' }]);
    expect(await membershipOf(id)).toBe('member');
    // The directory's mappings chose the role: it is the actor, not the person who accepted.
    const roleChanged = await asOwner(`SELECT "data", "actorType", "actorId" FROM "authstrap_event" WHERE "type" = 'directory.role_changed' AND "userId" = $1`, [invitee.user.id]);
    expect(roleChanged.rows).toEqual([{ data: { from: 'member', to: 'admin' }, actorType: 'directory', actorId: invites.id }]);
    // The acceptance itself is the person's.
    const joined = await asOwner(`SELECT "actorType", "actorId" FROM "authstrap_event" WHERE "type" = 'invitation.accepted' AND "userId" = $1 AND "organizationId" = $2`, [invitee.user.id, owner.organizationId]);
    expect(joined.rows).toEqual([{ actorType: 'user', actorId: invitee.user.id }]);
    // The acceptance's transaction ended unscoped: the person's own requests are theirs.
    expect((await invitee.api('GET', '/Projects', { organizationId: owner.organizationId })).status).toBe(200);
    // A member now: deactivation suspends them as any other, and nothing more is mailed.
    expect((await setActive(id, 'False')).body.active).toBe(false);
    expect((await asOwner(`SELECT "reason" FROM "authstrap_member_suspension" WHERE "userId" = $1 AND "organizationId" = $2`, [invitee.user.id, owner.organizationId])).rows).toEqual([{ reason: 'directory-inactive' }]);
    await setActive(id, 'True');
    expect(await invitationsWritten()).toBe(2);
  });

  it('deprovisions within seconds: the session, the machine key they made and their live stream stop, and a new sign-in is refused; reactivation lets them back in', async () => {
    const leaver = await addMember(backend.url, owner, at('leaver'), 'admin');
    const created = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: leaver.user.email, emails: [{ value: leaver.user.email, primary: true }] });
    expect(created.status).toBe(201);
    // Already a member: linked, and their role stays.
    expect((await asOwner(`SELECT "role" FROM "member" WHERE "userId" = $1 AND "organizationId" = $2`, [leaver.user.id, owner.organizationId])).rows).toEqual([{ role: 'admin' }]);
    const key = await leaver.api('POST', '/api/auth/api-keys', { body: { name: 'leaver-key', permissions: { Project: ['list'] } } });
    expect(key.status).toBe(201);
    const withKey = () => anonymous()('GET', '/Projects', { headers: { 'x-api-key': key.body.data.key } });
    expect((await withKey()).status).toBe(200);
    const stream = await openStream(backend.url, '/realtime?entity=Project', { authorization: `Bearer ${leaver.token}`, 'x-organization-id': owner.organizationId });
    expect(stream.status).toBe(200);

    const started = Date.now();
    const off = await scim('PATCH', `${directory.path}/Users/${created.body.id}`, { schemas: [patchOp], Operations: [{ op: 'replace', path: 'active', value: false }] });
    expect(off.status).toBe(200);
    expect((await leaver.api('GET', '/api/auth/get-session')).status).toBe(401);
    expect((await withKey()).status).toBe(401);
    const ended = await stream.next((message) => message.event === 'end', 5000);
    expect(['SESSION_ENDED', 'NOT_A_MEMBER']).toContain(JSON.parse(ended.data).code);
    expect(Date.now() - started).toBeLessThan(5000);
    const refused = await anonymous()('POST', '/api/auth/sign-in/email', { body: { email: leaver.user.email, password } });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('DEPROVISIONED');

    await scim('PATCH', `${directory.path}/Users/${created.body.id}`, { schemas: [patchOp], Operations: [{ op: 'replace', path: 'active', value: true }] });
    expect((await anonymous()('POST', '/api/auth/sign-in/email', { body: { email: leaver.user.email, password } })).status).toBe(200);
    expect((await withKey()).status).toBe(200);
  });

  it("leaves a provisioned person's name and address to the directory (in a verified domain): changed by hand, 409 DIRECTORY_MANAGED; their picture stays theirs", async () => {
    const person = await addMember(backend.url, owner, at('profiled'), 'member');
    let names = 0;
    const byHand = () => person.api('PATCH', `/Users/${person.user.id}`, { body: { name: `Another Name ${++names}` } });
    // Before the directory provisions them, the profile is theirs.
    expect((await byHand()).status).toBe(200);
    const created = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: person.user.email, displayName: 'Directory Name', emails: [{ value: person.user.email, primary: true }] });
    expect(created.status).toBe(201);
    const renamed = await byHand();
    expect(renamed.status).toBe(409);
    expect(renamed.body.error.code).toBe('DIRECTORY_MANAGED');
    const readdressed = await person.api('POST', '/api/auth/change-email', { body: { newEmail: `elsewhere-${kind}@example.org` } });
    expect(readdressed.status).toBe(409);
    expect(readdressed.body.error.code).toBe('DIRECTORY_MANAGED');
    expect((await asOwner(`SELECT "name", "email" FROM "User" WHERE "id" = $1`, [person.user.id])).rows[0]).toEqual({ name: 'Another Name 1', email: person.user.email });
    expect((await person.api('PATCH', `/Users/${person.user.id}`, { body: { image: 'https://images.example/me.png' } })).status).toBe(200);
    // The owner, whom no directory provisioned, still changes their own.
    expect((await owner.api('PATCH', `/Users/${owner.user.id}`, { body: { name: 'Owner Renamed' } })).status).toBe(200);
    // Once the directory deletes the resource (which suspends them), it owns the profile no longer.
    const managed = async () => (await asOwner(`SELECT authstrap.directory_manages_profile($1) AS "managed"`, [person.user.id])).rows[0]!.managed;
    expect(await managed()).toBe(true);
    expect((await scim('DELETE', `${directory.path}/Users/${created.body.id}`)).status).toBe(204);
    expect(await managed()).toBe(false);
  });

  it('never lets the directory deactivate the last owner: a SCIM error, an event, and nothing changed', async () => {
    const linked = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: owner.user.email, emails: [{ value: owner.user.email, primary: true }] });
    expect(linked.status).toBe(201);
    const refused = await scim('PATCH', `${directory.path}/Users/${linked.body.id}`, { schemas: [patchOp], Operations: [{ op: 'replace', path: 'active', value: false }] });
    expect(refused.status).toBe(400);
    expect(refused.body.scimType).toBe('mutability');
    expect((await owner.api('GET', '/api/auth/get-session')).status).toBe(200);
    expect((await scim('GET', `${directory.path}/Users/${linked.body.id}`)).body.active).toBe(true);
    const events = (await owner.api('GET', '/audit-events?limit=100&type=directory.request_refused')).body.data;
    expect(events.length).toBeGreaterThan(0);
  });

  it('tells the members page whom a directory provisioned and what it owns, and streams the memberships it changes', async () => {
    const member = await addMember(backend.url, owner, at('page-reader'), 'member');
    const stream = await openStream(backend.url, '/realtime?entity=member', { authorization: `Bearer ${member.token}`, 'x-organization-id': owner.organizationId });
    expect(stream.status).toBe(200);
    const created = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: at('shown'), emails: [{ value: at('shown'), primary: true }] });
    expect(created.status).toBe(201);
    const userId = (await asOwner(`SELECT "userId" FROM "authstrap_scim_user" WHERE "id" = $1`, [created.body.id])).rows[0]!.userId;
    // Every member hears of the membership the directory made, with the directory as its actor.
    const joined = JSON.parse((await stream.next((message) => message.event === 'member.created' && JSON.parse(message.data).data.record.userId === userId)).data);
    expect(joined).toMatchObject({ actorType: 'directory', actorId: directory.id, data: { record: { userId, role: 'member', organizationId: owner.organizationId } } });

    const managed = (query: string, caller = owner) => caller.api('GET', `/scim-directories/managed-members${query}`);
    const answer = await managed(`?userId=${userId}&userId=${member.user.id}`);
    expect(answer.status).toBe(200);
    // Only the provisioned one; no mappings in this directory yet, and the address is in the verified domain.
    expect(answer.body.data).toEqual([{ userId, directoryId: directory.id, directoryName: 'Okta', rolesFromGroups: false, profileFromDirectory: true }]);
    expect((await managed('')).body.data).toEqual([]);
    expect((await managed(`?userId=${userId}`, member)).status).toBe(403);
    expect((await managed('?userId=not-a-uuid')).status).toBe(422);
    expect((await managed(`?userId=${Array.from({ length: 101 }, () => userId).join(',')}`)).status).toBe(422);
    // Another organization's owner asking for this one's person: nothing.
    const other = await signUp(backend.url, `managed-other-${kind}@elsewhere.example`);
    expect((await managed(`?userId=${userId}`, other)).body.data).toEqual([]);

    // Deactivated: the membership's deletion is streamed, and the page no longer lists them as managed members.
    await scim('PATCH', `${directory.path}/Users/${created.body.id}`, { schemas: [patchOp], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] });
    await stream.next((message) => message.event === 'member.deleted' && JSON.parse(message.data).data.record.userId === userId);
    expect((await managed(`?userId=${userId}`)).body.data).toEqual([]);
    stream.close();
  });

  it("keeps organizations apart: another organization's token, ids and filters reach nothing of this one", async () => {
    const otherOwner = await signUp(backend.url, `other-owner-${kind}@beta.example`);
    const theirs = await newDirectory(otherOwner, 'Beta');
    const theirScim = scimClient(backend.url, theirs.token);
    const mine = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: at('kept.apart') });
    expect(mine.status).toBe(201);
    // Their token on my directory: 401; my user's id on theirs: 404; their filter: nothing.
    expect((await theirScim('GET', `${directory.path}/Users/${mine.body.id}`)).status).toBe(401);
    expect((await theirScim('GET', `${theirs.path}/Users/${mine.body.id}`)).status).toBe(404);
    expect((await theirScim('PATCH', `${theirs.path}/Users/${mine.body.id}`, { schemas: [patchOp], Operations: [{ op: 'replace', path: 'active', value: false }] })).status).toBe(404);
    expect((await theirScim('DELETE', `${theirs.path}/Users/${mine.body.id}`)).status).toBe(404);
    const filtered = await theirScim('GET', `${theirs.path}/Users?filter=${encodeURIComponent(`userName eq "${at('kept.apart')}"`)}`);
    expect(filtered.body.totalResults).toBe(0);
    expect((await theirScim('GET', `${theirs.path}/Users`)).body.totalResults).toBe(0);
    // And my directory's management routes are not theirs either.
    expect((await otherOwner.api('GET', `/scim-directories/${directory.id}`)).status).toBe(404);
  });

  it('answers bad input with SCIM errors and keeps nothing of it', async () => {
    const malformed = await scim('POST', `${directory.path}/Users`, '{"userName": ');
    expect(malformed.status).toBe(400);
    expect(malformed.body.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
    const huge = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: at('huge'), title: 'x'.repeat(1_200_000) });
    expect(huge.status).toBe(413);
    const noName = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], emails: [{ value: at('nameless') }] });
    expect(noName.status).toBe(400);
    expect(noName.body.scimType).toBe('invalidValue');
    const wrongType = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: at('typed'), active: 'perhaps' });
    expect(wrongType.body.scimType).toBe('invalidValue');
    const badFilter = await scim('GET', `${directory.path}/Users?filter=${encodeURIComponent('userName eq "x") OR 1=1 --')}`);
    expect(badFilter.status).toBe(400);
    expect(badFilter.body.scimType).toBe('invalidFilter');
    const unknownAttribute = await scim('GET', `${directory.path}/Users?filter=${encodeURIComponent('password eq "x"')}`);
    expect(unknownAttribute.body.scimType).toBe('invalidFilter');
    const badPatch = await scim('PATCH', `${directory.path}/Users/${'0'.repeat(8)}-0000-0000-0000-000000000000`, { schemas: [patchOp], Operations: [] });
    expect(badPatch.status).toBe(404);
    expect((await asOwner(`SELECT 1 FROM "User" WHERE "email" IN ($1, $2, $3)`, [at('huge'), at('nameless'), at('typed')])).rowCount).toBe(0);
  });
});
