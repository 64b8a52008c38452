import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, createThrowawayDatabase, databaseKinds, invitationTokenFor, postgresAdminUrl, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { lostAnswerProxy, type LostAnswerProxy } from './support/lost-answer-proxy.js';

/** An answer as it came, byte for byte: status, headers and the body's text. */
interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** Sends one request with the key (when given) and keeps the answer's bytes. */
async function send(baseUrl: string, method: string, path: string, options: { body?: unknown; key?: string; token?: string; organizationId?: string } = {}): Promise<RawAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.key) headers['idempotency-key'] = options.key;
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.organizationId) headers['x-organization-id'] = options.organizationId;
  const response = await fetch(new URL(path, baseUrl), { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: text ? JSON.parse(text) : undefined };
}

/** The repeat is the first answer again, byte for byte, its cookies included, and says so. */
function expectReplayOf(again: RawAnswer, first: RawAnswer) {
  expect(again.status).toBe(first.status);
  expect(again.text).toBe(first.text);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.headers.getSetCookie()).toEqual(first.headers.getSetCookie());
}

/**
 * Idempotency-Key on the built-in routes whose handlers call the database through services
 * (src/idempotency/held-transaction.ts): sign-up, sign-in, invitations, machine keys under
 * /api/auth; /Organizations and /members. Sent again with its key, a write is applied once and
 * answered as the first time; keys of two callers never meet.
 */
