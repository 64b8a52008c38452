import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { apiClient, createThrowawayDatabase, pooledDatabaseKinds, postgresAdminUrl, signUp, startBackend, type TestBackend } from './support/backend.js';
import { faultProxy, type FaultProxy } from './support/fault-proxy.js';
import { startMailbox, type Mailbox } from './support/mailbox.js';
import { spawnBackend } from './support/process.js';

/**
 * Mail is written to the outbox with the change that causes it and sent after commit, so an SMTP
 * server that stalls, is down or refuses for a while delays mail and never loses it, and requests
 * never wait for it. The SMTP server is real (support/mailbox.ts); its outages are a loopback
 * proxy in front of it (support/fault-proxy.ts) or its own refusals.
 */
const password = 'correct horse battery';
let counter = 0;
const email = (name: string) => `${name}-${++counter}@example.com`;

/** Asks for a password reset of each address and returns the slowest answer's time. */
async function forgotAll(baseUrl: string, addresses: string[]): Promise<number> {
  let slowest = 0;
  for (const address of addresses) {
    const started = performance.now();
    const answer = await apiClient(baseUrl)('POST', '/api/auth/forgot-password', { body: { email: address } });
    expect(answer.status).toBe(200);
    slowest = Math.max(slowest, performance.now() - started);
  }
  return slowest;
}

/** Every address got exactly one reset message. */
async function expectOneResetEach(mailbox: Mailbox, addresses: string[], timeout = 20_000) {
  const resets = () => addresses.map((address) => mailbox.to(address).filter((mail) => /Reset your password/.test(mail.subject)).length);
  await expect.poll(resets, { timeout, interval: 100 }).toEqual(addresses.map(() => 1));
}

