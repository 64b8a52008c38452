import { betterAuth } from 'better-auth';
import { organization } from 'better-auth/plugins';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedOrigin, apiClient, authSecret, serviceApiKey } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';
import { schemaFollowingBackend } from './support/schema-following-backend.js';

/**
 * Better Auth's organization plugin on the backend: its organizations and members are the
 * backend's own `Organization` and `member` rows (the tenants every scoped route checks), its
 * invitations a service-only entity. An organization made in Better Auth is one the backend's
 * tenant-scoped routes accept, with Better Auth's session.
 */
describe("Better Auth's organization plugin keeps its models in Organization and member (embedded database)", () => {
  const backend = schemaFollowingBackend('embedded');
  const pluginOptions = {
    emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
    plugins: [organization()],
  };
  let auth: ReturnType<typeof makeAuth>;
  const makeAuth = (baseUrl: string) =>
    betterAuth({
      ...pluginOptions,
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      // The plugin manages organizations: no personal one is added.
      database: authstrapAdapter({ baseUrl, serviceKey: serviceApiKey, personalOrganization: false }),
      logger: { disabled: true },
    });

  beforeAll(async () => {
    await backend.migrate(pluginOptions);
    auth = makeAuth(backend.url!);
  }, 120_000);
  afterAll(() => backend.stop());

  it('creates an organization in Better Auth that the backend scopes by, with Better Auth’s session', async () => {
    const signedUp = await auth.api.signUpEmail({ body: { email: 'org-ada@example.com', password: 'correct horse battery', name: 'Ada' }, returnHeaders: true });
    const cookie = signedUp.headers.get('set-cookie')!.split(';')[0]!;
    const headers = new Headers({ cookie });
    const created = await auth.api.createOrganization({ body: { name: 'Analytical Engines', slug: 'analytical-engines', logo: 'https://example.com/logo.png' }, headers });
    expect(created).toMatchObject({ name: 'Analytical Engines', slug: 'analytical-engines' });

    // The backend's own rows: the organization (with the plugin's logo) and an owner membership.
    const service = apiClient(backend.url!, { token: serviceApiKey });
    expect((await service('GET', `/Organizations/${created!.id}`)).body.data).toMatchObject({ name: 'Analytical Engines', logo: 'https://example.com/logo.png' });
    expect((await service('GET', `/members?userId=${signedUp.response.user.id}`)).body.data).toEqual([
      expect.objectContaining({ organizationId: created!.id, role: 'owner' }),
    ]);
    expect((await auth.api.listOrganizations({ headers })).map((listed) => listed.id)).toEqual([created!.id]);

    // A tenant-scoped route of the backend, in that organization, with Better Auth's cookie.
    const api = apiClient(backend.url!, { organizationId: created!.id });
    const project = await api('POST', '/Projects', { body: { name: 'Difference engine' }, headers: { cookie, origin: allowedOrigin } });
    expect(project.status, JSON.stringify(project.body)).toBe(201);
    expect((await api('GET', '/Projects', { headers: { cookie } })).body.data.map((row: { name: string }) => row.name)).toEqual(['Difference engine']);
  });

  it("invites through the plugin's invitation model, which only the service key reads", async () => {
    const owner = await auth.api.signUpEmail({ body: { email: 'org-owner@example.com', password: 'correct horse battery', name: 'Owner' }, returnHeaders: true });
    const headers = new Headers({ cookie: owner.headers.get('set-cookie')!.split(';')[0]! });
    const created = await auth.api.createOrganization({ body: { name: 'Inviters', slug: 'inviters' }, headers });
    const invitation = await auth.api.createInvitation({ body: { email: 'org-guest@example.com', role: 'member', organizationId: created!.id }, headers });
    expect(invitation).toMatchObject({ email: 'org-guest@example.com', status: 'pending' });
    const service = apiClient(backend.url!, { token: serviceApiKey });
    expect((await service('GET', `/invitations/${invitation.id}`)).body.data).toMatchObject({ organizationId: created!.id, email: 'org-guest@example.com' });
    const bearer = apiClient(backend.url!, { token: owner.response.token! });
    expect((await bearer('GET', '/invitations')).status).toBe(403);
  });
});