describe.each(databaseKinds)('Idempotency-Key on the built-in routes, on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  let bob: SignedUp;
  const service = () => apiClient(backend.url, { token: serviceApiKey });
  /** How many users have this address (asked as the trusted server). */
  const usersWith = async (email: string) => (await service()('GET', `/Users?email=${encodeURIComponent(email)}`)).body.meta.total as number;

  beforeAll(async () => {
    backend = await startBackend(kind);
    alice = await signUp(backend.url, 'alice@example.com');
    bob = await signUp(backend.url, 'bob@example.com');
  });
  afterAll(() => backend?.stop());

  it('makes one account of a sign-up sent again with its key, and answers the repeat as the first time, session cookie included', async () => {
    const key = randomUUID();
    const body = { email: 'once@example.com', name: 'Once', password: 'correct horse battery' };
    const first = await send(backend.url, 'POST', '/api/auth/sign-up/email', { body, key });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(first.headers.getSetCookie().some((cookie) => cookie.startsWith('session='))).toBe(true);
    const again = await send(backend.url, 'POST', '/api/auth/sign-up/email', { body, key });
    expectReplayOf(again, first);
    expect(await usersWith('once@example.com')).toBe(1);
    // The replayed session is the one that was made: it works.
    expect((await send(backend.url, 'GET', '/api/auth/get-session', { token: again.json.data.token })).status).toBe(200);
  });

  it('refuses the key with another sign-up (422), and frees a key whose first try failed', async () => {
    const key = randomUUID();
    // A first try refused (the address has an account): nothing is kept with the key.
    const taken = await send(backend.url, 'POST', '/api/auth/sign-up/email', { body: { email: 'alice@example.com', name: 'Alice', password: 'correct horse battery' }, key });
    expect(taken.status).toBe(409);
    const body = { email: 'freed@example.com', name: 'Freed', password: 'correct horse battery' };
    const made = await send(backend.url, 'POST', '/api/auth/sign-up/email', { body, key });
    expect(made.status).toBe(201);
    expect(made.headers.get('idempotent-replayed')).toBeNull();
    const other = await send(backend.url, 'POST', '/api/auth/sign-up/email', { body: { ...body, email: 'other@example.com' }, key });
    expect(other.status).toBe(422);
    expect(other.json.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await usersWith('other@example.com')).toBe(0);
  });

  it('gives a sign-in sent again with its key the same session and cookie, and makes one session', async () => {
    const key = randomUUID();
    const body = { email: 'alice@example.com', password: 'correct horse battery' };
    const sessions = async () => (await alice.api('GET', '/api/auth/sessions')).body.data.length as number;
    const before = await sessions();
    const first = await send(backend.url, 'POST', '/api/auth/sign-in/email', { body, key });
    expect(first.status).toBe(200);
    const again = await send(backend.url, 'POST', '/api/auth/sign-in/email', { body, key });
    expectReplayOf(again, first);
    expect(again.json.data.token).toBe(first.json.data.token);
    expect(await sessions()).toBe(before + 1);
  });

  it("keeps a failed sign-in's record when it came with a key, and frees the key", async () => {
    const key = randomUUID();
    const failed = await send(backend.url, 'POST', '/api/auth/sign-in/email', { body: { email: 'bob@example.com', password: 'wrong password' }, key });
    expect(failed.status).toBe(401);
    const events = (await bob.api('GET', '/api/auth/security-events')).body.data as { type: string }[];
    expect(events.filter((event) => event.type === 'session.sign_in_failed')).toHaveLength(1);
    const signedIn = await send(backend.url, 'POST', '/api/auth/sign-in/email', { body: { email: 'bob@example.com', password: 'correct horse battery' }, key });
    expect(signedIn.status).toBe(200);
  });

  it('makes one organization of a create sent again with its key; another user or an anonymous caller with the same key meets none of it', async () => {
    const key = randomUUID();
    const name = `Keyed ${key}`;
    const slug = `keyed-${key.slice(0, 8)}`;
    const first = await send(backend.url, 'POST', '/Organizations', { body: { name, slug }, key, token: alice.token });
    expect(first.status).toBe(201);
    const again = await send(backend.url, 'POST', '/Organizations', { body: { name, slug }, key, token: alice.token });
    expectReplayOf(again, first);
    const named = async (who: SignedUp) => ((await who.api('GET', '/Organizations')).body.data as { name: string }[]).filter((organization) => organization.name === name).length;
    expect(await named(alice)).toBe(1);
    // Bob's key is his own: the same request is his own write (the slug is taken: 409), not Alice's answer.
    const bobs = await send(backend.url, 'POST', '/Organizations', { body: { name, slug }, key, token: bob.token });
    expect(bobs.headers.get('idempotent-replayed')).toBeNull();
    expect(bobs.status).toBe(409);
    // An anonymous caller's key is no user's either.
    const anonymous = await send(backend.url, 'POST', '/api/auth/sign-up/email', { body: { email: `anon-${key.slice(0, 8)}@example.com`, name: 'Anon', password: 'correct horse battery' }, key });
    expect(anonymous.status).toBe(201);
    expect(anonymous.headers.get('idempotent-replayed')).toBeNull();
  });

  it('mails one invitation for an invite sent again with its key, and the accepted invitation makes one membership', async () => {
    const key = randomUUID();
    const email = `invited-${key.slice(0, 8)}@example.com`;
    const invitee = await signUp(backend.url, email);
    const before = backend.mailbox.to(email).length;
    const body = { email, role: 'member' };
    const first = await send(backend.url, 'POST', '/members', { body, key, token: alice.token, organizationId: alice.organizationId });
    expect(first.status).toBe(202);
    const again = await send(backend.url, 'POST', '/members', { body, key, token: alice.token, organizationId: alice.organizationId });
    expectReplayOf(again, first);
    const token = await invitationTokenFor(backend.url, email, before);
    // The mail of the first is out; give a second one the time to follow, were there one.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(backend.mailbox.to(email).slice(before).filter((mail) => /invited to join/.test(mail.subject))).toHaveLength(1);
    const pending = (await alice.api('GET', '/api/auth/organization/invitations')).body.data as { email: string }[];
    expect(pending.filter((invitation) => invitation.email === email)).toHaveLength(1);
    // Bob, in his own organization, with the same key: his own invite, not Alice's answer.
    const bobs = await send(backend.url, 'POST', '/members', { body, key, token: bob.token, organizationId: bob.organizationId });
    expect(bobs.status).toBe(202);
    expect(bobs.headers.get('idempotent-replayed')).toBeNull();

    const acceptKey = randomUUID();
    const accepted = await send(backend.url, 'POST', '/api/auth/invitations/accept', { body: { token }, key: acceptKey, token: invitee.token });
    expect(accepted.status).toBe(200);
    expectReplayOf(await send(backend.url, 'POST', '/api/auth/invitations/accept', { body: { token }, key: acceptKey, token: invitee.token }), accepted);
    const members = (await alice.api('GET', '/members?limit=100')).body.data as { userId: string }[];
    expect(members.filter((member) => member.userId === invitee.user.id)).toHaveLength(1);
    // Recorded as without a key (a signed-in invitee's acceptance and membership are both theirs).
    // frontend-console.test.ts meets the case where a statement's event context carried into the
    // next one changed an actor (a membership of authstrap's recorded as a user's).
    const recorded = (await alice.api('GET', '/audit-events?limit=100')).body.data as { type: string; actorType: string }[];
    const actors = (type: string) => recorded.filter((event) => event.type === type && JSON.stringify(event).includes(invitee.user.id)).map((event) => event.actorType);
    expect(actors('invitation.accepted')).toEqual(['user']);
    expect(actors('member.created')).toEqual(['user']);
  });

  it('gives a machine key made again with its key the same secret, and makes one key', async () => {
    const key = randomUUID();
    const body = { name: `ci ${key}`, permissions: { Project: ['list'] } };
    const first = await send(backend.url, 'POST', '/api/auth/api-keys', { body, key, token: alice.token, organizationId: alice.organizationId });
    expect(first.status).toBe(201);
    const again = await send(backend.url, 'POST', '/api/auth/api-keys', { body, key, token: alice.token, organizationId: alice.organizationId });
    expectReplayOf(again, first);
    expect(again.json.data.key).toBe(first.json.data.key);
    const listed = (await alice.api('GET', '/api/auth/api-keys')).body.data as { name: string }[];
    expect(listed.filter((made) => made.name === body.name)).toHaveLength(1);
  });

  /** The id of the session behind `token`. */
  const sessionIdOf = async (token: string) => (await send(backend.url, 'GET', '/api/auth/get-session', { token })).json.data.session.id as string;

  it("replays a role change, a member's removal, a session's sign-out, a user's change and an organization's deletion: a DELETE sent again is a 204, not a 404", async () => {
    const member = await addMember(backend.url, alice, `member-${randomUUID().slice(0, 8)}@example.com`, 'member');
    const membership = ((await alice.api('GET', '/members?limit=100')).body.data as { id: string; userId: string }[]).find((row) => row.userId === member.user.id)!;
    const asAlice = { token: alice.token, organizationId: alice.organizationId };
    /** Sends `method path` twice with one key: the second is the first again. */
    const twice = async (method: string, path: string, options: { body?: unknown; token: string; organizationId?: string }, status: number) => {
      const key = randomUUID();
      const first = await send(backend.url, method, path, { ...options, key });
      expect(first.status).toBe(status);
      expectReplayOf(await send(backend.url, method, path, { ...options, key }), first);
    };
    await twice('PATCH', `/members/${membership.id}`, { body: { role: 'admin' }, ...asAlice }, 200);
    await twice('DELETE', `/members/${membership.id}`, asAlice, 204);
    expect(((await alice.api('GET', '/members?limit=100')).body.data as { userId: string }[]).some((row) => row.userId === member.user.id)).toBe(false);

    const other = await send(backend.url, 'POST', '/api/auth/sign-in/email', { body: { email: member.user.email, password: 'correct horse battery' } });
    await twice('DELETE', `/sessions/${await sessionIdOf(other.json.data.token)}`, { token: member.token }, 204);
    expect((await send(backend.url, 'GET', '/api/auth/get-session', { token: other.json.data.token })).status).toBe(401);
    await twice('PATCH', `/Users/${member.user.id}`, { body: { name: 'Renamed once' }, token: member.token }, 200);

    const made = await send(backend.url, 'POST', '/Organizations', { body: { name: 'Short lived', slug: `short-${randomUUID().slice(0, 8)}` }, token: alice.token });
    await twice('DELETE', `/Organizations/${made.json.data.id}`, { token: alice.token }, 204);
  });
});