describe.each(pooledDatabaseKinds)('the mail outbox on the %s database', (kind) => {
  let mailbox: Mailbox;
  let proxy: FaultProxy;
  let backend: TestBackend;

  beforeAll(async () => {
    mailbox = await startMailbox();
    proxy = await faultProxy(mailbox.url);
    backend = await startBackend(kind, { SMTP_URL: proxy.url, SMTP_TIMEOUT_MS: '1000', OUTBOX_RETRY_MS: '100' });
  });
  afterAll(async () => {
    await backend?.stop();
    await proxy?.close();
    await mailbox?.close();
  });

  /** Users signed up with their verification mail delivered, so that only what follows is counted. */
  async function users(count: number): Promise<string[]> {
    const addresses: string[] = [];
    for (let i = 0; i < count; i++) {
      const address = email('user');
      await signUp(backend.url, address, password);
      await mailbox.next(address, /Confirm/);
      addresses.push(address);
    }
    return addresses;
  }

  it('answers in bounded time while SMTP stalls, and delivers everything once it answers again', async () => {
    const addresses = await users(5);
    proxy.stall();
    const slowest = await forgotAll(backend.url, addresses);
    // The request wrote the message; the worker waits on SMTP, not the request.
    expect(slowest).toBeLessThan(1000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(addresses.flatMap((address) => mailbox.to(address)).filter((mail) => /Reset/.test(mail.subject))).toEqual([]);
    proxy.resume();
    await expectOneResetEach(mailbox, addresses);
  });

  it('keeps mail while SMTP is down, and delivers it when it is back', async () => {
    const addresses = await users(3);
    await proxy.close();
    expect(await forgotAll(backend.url, addresses)).toBeLessThan(1000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await proxy.open();
    await expectOneResetEach(mailbox, addresses);
  });

  it('retries a refusal that says "later" (451) and gives up at once on one that says "never" (550)', async () => {
    const [later, never] = await users(2);
    mailbox.refuseWith = 451;
    await forgotAll(backend.url, [later!]);
    await new Promise((resolve) => setTimeout(resolve, 800));
    mailbox.refuseWith = undefined;
    await expectOneResetEach(mailbox, [later!]);

    mailbox.refuseWith = 550;
    await forgotAll(backend.url, [never!]);
    const status = async () =>
      (await backend.running.db.query<{ status: string; attempts: number; lastError: string | null }>(
        `SELECT "status", "attempts", "lastError" FROM "authstrap_outbox" WHERE "payload"->>'to' = $1 AND "payload"->>'kind' = 'reset-password'`,
        [never],
      )).rows[0];
    await expect.poll(async () => (await status())?.status, { timeout: 10_000 }).toBe('failed');
    expect(await status()).toMatchObject({ attempts: 1, lastError: expect.stringContaining('550') });
    mailbox.refuseWith = undefined;
  });

  it('sends over a few SMTP connections it keeps open, not one per message', async () => {
    const addresses = await users(10);
    const before = mailbox.connections;
    await forgotAll(backend.url, addresses);
    await expectOneResetEach(mailbox, addresses);
    // At most the pool's five, against one a message.
    expect(mailbox.connections - before).toBeLessThanOrEqual(5);
  });

  it('keeps no link in a message once it is sent', async () => {
    const [address] = await users(1);
    await forgotAll(backend.url, [address!]);
    await expectOneResetEach(mailbox, [address!]);
    await expect
      .poll(async () => (await backend.running.db.query<{ payload: Record<string, unknown> }>(`SELECT "payload" FROM "authstrap_outbox" WHERE "payload"->>'to' = $1 AND "status" = 'sent'`, [address])).rows.length)
      .toBe(2);
    const { rows } = await backend.running.db.query<{ payload: Record<string, unknown> }>(`SELECT "payload" FROM "authstrap_outbox" WHERE "payload"->>'to' = $1`, [address]);
    for (const row of rows) expect(Object.keys(row.payload).sort()).toEqual(['kind', 'subject', 'to']);
  });
});

describe.runIf(postgresAdminUrl)('the mail outbox with two instances on one PostgreSQL database', () => {
  it('loses nothing and sends nothing twice when one instance is killed mid-delivery', async () => {
    const database = await createThrowawayDatabase();
    const mailbox = await startMailbox();
    const env = { DATABASE_URL: database.url, SMTP_URL: mailbox.url, SMTP_TIMEOUT_MS: '1500', OUTBOX_POLL_MS: '100', OUTBOX_RETRY_MS: '100', RATE_LIMIT_AUTH_MAX: '100000' };
    const first = spawnBackend(env);
    let second: ReturnType<typeof spawnBackend> | undefined;
    try {
      const firstUrl = await first.listening;
      const addresses = Array.from({ length: 12 }, () => email('pair'));
      for (const address of addresses) {
        expect((await apiClient(firstUrl)('POST', '/api/auth/sign-up/email', { body: { email: address, name: 'Pair', password } })).status).toBe(201);
      }
      await expectOneConfirmationEach();

      // The first instance takes the next messages and waits for the SMTP server's answer, which
      // never comes; then it is killed. Nothing it held was acknowledged, so nothing was sent.
      mailbox.holdData = true;
      await forgotAll(firstUrl, addresses);
      await new Promise((resolve) => setTimeout(resolve, 300));
      first.child.kill('SIGKILL');
      await first.exited;
      mailbox.holdData = false;

      // The second instance delivers them, once each, after the dead one's claim runs out.
      second = spawnBackend(env);
      const secondUrl = await second.listening;
      await expectOneResetEach(mailbox, addresses, 30_000);

      // Both instances running: every message of a burst is sent by one of them, once.
      const third = spawnBackend(env);
      try {
        const thirdUrl = await third.listening;
        const burst = Array.from({ length: 20 }, () => email('burst'));
        for (const [index, address] of burst.entries()) {
          const url = index % 2 === 0 ? secondUrl : thirdUrl;
          expect((await apiClient(url)('POST', '/api/auth/sign-up/email', { body: { email: address, name: 'Burst', password } })).status).toBe(201);
        }
        await expect.poll(() => burst.map((address) => mailbox.to(address).length), { timeout: 20_000 }).toEqual(burst.map(() => 1));
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(burst.map((address) => mailbox.to(address).length)).toEqual(burst.map(() => 1));
      } finally {
        third.child.kill('SIGTERM');
        await third.exited;
      }
      const messageIds = mailbox.received.map((mail) => mail.messageId);
      expect(new Set(messageIds).size).toBe(messageIds.length);
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      const { rows } = await client.query(`SELECT "channel", "status", count(*)::int AS "count" FROM "authstrap_outbox" GROUP BY "channel", "status" ORDER BY "channel"`);
      await client.end();
      // The 12 resets were asked for as mail requests first (account-flows.ts, requestMail).
      expect(rows).toEqual([
        { channel: 'account-mail', status: 'sent', count: 12 },
        { channel: 'mail', status: 'sent', count: 12 + 12 + 20 },
      ]);

      async function expectOneConfirmationEach() {
        await expect.poll(() => addresses.map((address) => mailbox.to(address).length), { timeout: 20_000 }).toEqual(addresses.map(() => 1));
      }
    } finally {
      first.child.kill('SIGKILL');
      second?.child.kill('SIGTERM');
      await second?.exited;
      await mailbox.close();
      await database.drop();
    }
  });
});
