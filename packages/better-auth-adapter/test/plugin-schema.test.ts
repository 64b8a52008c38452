import fs from 'node:fs';
import path from 'node:path';
import { sso } from '@better-auth/sso';
import { betterAuth, type BetterAuthOptions } from 'better-auth';
import { getAuthTables } from 'better-auth/db';
import { twoFactor, username } from 'better-auth/plugins';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, authSecret, serviceApiKey, signUp } from '../../../examples/saas-backend/test/support/backend.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';
import { betterAuthSchema } from '../src/schema.js';
import { schemaFollowingBackend } from './support/schema-following-backend.js';

/**
 * A Better Auth configuration with additional user fields and two plugins (username adds user
 * fields, two-factor a model of its own), taken to the backend the way a project does it:
 * createSchema's better-auth.schema.json, `authstrap generate`, a restart. Then both sign-up paths,
 * and the plugin's table open to the service key only.
 */
describe('Better Auth options with plugins, generated into the backend (embedded database)', () => {
  const backend = schemaFollowingBackend('embedded');
  const options = {
    emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
    user: { additionalFields: { plan: { type: 'string', defaultValue: 'free', required: false } } },
    plugins: [username(), twoFactor()],
  } satisfies BetterAuthOptions;
  let auth: ReturnType<typeof makeAuth>;
  const makeAuth = (baseUrl: string) =>
    betterAuth({ ...options, baseURL: 'http://localhost:3100', secret: authSecret, database: authstrapAdapter({ baseUrl, serviceKey: serviceApiKey }), logger: { disabled: true } });

  beforeAll(async () => {
    await backend.migrate(options);
    auth = makeAuth(backend.url!);
  }, 120_000);
  afterAll(() => backend.stop());

  it("writes the options' additions as extensions of User and a service-only entity", () => {
    const written = JSON.parse(fs.readFileSync(path.join(backend.dir!, 'better-auth.schema.json'), 'utf8'));
    expect(Object.keys(written.entities).sort()).toEqual(['User', 'twoFactor']);
    expect(Object.keys(written.entities.User.fields).sort()).toEqual(['displayUsername', 'plan', 'twoFactorEnabled', 'username']);
    expect(written.entities.User.fields.plan).toEqual({ type: 'text', default: 'free', nullable: true });
    expect(written.entities.twoFactor).toMatchObject({ serviceOnly: true, fields: { userId: { type: 'uuid', references: 'User', onDelete: 'cascade' } } });
    // authstrap.schema.ts itself is left as it was.
    expect(fs.readFileSync(path.join(backend.dir!, 'authstrap.schema.ts'), 'utf8')).not.toContain('twoFactor');
  });

  it("writes the sso plugin's providers as a service-only entity: their OIDC client secrets are no user's to read", () => {
    const { entities } = betterAuthSchema(getAuthTables({ plugins: [sso({ domainVerification: { enabled: true } })] }));
    expect(entities).toEqual({
      ssoProvider: {
        serviceOnly: true,
        fields: {
          issuer: { type: 'text' },
          oidcConfig: { type: 'text', nullable: true },
          samlConfig: { type: 'text', nullable: true },
          // The provider outlives the admin who registered it.
          userId: { type: 'uuid', references: 'User', onDelete: 'set null', nullable: true },
          providerId: { type: 'text', unique: true },
          // A string to Better Auth: the sign-in rule compares it to the organization's id as text.
          organizationId: { type: 'text', nullable: true },
          domain: { type: 'text' },
          domainVerified: { type: 'boolean', nullable: true },
        },
      },
    });
  });

  it('signs up through Better Auth with the added fields, and on the backend without them', async () => {
    const signedUp = await auth.api.signUpEmail({ body: { email: 'plugin-ada@example.com', password: 'correct horse battery', name: 'Ada', username: 'ada_l' } });
    const service = apiClient(backend.url!, { token: serviceApiKey });
    const stored = await service('GET', `/Users/${signedUp.user.id}`);
    expect(stored.body.data).toMatchObject({ username: 'ada_l', plan: 'free', twoFactorEnabled: false });
    // The backend's own sign-up knows nothing of them: nullable or defaulted, they do not stop it.
    const native = await signUp(backend.url!, 'plugin-native@example.com');
    expect((await service('GET', `/Users/${native.user.id}`)).body.data).toMatchObject({ username: null, plan: 'free' });
  });

  it("keeps the plugin's table for the service key: a user gets 403 and changes nothing", async () => {
    const owner = await auth.api.signUpEmail({ body: { email: 'plugin-owner@example.com', password: 'correct horse battery', name: 'Owner', username: 'owner_1' } });
    const service = apiClient(backend.url!, { token: serviceApiKey });
    const created = await service('POST', '/two-factors', { body: { userId: owner.user.id, secret: 'totp-secret', backupCodes: '[]' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const user = await signUp(backend.url!, 'plugin-user@example.com');
    for (const [method, route] of [['GET', '/two-factors'], ['GET', `/two-factors/${created.body.data.id}`], ['POST', '/two-factors'], ['DELETE', `/two-factors/${created.body.data.id}`]] as const) {
      const response = await user.api(method, route, { body: method === 'POST' ? { userId: user.user.id, secret: 'x', backupCodes: '[]' } : undefined });
      expect(response.status, `${method} ${route}`).toBe(403);
    }
    expect((await service('GET', '/two-factors')).body.data).toEqual([expect.objectContaining({ userId: owner.user.id, secret: 'totp-secret' })]);
  });
});
