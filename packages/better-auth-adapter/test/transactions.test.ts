import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { betterAuth } from 'better-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, authSecret, databaseKinds, serviceApiKey, startBackend, type TestBackend } from '../../../examples/saas-backend/test/support/backend.js';
import { connectionsInTransaction } from '../../../examples/saas-backend/test/support/pg-activity.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';

/**
 * The backend's transactions for the trusted server (src/http/service-transactions.ts), as the
 * adapter uses them for Better Auth's `transaction`: a sign-up that fails half-way leaves nothing,
 * and no client can hold a connection without bound: a time limit, an idle limit (the client that
 * was killed), a cap per key, each ending in a clear error.
 */
const limits = {
  SERVICE_TRANSACTION_TIMEOUT_MS: '2000',
  SERVICE_TRANSACTION_IDLE_MS: '800',
  SERVICE_TRANSACTIONS_MAX: '2',
  // How long a begin waits for a place under the cap.
  DATABASE_CONNECT_TIMEOUT_MS: '400',
};

const userWhere = (email: string) => `where=${encodeURIComponent(JSON.stringify([{ field: 'email', value: email }]))}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(databaseKinds)('transactions of the trusted server, %s database', (kind) => {
  let backend: TestBackend;
  const service = () => apiClient(backend.url, { token: serviceApiKey });
  /** A request in transaction `id`. */
  const inTransaction = (id: string, method: string, path: string, body?: unknown) => service()(method, path, { headers: { 'x-authstrap-transaction': id }, body });
  const begin = async () => {
    const id = randomUUID();
    const answer = await inTransaction(id, 'POST', '/api/service/transactions');
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return id;
  };
  const usersNamed = async (email: string) => (await service()('GET', `/Users?${userWhere(email)}`)).body.data as unknown[];
  /** Connections PostgreSQL holds in an open transaction for this backend's database. */
  const heldConnections = () => connectionsInTransaction(backend.running.config.databaseUrl!);

  beforeAll(async () => {
    backend = await startBackend(kind, limits);
  });
  afterAll(() => backend?.stop());

  it('commits what its requests wrote; rolls back what a rolled-back one wrote', async () => {
    const kept = await begin();
    expect((await inTransaction(kept, 'POST', '/Users', { email: 'kept@example.com', name: 'Kept' })).status).toBe(201);
    // Inside, the row is there; outside, not yet (PostgreSQL; the embedded database makes outside wait).
    expect((await inTransaction(kept, 'GET', `/Users?${userWhere('kept@example.com')}`)).body.data).toHaveLength(1);
    if (kind === 'postgres') expect(await usersNamed('kept@example.com')).toHaveLength(0);
    expect((await inTransaction(kept, 'POST', '/api/service/transactions/commit')).body.data).toEqual({ id: kept, outcome: 'committed' });
    expect(await usersNamed('kept@example.com')).toHaveLength(1);

    const dropped = await begin();
    expect((await inTransaction(dropped, 'POST', '/Users', { email: 'dropped@example.com', name: 'Dropped' })).status).toBe(201);
    expect((await inTransaction(dropped, 'POST', '/api/service/transactions/rollback')).status).toBe(200);
    expect(await usersNamed('dropped@example.com')).toHaveLength(0);
    // Used after it ended: a 409 that says why.
    const late = await inTransaction(dropped, 'GET', '/Users');
    expect(late.status).toBe(409);
    expect(late.body.error.message).toContain('rolled back by the client');
  });

  it('rolls back one held past its time limit, and refuses it afterwards', async () => {
    const id = await begin();
    expect((await inTransaction(id, 'POST', '/Users', { email: 'slow@example.com', name: 'Slow' })).status).toBe(201);
    // Busy, never idle for long, but open too long.
    let answer = await inTransaction(id, 'GET', '/Users?limit=1');
    for (let step = 0; step < 20 && answer.status === 200; step += 1) {
      await sleep(250);
      answer = await inTransaction(id, 'GET', '/Users?limit=1');
    }
    expect(answer.status).toBe(409);
    expect(answer.body.error.message).toContain('SERVICE_TRANSACTION_TIMEOUT_MS');
    expect((await inTransaction(id, 'POST', '/api/service/transactions/commit')).status).toBe(409);
    expect(await usersNamed('slow@example.com')).toHaveLength(0);
  });

  it('rolls back the transaction of a client that was killed mid-way, and frees its connection', async () => {
    const id = randomUUID();
    const script = `
      const headers = { authorization: 'Bearer ${serviceApiKey}', 'x-authstrap-transaction': '${id}', 'content-type': 'application/json' };
      await fetch('${backend.url}/api/service/transactions', { method: 'POST', headers });
      await fetch('${backend.url}/Users', { method: 'POST', headers, body: JSON.stringify({ email: 'killed@example.com', name: 'Killed' }) });
      console.log('written');
      setInterval(() => {}, 1000);
    `;
    const client = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      client.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('written') && resolve());
      client.once('exit', (code) => reject(new Error(`the client exited (${code}) before writing`)));
    });
    if (kind === 'postgres') expect(await heldConnections()).toBe(1);
    client.kill('SIGKILL');
    // Within the idle limit (0.8 s here) it is rolled back.
    await sleep(1200);
    expect(await usersNamed('killed@example.com')).toHaveLength(0);
    if (kind === 'postgres') expect(await heldConnections()).toBe(0);
    const late = await inTransaction(id, 'GET', '/Users');
    expect(late.status).toBe(409);
    expect(late.body.error.message).toContain('SERVICE_TRANSACTION_IDLE_MS');
  });

  it('caps the open transactions per key: a begin past the cap waits, then gets a 429 saying so', async () => {
    const cap = kind === 'embedded' ? 1 : 2;
    const open = [];
    for (let index = 0; index < cap; index += 1) open.push(await begin());
    const refused = await inTransaction(randomUUID(), 'POST', '/api/service/transactions');
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toContain('SERVICE_TRANSACTIONS_MAX');
    expect(refused.headers.get('retry-after')).toBe('1');
    if (kind === 'postgres') {
      // The rest of the API is not held up by them.
      expect((await service()('GET', '/Users?limit=1')).status).toBe(200);
    }
    // A place that comes free while a begin waits goes to it.
    const waiting = inTransaction(randomUUID(), 'POST', '/api/service/transactions');
    await sleep(100);
    await inTransaction(open.pop()!, 'POST', '/api/service/transactions/rollback');
    const admitted = await waiting;
    expect(admitted.status).toBe(201);
    for (const id of [...open, admitted.body.data.id]) await inTransaction(id, 'POST', '/api/service/transactions/rollback');
  });

  it('holds to the cap when begins arrive at once', async () => {
    const cap = kind === 'embedded' ? 1 : 2;
    const answers = await Promise.all(Array.from({ length: 5 }, () => inTransaction(randomUUID(), 'POST', '/api/service/transactions')));
    expect(answers.map((answer) => answer.status).sort()).toEqual([...Array(cap).fill(201), ...Array(5 - cap).fill(429)]);
    if (kind === 'postgres') expect(await heldConnections()).toBe(cap);
    for (const answer of answers.filter((each) => each.status === 201)) await inTransaction(answer.body.data.id, 'POST', '/api/service/transactions/rollback');
  });

  it('ends a transaction whose statement failed: the next request and the commit say so', async () => {
    const id = await begin();
    expect((await inTransaction(id, 'POST', '/Users', { email: 'twice@example.com', name: 'Twice' })).status).toBe(201);
    expect((await inTransaction(id, 'POST', '/Users', { email: 'twice@example.com', name: 'Twice' })).status).toBe(409);
    const next = await inTransaction(id, 'GET', '/Users');
    expect(next.status).toBe(409);
    expect(next.body.error.message).toContain('a statement failed');
    expect((await inTransaction(id, 'POST', '/api/service/transactions/commit')).status).toBe(409);
    expect(await usersNamed('twice@example.com')).toHaveLength(0);
  });

  it('is the service key’s alone, and refuses a malformed or reused id', async () => {
    const user = await apiClient(backend.url)('POST', '/api/auth/sign-up/email', { body: { email: 'tx-user@example.com', name: 'User', password: 'correct horse battery' } });
    const asUser = await apiClient(backend.url, { token: user.body.data.token })('POST', '/api/service/transactions');
    expect(asUser.status).toBe(403);
    expect((await inTransaction('not-a-uuid', 'POST', '/api/service/transactions')).status).toBe(400);
    const unnamed = await service()('POST', '/api/service/transactions');
    expect(unnamed.status).toBe(400);
    expect(unnamed.body.error.message).toContain('x-authstrap-transaction');
    const id = await begin();
    expect((await inTransaction(id, 'GET', '/Users?limit=1')).status).toBe(200);
    // Used already: a begin under its id is another transaction's, refused.
    expect((await inTransaction(id, 'POST', '/api/service/transactions')).status).toBe(409);
    // A request naming a transaction nobody began.
    const unknown = await inTransaction(randomUUID(), 'GET', '/Users');
    expect(unknown.status).toBe(409);
    expect(unknown.body.error.message).toContain('No open transaction');
    await inTransaction(id, 'POST', '/api/service/transactions/rollback');
  });

  it('answers a begin, a commit and a rollback sent again (their answers lost) as the first time, and nothing else', async () => {
    const id = randomUUID();
    const first = await inTransaction(id, 'POST', '/api/service/transactions');
    expect(first.status).toBe(201);
    // Nothing has run in it yet: the same transaction, not a second one.
    const again = await inTransaction(id, 'POST', '/api/service/transactions');
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect((await inTransaction(id, 'POST', '/Users', { email: 'committed-once@example.com', name: 'Once' })).status).toBe(201);
    const committed = await inTransaction(id, 'POST', '/api/service/transactions/commit');
    expect(committed.body.data).toEqual({ id, outcome: 'committed' });
    const committedAgain = await inTransaction(id, 'POST', '/api/service/transactions/commit');
    expect(committedAgain.status).toBe(200);
    expect(committedAgain.body).toEqual(committed.body);
    expect(await usersNamed('committed-once@example.com')).toHaveLength(1);
    // Committed is not rolled back: a rollback now says how it ended.
    const lateRollback = await inTransaction(id, 'POST', '/api/service/transactions/rollback');
    expect(lateRollback.status).toBe(409);
    expect(lateRollback.body.error.message).toContain('committed');

    const dropped = await begin();
    expect((await inTransaction(dropped, 'POST', '/api/service/transactions/rollback')).body.data).toEqual({ id: dropped, outcome: 'rolled back' });
    expect((await inTransaction(dropped, 'POST', '/api/service/transactions/rollback')).body.data).toEqual({ id: dropped, outcome: 'rolled back' });
    expect((await inTransaction(dropped, 'POST', '/api/service/transactions/commit')).status).toBe(409);
  });

  describe('with a real Better Auth', () => {
    const makeAuth = (transactions: boolean) =>
      betterAuth({
        baseURL: 'http://localhost:3100',
        secret: authSecret,
        database: authstrapAdapter({ baseUrl: backend.url, serviceKey: serviceApiKey, transactions }),
        emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
        // The account insert fails in the database: its user does not exist (a foreign key).
        databaseHooks: { account: { create: { before: async (account) => ({ data: { ...account, userId: randomUUID() } }) } } },
        logger: { disabled: true },
      });

    it('leaves no user behind when the account insert of a sign-up fails', async () => {
      await expect(makeAuth(true).api.signUpEmail({ body: { email: 'half@example.com', password: 'correct horse battery', name: 'Half' } })).rejects.toThrow();
      expect(await usersNamed('half@example.com')).toHaveLength(0);
      // Without transactions, the same failure leaves the user (and their organization) behind.
      await expect(makeAuth(false).api.signUpEmail({ body: { email: 'half-again@example.com', password: 'correct horse battery', name: 'Half' } })).rejects.toThrow();
      expect(await usersNamed('half-again@example.com')).toHaveLength(1);
    });

    it('signs up in one transaction, and the user signs in', async () => {
      const auth = betterAuth({
        baseURL: 'http://localhost:3100',
        secret: authSecret,
        database: authstrapAdapter({ baseUrl: backend.url, serviceKey: serviceApiKey }),
        emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
        logger: { disabled: true },
      });
      const signedUp = await auth.api.signUpEmail({ body: { email: 'whole@example.com', password: 'correct horse battery', name: 'Whole' } });
      expect(signedUp.token).toEqual(expect.any(String));
      expect(await usersNamed('whole@example.com')).toHaveLength(1);
      expect((await auth.api.signInEmail({ body: { email: 'whole@example.com', password: 'correct horse battery' } })).token).toEqual(expect.any(String));
    });
  });
});
