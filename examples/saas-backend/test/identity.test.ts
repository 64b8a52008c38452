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
import { tokenOf } from './support/mailbox.js';
import { timingGapMs } from './support/timing.js';

/**
 * Proof of ownership, by mail that really goes out: every message here is sent by the backend over
 * SMTP to a real SMTP server on loopback (support/mailbox.ts), and every flow is finished by
 * following the link in the message as it arrived.
 */
const password = 'correct horse battery';
const newPassword = 'a brand new password';

describe.each(pooledDatabaseKinds)('identity flows on the %s database', (kind) => {
  let backend: TestBackend;
  let counter = 0;
  // Addresses of one length, so that answers for different addresses can be compared byte for byte.
  const email = (name: string) => `${name.padEnd(8, 'x')}-${String(++counter).padStart(4, '0')}@example.com`;
  const anonymous = () => apiClient(backend.url);
  const service = () => apiClient(backend.url, { token: serviceApiKey });
  const signIn = (address: string, secret = password) => anonymous()('POST', '/api/auth/sign-in/email', { body: { email: address, password: secret } });
  const session = (token: string) => anonymous()('GET', '/api/auth/get-session', { token });
  const userByEmail = async (address: string) => (await service()('GET', `/Users?email=${encodeURIComponent(address)}`)).body.data[0];

  beforeAll(async () => {
    backend = await startBackend(kind);
  });
  afterAll(() => backend?.stop());

  /** Everything about two answers a client could tell apart, but the values of its data. */
  const outline = (response: ApiResponse) => ({
    status: response.status,
    keys: JSON.stringify(response.body, (_key, value) => (value && typeof value === 'object' ? value : typeof value)),
    headers: [...response.headers.keys()].filter((name) => !['date', 'x-request-id'].includes(name)).sort(),
    length: response.headers.get('content-length'),
  });

  describe('confirming the address', () => {
    it('mails a link at sign-up that confirms the address, once', async () => {
      const user = await signUp(backend.url, email('signup'));
      expect(user.user).toMatchObject({ email_verified: false });
      const mail = await backend.mailbox.next(user.user.email, /Confirm your e-mail/);
      expect(mail.link!.origin + mail.link!.pathname).toBe('http://localhost:5173/verify-email');
      expect(mail.html).toContain(mail.link!.searchParams.get('token'));

      const verified = await anonymous()('GET', `/api/auth/verify-email?token=${tokenOf(mail)}`);
      expect(verified.status).toBe(200);
      expect(verified.body.data.user).toMatchObject({ id: user.user.id, email_verified: true });
      expect((await session(user.token)).body.data.user.email_verified).toBe(true);
      // Used up.
      const again = await anonymous()('POST', '/api/auth/verify-email', { body: { token: tokenOf(mail) } });
      expect(again.status).toBe(400);
      expect(again.body.error.code).toBe('INVALID_TOKEN');
      // The secret is stored only as its hash.
      const stored = JSON.stringify((await service()('GET', '/verifications?limit=100')).body.data);
      expect(stored).not.toContain(tokenOf(mail));
    });

    it('sends the link again for an unverified address, answering the same for any address', async () => {
      const user = await signUp(backend.url, email('resend'));
      await backend.mailbox.next(user.user.email);
      const resend = (address: string) => anonymous()('POST', '/api/auth/send-verification-email', { body: { email: address } });
      const known = await resend(user.user.email);
      const unknown = await resend(email('nobody'));
      expect(outline(known)).toEqual(outline(unknown));
      await expect.poll(() => backend.mailbox.to(user.user.email).length).toBe(2);
      // At most three live links per address: asking again and again sends no more mail.
      for (let i = 0; i < 3; i++) expect((await resend(user.user.email)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(backend.mailbox.to(user.user.email)).toHaveLength(3);
      // A link sent to an old address does not confirm a new one.
      await service()('PATCH', `/Users/${user.user.id}`, { body: { email: email('moved') } });
      expect((await anonymous()('POST', '/api/auth/verify-email', { body: { token: tokenOf(backend.mailbox.to(user.user.email)[1]!) } })).status).toBe(400);
    });

    it('with REQUIRE_EMAIL_VERIFICATION, keeps an unverified user out and sends a fresh link at sign-in', async () => {
      const strict = await startBackend(kind, { REQUIRE_EMAIL_VERIFICATION: 'true' });
      try {
        const address = email('strict');
        const signedUp = await apiClient(strict.url)('POST', '/api/auth/sign-up/email', { body: { email: address, name: 'Strict', password } });
        expect(signedUp.status).toBe(201);
        expect(signedUp.body.data.token).toBeNull();
        expect(signedUp.headers.get('set-cookie')).toBeNull();
        await strict.mailbox.next(address);

        const refused = await apiClient(strict.url)('POST', '/api/auth/sign-in/email', { body: { email: address, password } });
        expect(refused.status).toBe(403);
        expect(refused.body.error.code).toBe('EMAIL_NOT_VERIFIED');
        expect(refused.headers.get('set-cookie')).toBeNull();
        // A wrong password learns nothing of it.
        expect((await apiClient(strict.url)('POST', '/api/auth/sign-in/email', { body: { email: address, password: 'wrong password' } })).status).toBe(401);
        await expect.poll(() => strict.mailbox.to(address).length).toBe(2);

        const latest = strict.mailbox.to(address)[1]!;
        expect((await apiClient(strict.url)('GET', `/api/auth/verify-email?token=${tokenOf(latest)}`)).status).toBe(200);
        expect((await apiClient(strict.url)('POST', '/api/auth/sign-in/email', { body: { email: address, password } })).status).toBe(200);
      } finally {
        await strict.stop();
      }
    });
  });

  describe('forgot and reset password', () => {
    const forgot = (address: string) => anonymous()('POST', '/api/auth/forgot-password', { body: { email: address } });
    const reset = (token: string, secret = newPassword) => anonymous()('POST', '/api/auth/reset-password', { body: { token, newPassword: secret } });

    it('resets with the mailed link: the new password works, the old one and every session end', async () => {
      const user = await signUp(backend.url, email('forgot'));
      const second = await signIn(user.user.email);
      expect((await forgot(user.user.email)).status).toBe(200);
      const mail = await backend.mailbox.next(user.user.email, /Reset your password/);
      expect(mail.link!.pathname).toBe('/reset-password');

      // The new password must be acceptable; that does not use the link up.
      expect((await reset(tokenOf(mail), 'short')).status).toBe(422);
      const done = await reset(tokenOf(mail));
      expect(done.status).toBe(200);
      expect((await signIn(user.user.email)).status).toBe(401);
      expect((await signIn(user.user.email, newPassword)).status).toBe(200);
      for (const token of [user.token, second.body.data.token]) expect((await session(token)).status).toBe(401);
      // Used up, and the address counts as proven: the link came to it.
      expect((await reset(tokenOf(mail), 'yet another password')).body.error.code).toBe('INVALID_TOKEN');
      expect((await userByEmail(user.user.email)).email_verified).toBe(true);
      await backend.mailbox.next(user.user.email, /password was changed/);
    });

    it('answers the same for a known and an unknown address, in about the same time', async () => {
      const user = await signUp(backend.url, email('known'));
      const unknown = email('unknown');
      expect(outline(await forgot(user.user.email))).toEqual(outline(await forgot(unknown)));

      // A warm-up first; beyond the third live link no mail is written (tokens.ts), so a fresh
      // known address every few rounds keeps the known path doing its full work.
      await forgot(unknown);
      let knownAddress = user.user.email;
      const gap = await timingGapMs({ rounds: 15, attempts: 3, boundMs: 10 }, {
        prepare: async (round) => {
          knownAddress = round % 3 === 0 ? (await signUp(backend.url, email('known'))).user.email : user.user.email;
        },
        a: () => forgot(knownAddress),
        b: () => forgot(email('unknown')),
      });
      expect(gap.smallest, `lower quartiles of known - unknown (ms): ${gap.gaps.join(', ')}`).toBeLessThan(10);
    });

    it('does the same work on the answer for a known and an unknown address: one mail request in the outbox, decided after', async () => {
      const user = await signUp(backend.url, email('samework'));
      await backend.mailbox.next(user.user.email);
      const unknown = email('nosuch');
      const requests = async (address: string) =>
        (
          await backend.running.db.asOwner((tx) =>
            tx.query<{ payload: Record<string, string> }>(`SELECT "payload" FROM "authstrap_outbox" WHERE "channel" = 'account-mail' AND "payload"->>'email' = $1`, [address]),
          )
        ).rows.map((row) => row.payload);
      for (const [path, kind] of [['/api/auth/forgot-password', 'reset-password'], ['/api/auth/send-verification-email', 'verify-email']] as const) {
        for (const address of [user.user.email, unknown]) {
          expect((await anonymous()('POST', path, { body: { email: address } })).status).toBe(200);
        }
        // A known address that wrote its link while answering would have no request here.
        expect(await requests(user.user.email)).toContainEqual({ kind, email: user.user.email });
        expect(await requests(unknown)).toContainEqual({ kind, email: unknown });
      }
      // The worker then sends what the known address is owed, and the unknown one nothing.
      await backend.mailbox.next(user.user.email, /Reset your password/);
      await backend.mailbox.next(user.user.email, /Confirm your e-mail/);
      expect(backend.mailbox.to(unknown)).toEqual([]);
    });

    it('lets exactly one of 20 concurrent uses of one reset link succeed', async () => {
      const user = await signUp(backend.url, email('race'));
      await forgot(user.user.email);
      const token = tokenOf(await backend.mailbox.next(user.user.email, /Reset your password/));
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => reset(token, `racing password ${i}`)));
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
      expect(answers.filter((answer) => answer.status === 400)).toHaveLength(19);
      const winner = answers.findIndex((answer) => answer.status === 200);
      expect((await signIn(user.user.email, `racing password ${winner}`)).status).toBe(200);
    });

    it('refuses an expired link', async () => {
      const user = await signUp(backend.url, email('expired'));
      await forgot(user.user.email);
      const token = tokenOf(await backend.mailbox.next(user.user.email, /Reset your password/));
      const stored = (await service()('GET', '/verifications?limit=100&sort=createdAt&order=desc')).body.data.find((row: { identifier: string }) => row.identifier.startsWith('reset-password:'));
      await service()('PATCH', `/verifications/${stored.id}`, { body: { expiresAt: new Date(Date.now() - 1000).toISOString() } });
      expect((await reset(token)).body.error.code).toBe('INVALID_TOKEN');
      expect((await signIn(user.user.email)).status).toBe(200);
    });
  });

  describe('changing the password and the address', () => {
    it('changes the password with the current one, ending the other sessions but this one', async () => {
      const user = await signUp(backend.url, email('change'));
      const other = (await signIn(user.user.email)).body.data.token;
      const wrong = await user.api('POST', '/api/auth/change-password', { body: { currentPassword: 'not it at all', newPassword } });
      expect(wrong.status).toBe(400);
      expect(wrong.body.error.code).toBe('INVALID_PASSWORD');
      const changed = await user.api('POST', '/api/auth/change-password', { body: { currentPassword: password, newPassword } });
      expect(changed.status).toBe(200);
      expect((await session(user.token)).status).toBe(200);
      expect((await session(other)).status).toBe(401);
      expect((await signIn(user.user.email, newPassword)).status).toBe(200);
      await backend.mailbox.next(user.user.email, /password was changed/);
    });

    it('changes the address once the new one confirms it, and tells the old one', async () => {
      const user = await signUp(backend.url, email('oldaddr'));
      const target = email('newaddr');
      const asked = await user.api('POST', '/api/auth/change-email', { body: { newEmail: target } });
      expect(asked.status).toBe(200);
      await backend.mailbox.next(user.user.email, /about to change/);
      const confirm = await backend.mailbox.next(target, /Confirm your new/);
      // Nothing changed yet.
      expect((await session(user.token)).body.data.user.email).toBe(user.user.email);

      const confirmed = await anonymous()('POST', '/api/auth/change-email/confirm', { body: { token: tokenOf(confirm) } });
      expect(confirmed.status).toBe(200);
      expect(confirmed.body.data.user).toMatchObject({ email: target, email_verified: true });
      expect((await signIn(target)).status).toBe(200);
      expect((await signIn(user.user.email)).status).toBe(401);
    });

    it('answers the same when the new address has an account, and sends it nothing', async () => {
      const user = await signUp(backend.url, email('changer'));
      const taken = await signUp(backend.url, email('taken'));
      const free = email('freeaddr');
      const toTaken = await user.api('POST', '/api/auth/change-email', { body: { newEmail: taken.user.email } });
      const toFree = await user.api('POST', '/api/auth/change-email', { body: { newEmail: free } });
      expect(outline(toTaken)).toEqual(outline(toFree));
      await backend.mailbox.next(free);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(backend.mailbox.to(taken.user.email).filter((mail) => /Confirm your new/.test(mail.subject))).toEqual([]);
    });
  });

  describe("one's own sessions", () => {
    it('lists them with the current one marked, and signs one or all others out', async () => {
      const user = await signUp(backend.url, email('devices'));
      const phone = (await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: user.user.email, password }, headers: { 'user-agent': 'Phone/1.0' } })).body.data;
      const laptop = (await signIn(user.user.email)).body.data;

      const listed = await user.api('GET', '/api/auth/sessions');
      expect(listed.status).toBe(200);
      expect(listed.body.data).toHaveLength(3);
      expect(listed.body.data.filter((row: { current: boolean }) => row.current)).toHaveLength(1);
      expect(JSON.stringify(listed.body)).not.toContain(user.token);
      const phoneRow = listed.body.data.find((row: { userAgent: string }) => row.userAgent === 'Phone/1.0');
      expect(phoneRow).toMatchObject({ ipAddress: expect.any(String), current: false });

      // Someone else cannot end this user's session.
      const stranger = await signUp(backend.url, email('stranger'));
      expect((await stranger.api('DELETE', `/api/auth/sessions/${phoneRow.id}`)).status).toBe(404);
      expect((await user.api('DELETE', `/api/auth/sessions/${phoneRow.id}`)).status).toBe(204);
      expect((await session(phone.token)).status).toBe(401);
      expect((await session(laptop.token)).status).toBe(200);

      const others = await user.api('POST', '/api/auth/sessions/revoke-others');
      expect(others.body.data).toEqual({ revoked: 1 });
      expect((await session(laptop.token)).status).toBe(401);
      expect((await session(user.token)).status).toBe(200);
    });
  });

  describe('deleting an account', () => {
    it("takes the user's own organization along, and needs the password", async () => {
      const user = await signUp(backend.url, email('leaver'));
      expect((await user.api('POST', '/Projects', { body: { name: 'Mine' } })).status).toBe(201);
      expect((await user.api('POST', '/api/auth/delete-account', { body: { password: 'not the password' } })).status).toBe(400);
      const deleted = await user.api('POST', '/api/auth/delete-account', { body: { password } });
      expect(deleted.status).toBe(200);
      expect((await session(user.token)).status).toBe(401);
      expect(await userByEmail(user.user.email)).toBeUndefined();
      expect((await service()('GET', `/organizations/${user.organizationId}`)).status).toBe(404);
    });

    it('never leaves an organization without an owner, on every path that deletes a user', async () => {
      const owner = await signUp(backend.url, email('soleowner'));
      const member = await addMember(backend.url, owner, email('teammate'), 'member');
      const organizationName = (await owner.api('GET', `/organizations/${owner.organizationId}`)).body.data.name;

      const own = await owner.api('POST', '/api/auth/delete-account', { body: { password } });
      expect(own.status).toBe(409);
      expect(own.body.error.message).toContain(organizationName);
      expect(own.body.error.message).toContain(owner.organizationId);
      // The service key's DELETE /Users/:id (Better Auth's deleteUser) and delete-by-filter alike.
      expect((await service()('DELETE', `/Users/${owner.user.id}`)).status).toBe(409);
      expect((await service()('DELETE', `/Users?where=${encodeURIComponent(JSON.stringify([{ field: 'email', value: owner.user.email }]))}`)).status).toBe(409);
      expect((await session(owner.token)).status).toBe(200);

      // With a second owner, it works; the organization stays with them.
      const ownerRow = (await owner.api('GET', '/members?limit=100')).body.data.find((row: { userId: string }) => row.userId === member.user.id);
      expect((await owner.api('PATCH', `/members/${ownerRow.id}`, { body: { role: 'owner' } })).status).toBe(200);
      expect((await service()('DELETE', `/Users/${owner.user.id}`)).status).toBe(204);
      const left = await member.api('GET', '/members?limit=100');
      expect(left.body.data.map((row: { userId: string; role: string }) => [row.userId, row.role])).toEqual([[member.user.id, 'owner']]);
      // The deleted owner's personal organization went with them.
      expect((await service()('GET', `/organizations/${owner.organizationId}`)).status).toBe(200);
    });
  });

  describe('invitations', () => {
    /** `owner` invites `address`; the secret as mailed. */
    const invite = async (inviter: SignedUp, address: string, role = 'member', path = '/members') => {
      const before = backend.mailbox.to(address).length;
      const response = await inviter.api('POST', path, { body: { email: address, role } });
      expect(response.status, JSON.stringify(response.body)).toBe(202);
      return { response, token: await invitationTokenFor(backend.url, address, before) };
    };

    it('mails the invitation with an accept link, and the organization name as text, never a link', async () => {
      const owner = await signUp(backend.url, email('namer'));
      await owner.api('PATCH', `/organizations/${owner.organizationId}`, { body: { name: 'Urgent: verify your account at http://evil.example/login' } });
      const address = email('target');
      const { token } = await invite(owner, address, 'admin');
      const mail = backend.mailbox.to(address)[0]!;
      expect(mail.text).toMatch(/^Hello,/);
      expect(mail.link!.pathname).toBe('/accept-invitation');
      expect(mail.link!.searchParams.get('email')).toBe(address);
      expect(token).toHaveLength(43);
      for (const part of [mail.subject, mail.text, mail.html]) {
        expect(part).not.toContain('http://evil.example');
        expect(part).not.toMatch(/evil\.example/);
      }
      expect(mail.text).toContain('evil[.]example');
      expect(mail.html).not.toMatch(/<a [^>]*evil/);
    });

    it('stops working when its inviter is removed or demoted, and is removed', async () => {
      const owner = await signUp(backend.url, email('boss'));
      const admin = await addMember(backend.url, owner, email('admin'), 'admin');
      const first = await signUp(backend.url, email('first'));
      const second = await signUp(backend.url, email('second'));
      const fromAdmin = await invite(admin, first.user.email, 'admin');
      const alsoFromAdmin = await invite(admin, second.user.email, 'member');
      expect((await first.api('GET', '/api/auth/invitations', { organizationId: '' })).body.meta.total).toBe(1);

      // Demoted to member: their invitations no longer stand.
      const adminRow = (await owner.api('GET', '/members?limit=100')).body.data.find((row: { userId: string }) => row.userId === admin.user.id);
      expect((await owner.api('PATCH', `/members/${adminRow.id}`, { body: { role: 'member' } })).status).toBe(200);
      expect((await first.api('GET', '/api/auth/invitations', { organizationId: '' })).body.meta.total).toBe(0);
      expect((await first.api('POST', '/api/auth/invitations/accept', { body: { token: fromAdmin.token }, organizationId: '' })).status).toBe(404);
      // Removed: the same.
      expect((await owner.api('DELETE', `/members/${adminRow.id}`)).status).toBe(204);
      expect((await second.api('POST', '/api/auth/invitations/accept', { body: { token: alsoFromAdmin.token }, organizationId: '' })).status).toBe(404);
      const members = (await owner.api('GET', '/members?limit=100')).body.data.map((row: { userId: string }) => row.userId);
      expect(members).not.toContain(first.user.id);
      expect(members).not.toContain(second.user.id);
      // Both rows are gone.
      const rows = (await service()('GET', `/verifications?identifier[in]=invitation:${first.user.email},invitation:${second.user.email}`)).body.data;
      expect(rows).toEqual([]);
    });

    it('answers an invitation to a deleted organization with 404, and removes it', async () => {
      const owner = await signUp(backend.url, email('doomed'));
      const invitee = await signUp(backend.url, email('invitee'));
      const { token } = await invite(owner, invitee.user.email);
      expect((await owner.api('DELETE', `/organizations/${owner.organizationId}`)).status).toBe(204);
      const accepted = await invitee.api('POST', '/api/auth/invitations/accept', { body: { token }, organizationId: '' });
      expect(accepted.status).toBe(404);
      expect((await service()('GET', `/verifications?identifier=invitation:${invitee.user.email}`)).body.data).toEqual([]);
    });

    it('pages the invitee\'s list', async () => {
      const invitee = await signUp(backend.url, email('popular'));
      for (let i = 0; i < 5; i++) await invite(await signUp(backend.url, email(`org${i}`)), invitee.user.email);
      const page = await invitee.api('GET', '/api/auth/invitations?limit=2&page=3', { organizationId: '' });
      expect(page.status).toBe(200);
      expect(page.body.meta).toEqual({ page: 3, limit: 2, total: 5, totalPages: 3 });
      expect(page.body.data).toHaveLength(1);
      expect((await invitee.api('GET', '/api/auth/invitations?limit=1000', { organizationId: '' })).status).toBe(400);
      expect((await invitee.api('GET', '/api/auth/invitations?page=9', { organizationId: '' })).body.meta.total).toBe(5);
    });

    it('keeps one invitation per address and organization, even for 20 at once', async () => {
      const owner = await signUp(backend.url, email('eager'));
      const invitee = await signUp(backend.url, email('wanted'));
      const answers = await Promise.all(Array.from({ length: 20 }, () => owner.api('POST', '/members', { body: { email: invitee.user.email } })));
      expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(202));
      const rows = (await service()('GET', `/verifications?identifier=invitation:${invitee.user.email}`)).body.data;
      expect(rows).toHaveLength(1);
      // Only the newest secret works.
      await expect.poll(() => backend.mailbox.to(invitee.user.email).filter((mail) => /invited/.test(mail.subject)).length, { timeout: 10_000 }).toBe(20);
      const tokens = backend.mailbox.to(invitee.user.email).filter((mail) => /invited/.test(mail.subject)).map(tokenOf);
      const accepted = await Promise.all(tokens.map((token) => invitee.api('POST', '/api/auth/invitations/accept', { body: { token }, organizationId: '' })));
      expect(accepted.filter((answer) => answer.status === 200)).toHaveLength(1);
    });

    it('limits pending invitations per organization and invitations per inviter and hour', async () => {
      const limited = await startBackend(kind, { INVITATIONS_PENDING_MAX: '3', INVITATIONS_PER_HOUR: '4' });
      try {
        const owner = await signUp(limited.url, email('limited'));
        const send = (address: string) => owner.api('POST', '/members', { body: { email: address } });
        const addresses = [email('cap0'), email('cap1'), email('cap2')];
        for (const address of addresses) expect((await send(address)).status).toBe(202);
        const full = await send(email('capfull'));
        expect(full.status).toBe(409);
        expect(full.body.error.message).toContain('INVITATIONS_PENDING_MAX');
        // Inviting an address again replaces its invitation (no new pending one), but counts as sent.
        expect((await send(addresses[0]!)).status).toBe(202);
        const hourly = await send(addresses[1]!);
        expect(hourly.status).toBe(429);
        expect(hourly.body.error.message).toContain('INVITATIONS_PER_HOUR');
      } finally {
        await limited.stop();
      }
    });
  });

  it('greets the invitee by the name POST /Users gave', async () => {
    const owner = await signUp(backend.url, email('greeter'));
    const address = email('greeted');
    expect((await owner.api('POST', '/Users', { body: { email: address, name: 'Grace Hopper' } })).status).toBe(202);
    expect((await backend.mailbox.next(address, /invited/)).text).toMatch(/^Hello Grace Hopper,/);
  });

  describe("a trusted server's mail", () => {
    it("sends Better Auth's links in the backend's wording through its outbox, for the service key only", async () => {
      const link = 'http://localhost:3001/api/auth/verify-email?token=from-better-auth&callbackURL=%2F';
      const to = email('betterauth');
      const sent = await service()('POST', '/api/auth/send-mail', { body: { kind: 'verify-email', to, name: 'Ba User', link } });
      expect(sent.status).toBe(202);
      const mail = await backend.mailbox.next(to);
      expect(mail.subject).toBe('Confirm your e-mail address');
      expect(mail.link!.href).toBe(link);
      expect(mail.text).toContain('Hello Ba User,');

      const user = await signUp(backend.url, email('notserver'));
      expect((await user.api('POST', '/api/auth/send-mail', { body: { kind: 'reset-password', to, link } })).status).toBe(403);
      expect((await anonymous()('POST', '/api/auth/send-mail', { body: { kind: 'reset-password', to, link } })).status).toBe(403);
      expect((await service()('POST', '/api/auth/send-mail', { body: { kind: 'reset-password', to, link: 'javascript:alert(1)' } })).status).toBe(422);
    });
  });

  describe('never an oracle of who has an account', () => {
    it('answers POST /Users and POST /members alike for known and unknown addresses (forgot-password: above)', async () => {
      const owner = await signUp(backend.url, email('asker'));
      const known = await signUp(backend.url, email('exists'));
      for (const path of ['/Users', '/members']) {
        const forKnown = await owner.api('POST', path, { body: { email: known.user.email } });
        const forUnknown = await owner.api('POST', path, { body: { email: email('ghost') } });
        expect(forKnown.status, path).toBe(202);
        expect(outline(forKnown), path).toEqual(outline(forUnknown));

        // And in about the same time (test/support/timing.ts); each pair from a fresh organization,
        // below its limits, so that what the first request after a sign-up pays is no difference.
        let inviter = owner;
        const invite = async (address: string) => expect((await inviter.api('POST', path, { body: { email: address } })).status).toBe(202);
        const gap = await timingGapMs({ rounds: 10, attempts: 3, boundMs: 10 }, {
          prepare: async () => {
            inviter = await signUp(backend.url, email('timer'));
          },
          a: () => invite(known.user.email),
          b: () => invite(email('ghost')),
        });
        expect(gap.smallest, `${path}: lower quartiles of known - unknown (ms): ${gap.gaps.join(', ')}`).toBeLessThan(10);
      }
    });
  });
});
