import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthstrapError, createAuthstrapClient, type AuthstrapClient, type Project } from '../client/authstrap-client.js';
import { allowedOrigin, apiClient, pooledDatabaseKinds, startBackend, type TestBackend } from './support/backend.js';
import { tokenOf } from './support/mailbox.js';

// The typed client that `authstrap generate` writes to client/authstrap-client.ts, against the
// example backend listening on a loopback port: in token mode, as server code uses it, and with
// a cookie jar standing in for a browser.

const password = 'correct horse battery';

/** The AuthstrapError a call fails with; fails the test when it succeeds or throws anything else. */
async function failure(call: Promise<unknown>): Promise<AuthstrapError> {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AuthstrapError);
  return error as AuthstrapError;
}

/**
 * A fetch that keeps cookies as a browser does for a page at `origin`: it stores what Set-Cookie
 * gives, sends it back unless credentials are 'omit', and sends the page's Origin.
 */
function browserFetch(jar: Map<string, string>, origin: string): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('origin', origin);
    if (init?.credentials !== 'omit' && jar.size > 0) headers.set('cookie', [...jar].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(input, { ...init, headers });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim());
      const [name = '', value = ''] = pair.split('=');
      const expired = attributes.some((attribute) => /^expires=/i.test(attribute) && Date.parse(attribute.slice(8)) < Date.now());
      if (value === '' || expired) jar.delete(name);
      else jar.set(name, value);
    }
    return response;
  };
}

