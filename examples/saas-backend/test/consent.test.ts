import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, pooledDatabaseKinds, invitationTokenFor, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * Nobody joins an organization without consent: an owner's POST /members (or POST /Users) is an
 * invitation, mailed to the address, that the person accepts while signed in, with the secret from
 * the mail (identity.test.ts has accepting without an account). The answer never tells whether an
 * address has an account, never carries the secret, and before accepting the invitee is invisible
 * to the inviter.
 */
describe.each(pooledDatabaseKinds)('invitations and consent on the %s database', (kind) => {
  let backend: TestBackend;
  let counter = 0;
  // Addresses of one length, so that answers for different addresses can be compared byte for byte.
  const email = (name: string) => `${name.padEnd(8, 'x')}-${String(++counter).padStart(4, '0')}@example.com`;
  const service = () => apiClient(backend.url, { token: serviceApiKey });

  beforeAll(async () => {
    backend = await startBackend(kind);
  });
  afterAll(() => backend?.stop());

  const memberIds = async (owner: SignedUp) => (await owner.api('GET', '/members?limit=100')).body.data.map((row: { userId: string }) => row.userId);
  /** The invitation, and its secret as it arrived in the test mailbox. */
  const invite = async (owner: SignedUp, address: string, role = 'member') => {
    const before = backend.mailbox.to(address).length;
    const response = await owner.api('POST', '/members', { body: { email: address, role } });
    const token = response.status === 202 ? await invitationTokenFor(backend.url, address, before) : '';
    return Object.assign(response, { token });
  };
  const accept = (person: SignedUp, token: string) => person.api('POST', '/api/auth/invitations/accept', { body: { token }, organizationId: '' });

  it('takes an invitation and its acceptance to join; until then the inviter sees nothing of the invitee', async () => {
    const owner = await signUp(backend.url, email('owner'));
    const invitee = await signUp(backend.url, email('invitee'));
    await invitee.api('GET', '/api/auth/get-session'); // some activity of the invitee's own

    const invitation = await invite(owner, invitee.user.email, 'admin');
    expect(invitation.status).toBe(202);
    // The secret goes to the mailbox only: the inviter never holds it.
    expect(invitation.body.data).toEqual({
      id: expect.any(String),
      email: invitee.user.email,
      organizationId: owner.organizationId,
      role: 'admin',
      expiresAt: expect.any(String),
    });
    expect(JSON.stringify(invitation.body)).not.toContain(invitation.token);

    // Not a member yet: not listed, not readable, no sessions or accounts visible, no access.
    expect(await memberIds(owner)).toEqual([owner.user.id]);
    expect((await owner.api('GET', '/Users?limit=100')).body.data.map((user: { id: string }) => user.id)).toEqual([owner.user.id]);
    expect((await owner.api('GET', `/Users/${invitee.user.id}`)).status).toBe(404);
    for (const path of ['/sessions?limit=100', '/accounts?limit=100']) {
      for (const organizationId of [owner.organizationId, '']) {
        const rows = (await owner.api('GET', path, { organizationId })).body.data as { userId: string }[];
        expect(rows.every((row) => row.userId === owner.user.id), path).toBe(true);
      }
    }
    expect((await invitee.api('GET', '/Projects', { organizationId: owner.organizationId })).status).toBe(403);

    // The invitee sees the invitation (without its secret) and accepts it.
    const pending = await invitee.api('GET', '/api/auth/invitations', { organizationId: '' });
    expect(pending.status).toBe(200);
    expect(pending.body.data).toEqual([{ id: invitation.body.data.id, organization: { id: owner.organizationId, name: expect.any(String) }, role: 'admin', expiresAt: expect.any(String) }]);
    const accepted = await accept(invitee, invitation.token);
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toMatchObject({ organization: { id: owner.organizationId }, role: 'admin' });

    expect((await memberIds(owner)).sort()).toEqual([owner.user.id, invitee.user.id].sort());
    expect((await invitee.api('GET', '/Projects', { organizationId: owner.organizationId })).status).toBe(200);
    // Even now an owner never reads another member's sessions or accounts.
    for (const path of ['/sessions?limit=100', '/accounts?limit=100']) {
      const rows = (await owner.api('GET', path)).body.data as { userId: string }[];
      expect(rows.map((row) => row.userId).filter((id) => id !== owner.user.id), path).toEqual([]);
    }
    // An invitation is used once.
    expect((await accept(invitee, invitation.token)).status).toBe(404);
    expect((await invitee.api('GET', '/api/auth/invitations', { organizationId: '' })).body.data).toEqual([]);
  });

  it('answers an invitation the same whether or not the address has an account', async () => {
    const owner = await signUp(backend.url, email('owner'));
    const known = await signUp(backend.url, email('known'));
    const unknownAddress = email('unknown');
    const forKnown = await invite(owner, known.user.email);
    const forUnknown = await invite(owner, unknownAddress);
    expect(forKnown.status).toBe(forUnknown.status);
    const shape = (body: { data: Record<string, unknown> }) => Object.entries(body.data).map(([key, value]) => [key, typeof value]);
    expect(shape(forKnown.body)).toEqual(shape(forUnknown.body));
    const headerNames = (response: { headers: Headers }) => [...response.headers.keys()].filter((name) => !['date', 'x-request-id', 'etag'].includes(name)).sort();
    expect(headerNames(forKnown)).toEqual(headerNames(forUnknown));
    expect(forKnown.headers.get('content-length')).toBe(forUnknown.headers.get('content-length'));
    // Neither became a member; the one without an account joins after signing up with the address.
    expect(await memberIds(owner)).toEqual([owner.user.id]);
    const newcomer = await signUp(backend.url, unknownAddress);
    expect((await accept(newcomer, forUnknown.token)).status).toBe(200);
    expect(await memberIds(owner)).toContain(newcomer.user.id);
  });

  it("lets only the invited address accept, with the invitation's own secret, before it expires", async () => {
    const owner = await signUp(backend.url, email('owner'));
    const invitee = await signUp(backend.url, email('invitee'));
    const intruder = await signUp(backend.url, email('intruder'));
    const invited = await invite(owner, invitee.user.email);
    const first = { ...invited.body.data, token: invited.token };

    // Another signed-in user cannot use the secret; a made-up secret does nothing; no session is a 401.
    expect((await accept(intruder, first.token)).status).toBe(404);
    expect((await accept(invitee, 'not-the-secret')).status).toBe(404);
    expect((await apiClient(backend.url)('POST', '/api/auth/invitations/accept', { body: { token: first.token } })).status).toBe(401);
    expect(await memberIds(owner)).toEqual([owner.user.id]);

    // Only the secret's hash is stored.
    const stored = (await service()('GET', `/verifications?identifier=invitation:${invitee.user.email}`)).body.data;
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(first.token);

    // An expired invitation cannot be accepted.
    expect((await service()('PATCH', `/verifications/${first.id}`, { body: { expiresAt: new Date(Date.now() - 1000).toISOString() } })).status).toBe(200);
    expect((await accept(invitee, first.token)).status).toBe(404);

    // A declined one neither.
    const second = await invite(owner, invitee.user.email);
    const declined = await invitee.api('POST', '/api/auth/invitations/decline', { body: { token: second.token }, organizationId: '' });
    expect(declined.status).toBe(200);
    expect((await accept(invitee, second.token)).status).toBe(404);
    expect(await memberIds(owner)).toEqual([owner.user.id]);
  });

  it('turns POST /Users for an address that has an account into an invitation that reveals nothing of that account', async () => {
    const owner = await signUp(backend.url, email('owner'));
    const existing = await signUp(backend.url, email('existing'));
    // A password is the invitee's to choose: an owner cannot set one.
    const withPassword = await owner.api('POST', '/Users', { body: { email: existing.user.email, name: 'Somebody Else', password: 'another password' } });
    expect(withPassword.status).toBe(422);
    expect(withPassword.body.error.details).toEqual({ password: 'Unknown field' });
    const before = backend.mailbox.to(existing.user.email).length;
    const answer = await owner.api('POST', '/Users', { body: { email: existing.user.email, name: 'Somebody Else' } });
    expect(answer.status).toBe(202);
    expect(Object.keys(answer.body.data).sort()).toEqual(['email', 'expiresAt', 'id', 'organizationId', 'role']);
    expect(answer.body.data.id).not.toBe(existing.user.id);
    expect(await memberIds(owner)).toEqual([owner.user.id]);
    // Their password did not change: they still sign in with their own.
    const signIn = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: existing.user.email, password: 'correct horse battery' } });
    expect(signIn.status).toBe(200);
    expect((await accept(existing, await invitationTokenFor(backend.url, existing.user.email, before))).status).toBe(200);
    expect(await memberIds(owner)).toContain(existing.user.id);
  });

  it('lists the invitations only of the signed-in address, and refuses without a session', async () => {
    const owner = await signUp(backend.url, email('owner'));
    const invitee = await signUp(backend.url, email('invitee'));
    const other = await signUp(backend.url, email('other'));
    await invite(owner, invitee.user.email);
    expect((await other.api('GET', '/api/auth/invitations', { organizationId: '' })).body.data).toEqual([]);
    expect((await invitee.api('GET', '/api/auth/invitations', { organizationId: '' })).body.data).toHaveLength(1);
    expect((await apiClient(backend.url)('GET', '/api/auth/invitations')).status).toBe(401);
  });
});
