import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, createThrowawayDatabase, databaseKinds, postgresAdminUrl, redisUrl, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * Every limit that counts something and then adds to it holds when the requests come at once, on
 * one instance and on two: the invitation caps (db/locks.ts), the live links per user and purpose
 * (tokens.ts), and a machine key's own rate limit (http/machine-key-limit.ts).
 */

const email = (label: string) => `${label}-${randomUUID().slice(0, 8)}@example.com`;
const all = <T>(count: number, request: (i: number) => Promise<T>) => Promise.all(Array.from({ length: count }, (_, i) => request(i)));
const statusesOf = (answers: { status: number }[]) => answers.map((answer) => answer.status);
const howMany = (statuses: number[], status: number) => statuses.filter((candidate) => candidate === status).length;

/** Mails to `addresses` that reached any of the mailboxes, once the outbox is drained. */
async function mailsTo(backends: TestBackend[], addresses: string[], expected: number): Promise<number> {
  const wanted = new Set(addresses);
  const count = () => backends.flatMap((backend) => backend.mailbox.received).filter((mail) => wanted.has(mail.to)).length;
  // Wait for the expected number, then a little longer: one too many must have time to show.
  const deadline = Date.now() + 10_000;
  while (count() < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, 500));
  return count();
}

/**
 * Waits until the outbox has nothing pending: the mail requests of "forgot password" are decided
 * by the worker after the answer (account-flows.ts, requestMail).
 */
async function outboxDrained(backend: TestBackend): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const { rows } = await backend.running.db.asOwner((tx) => tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM "authstrap_outbox" WHERE "status" = 'pending'`));
    if (rows[0]!.n === 0 || Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A pending invitation's row, written directly: 90 of them without 90 mails. */
async function addPendingInvitations(backend: TestBackend, organizationId: string, inviterId: string, count: number) {
  await backend.running.db.asOwner((tx) =>
    tx.query(
      `INSERT INTO "verification" ("identifier", "value", "expiresAt")
       SELECT 'invitation:seeded-' || n || '@example.com', md5(random()::text) || ':' || $1 || ':member:' || $2, now() + interval '1 day'
       FROM generate_series(1, $3) AS n`,
      [organizationId, inviterId, count],
    ),
  );
}

async function pendingOf(backend: TestBackend, organizationId: string): Promise<number> {
  const { rows } = await backend.running.db.asOwner((tx) =>
    tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM "verification" WHERE "identifier" LIKE 'invitation:%' AND split_part("value", ':', 2) = $1`, [organizationId]),
  );
  return rows[0]!.n;
}