/**
 * On PostgreSQL, read from the database itself: what a keyed write keeps is sealed, and its
 * fingerprint is no bare hash of a body that holds a password. And the answer to a keyed sign-up
 * is lost after PostgreSQL committed it (a loopback proxy holds the COMMIT's answer back, then
 * resets the connection): the client gets a 503, sends the sign-up again with its key, and gets
 * the first answer; there is one account.
 */
describe.runIf(postgresAdminUrl)('Keyed writes of the built-in routes, read in PostgreSQL', () => {
  let backend: TestBackend;
  let proxy: LostAnswerProxy;
  let database: Awaited<ReturnType<typeof createThrowawayDatabase>>;

  beforeAll(async () => {
    database = await createThrowawayDatabase();
    proxy = await lostAnswerProxy(database.url);
    // The outbox's worker does not poll: only a wake-up sends mail now.
    backend = await startBackend('embedded', { DATABASE_URL: proxy.url, OUTBOX_POLL_MS: '600000' });
  });
  afterAll(async () => {
    await backend?.stop();
    await proxy?.close();
    await database?.drop();
  });

  it("keeps a new machine key's answer sealed, and a sign-in's fingerprint keyed under AUTH_SECRET", async () => {
    const alice = await signUp(backend.url, 'sealed@example.com');
    const made = await send(backend.url, 'POST', '/api/auth/api-keys', { body: { name: 'sealed', permissions: { Project: ['list'] } }, key: randomUUID(), token: alice.token, organizationId: alice.organizationId });
    expect(made.status).toBe(201);
    const body = { email: 'sealed@example.com', password: 'correct horse battery' };
    const signInKey = randomUUID();
    expect((await send(backend.url, 'POST', '/api/auth/sign-in/email', { body, key: signInKey })).status).toBe(200);
    const owner = new pg.Client({ connectionString: database.url });
    await owner.connect();
    try {
      const { rows } = await owner.query<{ key: string; caller: string; fingerprint: string; body: string }>('SELECT "key", "caller", "fingerprint", "body" FROM "authstrap_idempotency_key"');
      expect(rows.length).toBe(2);
      for (const row of rows) {
        expect(row.body).not.toContain(made.json.data.key);
        expect(row.body).not.toContain('"success"');
      }
      const signIn = rows.find((row) => row.key === signInKey)!;
      expect(signIn.caller).toBe('anonymous');
      const bareHash = createHash('sha256').update('POST /api/auth/sign-in/email\n').update(JSON.stringify(body)).digest('base64url');
      expect(signIn.fingerprint).not.toBe(bareHash);
    } finally {
      await owner.end();
    }
  });

  it("wakes the outbox's worker once the keyed write is committed: an invitation's mail leaves at once", async () => {
    const inviter = await signUp(backend.url, 'inviter@example.com');
    const email = 'woken@example.com';
    const before = backend.mailbox.to(email).length;
    const invited = await send(backend.url, 'POST', '/members', { body: { email, role: 'member' }, key: randomUUID(), token: inviter.token, organizationId: inviter.organizationId });
    expect(invited.status).toBe(202);
    // Woken before the commit, the worker would find nothing, and look again only at its next poll.
    await invitationTokenFor(backend.url, email, before);
  });

  it('is applied once when sent again with its key', async () => {
    const key = randomUUID();
    const body = { email: 'lost@example.com', name: 'Lost', password: 'correct horse battery' };
    const held = proxy.holdNextKeptAnswer();
    const answer = send(backend.url, 'POST', '/api/auth/sign-up/email', { body, key });
    await held;
    proxy.cut();
    const lost = await answer;
    expect(lost.status).toBe(503);
    const again = await send(backend.url, 'POST', '/api/auth/sign-up/email', { body, key });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json.data.user.email).toBe('lost@example.com');
    const users = await apiClient(backend.url, { token: serviceApiKey })('GET', `/Users?email=${encodeURIComponent(body.email)}`);
    expect(users.body.meta.total).toBe(1);
  });
});
