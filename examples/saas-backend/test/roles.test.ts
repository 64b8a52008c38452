import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addMember,
  apiClient,
  pooledDatabaseKinds,
  invitationTokenFor,
  serviceApiKey,
  signUp,
  startBackend,
  type ApiResponse,
  type SignedUp,
  type TestBackend,
} from './support/backend.js';
import { expectNoSecrets, sha256 } from './support/secrets.js';

const password = 'correct horse battery';
const ids = (rows: { id: string }[]) => rows.map((row) => row.id).sort();
const sorted = (values: string[]) => [...values].sort();

// Each test builds its own organization (owner, admin, member) so that what one test changes
// cannot decide another's outcome. Everyone acts with a Bearer token; the team's clients send the
// team organization's id unless a request says otherwise (`organizationId: ''` sends none).
describe.each(pooledDatabaseKinds)('roles and the auth entities on the %s database', (kind) => {
  let backend: TestBackend;
  let outsider: SignedUp;
  let counter = 0;
  const email = (name: string) => `${name}-${++counter}@example.com`;

  interface Team {
    owner: SignedUp;
    admin: SignedUp;
    member: SignedUp;
    organizationId: string;
  }

  async function team(): Promise<Team> {
    const owner = await signUp(backend.url, email('owner'));
    const admin = await addMember(backend.url, owner, email('admin'), 'admin');
    const member = await addMember(backend.url, owner, email('member'), 'member');
    return { owner, admin, member, organizationId: owner.organizationId };
  }

  /** The member row (its id and role) of `userId` in the organization `as` acts in. */
  async function membership(as: SignedUp, userId: string): Promise<{ id: string; role: string } | undefined> {
    const list = await as.api('GET', '/members?limit=100');
    expect(list.status).toBe(200);
    return list.body.data.find((row: { userId: string }) => row.userId === userId);
  }

  async function usersOf(as: SignedUp): Promise<string[]> {
    const list = await as.api('GET', '/Users?limit=100');
    expect(list.status).toBe(200);
    expect(list.body.meta.total).toBe(list.body.data.length);
    return ids(list.body.data);
  }

  const anonymous = () => apiClient(backend.url);
  const signIn = (address: string, secret = password) => anonymous()('POST', '/api/auth/sign-in/email', { body: { email: address, password: secret } });
  const sessionOf = async (token: string) => (await anonymous()('GET', '/api/auth/get-session', { token })).body.data;
  const asService = () => apiClient(backend.url, { token: serviceApiKey });

  beforeAll(async () => {
    backend = await startBackend(kind);
    outsider = await signUp(backend.url, 'outsider@example.com');
  });
  afterAll(() => backend?.stop());

  describe('member, admin and owner', () => {
    it('refuses a member every admin operation with 403 and changes nothing', async () => {
      const { owner, admin, member, organizationId } = await team();
      const adminRow = (await membership(owner, admin.user.id))!;
      const memberRow = (await membership(owner, member.user.id))!;
      const newcomer = email('newcomer');
      const attempts: [string, string, unknown?][] = [
        ['POST', '/Users', { email: newcomer, name: 'Newcomer' }],
        ['DELETE', `/Users/${admin.user.id}`],
        ['POST', '/members', { email: outsider.user.email }],
        ['PATCH', `/members/${adminRow.id}`, { role: 'member' }],
        ['PATCH', `/members/${memberRow.id}`, { role: 'admin' }],
        ['DELETE', `/members/${adminRow.id}`],
        ['PATCH', `/organizations/${organizationId}`, { name: 'Taken over' }],
        ['DELETE', `/organizations/${organizationId}`],
      ];
      for (const [method, path, body] of attempts) {
        const response = await member.api(method, path, { body });
        expect(response.status, `${method} ${path}`).toBe(403);
        expect(response.body.error.code, `${method} ${path}`).toBe('FORBIDDEN');
      }

      // Nothing happened: same people, same roles, same name; no user was created.
      expect(await usersOf(owner)).toEqual(sorted([owner.user.id, admin.user.id, member.user.id]));
      expect((await membership(owner, admin.user.id))!.role).toBe('admin');
      expect((await membership(owner, member.user.id))!.role).toBe('member');
      const organization = await owner.api('GET', `/organizations/${organizationId}`);
      expect(organization.body.data.name).toBe(`${owner.user.name}'s organization`);
      expect((await signIn(newcomer)).status).toBe(401);
      // The member still reads.
      expect((await member.api('GET', '/members')).body.meta.total).toBe(3);
      expect((await member.api('GET', '/Users')).status).toBe(200);
    });

    it('lets an admin manage members but never create, demote or remove an owner', async () => {
      const { owner, admin, organizationId } = await team();
      const ownerRow = (await membership(owner, owner.user.id))!;

      // Inviting new addresses (POST /Users) and people with accounts (POST /members) as members or admins works.
      const hired = email('hired');
      expect((await admin.api('POST', '/Users', { body: { email: hired, name: 'Hired' } })).status).toBe(202);
      const hiredToken = await invitationTokenFor(backend.url, hired, 0);
      const created = await anonymous()('POST', '/api/auth/invitations/accept', { body: { token: hiredToken, email: hired, name: 'Hired', password } });
      expect(created.status).toBe(201);
      const hiredId = created.body.data.user.id;
      expect((await membership(owner, hiredId))!.role).toBe('member');
      const invitee = await signUp(backend.url, email('invitee'));
      const invitation = await admin.api('POST', '/members', { body: { email: invitee.user.email, role: 'admin' } });
      expect(invitation.status).toBe(202);
      expect(invitation.body.data).toMatchObject({ email: invitee.user.email, organizationId, role: 'admin' });
      expect(await membership(owner, invitee.user.id)).toBeUndefined();
      const accepted = await invitee.api('POST', '/api/auth/invitations/accept', { body: { token: await invitationTokenFor(backend.url, invitee.user.email, 0) } });
      expect(accepted.status).toBe(200);
      const invited = { body: { data: (await membership(owner, invitee.user.id))! } };
      expect(invited.body.data.role).toBe('admin');

      // Changing roles between member and admin works.
      const demoted = await admin.api('PATCH', `/members/${invited.body.data.id}`, { body: { role: 'member' } });
      expect(demoted.status).toBe(200);
      expect(demoted.body.data.role).toBe('member');

      // Anything that makes or unmakes an owner does not.
      const ownerAttempts: [string, string, unknown?][] = [
        ['POST', '/Users', { email: email('boss'), name: 'Boss', role: 'owner' }],
        ['POST', '/members', { email: outsider.user.email, role: 'owner' }],
        ['PATCH', `/members/${invited.body.data.id}`, { role: 'owner' }],
        ['PUT', `/members/${invited.body.data.id}`, { role: 'owner' }],
        ['PATCH', `/members/${ownerRow.id}`, { role: 'admin' }],
        ['DELETE', `/members/${ownerRow.id}`],
        ['DELETE', `/Users/${owner.user.id}`],
      ];
      for (const [method, path, body] of ownerAttempts) {
        const response = await admin.api(method, path, { body });
        expect(response.status, `${method} ${path}`).toBe(403);
        expect(response.body.error.code).toBe('FORBIDDEN');
      }
      expect((await membership(owner, owner.user.id))!.role).toBe('owner');
      expect((await membership(owner, invitee.user.id))!.role).toBe('member');
      expect(await membership(owner, outsider.user.id)).toBeUndefined();

      // Removing non-owners works, by member row or by user.
      expect((await admin.api('DELETE', `/members/${invited.body.data.id}`)).status).toBe(204);
      expect((await admin.api('DELETE', `/Users/${hiredId}`)).status).toBe(204);
      expect(await membership(owner, invitee.user.id)).toBeUndefined();
      expect(await membership(owner, hiredId)).toBeUndefined();

      // An admin renames the organization but does not delete it.
      const renamed = await admin.api('PATCH', `/organizations/${organizationId}`, { body: { name: 'Renamed by admin' } });
      expect(renamed.status).toBe(200);
      expect(renamed.body.data.name).toBe('Renamed by admin');
      const deleted = await admin.api('DELETE', `/organizations/${organizationId}`);
      expect(deleted.status).toBe(403);
      expect((await owner.api('GET', `/organizations/${organizationId}`)).status).toBe(200);
    });

    it('lets only the owner delete the organization', async () => {
      const { owner, admin, member, organizationId } = await team();
      const project = await member.api('POST', '/Projects', { body: { name: 'Doomed' } });
      expect(project.status).toBe(201);
      expect((await admin.api('DELETE', `/organizations/${organizationId}`)).status).toBe(403);
      expect((await member.api('DELETE', `/organizations/${organizationId}`)).status).toBe(403);

      const deleted = await owner.api('DELETE', `/organizations/${organizationId}`);
      expect(deleted.status).toBe(204);
      expect((await owner.api('GET', `/organizations/${organizationId}`)).status).toBe(404);
      for (const person of [owner, admin, member]) {
        const organizations = (await sessionOf(person.token)).organizations.map((o: { id: string }) => o.id);
        expect(organizations).not.toContain(organizationId);
        // No longer a member of anything there.
        expect((await person.api('GET', '/Projects')).status).toBe(403);
      }
    });
  });

  describe('the last owner', () => {
    it('cannot be removed or demoted; with a second owner both work', async () => {
      const { owner, admin } = await team();
      const ownerRow = (await membership(owner, owner.user.id))!;
      const adminRow = (await membership(owner, admin.user.id))!;

      const attempts: [string, string, unknown?][] = [
        ['DELETE', `/members/${ownerRow.id}`],
        ['PATCH', `/members/${ownerRow.id}`, { role: 'admin' }],
        ['PUT', `/members/${ownerRow.id}`, { role: 'member' }],
        ['DELETE', `/Users/${owner.user.id}`],
      ];
      for (const [method, path, body] of attempts) {
        const response = await owner.api(method, path, { body });
        expect(response.status, `${method} ${path}`).toBe(409);
        expect(response.body.error.code).toBe('CONFLICT');
      }
      expect((await membership(owner, owner.user.id))!.role).toBe('owner');

      // A second owner: now the first may step down.
      expect((await owner.api('PATCH', `/members/${adminRow.id}`, { body: { role: 'owner' } })).body.data.role).toBe('owner');
      const steppedDown = await owner.api('PATCH', `/members/${ownerRow.id}`, { body: { role: 'admin' } });
      expect(steppedDown.status).toBe(200);
      expect(steppedDown.body.data.role).toBe('admin');

      // The promoted one is now the last owner, with the same protection.
      expect((await admin.api('PATCH', `/members/${adminRow.id}`, { body: { role: 'admin' } })).status).toBe(409);
      expect((await admin.api('DELETE', `/members/${adminRow.id}`)).status).toBe(409);
      // The demoted former owner, now an admin, cannot demote them either.
      expect((await owner.api('PATCH', `/members/${adminRow.id}`, { body: { role: 'member' } })).status).toBe(403);

      // With two owners again, an owner removes the other owner.
      expect((await admin.api('PATCH', `/members/${ownerRow.id}`, { body: { role: 'owner' } })).status).toBe(200);
      expect((await admin.api('DELETE', `/members/${ownerRow.id}`)).status).toBe(204);
      expect(await membership(admin, owner.user.id)).toBeUndefined();
      expect((await owner.api('GET', '/members')).status).toBe(403);
    });
  });

  describe('leaving', () => {
    it('lets any member leave by deleting their own membership', async () => {
      const { owner, admin, member } = await team();
      for (const person of [member, admin]) {
        const row = (await membership(person, person.user.id))!;
        const left = await person.api('DELETE', `/members/${row.id}`);
        expect(left.status).toBe(204);
        expect(left.body).toBeUndefined();
        expect((await person.api('GET', '/members')).status).toBe(403);
      }
      expect(await usersOf(owner)).toEqual([owner.user.id]);
      // Leaving removes the membership, not the person.
      expect((await signIn(member.user.email)).status).toBe(200);
    });
  });

  describe('/Users', () => {
    it('makes POST /Users by an owner an invitation: an account exists only once its address accepts from the mail', async () => {
      const { owner, organizationId } = await team();
      const address = email('created');
      const before = backend.mailbox.to(address).length;
      const invited = await owner.api('POST', '/Users', { body: { email: address.toUpperCase(), name: 'Created User', role: 'admin' } });
      expect(invited.status).toBe(202);
      expect(invited.body.data).toEqual({ id: expect.any(String), email: address, organizationId, role: 'admin', expiresAt: expect.any(String) });
      // Nothing exists for the address yet: no user, no sign-in.
      expect((await asService()('GET', `/Users?email=${address}`)).body.data).toEqual([]);
      expect((await signIn(address)).status).toBe(401);

      // Its owner follows the mailed link and chooses a password: the account, its address proven, the role.
      const token = await invitationTokenFor(backend.url, address, before);
      const accepted = await anonymous()('POST', '/api/auth/invitations/accept', { body: { token, email: address, name: 'Created User', password } });
      expect(accepted.status).toBe(201);
      expect(accepted.body.data).toMatchObject({ user: { email: address, name: 'Created User', email_verified: true }, organization: { id: organizationId }, role: 'admin', token: expect.any(String) });
      const userId = accepted.body.data.user.id;
      const accounts = await asService()('GET', `/accounts?userId=${userId}`);
      expect(accounts.body.data).toEqual([expect.objectContaining({ providerId: 'credential', accountId: userId })]);
      const signedIn = await signIn(address);
      expect(signedIn.status).toBe(200);
      const organizations = (await sessionOf(signedIn.body.data.token)).organizations;
      expect(organizations).toContainEqual(expect.objectContaining({ id: organizationId, role: 'admin' }));
      // ... and, as at sign-up, an organization of their own.
      expect(organizations).toContainEqual(expect.objectContaining({ role: 'owner' }));
      expect(await usersOf(owner)).toContain(userId);
      // The link is used up.
      expect((await anonymous()('POST', '/api/auth/invitations/accept', { body: { token, email: address, name: 'Twin', password } })).status).toBe(404);

      // A second POST for the address answers exactly as the first did.
      const again = await owner.api('POST', '/Users', { body: { email: address, name: 'Twin' } });
      expect(again.status).toBe(202);
      expect(Object.keys(again.body.data).sort()).toEqual(Object.keys(invited.body.data).sort());

      // DELETE takes them out of the organization; the user and their password stay.
      const removed = await owner.api('DELETE', `/Users/${userId}`);
      expect(removed.status).toBe(204);
      expect(await usersOf(owner)).not.toContain(userId);
      expect((await owner.api('GET', `/Users/${userId}`)).status).toBe(404);
      expect((await owner.api('DELETE', `/Users/${userId}`)).status).toBe(404);
      const stillThere = await asService()('GET', `/Users/${userId}`);
      expect(stillThere.status).toBe(200);
      expect(stillThere.body.data.email).toBe(address);
      const signedInAgain = await signIn(address);
      expect(signedInAgain.status).toBe(200);
      expect((await sessionOf(signedInAgain.body.data.token)).organizations.map((o: { id: string }) => o.id)).not.toContain(organizationId);
    });

    it("never makes an account for an address nobody proved: its real owner signs up afterwards as usual", async () => {
      const { owner } = await team();
      const victim = email('victim');
      // A signed-in squatter (any user owns their personal organization) tries to take the address.
      const squatter = await signUp(backend.url, email('squatter'));
      for (let attempt = 0; attempt < 3; attempt++) {
        expect((await squatter.api('POST', '/Users', { body: { email: victim, name: 'Not Mine' } })).status).toBe(202);
      }
      expect((await owner.api('POST', '/Users', { body: { email: victim, name: 'Not Mine' } })).status).toBe(202);
      expect((await asService()('GET', `/Users?email=${victim}`)).body.data).toEqual([]);
      // The squatter never sees the secret, so cannot make the account through the invitation either.
      const guessed = await anonymous()('POST', '/api/auth/invitations/accept', { body: { token: 'x'.repeat(43), email: victim, name: 'Not Mine', password } });
      expect(guessed.status).toBe(404);

      const real = await anonymous()('POST', '/api/auth/sign-up/email', { body: { email: victim, name: 'Real Owner', password } });
      expect(real.status).toBe(201);
      expect(real.body.data.user.email).toBe(victim);
      // Their own organization only: the invitations wait for their answer.
      const organizations = (await sessionOf(real.body.data.token)).organizations;
      expect(organizations).toEqual([expect.objectContaining({ role: 'owner' })]);
      const pending = await anonymous()('GET', '/api/auth/invitations', { token: real.body.data.token });
      expect(pending.body.meta.total).toBe(2);
    });

    it('lists exactly the members of the organization in the header', async () => {
      const { owner, admin, member, organizationId } = await team();
      const everyone = sorted([owner.user.id, admin.user.id, member.user.id]);
      for (const person of [owner, admin, member]) expect(await usersOf(person)).toEqual(everyone);
      expect(await usersOf(outsider)).toEqual([outsider.user.id]);
      // The member's personal organization has only them.
      const personal = (await sessionOf(member.token)).organizations.find((o: { role: string }) => o.role === 'owner').id;
      const inPersonal = await member.api('GET', '/Users', { organizationId: personal });
      expect(ids(inPersonal.body.data)).toEqual([member.user.id]);
      const listed = await owner.api('GET', '/Users');
      expectNoSecrets(listed, [owner.token, sha256(owner.token)]);
      expect(listed.body.data.find((user: { id: string }) => user.id === admin.user.id)).toMatchObject({ email: admin.user.email, name: admin.user.name });
      // Without a header, the session's active organization: the owner's own, this team.
      expect(ids((await owner.api('GET', '/Users', { organizationId: '' })).body.data)).toEqual(everyone);
      expect((await outsider.api('GET', '/Users', { organizationId })).status).toBe(403);
    });

    it("reads a fellow member, but answers another organization's user with 404", async () => {
      const { owner, member } = await team();
      const fellow = await member.api('GET', `/Users/${owner.user.id}`);
      expect(fellow.status).toBe(200);
      expect(fellow.body.data).toMatchObject({ id: owner.user.id, email: owner.user.email });
      const stranger = await owner.api('GET', `/Users/${outsider.user.id}`);
      expect(stranger.status).toBe(404);
      expect(stranger.body.error.code).toBe('NOT_FOUND');
      expect(stranger.body.error.message).toBe(`User with id '${outsider.user.id}' not found`);
      // Oneself needs no organization.
      expect((await owner.api('GET', `/Users/${owner.user.id}`, { organizationId: '' })).body.data.id).toBe(owner.user.id);
    });

    it('lets a user change their own name, but nobody else and never the e-mail address', async () => {
      const { owner, member } = await team();
      const renamed = await member.api('PATCH', `/Users/${member.user.id}`, { body: { name: 'Renamed Member' } });
      expect(renamed.status).toBe(200);
      expect(renamed.body.data).toMatchObject({ id: member.user.id, name: 'Renamed Member', email: member.user.email });
      expect((await sessionOf(member.token)).user.name).toBe('Renamed Member');

      // Not even the owner changes someone else.
      for (const [as, target] of [
        [owner, member],
        [member, owner],
      ] as const) {
        const response = await as.api('PATCH', `/Users/${target.user.id}`, { body: { name: 'Hijacked' } });
        expect(response.status).toBe(403);
        expect(response.body.error.code).toBe('FORBIDDEN');
      }
      expect((await sessionOf(owner.token)).user.name).toBe(owner.user.name);
      expect((await sessionOf(member.token)).user.name).toBe('Renamed Member');

      const emailChange = await member.api('PATCH', `/Users/${member.user.id}`, { body: { email: 'stolen@example.com' } });
      expect(emailChange.status).toBe(422);
      expect(emailChange.body.error.code).toBe('VALIDATION_ERROR');
      expect(emailChange.body.error.details).toEqual({ email: 'Unknown field' });
      expect((await sessionOf(member.token)).user.email).toBe(member.user.email);
    });
  });

  describe('/accounts and /sessions', () => {
    it('shows every user only their own rows, owners included, and never a secret; the service key sees all, hashes too', async () => {
      const { owner, admin, member, organizationId } = await team();
      const secrets = [owner, admin, member, outsider].flatMap((person) => [person.token, sha256(person.token)]);
      const userIdsOf = (response: ApiResponse) => [...new Set(response.body.data.map((row: { userId: string }) => row.userId) as string[])].sort();

      for (const path of ['/accounts', '/sessions']) {
        // With or without the organization header, whatever the role: one's own rows only.
        for (const person of [owner, admin, member]) {
          for (const organization of ['', organizationId]) {
            const own = await person.api('GET', `${path}?limit=100`, { organizationId: organization });
            expect(own.status, path).toBe(200);
            expect(userIdsOf(own), `${path} as ${person.user.email} (${organization || 'no header'})`).toEqual([person.user.id]);
            expect(own.body.meta.total).toBe(own.body.data.length);
            expectNoSecrets(own, secrets);
          }
        }
        const all = await asService()('GET', `${path}?limit=100`);
        expect(userIdsOf(all)).toEqual(expect.arrayContaining([owner.user.id, admin.user.id, member.user.id, outsider.user.id]));
      }

      // Single rows follow the same rule: another user's row is a 404, even to an owner.
      const memberAccount = (await member.api('GET', '/accounts')).body.data[0];
      expect(memberAccount).toMatchObject({ userId: member.user.id, providerId: 'credential', accountId: member.user.id });
      expect((await member.api('GET', `/accounts/${memberAccount.id}`)).status).toBe(200);
      for (const person of [owner, admin]) {
        expect((await person.api('GET', `/accounts/${memberAccount.id}`)).status).toBe(404);
      }
      const memberSession = (await sessionOf(member.token)).session;
      for (const person of [owner, admin]) {
        expect((await person.api('GET', `/sessions/${memberSession.id}`)).status).toBe(404);
      }
      // The service key (a database adapter) reads the stored hash, never the secret the client holds.
      const byService = await asService()('GET', `/sessions/${memberSession.id}`);
      expect(byService.status).toBe(200);
      expect(byService.body.data.token).toBe(sha256(member.token));
      expect(JSON.stringify(byService.body)).not.toContain(member.token);
    });

    it("lets a user delete one of their own sessions but not someone else's", async () => {
      const { owner, member } = await team();
      const second = await signIn(member.user.email);
      const secondToken: string = second.body.data.token;
      const secondSession = (await sessionOf(secondToken)).session;
      const mine = await member.api('GET', '/sessions', { organizationId: '' });
      expect(ids(mine.body.data)).toEqual(sorted([(await sessionOf(member.token)).session.id, secondSession.id]));

      const ownerSession = (await sessionOf(owner.token)).session;
      const foreign = await member.api('DELETE', `/sessions/${ownerSession.id}`);
      expect(foreign.status).toBe(404);
      expect((await anonymous()('GET', '/api/auth/get-session', { token: owner.token })).status).toBe(200);

      const deleted = await member.api('DELETE', `/sessions/${secondSession.id}`);
      expect(deleted.status).toBe(204);
      expect((await anonymous()('GET', '/api/auth/get-session', { token: secondToken })).status).toBe(401);
      const withDeleted = await member.api('GET', '/sessions', { token: secondToken });
      expect(withDeleted.status).toBe(401);
      expect(withDeleted.body.error.code).toBe('UNAUTHORIZED');
      // The other session is untouched.
      expect((await member.api('GET', '/sessions', { organizationId: '' })).body.data.map((row: { id: string }) => row.id)).not.toContain(secondSession.id);
      expect((await anonymous()('GET', '/api/auth/get-session', { token: member.token })).status).toBe(200);
    });

    it('refuses users every write to /accounts and every write but delete to /sessions', async () => {
      const { owner, member } = await team();
      const account = (await member.api('GET', '/accounts', { organizationId: '' })).body.data[0];
      const session = (await sessionOf(member.token)).session;
      const accountBody = { userId: member.user.id, accountId: member.user.id, providerId: 'credential', password: '$2b$04$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234' };
      const attempts: [string, string, unknown?][] = [
        ['POST', '/accounts', accountBody],
        ['PUT', `/accounts/${account.id}`, accountBody],
        ['PATCH', `/accounts/${account.id}`, { password: accountBody.password }],
        ['DELETE', `/accounts/${account.id}`],
        ['POST', '/sessions', { userId: member.user.id, token: 'x'.repeat(64), expiresAt: new Date(Date.now() + 86_400_000).toISOString() }],
        ['PATCH', `/sessions/${session.id}`, { expiresAt: new Date(Date.now() + 365 * 86_400_000).toISOString() }],
      ];
      for (const person of [member, owner]) {
        for (const [method, path, body] of attempts) {
          const response = await person.api(method, path, { body });
          expect(response.status, `${method} ${path}`).toBe(403);
          expect(response.body.error.code).toBe('FORBIDDEN');
        }
      }
      // The password still works and the account is still there.
      expect((await signIn(member.user.email)).status).toBe(200);
      expect((await member.api('GET', `/accounts/${account.id}`)).status).toBe(200);
    });
  });

  describe('/verifications', () => {
    it('refuses a signed-in user on every method', async () => {
      const { owner } = await team();
      const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
      const made = await asService()('POST', '/verifications', { body: { identifier: 'reset:someone', value: 'secret-value', expiresAt } });
      expect(made.status).toBe(201);
      const path = `/verifications/${made.body.data.id}`;
      const attempts: [string, string, unknown?][] = [
        ['GET', '/verifications'],
        ['POST', '/verifications', { identifier: 'x', value: 'y', expiresAt }],
        ['GET', path],
        ['PUT', path, { identifier: 'x', value: 'y', expiresAt }],
        ['PATCH', path, { value: 'mine now' }],
        ['DELETE', path],
      ];
      for (const organizationId of ['', owner.organizationId]) {
        for (const [method, route, body] of attempts) {
          const response = await owner.api(method, route, { body, organizationId });
          expect(response.status, `${method} ${route}`).toBe(403);
          expect(response.body.error.code).toBe('FORBIDDEN');
        }
      }
      const kept = await asService()('GET', path);
      expect(kept.body.data.identifier).toBe('reset:someone');
      expect((await asService()('GET', '/verifications?identifier=reset:someone')).body.meta.total).toBe(1);
    });
  });

  describe('/organizations', () => {
    it('lists only the organizations the caller belongs to', async () => {
      const { owner, member, organizationId } = await team();
      const mine = await member.api('GET', '/organizations?limit=100', { organizationId: '' });
      expect(mine.status).toBe(200);
      const personal = (await sessionOf(member.token)).organizations.find((o: { role: string }) => o.role === 'owner').id;
      expect(ids(mine.body.data)).toEqual(sorted([organizationId, personal]));
      expect(mine.body.meta.total).toBe(2);
      const ownerOnly = await owner.api('GET', '/organizations');
      expect(ids(ownerOnly.body.data)).toEqual([organizationId]);
      expect(ids((await outsider.api('GET', '/organizations')).body.data)).toEqual([outsider.organizationId]);
    });

    it('makes the creator of an organization its owner', async () => {
      const { member } = await team();
      const slug = `side-project-${counter}`;
      const created = await member.api('POST', '/organizations', { body: { name: 'Side project', slug }, organizationId: '' });
      expect(created.status).toBe(201);
      expect(created.body.data).toMatchObject({ name: 'Side project', slug });
      const id = created.body.data.id;
      const organizations = (await sessionOf(member.token)).organizations;
      expect(organizations).toContainEqual({ id, name: 'Side project', slug, role: 'owner' });
      const members = await member.api('GET', '/members', { organizationId: id });
      expect(members.body.data).toEqual([expect.objectContaining({ userId: member.user.id, role: 'owner' })]);
      expect((await member.api('GET', `/organizations/${id}`)).body.data.slug).toBe(slug);
      // A taken slug is a conflict.
      expect((await outsider.api('POST', '/organizations', { body: { name: 'Copycat', slug } })).status).toBe(409);
    });

    it('answers an organization the caller does not belong to with 404', async () => {
      const { owner, organizationId } = await team();
      for (const [method, body] of [['GET'], ['PATCH', { name: 'Mine now' }], ['PUT', { name: 'Mine now', slug: 'mine-now' }], ['DELETE']] as const) {
        const response = await outsider.api(method, `/organizations/${organizationId}`, { body });
        expect(response.status, method).toBe(404);
        expect(response.body.error.code).toBe('NOT_FOUND');
      }
      expect((await owner.api('GET', `/organizations/${organizationId}`)).body.data.name).toBe(`${owner.user.name}'s organization`);
    });
  });
});