describe.each(databaseKinds)('limits under concurrent requests on the %s database', (kind) => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startBackend(kind, { INVITATIONS_PER_HOUR: '20', INVITATIONS_PENDING_MAX: '100' });
  });
  afterAll(() => backend?.stop());

  it('sends exactly 20 of 40 concurrent invitations from one inviter with INVITATIONS_PER_HOUR=20, and exactly 20 mails', async () => {
    const owner = await signUp(backend.url, email('hourly'));
    const addresses = Array.from({ length: 40 }, (_, i) => email(`invitee${i}`));
    const statuses = statusesOf(await all(40, (i) => owner.api('POST', '/members', { body: { email: addresses[i] } })));
    expect(howMany(statuses, 202), statuses.join(' ')).toBe(20);
    expect(howMany(statuses, 429)).toBe(20);
    expect(await mailsTo([backend], addresses, 20)).toBe(20);
  });

  it('leaves exactly 100 pending after 40 concurrent invitations to an organization with 90 (INVITATIONS_PENDING_MAX=100)', async () => {
    const owner = await signUp(backend.url, email('pending'));
    const { organizationId } = owner;
    await addPendingInvitations(backend, organizationId, owner.user.id, 90);
    // Four inviters, so that the hourly cap (20 each) is not what stops them.
    const admins = [owner, ...(await all(3, () => signUp(backend.url, email('admin'))))];
    for (const admin of admins.slice(1)) await backend.running.db.asOwner((tx) => tx.query(`INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, 'admin')`, [organizationId, admin.user.id]));
    const statuses = statusesOf(await all(40, (i) => admins[i % 4]!.api('POST', '/members', { body: { email: email(`full${i}`) }, organizationId })));
    expect(howMany(statuses, 202), statuses.join(' ')).toBe(10);
    expect(howMany(statuses, 409)).toBe(30);
    expect(await pendingOf(backend, organizationId)).toBe(100);
  });

  it('keeps at most 3 live reset links for a user under 20 concurrent requests, and sends 3 mails', async () => {
    const person = await signUp(backend.url, email('links'));
    const anonymous = apiClient(backend.url);
    const statuses = statusesOf(await all(20, () => anonymous('POST', '/api/auth/forgot-password', { body: { email: person.user.email } })));
    expect(new Set(statuses)).toEqual(new Set([200]));
    await outboxDrained(backend);
    const { rows } = await backend.running.db.asOwner((tx) =>
      tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM "verification" WHERE "identifier" LIKE 'reset-password:%' AND split_part("value", ':', 1) = $1`, [person.user.id]),
    );
    expect(rows[0]!.n).toBe(3);
    const resets = async () => {
      const deadline = Date.now() + 10_000;
      const count = () => backend.mailbox.to(person.user.email).filter((mail) => /Reset your password/.test(mail.subject)).length;
      while (count() < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      await new Promise((resolve) => setTimeout(resolve, 500));
      return count();
    };
    expect(await resets()).toBe(3);
  });
});

/**
 * Two instances on one PostgreSQL database (and, for the machine keys' counts, one Redis): the
 * limits are the database's and the store's, not an instance's.
 */
describe.runIf(postgresAdminUrl)('limits under concurrent requests across two instances', () => {
  let database: Awaited<ReturnType<typeof createThrowawayDatabase>>;
  let instances: TestBackend[];
  const prefix = `authstrap-test-${randomUUID().slice(0, 8)}:`;

  beforeAll(async () => {
    database = await createThrowawayDatabase();
    const env = {
      DATABASE_URL: database.url,
      INVITATIONS_PER_HOUR: '20',
      INVITATIONS_PENDING_MAX: '100',
      ...(redisUrl ? { REDIS_URL: redisUrl, RATE_LIMIT_PREFIX: prefix } : {}),
    };
    // One after the other: the first migrates the database.
    instances = [await startBackend('embedded', env)];
    instances.push(await startBackend('embedded', env));
  }, 120_000);
  afterAll(async () => {
    for (const instance of instances ?? []) await instance.stop();
    await database?.drop();
  });

  /** `person`'s requests, spread over the two instances. */
  const spread = (person: SignedUp, i: number) => apiClient(instances[i % 2]!.url, { token: person.token, organizationId: person.organizationId });

  it('sends exactly 20 of 40 concurrent invitations from one inviter, and exactly 20 mails', async () => {
    const owner = await signUp(instances[0]!.url, email('hourly2'));
    const addresses = Array.from({ length: 40 }, (_, i) => email(`invitee${i}`));
    const statuses = statusesOf(await all(40, (i) => spread(owner, i)('POST', '/members', { body: { email: addresses[i] } })));
    expect(howMany(statuses, 202), statuses.join(' ')).toBe(20);
    expect(await mailsTo(instances, addresses, 20)).toBe(20);
  });

  it('leaves exactly 100 pending after 40 concurrent invitations to an organization with 90', async () => {
    const owner = await signUp(instances[0]!.url, email('pending2'));
    const { organizationId } = owner;
    await addPendingInvitations(instances[0]!, organizationId, owner.user.id, 90);
    const admins = [owner, ...(await all(3, () => signUp(instances[1]!.url, email('admin2'))))];
    for (const admin of admins.slice(1)) await instances[0]!.running.db.asOwner((tx) => tx.query(`INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, 'admin')`, [organizationId, admin.user.id]));
    const statuses = statusesOf(await all(40, (i) => spread(admins[i % 4]!, i)('POST', '/members', { body: { email: email(`full${i}`) }, organizationId })));
    expect(howMany(statuses, 202), statuses.join(' ')).toBe(10);
    expect(await pendingOf(instances[0]!, organizationId)).toBe(100);
  });

  it('keeps at most 3 live reset links for a user under 20 concurrent requests', async () => {
    const person = await signUp(instances[0]!.url, email('links2'));
    await all(20, (i) => apiClient(instances[i % 2]!.url)('POST', '/api/auth/forgot-password', { body: { email: person.user.email } }));
    await outboxDrained(instances[0]!);
    const { rows } = await instances[0]!.running.db.asOwner((tx) =>
      tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM "verification" WHERE "identifier" LIKE 'reset-password:%' AND split_part("value", ':', 1) = $1`, [person.user.id]),
    );
    expect(rows[0]!.n).toBe(3);
  });

  it.runIf(redisUrl)("lets exactly 10 of 20 concurrent requests of a key with rateLimitMax 10 through, over both instances", async () => {
    const owner = await signUp(instances[0]!.url, email('keys2'));
    const made = await owner.api('POST', '/api/auth/api-keys', { body: { name: 'two', permissions: { Project: ['list'] }, rateLimitMax: 10, rateLimitTimeWindow: 60_000 } });
    expect(made.status).toBe(201);
    const statuses = statusesOf(await all(20, (i) => apiClient(instances[i % 2]!.url)('GET', '/Projects', { headers: { 'x-api-key': made.body.data.key } })));
    expect(howMany(statuses, 200), statuses.join(' ')).toBe(10);
    expect(howMany(statuses, 429)).toBe(10);
  });
});
