import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, databaseKinds, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { scimClient } from './support/scim.js';

/**
 * SCIM Groups and groups to roles (docs/scim.md; docs/enterprise-identity.md, 6.5): group pushes
 * as Okta and Entra ID send them, the role mappings an owner sets, roles recomputed at once (the
 * most privileged mapped role wins), and the organization never left without an owner.
 */
const patchOp = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const coreUser = 'urn:ietf:params:scim:schemas:core:2.0:User';
const coreGroup = 'urn:ietf:params:scim:schemas:core:2.0:Group';

describe.each(databaseKinds)('SCIM groups and roles on the %s database', (kind) => {
  let backend: TestBackend;
  let owner: SignedUp;
  let directory: { id: string; path: string };
  let scim: ReturnType<typeof scimClient>;
  const domain = `acme-groups-${kind}.example`;
  const at = (name: string) => `${name}@${domain}`;
  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const roleOf = async (email: string) =>
    (await asOwner(`SELECT m."role" FROM "member" m JOIN "User" u ON u."id" = m."userId" WHERE u."email" = $1 AND m."organizationId" = $2`, [email, owner.organizationId])).rows[0]?.role;
  const provision = async (name: string) => {
    const made = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: at(name), emails: [{ value: at(name), primary: true }] });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body.id as string;
  };
  const group = async (displayName: string, members: string[] = [], externalId?: string) => {
    const made = await scim('POST', `${directory.path}/Groups`, { schemas: [coreGroup], displayName, ...(externalId ? { externalId } : {}), members: members.map((value) => ({ value })) });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body.id as string;
  };
  const mapRoles = (who: SignedUp, mappings: { groupId: string; role: string }[]) => who.api('PUT', `/scim-directories/${directory.id}/role-mappings`, { body: mappings });

  beforeAll(async () => {
    backend = await startBackend(kind);
    owner = await signUp(backend.url, at('owner'));
    await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, $2, 'verified', 'token', now())`, [owner.organizationId, domain]);
    const made = await owner.api('POST', '/scim-directories', { body: { name: 'Groups', preset: 'entra' } });
    directory = { id: made.body.data.id, path: new URL(made.body.data.baseUrl).pathname };
    scim = scimClient(backend.url, made.body.data.token);
  }, 60_000);
  afterAll(() => backend?.stop());

  it("Entra ID's group push: create empty, look up without members, add and remove members, rename", async () => {
    const alice = await provision('alice');
    const bob = await provision('bob');
    const created = await scim('POST', `${directory.path}/Groups`, { schemas: [coreGroup], externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', displayName: 'Group1DisplayName', members: [] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ schemas: [coreGroup], displayName: 'Group1DisplayName', externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', members: [], meta: { resourceType: 'Group', version: 'W/"1"' } });
    const id = created.body.id as string;

    const lookup = await scim('GET', `${directory.path}/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "Group1DisplayName"')}`);
    expect(lookup.body.totalResults).toBe(1);
    expect(lookup.body.Resources[0].members).toBeUndefined();

    const added = await scim('PATCH', `${directory.path}/Groups/${id}`, { schemas: [patchOp], Operations: [{ op: 'Add', path: 'members', value: [{ value: alice }, { value: bob }] }] });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body.members.map((member: { value: string }) => member.value).sort()).toEqual([alice, bob].sort());
    // Entra ID asks whether a user is in a group so.
    const isIn = await scim('GET', `${directory.path}/Groups?excludedAttributes=members&filter=${encodeURIComponent(`id eq "${id}" and members[value eq "${alice}"]`)}`);
    expect(isIn.body.totalResults).toBe(1);

    const removed = await scim('PATCH', `${directory.path}/Groups/${id}`, { schemas: [patchOp], Operations: [{ op: 'Remove', path: 'members', value: [{ value: alice }] }] });
    expect(removed.body.members.map((member: { value: string }) => member.value)).toEqual([bob]);
    const renamed = await scim('PATCH', `${directory.path}/Groups/${id}`, { schemas: [patchOp], Operations: [{ op: 'Replace', path: 'displayName', value: 'Renamed' }] });
    expect(renamed.body.displayName).toBe('Renamed');
    // The same PATCH twice changes nothing.
    const again = await scim('PATCH', `${directory.path}/Groups/${id}`, { schemas: [patchOp], Operations: [{ op: 'Replace', path: 'displayName', value: 'Renamed' }] });
    expect(again.body.meta.version).toBe(renamed.body.meta.version);
    expect((await scim('DELETE', `${directory.path}/Groups/${id}`)).status).toBe(204);
    expect((await scim('GET', `${directory.path}/Groups/${id}`)).status).toBe(404);
  });

  it("Okta's group push: members by filter path, a replace of the whole membership, and a rename without a path", async () => {
    const carol = await provision('carol');
    const dave = await provision('dave');
    const id = await group('Okta Push', [carol], 'okta-group-1');
    const removed = await scim('PATCH', `${directory.path}/Groups/${id}`, { schemas: [patchOp], Operations: [{ op: 'remove', path: `members[value eq "${carol}"]` }] });
    expect(removed.body.members).toEqual([]);
    const replaced = await scim('PATCH', `${directory.path}/Groups/${id}`, { schemas: [patchOp], Operations: [{ op: 'replace', path: 'members', value: [{ value: dave, display: at('dave') }] }] });
    expect(replaced.body.members.map((member: { value: string }) => member.value)).toEqual([dave]);
    const renamed = await scim('PATCH', `${directory.path}/Groups/${id}`, { schemas: [patchOp], Operations: [{ op: 'replace', value: { id, displayName: 'Okta Renamed' } }] });
    expect(renamed.body.displayName).toBe('Okta Renamed');
    // PUT: the whole group, members replaced.
    const put = await scim('PUT', `${directory.path}/Groups/${id}`, { schemas: [coreGroup], displayName: 'Okta Renamed', externalId: 'okta-group-1', members: [{ value: carol }] });
    expect(put.body.members.map((member: { value: string }) => member.value)).toEqual([carol]);
    expect((await scim('POST', `${directory.path}/Groups`, { schemas: [coreGroup], displayName: 'Twice', externalId: 'okta-group-1' })).body.scimType).toBe('uniqueness');
  });

  it('answers a PUT or PATCH whose If-Match names an older version 412 and changes nothing; the current version, a list with it, or * go through (users and groups)', async () => {
    const ivan = await provision('ivan');
    const id = await group('Versioned', [ivan]);
    const rename = (displayName: string, ifMatch: string) =>
      scim('PATCH', `${directory.path}/Groups/${id}`, { schemas: [patchOp], Operations: [{ op: 'replace', path: 'displayName', value: displayName }] }, { 'if-match': ifMatch });
    const first = await rename('Versioned 2', 'W/"1"');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.headers.get('etag')).toBe('W/"2"');
    const stale = await rename('Lost update', 'W/"1"');
    expect(stale.status).toBe(412);
    expect(stale.body.detail).toBe('The group has changed since W/"1": it is at W/"2" now');
    expect((await scim('GET', `${directory.path}/Groups/${id}`)).body.displayName).toBe('Versioned 2');
    expect((await rename('Versioned 3', 'W/"1", W/"2"')).status).toBe(200);
    expect((await rename('Versioned 4', '*')).status).toBe(200);

    const user = (await scim('GET', `${directory.path}/Users/${ivan}`)).body;
    const staleUser = await scim('PUT', `${directory.path}/Users/${ivan}`, { ...user, displayName: 'Lost' }, { 'if-match': 'W/"0"' });
    expect(staleUser.status).toBe(412);
    expect(staleUser.body.detail).toBe(`The user has changed since W/"0": it is at ${user.meta.version} now`);
    const current = await scim('PUT', `${directory.path}/Users/${ivan}`, { ...user, displayName: 'Ivan Kept' }, { 'if-match': user.meta.version });
    expect(current.status, JSON.stringify(current.body)).toBe(200);
    expect(current.body.displayName).toBe('Ivan Kept');
  });

  it('maps groups to roles: the most privileged mapped role wins, at once, and leaving a group takes it away', async () => {
    const erin = await provision('erin');
    const admins = await group('Engineering admins', [erin]);
    const everyone = await group('Everyone', [erin]);
    expect(await roleOf(at('erin'))).toBe('member');

    const mapped = await mapRoles(owner, [
      { groupId: admins, role: 'admin' },
      { groupId: everyone, role: 'member' },
    ]);
    expect(mapped.status, JSON.stringify(mapped.body)).toBe(200);
    expect(await roleOf(at('erin'))).toBe('admin');
    expect((await owner.api('GET', `/scim-directories/${directory.id}/role-mappings`)).body.data).toHaveLength(2);

    // Out of the admins' group: the member role that "Everyone" maps.
    await scim('PATCH', `${directory.path}/Groups/${admins}`, { schemas: [patchOp], Operations: [{ op: 'Remove', path: `members[value eq "${erin}"]` }] });
    expect(await roleOf(at('erin'))).toBe('member');
    await scim('PATCH', `${directory.path}/Groups/${admins}`, { schemas: [patchOp], Operations: [{ op: 'Add', path: 'members', value: [{ value: erin }] }] });
    expect(await roleOf(at('erin'))).toBe('admin');
    // The audit log says why.
    const events = (await owner.api('GET', '/audit-events?limit=100&type=directory.role_changed')).body.data as { data: { from: string; to: string } }[];
    expect(events.map((event) => event.data)).toEqual(expect.arrayContaining([{ from: 'member', to: 'admin' }, { from: 'admin', to: 'member' }]));
    // While the directory maps roles, the role is not changed by hand; a member it did not provision is.
    const memberships = (await owner.api('GET', '/members?limit=100')).body.data as { id: string; userId: string; role: string }[];
    const erinsUser = (await asOwner(`SELECT "id" FROM "User" WHERE "email" = $1`, [at('erin')])).rows[0]!.id;
    const erinsMembership = memberships.find((member) => member.userId === erinsUser)!;
    const byHand = await owner.api('PATCH', `/members/${erinsMembership.id}`, { body: { role: 'member' } });
    expect(byHand.status).toBe(409);
    expect(byHand.body.error.code).toBe('DIRECTORY_MANAGED');
    expect(await roleOf(at('erin'))).toBe('admin');
    // Nor is the member removed by hand: unassigned in the identity provider, they are suspended instead.
    const removed = await owner.api('DELETE', `/members/${erinsMembership.id}`);
    expect(removed.status).toBe(409);
    expect(removed.body.error.code).toBe('DIRECTORY_MANAGED');
    expect(await roleOf(at('erin'))).toBe('admin');
    await mapRoles(owner, []);
    // Without mappings, the owners set roles by hand again.
    expect((await owner.api('PATCH', `/members/${erinsMembership.id}`, { body: { role: 'member' } })).status).toBe(200);
  });

  it('lets only an owner map a group to owner, and never leaves the organization without one', async () => {
    const admin = await addMember(backend.url, owner, at('gina'), 'admin');
    const frank = await provision('frank');
    const ownersGroup = await group('Owners', [frank]);
    expect((await mapRoles(admin, [{ groupId: ownersGroup, role: 'owner' }])).status).toBe(403);
    expect((await mapRoles(owner, [{ groupId: ownersGroup, role: 'owner' }])).status).toBe(200);
    expect(await roleOf(at('frank'))).toBe('owner');
    // And an admin cannot take that mapping away either.
    expect((await mapRoles(admin, [])).status).toBe(403);

    // The owner who signed up is linked too; once mappings exist, a directory change that would
    // leave no owner is refused whole.
    const founder = await scim('POST', `${directory.path}/Users`, { schemas: [coreUser], userName: owner.user.email });
    expect(founder.status).toBe(201);
    await scim('PATCH', `${directory.path}/Groups/${ownersGroup}`, { schemas: [patchOp], Operations: [{ op: 'Add', path: 'members', value: [{ value: founder.body.id }] }] });
    expect(await roleOf(owner.user.email)).toBe('owner');
    const emptied = await scim('PATCH', `${directory.path}/Groups/${ownersGroup}`, { schemas: [patchOp], Operations: [{ op: 'Remove', path: 'members' }] });
    expect(emptied.status).toBe(400);
    expect(emptied.body.scimType).toBe('mutability');
    expect(await roleOf(owner.user.email)).toBe('owner');
    expect(await roleOf(at('frank'))).toBe('owner');
    expect((await owner.api('GET', '/audit-events?limit=10&type=directory.request_refused')).body.data.length).toBeGreaterThan(0);
    // Mapping the owners' group to admin would demote every owner: 409, and nothing changes.
    const demoted = await mapRoles(owner, [{ groupId: ownersGroup, role: 'admin' }]);
    expect(demoted.status).toBe(409);
    expect(demoted.body.error.code).toBe('LAST_OWNER');
    expect(await roleOf(owner.user.email)).toBe('owner');
    expect((await owner.api('GET', `/scim-directories/${directory.id}/role-mappings`)).body.data).toEqual([{ groupId: ownersGroup, displayName: 'Owners', role: 'owner' }]);
    // Without mappings the directory leaves roles alone: they stay as they are.
    expect((await mapRoles(owner, [])).status).toBe(200);
    expect(await roleOf(at('frank'))).toBe('owner');
  });

  it("refuses members that are not this directory's users, and keeps groups of organizations apart", async () => {
    const other = await signUp(backend.url, `groups-other-${kind}@beta.example`);
    const theirs = await other.api('POST', '/scim-directories', { body: { name: 'Beta' } });
    const theirScim = scimClient(backend.url, theirs.body.data.token);
    const theirPath = new URL(theirs.body.data.baseUrl).pathname;
    const theirUser = (await theirScim('POST', `${theirPath}/Users`, { schemas: [coreUser], userName: `someone-${kind}@beta.example` })).body.id as string;
    const mine = await group('Mine');
    const refused = await scim('PATCH', `${directory.path}/Groups/${mine}`, { schemas: [patchOp], Operations: [{ op: 'Add', path: 'members', value: [{ value: theirUser }] }] });
    expect(refused.status).toBe(400);
    expect(refused.body.scimType).toBe('invalidValue');
    expect((await scim('POST', `${directory.path}/Groups`, { schemas: [coreGroup], displayName: 'Bad', members: [{ value: 'not-an-id' }] })).status).toBe(400);
    expect((await theirScim('GET', `${theirPath}/Groups/${mine}`)).status).toBe(404);
    expect((await theirScim('GET', `${theirPath}/Groups?filter=${encodeURIComponent('displayName eq "Mine"')}`)).body.totalResults).toBe(0);
    expect((await other.api('PUT', `/scim-directories/${theirs.body.data.id}/role-mappings`, { body: [{ groupId: mine, role: 'admin' }] })).status).toBe(422);
  });
});
