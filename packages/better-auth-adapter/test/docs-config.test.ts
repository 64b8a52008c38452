import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, authSecret, databaseKinds, mailboxOf, serviceApiKey, startBackend, type TestBackend } from '../../../examples/saas-backend/test/support/backend.js';

/**
 * docs/better-auth.md's configuration block, as it is written there, against a backend: the
 * schema step the page gives, then every flow the page says the block turns on (sign-up with its
 * confirmation mail, sign-in, a password reset that ends the old sessions, deleting the user).
 */
const docs = fs.readFileSync(path.resolve(import.meta.dirname, '../../../docs/better-auth.md'), 'utf8');
const configuration = /## Configuration\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(docs)![1]!;
/** Inside the package, so that its imports resolve as in an app that installed the adapter. */
const appDir = path.resolve(import.meta.dirname, '.docs-app');
const password = 'correct horse battery';

describe.each(databaseKinds)('the configuration in docs/better-auth.md, %s database', (kind) => {
  let backend: TestBackend;
  // The block is loaded at run time, from the page: its types are not known to this file.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let auth: { api: any };
  const configFile = path.join(appDir, kind, 'lib', 'auth.ts');

  beforeAll(async () => {
    backend = await startBackend(kind);
    Object.assign(process.env, { BETTER_AUTH_URL: 'http://localhost:3100', AUTH_SECRET: authSecret, AUTHSTRAP_URL: backend.url, SERVICE_API_KEY: serviceApiKey });
    fs.mkdirSync(path.dirname(configFile), { recursive: true });
    fs.writeFileSync(configFile, configuration);
    ({ auth } = await import(configFile));
  });
  afterAll(async () => {
    await backend?.stop();
    fs.rmSync(path.join(appDir, kind), { recursive: true, force: true });
  });
  const service = () => apiClient(backend.url, { token: serviceApiKey });

  it('takes the schema step the page gives: nothing beyond the built-in entities for this block', async () => {
    const output = path.join(appDir, kind, 'better-auth.schema.json');
    await promisify(execFile)(process.execPath, [path.resolve(import.meta.dirname, '../dist/schema-command.js'), '--output', output], { cwd: path.join(appDir, kind) });
    expect(JSON.parse(fs.readFileSync(output, 'utf8')).entities).toEqual({});
  });

  it('signs up with a confirmation mail sent by the backend, confirms, signs in', async () => {
    const email = `docs-${kind}@example.com`;
    await auth.api.signUpEmail({ body: { email, password, name: 'Docs' } });
    const mail = await mailboxOf(backend.url).next(email);
    const token = mail.link!.searchParams.get('token')!;
    await auth.api.verifyEmail({ query: { token } });
    const users = await service()('GET', `/Users?where=${encodeURIComponent(JSON.stringify([{ field: 'email', value: email }]))}`);
    expect(users.body.data[0].email_verified).toBe(true);
    expect((await auth.api.signInEmail({ body: { email, password } })).token).toEqual(expect.any(String));
  });

  it('resets a forgotten password through the mailed link, ending the old sessions', async () => {
    const email = `docs-reset-${kind}@example.com`;
    const { token: oldSession } = await auth.api.signUpEmail({ body: { email, password, name: 'Reset' } });
    const sentAfter = Date.now();
    await auth.api.requestPasswordReset({ body: { email, redirectTo: 'http://localhost:3100/reset-password' } });
    const mail = await mailboxOf(backend.url).next(email, /reset|password/i);
    expect(mail.link, `mail sent after ${sentAfter}`).toBeDefined();
    const resetToken = mail.link!.pathname.split('/').pop()!;
    await auth.api.resetPassword({ body: { newPassword: 'a brand new password', token: resetToken } });
    expect((await apiClient(backend.url, { token: oldSession })('GET', '/api/auth/get-session')).status).toBe(401);
    await expect(auth.api.signInEmail({ body: { email, password } })).rejects.toThrow();
    expect((await auth.api.signInEmail({ body: { email, password: 'a brand new password' } })).token).toEqual(expect.any(String));
  });

  it('deletes the user, and with them their personal organization', async () => {
    const email = `docs-delete-${kind}@example.com`;
    const signedUp = await auth.api.signUpEmail({ body: { email, password, name: 'Leaving' }, returnHeaders: true });
    const userId = signedUp.response.user.id;
    const [membership] = (await service()('GET', `/members?userId=${userId}`)).body.data;
    const headers = new Headers({ cookie: (signedUp.headers as Headers).getSetCookie().map((cookie) => cookie.split(';')[0]).join('; ') });
    await auth.api.deleteUser({ body: { password }, headers });
    expect((await service()('GET', `/Users/${userId}`)).status).toBe(404);
    expect((await service()('GET', `/Organizations/${membership.organizationId}`)).status).toBe(404);
  });
});