describe.each(pooledDatabaseKinds)('the generated typed client on the %s database', (kind) => {
  let backend: TestBackend;
  /** Ada, signed in with her token, acting in her personal organization. */
  let ada: AuthstrapClient;
  let adaOrganization: string;

  beforeAll(async () => {
    backend = await startBackend(kind);
    ada = createAuthstrapClient({ baseUrl: backend.url });
    await ada.auth.signUp({ email: 'ada@example.com', password, name: 'Ada' });
    const session = await ada.auth.getSession();
    adaOrganization = session!.organizations[0]!.id;
    ada.setOrganization(adaOrganization);
  });
  afterAll(() => backend?.stop());

  it('runs the account flows with the secrets from the mail: reset, invitation as a new user, sessions, deletion', async () => {
    const client = createAuthstrapClient({ baseUrl: backend.url });
    await client.auth.signUp({ email: 'flows@example.com', password, name: 'Flows' });
    expect((await client.auth.verifyEmail(tokenOf(await backend.mailbox.next('flows@example.com', /Confirm/)))).user.email_verified).toBe(true);

    const anonymous = createAuthstrapClient({ baseUrl: backend.url });
    expect(await anonymous.auth.forgotPassword('flows@example.com')).toEqual(await anonymous.auth.forgotPassword('nobody@example.com'));
    await anonymous.auth.resetPassword(tokenOf(await backend.mailbox.next('flows@example.com', /Reset/)), 'a brand new password');
    expect(await client.auth.getSession()).toBeNull();
    await client.auth.signIn({ email: 'flows@example.com', password: 'a brand new password' });

    // An invitation to an address without an account, accepted from the mail as a new user.
    client.setOrganization((await client.auth.getSession())!.organizations[0]!.id);
    const sent = await client.User.create({ email: 'joiner@example.com', role: 'admin' });
    expect(sent).not.toHaveProperty('token');
    const joiner = createAuthstrapClient({ baseUrl: backend.url });
    const joined = await joiner.auth.acceptInvitationAsNewUser({ token: tokenOf(await backend.mailbox.next('joiner@example.com', /invited/)), email: 'joiner@example.com', name: 'Joiner', password });
    expect(joined).toMatchObject({ role: 'admin', user: { email_verified: true } });
    expect((await joiner.auth.getSession())!.user.email).toBe('joiner@example.com');
    expect((await joiner.auth.invitations()).meta.total).toBe(0);

    const sessions = await joiner.auth.sessions();
    expect(sessions.map((session) => session.current)).toEqual([true]);
    expect((await failure(joiner.auth.changePassword('not my password', 'another new password'))).code).toBe('INVALID_PASSWORD');
    expect(await joiner.auth.deleteAccount(password)).toEqual({ deleted: true });
    expect(await joiner.auth.getSession()).toBeNull();
  });

  it('signs up, out and back in, keeping the token for the calls that follow', async () => {
    const client = createAuthstrapClient({ baseUrl: `${backend.url}/` });
    const signedUp = await client.auth.signUp({ email: 'grace@example.com', password, name: 'Grace' });
    expect(signedUp.user).toMatchObject({ email: 'grace@example.com', name: 'Grace', email_verified: false });
    expect(signedUp.token).toMatch(/^[\w-]{43}$/);
    const session = await client.auth.getSession();
    expect(session?.user.id).toBe(signedUp.user.id);
    expect(session?.organizations).toEqual([expect.objectContaining({ role: 'owner' })]);

    await client.auth.signOut();
    expect(await client.auth.getSession()).toBeNull();
    const signedOut = await failure(client.Organization.list());
    expect(signedOut).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    // The session ended at the backend too, not only in this client.
    const oldToken = createAuthstrapClient({ baseUrl: backend.url, token: signedUp.token! });
    expect(await oldToken.auth.getSession()).toBeNull();

    const wrong = await failure(client.auth.signIn({ email: 'grace@example.com', password: 'not the password' }));
    expect(wrong).toMatchObject({ status: 401, code: 'UNAUTHORIZED', message: 'Invalid email or password' });
    const signedIn = await client.auth.signIn({ email: 'grace@example.com', password });
    expect(signedIn.token).not.toBe(signedUp.token);
    expect((await client.auth.getSession())?.user.email).toBe('grace@example.com');
  });

  it('creates, reads, updates, replaces and deletes records, unwrapped from the envelope', async () => {
    const created = await ada.Project.create({ name: 'Apollo', description: 'to the moon', status: 'archived' });
    expect(created).toMatchObject({ name: 'Apollo', description: 'to the moon', status: 'archived', organizationId: adaOrganization });
    expect(Date.parse(created.createdAt)).not.toBeNaN();
    expect(await ada.Project.get(created.id)).toEqual(created);

    const updated = await ada.Project.update(created.id, { name: 'Apollo 11' });
    expect(updated).toMatchObject({ name: 'Apollo 11', description: 'to the moon', status: 'archived' });
    // A replace is the whole record: what it leaves out goes back to its default.
    const replaced = await ada.Project.replace(created.id, { name: 'Apollo 12' });
    expect(replaced).toMatchObject({ name: 'Apollo 12', description: null, status: 'active' });

    await expect(ada.Project.delete(created.id)).resolves.toBeUndefined();
    const gone = await failure(ada.Project.get(created.id));
    expect(gone).toMatchObject({ status: 404, code: 'NOT_FOUND', message: `Project with id '${created.id}' not found` });
    expect((await failure(ada.Project.delete(created.id))).status).toBe(404);
  });

  it('lists with meta, sort, order, search, filters and pages, including an empty page and one past the end', async () => {
    const client = createAuthstrapClient({ baseUrl: backend.url });
    await client.auth.signUp({ email: 'lists@example.com', password, name: 'Lister' });
    client.setOrganization((await client.auth.getSession())!.organizations[0]!.id);
    for (const [name, status] of [['Gemini', 'active'], ['Mercury', 'archived'], ['Artemis', 'active'], ['Voyager', 'archived'], ['Skylab', 'active']] as const) {
      await client.Project.create({ name, status });
    }
    const names = (projects: Project[]) => projects.map((project) => project.name);

    const all = await client.Project.list();
    expect(all.meta).toEqual({ page: 1, limit: 20, total: 5, totalPages: 1 });
    expect(names(all.data)).toEqual(['Skylab', 'Voyager', 'Artemis', 'Mercury', 'Gemini']);

    const sorted = await client.Project.list({ sort: 'name', order: 'asc' });
    expect(names(sorted.data)).toEqual(['Artemis', 'Gemini', 'Mercury', 'Skylab', 'Voyager']);

    const archived = await client.Project.list({ filter: { status: 'archived' }, sort: 'name', order: 'asc' });
    expect(names(archived.data)).toEqual(['Mercury', 'Voyager']);
    expect(archived.meta.total).toBe(2);
    const notArchived = await client.Project.list({ filter: { status: { ne: 'archived' }, name: { in: ['Gemini', 'Skylab', 'Mercury'] } }, sort: 'name', order: 'asc' });
    expect(names(notArchived.data)).toEqual(['Gemini', 'Skylab']);
    expect(names((await client.Project.list({ filter: { description: null } })).data)).toHaveLength(5);
    expect(names((await client.Project.list({ search: 'SKY' })).data)).toEqual(['Skylab']);
    const createdAt = all.data.find((project) => project.name === 'Artemis')!.createdAt;
    const newer = await client.Project.list({ filter: { createdAt: { gt: new Date(createdAt) } }, sort: 'name', order: 'asc' });
    expect(names(newer.data)).toEqual(['Skylab', 'Voyager']);

    const second = await client.Project.list({ sort: 'name', order: 'asc', limit: 2, page: 2 });
    expect(names(second.data)).toEqual(['Mercury', 'Skylab']);
    expect(second.meta).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3 });
    const last = await client.Project.list({ sort: 'name', order: 'asc', limit: 2, page: 3 });
    expect(names(last.data)).toEqual(['Voyager']);
    const pastTheEnd = await client.Project.list({ limit: 2, page: 4 });
    expect(pastTheEnd).toEqual({ data: [], meta: { page: 4, limit: 2, total: 5, totalPages: 3 } });
    const empty = await client.Project.list({ filter: { name: 'Nothing like it' } });
    expect(empty).toEqual({ data: [], meta: { page: 1, limit: 20, total: 0, totalPages: 0 } });
  });

  it('creates and lists the Tasks of one Project through the nested routes', async () => {
    const project = await ada.Project.create({ name: 'Nested' });
    const other = await ada.Project.create({ name: 'Other' });
    const tasks = ada.Project.tasks(project.id);
    const due = new Date('2030-01-31T12:00:00.000Z');
    const first = await tasks.create({ title: 'Design', points: 3, dueAt: due });
    await tasks.create({ title: 'Build', points: 8 });
    await ada.Project.tasks(other.id).create({ title: 'Elsewhere', points: 5 });
    expect(first).toMatchObject({ projectId: project.id, title: 'Design', status: 'todo', points: 3, dueAt: due.toISOString() });

    const listed = await tasks.list({ sort: 'title', order: 'asc' });
    expect(listed.data.map((task) => task.title)).toEqual(['Build', 'Design']);
    expect(listed.meta.total).toBe(2);
    // The same records through /Tasks, with range and null filters.
    const big = await ada.Task.list({ filter: { points: { gte: 5 } }, sort: 'points', order: 'asc' });
    expect(big.data.map((task) => task.title)).toEqual(['Elsewhere', 'Build']);
    expect((await ada.Task.list({ filter: { dueAt: null, projectId: project.id } })).data.map((task) => task.title)).toEqual(['Build']);
    expect((await ada.Task.list({ filter: { dueAt: { lte: due } } })).data.map((task) => task.title)).toEqual(['Design']);

    await ada.Task.update(first.id, { status: 'done' });
    expect((await tasks.list({ filter: { status: 'done' } })).data.map((task) => task.id)).toEqual([first.id]);
    const missingParent = await failure(ada.Project.tasks('00000000-0000-4000-8000-000000000000').list());
    expect(missingParent).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('throws the backend\'s validation errors typed, with code and details', async () => {
    const invalid = await failure(ada.Project.create({ name: 'x', status: 'lost' as 'active' }));
    expect(invalid).toMatchObject({ name: 'AuthstrapError', status: 422, code: 'VALIDATION_ERROR' });
    expect(invalid.details).toEqual({ name: expect.any(String), status: expect.any(String) });
    expect(invalid.message).toBeTruthy();

    const badQuery = await failure(ada.Project.list({ sort: 'secret' as 'name' }));
    expect(badQuery).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
    expect(badQuery.details).toHaveProperty('sort');
  });

  it('switches organization with setOrganization', async () => {
    const second = await ada.Organization.create({ name: 'Ada Labs', slug: `ada-labs-${kind}` });
    const organizations = (await ada.auth.getSession())!.organizations;
    expect(organizations).toContainEqual({ id: second.id, name: 'Ada Labs', slug: second.slug, role: 'owner' });
    expect((await ada.Organization.list({ sort: 'name', order: 'asc' })).meta.total).toBe(2);

    const inFirst = (await ada.Project.list()).meta.total;
    expect(inFirst).toBeGreaterThan(0);
    ada.setOrganization(second.id);
    try {
      expect(await ada.Project.list()).toEqual({ data: [], meta: { page: 1, limit: 20, total: 0, totalPages: 0 } });
      const labProject = await ada.Project.create({ name: 'Lab work' });
      expect(labProject.organizationId).toBe(second.id);
      expect((await ada.member.list()).data).toEqual([expect.objectContaining({ organizationId: second.id, role: 'owner' })]);
    } finally {
      ada.setOrganization(adaOrganization);
    }
    expect((await ada.Project.list()).meta.total).toBe(inFirst);

    // Without an organization of the client's own, calls act in the session's active organization,
    // which setActiveOrganization switches; with none at all, they are refused before any record.
    ada.setOrganization(undefined);
    try {
      expect((await ada.Project.list()).meta.total).toBe(inFirst);
      expect((await ada.auth.setActiveOrganization(second.id)).organization).toMatchObject({ id: second.id, role: 'owner' });
      expect((await ada.Project.list()).data.map((project) => project.name)).toEqual(['Lab work']);
      await ada.auth.setActiveOrganization(null);
      expect(await failure(ada.Project.list())).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
      expect(await failure(ada.auth.setActiveOrganization('00000000-0000-4000-8000-000000000001'))).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    } finally {
      await ada.auth.setActiveOrganization(adaOrganization);
      ada.setOrganization(adaOrganization);
    }
  });

  it('makes, lists and revokes a machine key, and a client with `apiKey` acts with it', async () => {
    const made = await ada.auth.apiKeys.create({ name: `cron ${kind}`, permissions: { Project: ['list', 'create'] }, rateLimitMax: 50 });
    expect(made.key).toMatch(/^ask_/);
    expect((await ada.auth.apiKeys.list()).find((key) => key.id === made.id)).toMatchObject({ name: `cron ${kind}`, role: 'member', rateLimitMax: 50 });
    expect(JSON.stringify(await ada.auth.apiKeys.list())).not.toContain(made.key);

    const machine = createAuthstrapClient({ baseUrl: backend.url, apiKey: made.key });
    const created = await machine.Project.create({ name: 'Nightly' });
    expect(created.organizationId).toBe(adaOrganization);
    expect((await machine.Project.list({ search: 'Nightly' })).data.map((project) => project.id)).toEqual([created.id]);
    expect(await failure(machine.Project.delete(created.id))).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    // A key is no session: /api/auth refuses it.
    expect(await failure(machine.auth.getSession())).toMatchObject({ status: 403, code: 'FORBIDDEN' });

    await ada.auth.apiKeys.revoke(made.id);
    expect(await failure(machine.Project.list())).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    await ada.Project.delete(created.id);
  });

  it('connects a SCIM directory whose token works once shown, lists what it provisioned, maps its groups to roles, rotates, turns off and disconnects', async () => {
    const made = await ada.scimDirectories.create({ name: `Okta ${kind}`, preset: 'okta' });
    expect(made).toMatchObject({ preset: 'okta', defaultRole: 'member', enabled: true });
    // AUTH_URL's, which a test backend on port 0 does not know: its path, at the port it listens on.
    const servicePath = new URL(made.baseUrl).pathname;
    expect(servicePath).toBe(`/scim/v2/${made.id}`);
    expect(made.token).toMatch(/^scim_/);
    expect(made.tokens.map((token) => made.token.startsWith(token.start))).toEqual([true]);
    expect(JSON.stringify(await ada.scimDirectories.list())).not.toContain(made.token);
    expect((await ada.scimDirectories.get(made.id)).name).toBe(`Okta ${kind}`);

    const scim = (token: string, method: string, resource: string, body?: unknown) =>
      fetch(`${backend.url}${servicePath}${resource}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const provisioned = await scim(made.token, 'POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: `sam.${kind}@example.com`, displayName: 'Sam' });
    expect(provisioned.status).toBe(201);
    const samId = ((await provisioned.json()) as { id: string }).id;
    expect(await ada.scimDirectories.users(made.id)).toMatchObject([{ id: samId, email: `sam.${kind}@example.com`, displayName: 'Sam', membership: 'member' }]);
    const group = await scim(made.token, 'POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Engineering admins', members: [{ value: samId }] });
    const groupId = ((await group.json()) as { id: string }).id;
    expect(await ada.scimDirectories.groups(made.id)).toMatchObject([{ id: groupId, displayName: 'Engineering admins', members: 1, role: null }]);

    expect(await ada.scimDirectories.setRoleMappings(made.id, [{ groupId, role: 'admin' }])).toEqual([{ groupId, displayName: 'Engineering admins', role: 'admin' }]);
    expect(await ada.scimDirectories.roleMappings(made.id)).toEqual([{ groupId, displayName: 'Engineering admins', role: 'admin' }]);
    const [sam] = await ada.scimDirectories.users(made.id);
    expect((await ada.member.list()).data.find((member) => member.userId === sam!.userId)?.role).toBe('admin');
    // Ada provisioned too, in no mapped group: the default role would leave the organization without an owner.
    expect((await scim(made.token, 'POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'ada@example.com' })).status).toBe(201);
    expect(await failure(ada.scimDirectories.setRoleMappings(made.id, [{ groupId, role: 'admin' }]))).toMatchObject({ status: 409, code: 'LAST_OWNER' });

    // Rotated without overlap: the first token stops at once, the new one works; revoked, it stops too.
    const rotated = await ada.scimDirectories.rotateToken(made.id, { overlapSeconds: 0 });
    expect(rotated.token).toMatch(/^scim_/);
    expect((await scim(made.token, 'GET', '/Users')).status).toBe(401);
    expect((await scim(rotated.token, 'GET', '/Users')).status).toBe(200);
    expect((await ada.scimDirectories.update(made.id, { enabled: false })).enabled).toBe(false);
    expect((await scim(rotated.token, 'GET', '/Users')).status).toBe(401);
    await ada.scimDirectories.update(made.id, { enabled: true });
    await ada.scimDirectories.revokeToken(made.id, rotated.id);
    expect((await scim(rotated.token, 'GET', '/Users')).status).toBe(401);
    expect((await ada.scimDirectories.get(made.id)).tokens).toEqual([]);

    await ada.scimDirectories.delete(made.id);
    expect(await failure(ada.scimDirectories.get(made.id))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it("keeps another user out of the first user's records", async () => {
    const secret = await ada.Project.create({ name: 'Ada only' });
    const eve = createAuthstrapClient({ baseUrl: backend.url });
    await eve.auth.signUp({ email: 'eve@example.com', password, name: 'Eve' });
    const eveOrganization = (await eve.auth.getSession())!.organizations[0]!.id;
    eve.setOrganization(eveOrganization);

    expect((await eve.Project.list()).meta.total).toBe(0);
    expect(await failure(eve.Project.get(secret.id))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(await failure(eve.Project.update(secret.id, { name: 'taken' }))).toMatchObject({ status: 404 });
    expect((await eve.Organization.list()).data.map((organization) => organization.id)).toEqual([eveOrganization]);

    eve.setOrganization(adaOrganization);
    expect(await failure(eve.Project.list())).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    expect((await ada.Project.get(secret.id)).name).toBe('Ada only');
  });

  it('sends a write again with the same Idempotency-Key when its answer is lost, and the backend applies it once', async () => {
    /** Every request's method, path and Idempotency-Key; the next `lose` answers are read and then dropped, as a reset connection would. */
    const sent: { method: string; path: string; key: string | null }[] = [];
    let lose = 0;
    const losingFetch: typeof fetch = async (input, init) => {
      sent.push({ method: init?.method ?? 'GET', path: new URL(String(input)).pathname, key: new Headers(init?.headers).get('idempotency-key') });
      const response = await fetch(input, init);
      if (lose > 0) {
        lose--;
        await response.text();
        throw new TypeError('fetch failed', { cause: new Error('read ECONNRESET') });
      }
      return response;
    };
    const grace = createAuthstrapClient({ baseUrl: backend.url, fetch: losingFetch });
    await grace.auth.signUp({ email: 'lost-answer@example.com', password, name: 'Grace' });
    grace.setOrganization((await grace.auth.getSession())!.organizations[0]!.id);

    lose = 1;
    const created = await grace.Project.create({ name: 'Answer lost once' });
    const creates = sent.filter((request) => request.method === 'POST' && request.path === '/Projects');
    expect(creates).toHaveLength(2);
    expect(creates[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(creates[1]!.key).toBe(creates[0]!.key);
    const listed = await grace.Project.list({ filter: { name: 'Answer lost once' } });
    expect(listed.meta.total).toBe(1);
    expect(listed.data[0]!.id).toBe(created.id);

    // Each call has a key of its own; a read carries none.
    await grace.Project.update(created.id, { description: 'again' });
    const keys = sent.filter((request) => request.key !== null && request.path.startsWith('/Projects')).map((request) => request.key);
    expect(new Set(keys).size).toBe(2);
    expect(sent.filter((request) => request.method === 'GET').every((request) => request.key === null)).toBe(true);

    // A sign-in takes a key too: its answer lost, it is sent again with the key, and gets the
    // session the first made (one session, whose token works).
    const before = sent.length;
    const sessionsBefore = (await grace.auth.sessions()).length;
    lose = 1;
    const signedIn = await grace.auth.signIn({ email: 'lost-answer@example.com', password });
    const signIns = sent.slice(before).filter((request) => request.path === '/api/auth/sign-in/email');
    expect(signIns).toHaveLength(2);
    expect(signIns[1]!.key).toBe(signIns[0]!.key);
    expect((await grace.auth.sessions()).length).toBe(sessionsBefore + 1);
    expect((await apiClient(backend.url, { token: signedIn.token })('GET', '/api/auth/get-session')).status).toBe(200);
  });

  it('turns a network failure and a body that is not the API into AuthstrapErrors', async () => {
    // A port that was just free: nothing listens there.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = await failure(createAuthstrapClient({ baseUrl: `http://127.0.0.1:${port}`, retries: 0 }).Project.list());
    expect(unreachable).toMatchObject({ status: 0, code: 'NETWORK_ERROR' });
    expect(unreachable.message).toContain('ECONNREFUSED');
    expect(unreachable.cause).toBeInstanceOf(TypeError);

    // A proxy's error page (not JSON), and a server that answers JSON but is not this backend.
    const other = http.createServer((req, res) => {
      if (req.url?.startsWith('/json/')) res.writeHead(200, { 'content-type': 'application/json' }).end('{"hello":"world"}');
      else res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      const notJson = await failure(createAuthstrapClient({ baseUrl: otherUrl, retries: 0 }).Project.list());
      expect(notJson).toMatchObject({ status: 502, code: 'BAD_RESPONSE' });
      const notTheApi = await failure(createAuthstrapClient({ baseUrl: `${otherUrl}/json` }).Project.get('x'));
      expect(notTheApi).toMatchObject({ status: 200, code: 'BAD_RESPONSE' });
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('works with the session cookie alone, as in a browser, and its writes need an allowed Origin', async () => {
    const jar = new Map<string, string>();
    const page = createAuthstrapClient({ baseUrl: backend.url, fetch: browserFetch(jar, allowedOrigin) });
    await page.auth.signUp({ email: 'cookie@example.com', password, name: 'Cookie' });
    expect([...jar.keys()]).toEqual(['session']);
    // Drop the token the client kept: from here on only the cookie authenticates (a page reload).
    page.setToken(undefined);
    const session = await page.auth.getSession();
    expect(session?.user.email).toBe('cookie@example.com');
    page.setOrganization(session!.organizations[0]!.id);
    const created = await page.Project.create({ name: 'Baked' });
    expect((await page.Project.list()).data.map((project) => project.id)).toEqual([created.id]);

    // The same cookie from a page of another origin: the CSRF guard refuses the write.
    const evil = createAuthstrapClient({ baseUrl: backend.url, organizationId: session!.organizations[0]!.id, fetch: browserFetch(jar, 'https://evil.example') });
    expect(await failure(evil.Project.create({ name: 'Forged' }))).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    // credentials: 'omit' sends no cookie at all.
    const omitting = createAuthstrapClient({ baseUrl: backend.url, credentials: 'omit', fetch: browserFetch(jar, allowedOrigin) });
    expect(await omitting.auth.getSession()).toBeNull();

    await page.auth.signOut();
    expect(jar.size).toBe(0);
    expect(await page.auth.getSession()).toBeNull();
  });
});
