import { randomBytes, randomUUID } from 'node:crypto';
import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiClient,
  pooledDatabaseKinds,
  serviceApiKey,
  signUp,
  startBackend,
  type Api,
  type SignedUp,
  type TestBackend,
} from './support/backend.js';
import { expectNoSecrets, sha256 } from './support/secrets.js';

const inOneDay = () => new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString();

// The trusted server (a Better Auth adapter, a script) with `Authorization: Bearer <SERVICE_API_KEY>`:
// full CRUD on User, account, session and verification, ids of its own choosing, and the secret
// columns (password hashes, tokens) read and written as they are: an adapter needs them. It is not
// a member of any organization. (Filters, writes by filter and /members: service-api.test.ts.)
describe.each(pooledDatabaseKinds)('the service key on the %s database', (kind) => {
  let backend: TestBackend;
  let service: Api;
  let anonymous: Api;
  let person: SignedUp;

  const signIn = (email: string, password: string) => anonymous('POST', '/api/auth/sign-in/email', { body: { email, password } });

  /** A user made by the service key, with a chosen id. */
  async function serviceUser(email: string): Promise<string> {
    const id = randomUUID();
    const created = await service('POST', '/Users', { body: { id, email, name: email.split('@')[0] } });
    expect(created.status).toBe(201);
    expect(created.body.data.id).toBe(id);
    return id;
  }

  beforeAll(async () => {
    backend = await startBackend(kind);
    service = apiClient(backend.url, { token: serviceApiKey });
    anonymous = apiClient(backend.url);
    person = await signUp(backend.url, 'person@example.com');
  });
  afterAll(() => backend?.stop());

  it('creates, reads, lists, replaces, updates and deletes Users, with a chosen id', async () => {
    const id = randomUUID();
    const created = await service('POST', '/Users', { body: { id, email: 'Adapter.Made@Example.com', name: 'Adapter Made', email_verified: true } });
    expect(created.status).toBe(201);
    // The address as the trusted server wrote it (unique whatever its case: service-api.test.ts).
    expect(created.body.data).toMatchObject({ id, email: 'Adapter.Made@Example.com', name: 'Adapter Made', email_verified: true, image: null });

    expect((await service('GET', `/Users/${id}`)).body.data).toEqual(created.body.data);
    // Not limited to an organization: every user, the signed-up one too.
    const list = await service('GET', '/Users?limit=100');
    expect(list.status).toBe(200);
    expect(list.body.data.map((user: { id: string }) => user.id)).toEqual(expect.arrayContaining([id, person.user.id]));

    const patched = await service('PATCH', `/Users/${id}`, { body: { email: 'renamed@example.com', image: 'https://example.com/a.png' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ id, email: 'renamed@example.com', name: 'Adapter Made', image: 'https://example.com/a.png' });

    const replaced = await service('PUT', `/Users/${id}`, { body: { email: 'replaced@example.com', name: 'Replaced' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ id, email: 'replaced@example.com', name: 'Replaced', email_verified: false, image: null });

    // The same id or e-mail address twice is a conflict.
    expect((await service('POST', '/Users', { body: { id, email: 'other@example.com', name: 'Other' } })).status).toBe(409);
    expect((await service('POST', '/Users', { body: { email: 'replaced@example.com', name: 'Other' } })).status).toBe(409);

    const deleted = await service('DELETE', `/Users/${id}`);
    expect(deleted.status).toBe(204);
    expect((await service('GET', `/Users/${id}`)).status).toBe(404);
    expect((await service('DELETE', `/Users/${id}`)).status).toBe(404);
  });

  it('creates a credential account from a bcrypt hash, and reads the hash back', async () => {
    const email = 'hashed@example.com';
    const userId = await serviceUser(email);
    const hash = await bcrypt.hash('first password 1', 4);
    expect(hash.startsWith('$2b$')).toBe(true);
    const accountId = randomUUID();

    const created = await service('POST', '/accounts', { body: { id: accountId, userId, accountId: userId, providerId: 'credential', password: hash } });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ id: accountId, userId, accountId: userId, providerId: 'credential', scope: null, password: hash });
    const read = await service('GET', `/accounts/${accountId}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(created.body.data);
    const list = await service('GET', '/accounts?limit=100');
    expect(list.body.data.find((account: { id: string }) => account.id === accountId).password).toBe(hash);
    // Every account, the signed-up person's too.
    expect(list.body.data.map((account: { userId: string }) => account.userId)).toContain(person.user.id);

    // The hash was stored as given: the password signs in.
    const signedIn = await signIn(email, 'first password 1');
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.data.user.id).toBe(userId);

    // A new hash by PATCH replaces the password.
    const newHash = await bcrypt.hash('second password 2', 4);
    const patched = await service('PATCH', `/accounts/${accountId}`, { body: { password: newHash } });
    expect(patched.status).toBe(200);
    expect(patched.body.data.password).toBe(newHash);
    expect((await signIn(email, 'first password 1')).status).toBe(401);
    expect((await signIn(email, 'second password 2')).status).toBe(200);

    // PUT replaces the whole row; the password it leaves out is gone.
    const replaced = await service('PUT', `/accounts/${accountId}`, { body: { userId, accountId: userId, providerId: 'credential', scope: 'openid' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ id: accountId, scope: 'openid', password: null });
    expect((await signIn(email, 'second password 2')).status).toBe(401);

    const deleted = await service('DELETE', `/accounts/${accountId}`);
    expect(deleted.status).toBe(204);
    expect((await service('GET', `/accounts/${accountId}`)).status).toBe(404);
  });

  it('stores OAuth tokens and returns them to the service key only', async () => {
    const userId = await serviceUser('oauth@example.com');
    const tokens = { accessToken: 'gho_access_0123456789', refreshToken: 'ghr_refresh_0123456789', idToken: 'eyJ.id-token.0123456789' };
    const created = await service('POST', '/accounts', {
      body: { userId, accountId: 'github-4242', providerId: 'github', ...tokens, accessTokenExpiresAt: inOneDay(), scope: 'read:user' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ userId, accountId: 'github-4242', providerId: 'github', scope: 'read:user' });
    expect(Date.parse(created.body.data.accessTokenExpiresAt)).toBeGreaterThan(Date.now());
    expect(created.body.data).toMatchObject(tokens);
    expect((await service('GET', `/accounts/${created.body.data.id}`)).body.data).toMatchObject(tokens);
    const listed = (await service('GET', '/accounts?limit=100')).body.data.find((row: { id: string }) => row.id === created.body.data.id);
    expect(listed).toMatchObject(tokens);
    // The user whose account it is sees it without them.
    const signedIn = await signUp(backend.url, 'oauth-owner@example.com');
    const own = await service('POST', '/accounts', { body: { userId: signedIn.user.id, accountId: 'github-77', providerId: 'github', ...tokens } });
    expect(own.status).toBe(201);
    const mine = await signedIn.api('GET', '/accounts');
    expect(mine.body.data.map((row: { id: string }) => row.id)).toContain(own.body.data.id);
    expectNoSecrets(mine, Object.values(tokens));
    expectNoSecrets(await signedIn.api('GET', `/accounts/${own.body.data.id}`), Object.values(tokens));
    // One account per provider account.
    expect((await service('POST', '/accounts', { body: { userId, accountId: 'github-4242', providerId: 'github' } })).status).toBe(409);
  });

  it('creates sessions whose token is the SHA-256 of the secret, and never shows the secret', async () => {
    const userId = await serviceUser('sessioned@example.com');
    const secret = randomBytes(32).toString('base64url');
    const id = randomUUID();
    const created = await service('POST', '/sessions', {
      body: { id, userId, token: sha256(secret), expiresAt: inOneDay(), ipAddress: '203.0.113.9', userAgent: 'adapter' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ id, userId, ipAddress: '203.0.113.9', userAgent: 'adapter', activeOrganizationId: null, token: sha256(secret) });
    // The secret the client holds is never stored, so nothing can show it.
    const neverTheSecret = (response: { body: unknown }, secrets: string[]) => {
      for (const held of secrets) expect(JSON.stringify(response.body)).not.toContain(held);
    };
    neverTheSecret(created, [secret]);

    // The client holding the secret is signed in as that user.
    const session = await anonymous('GET', '/api/auth/get-session', { token: secret });
    expect(session.status).toBe(200);
    expect(session.body.data.user.id).toBe(userId);
    expect(session.body.data.session.id).toBe(id);

    const read = await service('GET', `/sessions/${id}`);
    expect(read.body.data).toMatchObject({ id, userId, token: sha256(secret) });
    neverTheSecret(read, [secret]);
    const list = await service('GET', '/sessions?limit=100');
    expect(list.body.data.map((row: { id: string }) => row.id)).toContain(id);
    expect(list.body.data.map((row: { userId: string }) => row.userId)).toContain(person.user.id);
    neverTheSecret(list, [secret, person.token]);

    const patched = await service('PATCH', `/sessions/${id}`, { body: { userAgent: 'patched', expiresAt: new Date(Date.now() - 1000).toISOString() } });
    expect(patched.status).toBe(200);
    expect(patched.body.data.userAgent).toBe('patched');
    // Expired now: the secret no longer signs in.
    expect((await anonymous('GET', '/api/auth/get-session', { token: secret })).status).toBe(401);

    const replaced = await service('PUT', `/sessions/${id}`, { body: { userId, token: sha256(secret), expiresAt: inOneDay() } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ id, userAgent: null, ipAddress: null });
    expect((await anonymous('GET', '/api/auth/get-session', { token: secret })).status).toBe(200);

    expect((await service('DELETE', `/sessions/${id}`)).status).toBe(204);
    expect((await service('GET', `/sessions/${id}`)).status).toBe(404);
    expect((await anonymous('GET', '/api/auth/get-session', { token: secret })).status).toBe(401);
  });

  it('creates, reads, lists, replaces, updates and deletes verifications, with a chosen id', async () => {
    const id = randomUUID();
    const created = await service('POST', '/verifications', { body: { id, identifier: 'email-verification:a@example.com', value: 'v-123', expiresAt: inOneDay() } });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ id, identifier: 'email-verification:a@example.com' });
    expect((await service('GET', `/verifications/${id}`)).body.data).toEqual(created.body.data);
    const list = await service('GET', '/verifications?identifier[in]=email-verification:a@example.com,other');
    expect(list.body.data.map((row: { id: string }) => row.id)).toEqual([id]);

    const replaced = await service('PUT', `/verifications/${id}`, { body: { identifier: 'reset:a@example.com', value: 'v-456', expiresAt: inOneDay() } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data.identifier).toBe('reset:a@example.com');
    const expiresAt = new Date(Date.now() + 60_000).toISOString();
    const patched = await service('PATCH', `/verifications/${id}`, { body: { expiresAt } });
    expect(patched.status).toBe(200);
    expect(Date.parse(patched.body.data.expiresAt)).toBe(Date.parse(expiresAt));

    expect((await service('DELETE', `/verifications/${id}`)).status).toBe(204);
    expect((await service('GET', `/verifications/${id}`)).status).toBe(404);
  });

  it('deletes a user with their accounts and sessions', async () => {
    const email = 'cascade@example.com';
    const userId = await serviceUser(email);
    const account = await service('POST', '/accounts', { body: { userId, accountId: userId, providerId: 'credential', password: await bcrypt.hash('cascade password', 4) } });
    const secret = randomBytes(32).toString('base64url');
    const session = await service('POST', '/sessions', { body: { userId, token: sha256(secret), expiresAt: inOneDay() } });
    expect((await signIn(email, 'cascade password')).status).toBe(200);

    expect((await service('DELETE', `/Users/${userId}`)).status).toBe(204);
    expect((await service('GET', `/accounts/${account.body.data.id}`)).status).toBe(404);
    expect((await service('GET', `/sessions/${session.body.data.id}`)).status).toBe(404);
    expect((await signIn(email, 'cascade password')).status).toBe(401);
    expect((await anonymous('GET', '/api/auth/get-session', { token: secret })).status).toBe(401);
  });

  it('answers a wrong or short key with 401 and changes nothing', async () => {
    const before = (await service('GET', '/Users')).body.meta.total;
    const wrongKeys = [
      serviceApiKey.slice(0, -1) + (serviceApiKey.endsWith('0') ? '1' : '0'),
      serviceApiKey.slice(0, 8),
      `${serviceApiKey}x`,
      serviceApiKey.toUpperCase(),
    ];
    for (const key of wrongKeys) {
      const impostor = apiClient(backend.url, { token: key });
      for (const path of ['/Users', '/accounts', '/sessions', '/verifications']) {
        const read = await impostor('GET', path);
        expect(read.status, `GET ${path} with ${key}`).toBe(401);
        expect(read.body.error.code).toBe('UNAUTHORIZED');
      }
      const write = await impostor('POST', '/Users', { body: { email: 'impostor@example.com', name: 'Impostor' } });
      expect(write.status).toBe(401);
    }
    // Without any credentials, too.
    expect((await anonymous('GET', '/Users')).status).toBe(401);
    expect((await service('GET', '/Users')).body.meta.total).toBe(before);
  });

  it('cannot act inside an organization', async () => {
    const asService = { organizationId: person.organizationId };
    const routes: [string, string, unknown?][] = [
      ['GET', '/Projects'],
      ['POST', '/Projects', { name: 'From the service' }],
      ['GET', '/Tasks'],
    ];
    for (const [method, path, body] of routes) {
      const response = await service(method, path, { ...asService, body });
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(response.body.error.code).toBe('FORBIDDEN');
    }
    expect((await person.api('GET', '/Projects')).body.meta.total).toBe(0);
  });
});
