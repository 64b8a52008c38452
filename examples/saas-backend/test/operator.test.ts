import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, databaseKinds, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * The platform's operators (src/operator/): /api/operator answers only a signed-in user who is an
 * operator now; members, owners, machine keys and the service key get 403, a caller without a
 * session 401. Granting is the command line's (packages/cli/test/operator-command.test.ts); here
 * the row is written as the tables' owner, as that command does.
 */
describe.each(databaseKinds)('operator routes on the %s database', (kind) => {
  let backend: TestBackend;
  let olivia: SignedUp;
  let ivy: SignedUp;
  const asOwner = (sql: string, params: unknown[]) => backend.running.db.asOwner((tx) => tx.query(sql, params));

  beforeAll(async () => {
    backend = await startBackend(kind);
    olivia = await signUp(backend.url, 'olivia@example.com');
    ivy = await signUp(backend.url, 'ivy@example.com');
  });
  afterAll(() => backend?.stop());

  it('refuses everyone who is not an operator: no session 401; an owner, a machine key and the service key 403', async () => {
    expect((await apiClient(backend.url)('GET', '/api/operator/me')).status).toBe(401);
    const owner = await ivy.api('GET', '/api/operator/me');
    expect(owner.status).toBe(403);
    expect(owner.body.error.message).toContain('Operators only');
    expect((await apiClient(backend.url, { token: serviceApiKey })('GET', '/api/operator/me')).status).toBe(403);
    const key = await ivy.api('POST', '/api/auth/api-keys', { body: { name: 'ops', permissions: { Project: ['list'] } } });
    expect(key.status).toBe(201);
    expect((await apiClient(backend.url)('GET', '/api/operator/me', { headers: { 'x-api-key': key.body.data.key } })).status).toBe(403);
  });

  it('answers an operator, for as long as they are one', async () => {
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [olivia.user.id]);
    const me = await olivia.api('GET', '/api/operator/me');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ userId: olivia.user.id, email: 'olivia@example.com' });
    expect(Date.parse(me.body.data.grantedAt)).not.toBeNaN();
    // Another user is still no operator; and a revoked one is none the next request.
    expect((await ivy.api('GET', '/api/operator/me')).status).toBe(403);
    await asOwner(`DELETE FROM "authstrap_operator" WHERE "userId" = $1`, [olivia.user.id]);
    expect((await olivia.api('GET', '/api/operator/me')).status).toBe(403);
  });

  it("lets a user read only their own operator row, whatever their statement says", async () => {
    await asOwner(`INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [olivia.user.id]);
    const seenBy = async (userId: string) => {
      const outcome = await backend.running.db.pipeline([
        { text: `SELECT set_config('authstrap.user_id', $1, true)`, params: [userId] },
        { text: `SELECT "userId" FROM "authstrap_operator"`, params: [] },
      ]);
      return outcome.results[1]!.rows.map((row) => row.userId);
    };
    expect(await seenBy(ivy.user.id)).toEqual([]);
    expect(await seenBy(olivia.user.id)).toEqual([olivia.user.id]);
  });
});
