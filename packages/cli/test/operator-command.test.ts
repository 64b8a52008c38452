import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl } from './support/check-cycle.js';
import { runCli } from './support/cli.js';
import { createResources, query, runCliAsync, type Backend } from './support/example-copies.js';

/**
 * `authstrap operator grant|revoke|list` against a copy of the example on PostgreSQL: the role it
 * grants is the one the backend's /api/operator routes ask for, and each change is an event.
 */
describe.runIf(adminUrl)('authstrap operator', () => {
  const resources = createResources({ adminUrl, name: 'operator', dotEnv: 'ALLOWED_ORIGINS=http://localhost:5173\n' });
  let dir: string;
  let backend: Backend;
  let token: string;

  beforeAll(async () => {
    dir = resources.copyOfExample();
    backend = await resources.startBackend(dir);
    const signedUp = await fetch(`${backend.url}/api/auth/sign-up/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'Olivia@Example.com', name: 'Olivia Oakes', password: 'correct horse battery' }),
    });
    token = (await signedUp.json()).data.token;
  }, 120_000);
  afterAll(() => resources.cleanup());

  const me = async () => (await fetch(`${backend.url}/api/operator/me`, { headers: { authorization: `Bearer ${token}` } })).status;
  const operator = (...args: string[]) => runCliAsync(['operator', ...args, '--database-url', backend.databaseUrl], dir);

  it('grants the role by address (any case), once, and the backend answers the operator', async () => {
    expect(await me()).toBe(403);
    const granted = await operator('grant', 'olivia@example.COM');
    expect(granted.status, granted.output).toBe(0);
    expect(granted.stdout).toContain('olivia@example.com is an operator now');
    expect(await me()).toBe(200);
    const again = await operator('grant', 'olivia@example.com');
    expect(again.stdout).toContain('was an operator already');
    const listed = await operator('list', '--json');
    expect(JSON.parse(listed.stdout).operators).toEqual([expect.objectContaining({ email: 'olivia@example.com', name: 'Olivia Oakes', grantedBy: 'command line' })]);
  });

  it('revokes it, ending the sessions the operator holds as other users, and each change is an event about the user, by the system', async () => {
    // Olivia signs in as a customer first: that session must not outlive her role.
    const customer = await fetch(`${backend.url}/api/auth/sign-up/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'customer@example.com', name: 'Cora Customer', password: 'correct horse battery' }),
    });
    const customerId = (await customer.json()).data.user.id;
    const impersonation = await fetch(`${backend.url}/api/operator/users/${customerId}/impersonate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'ticket 1' }),
    });
    expect(impersonation.status).toBe(200);
    const asCustomer = (await impersonation.json()).data.token;
    const customerSession = async () => (await fetch(`${backend.url}/api/auth/get-session`, { headers: { authorization: `Bearer ${asCustomer}` } })).status;
    expect(await customerSession()).toBe(200);

    const revoked = await operator('revoke', 'olivia@example.com', '--json');
    expect(revoked.status, revoked.output).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ action: 'revoke', email: 'olivia@example.com', changed: true });
    expect(await me()).toBe(403);
    expect(await customerSession()).toBe(401);
    const events = await query<{ type: string; actorType: string; data: { by: string } }>(
      backend.databaseUrl,
      `SELECT "type", "actorType", "data" FROM "authstrap_event" WHERE "type" IN ('operator.granted', 'operator.revoked') ORDER BY "createdAt"`,
    );
    expect(events).toEqual([
      { type: 'operator.granted', actorType: 'system', data: { by: 'command line' } },
      { type: 'operator.revoked', actorType: 'system', data: { by: 'command line' } },
    ]);
  });

  it('says what to change for a mistake: an unknown address (1), an unknown action or no address (2), a bad --database-url (2)', async () => {
    const unknown = await operator('grant', 'nobody@example.com');
    expect(unknown.status).toBe(1);
    expect(unknown.output).toContain('No user has the address nobody@example.com: they sign up first');
    const action = runCli(['operator', 'promote', 'olivia@example.com'], dir);
    expect(action.status).toBe(2);
    expect(action.stderr).toContain('Unknown action "promote"');
    const missing = runCli(['operator', 'grant'], dir);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("needs the user's e-mail address");
    const url = runCli(['operator', 'list', '--database-url', 'mysql://x'], dir);
    expect(url.status).toBe(2);
    expect(url.stderr).toContain('--database-url must look like postgresql://');
    for (const result of [unknown, action, missing, url]) expect(result.output).not.toMatch(/\n\s+at /);
  });
});
