import { betterAuth } from 'better-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, apiClient, authSecret, databaseKinds, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';

/**
 * A person their organization's directory provisioned in a domain the organization verified has
 * their name and address from the directory (the backend's docs/scim.md). The backend's own routes
 * refuse to change them by hand; Better Auth changes them through the service routes on the
 * person's behalf (`updateUser`, the address change's verification link), and is refused the
 * same way: Better Auth's own 409 with the backend's code, nothing written. Their picture stays
 * theirs, other people's profiles are untouched by the rule, and once the directory deletes the
 * resource the profile is theirs again.
 */
const password = 'correct horse battery';

describe.each(databaseKinds)("a directory-managed profile on Better Auth's path, %s database", (kind) => {
  let backend: TestBackend;
  let owner: SignedUp;
  const domain = `managed-ba-${kind}.example`;
  const at = (name: string) => `${name}@${domain}`;
  /** The last verification link's token Better Auth mailed, by the address it went to. */
  const mailed = new Map<string, string>();

  const asOwner = (sql: string, params: unknown[] = []) => backend.running.db.asOwner((tx) => tx.query(sql, params));
  const profileOf = async (email: string) => (await asOwner(`SELECT "name", "email", "image" FROM "User" WHERE lower("email") = $1`, [email])).rows[0];

  const makeAuth = () =>
    betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl: backend.url, serviceKey: serviceApiKey }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      emailVerification: { sendVerificationEmail: async ({ user, token }) => void mailed.set(user.email, token) },
      user: { changeEmail: { enabled: true } },
      logger: { disabled: true },
    });
  let auth: ReturnType<typeof makeAuth>;

  /** The session cookie of a Better Auth password sign-in, as request headers. */
  async function signedInHeaders(email: string): Promise<Headers> {
    const signedIn = await auth.api.signInEmail({ body: { email, password }, returnHeaders: true });
    return new Headers({ cookie: signedIn.headers.getSetCookie().map((cookie) => cookie.split(';')[0]!).join('; ') });
  }

  let scim: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

  beforeAll(async () => {
    backend = await startBackend(kind);
    auth = makeAuth();
    owner = await signUp(backend.url, at('owner'));
    await addMember(backend.url, owner, at('synced'), 'member', 'Synced Person');
    await asOwner(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken", "verifiedAt") VALUES ($1, $2, 'verified', 'token', now())`, [owner.organizationId, domain]);
    const made = await owner.api('POST', '/scim-directories', { body: { name: `Okta ${kind}` } });
    expect(made.status).toBe(201);
    scim = (method, path, body) =>
      fetch(`${backend.url}${new URL(made.body.data.baseUrl).pathname}${path}`, {
        method,
        headers: { authorization: `Bearer ${made.body.data.token}`, 'content-type': 'application/scim+json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(async (response) => ({ status: response.status, body: response.status === 204 ? undefined : await response.json() }));
  }, 60_000);
  afterAll(() => backend?.stop());

  it("refuses Better Auth's change of the name and address the directory owns, and lets it through once the directory lets go", async () => {
    const resource = await scim('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: at('synced'),
      displayName: 'Synced Person',
      emails: [{ value: at('synced'), type: 'work', primary: true }],
    });
    expect(resource.status, JSON.stringify(resource.body)).toBe(201);
    const headers = await signedInHeaders(at('synced'));

    const renamed = await auth.api.updateUser({ body: { name: 'Someone Else' }, headers, asResponse: true });
    expect(renamed.status).toBe(409);
    expect(await renamed.json()).toMatchObject({ code: 'DIRECTORY_MANAGED', message: expect.stringContaining('Your name comes from your organization') });
    expect((await profileOf(at('synced')))?.name).toBe('Synced Person');
    // The picture is theirs; the same name again is no change.
    expect((await auth.api.updateUser({ body: { image: 'https://example.com/me.png', name: 'Synced Person' }, headers, asResponse: true })).status).toBe(200);
    expect((await profileOf(at('synced')))?.image).toBe('https://example.com/me.png');

    // The address: Better Auth mails a link to the new one, and writes the address when it is followed.
    const elsewhere = `synced-${kind}@elsewhere.example`;
    expect((await auth.api.changeEmail({ body: { newEmail: elsewhere }, headers, asResponse: true })).status).toBe(200);
    const token = mailed.get(elsewhere);
    expect(token).toBeTruthy();
    const followed = await auth.api.verifyEmail({ query: { token: token! }, asResponse: true });
    expect(followed.status).toBe(409);
    expect(await followed.json()).toMatchObject({ code: 'DIRECTORY_MANAGED', message: expect.stringContaining('Your address comes from') });
    expect(await profileOf(elsewhere)).toBeUndefined();
    expect((await profileOf(at('synced')))?.email).toBe(at('synced'));

    // Someone the directory did not provision in the domain keeps their profile theirs.
    await addMember(backend.url, owner, at('invited'), 'member', 'Invited Person');
    const theirs = await auth.api.updateUser({ body: { name: 'Renamed Person' }, headers: await signedInHeaders(at('invited')), asResponse: true });
    expect(theirs.status).toBe(200);
    expect((await profileOf(at('invited')))?.name).toBe('Renamed Person');

    // The trusted server's write by filter meets the same rule, whole.
    const service = apiClient(backend.url, { token: serviceApiKey });
    const where = encodeURIComponent(JSON.stringify([{ field: 'email', operator: 'ends_with', value: `@${domain}` }]));
    const byFilter = await service('PATCH', `/Users?where=${where}`, { body: { name: 'Everyone' } });
    expect(byFilter.status).toBe(409);
    expect(byFilter.body.error.code).toBe('DIRECTORY_MANAGED');
    expect((await profileOf(at('invited')))?.name).toBe('Renamed Person');

    // Deleted in the directory (which also suspends them: no sign-in to try it with), the profile
    // is the person's again on the route Better Auth writes through.
    expect((await scim('DELETE', `/Users/${resource.body.id}`)).status).toBe(204);
    const userId = (await asOwner(`SELECT "id" FROM "User" WHERE "email" = $1`, [at('synced')])).rows[0]!.id;
    expect((await service('PATCH', `/Users/${userId}`, { body: { name: 'Someone Else' } })).status).toBe(200);
    expect((await profileOf(at('synced')))?.name).toBe('Someone Else');
  });
});
