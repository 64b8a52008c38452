import net from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callerOwner, storedAnswerStatement } from '../src/idempotency/keys.js';
import { apiClient, databaseKinds, postgresAdminUrl, serviceApiKey, signUp, startBackend, type Api, type ApiResponse, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * Concurrent requests with one key: one was the write (201, not replayed), the others got its
 * answer again (201, replayed) or were told it was still running (409, Retry-After: 1).
 */
function expectOneFirstAnswer(answers: ApiResponse[]) {
  const created = answers.filter((answer) => answer.status === 201);
  expect(created.length).toBeGreaterThan(0);
  for (const answer of created) expect(answer.body).toEqual(created[0]!.body);
  for (const answer of answers.filter((answer) => answer.status !== 201)) {
    expect(answer.status).toBe(409);
    expect(answer.headers.get('retry-after')).toBe('1');
  }
  expect(created.filter((answer) => answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
}

/**
 * Idempotency-Key on the generated routes (src/idempotency/): a write sent again with its key is
 * applied once, and every repeat gets the first answer; a key names one request of one caller in
 * one organization.
 */
describe.each(databaseKinds)('Idempotency-Key on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  let bob: SignedUp;

  beforeAll(async () => {
    backend = await startBackend(kind);
    alice = await signUp(backend.url, 'alice@example.com');
    bob = await signUp(backend.url, 'bob@example.com');
  });
  afterAll(() => backend?.stop());

  const keyed = (key: string) => ({ 'Idempotency-Key': key });
  /** How many of the organization's projects have this name. */
  const named = async (api: Api, name: string) => (await api('GET', `/Projects?name=${encodeURIComponent(name)}`)).body.meta.total as number;

  it('applies a create once and answers every repeat with the first answer, marked as replayed', async () => {
    const key = randomUUID();
    const first = await alice.api('POST', '/Projects', { body: { name: 'Once' }, headers: keyed(key) });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    for (let repeat = 0; repeat < 3; repeat++) {
      const again = await alice.api('POST', '/Projects', { body: { name: 'Once' }, headers: keyed(key) });
      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    }
    expect(await named(alice.api, 'Once')).toBe(1);
  });

  it('reads the key as a structured-header string too', async () => {
    const key = randomUUID();
    const bare = await alice.api('POST', '/Projects', { body: { name: 'Quoted' }, headers: keyed(key) });
    const quoted = await alice.api('POST', '/Projects', { body: { name: 'Quoted' }, headers: keyed(`"${key}"`) });
    expect(quoted.headers.get('idempotent-replayed')).toBe('true');
    expect(quoted.body).toEqual(bare.body);
  });

  it('refuses the same key with another body or path (422), and writes nothing', async () => {
    const key = randomUUID();
    expect((await alice.api('POST', '/Projects', { body: { name: 'First use' }, headers: keyed(key) })).status).toBe(201);
    const otherBody = await alice.api('POST', '/Projects', { body: { name: 'Second use' }, headers: keyed(key) });
    expect(otherBody.status).toBe(422);
    expect(otherBody.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const created = (await alice.api('POST', '/Projects', { body: { name: 'Target' } })).body.data;
    const otherPath = await alice.api('PATCH', `/Projects/${created.id}`, { body: { name: 'First use' }, headers: keyed(key) });
    expect(otherPath.status).toBe(422);
    expect(await named(alice.api, 'Second use')).toBe(0);
    expect((await alice.api('GET', `/Projects/${created.id}`)).body.data.name).toBe('Target');
  });

  it('replays a PATCH and a DELETE: the DELETE sent again is a 204, not a 404', async () => {
    const created = (await alice.api('POST', '/Projects', { body: { name: 'Patched' } })).body.data;
    const patchKey = randomUUID();
    const patched = await alice.api('PATCH', `/Projects/${created.id}`, { body: { status: 'archived' }, headers: keyed(patchKey) });
    expect(patched.status).toBe(200);
    // Changed again by someone else: the repeat answers what the first write did, and changes nothing.
    await alice.api('PATCH', `/Projects/${created.id}`, { body: { status: 'active' } });
    const patchedAgain = await alice.api('PATCH', `/Projects/${created.id}`, { body: { status: 'archived' }, headers: keyed(patchKey) });
    expect(patchedAgain.body).toEqual(patched.body);
    expect((await alice.api('GET', `/Projects/${created.id}`)).body.data.status).toBe('active');

    const deleteKey = randomUUID();
    expect((await alice.api('DELETE', `/Projects/${created.id}`, { headers: keyed(deleteKey) })).status).toBe(204);
    const deletedAgain = await alice.api('DELETE', `/Projects/${created.id}`, { headers: keyed(deleteKey) });
    expect(deletedAgain.status).toBe(204);
    expect(deletedAgain.headers.get('idempotent-replayed')).toBe('true');
    expect((await alice.api('DELETE', `/Projects/${created.id}`)).status).toBe(404);
  });

  it('keeps no failed answer: after a 404 the key is free for the request sent again', async () => {
    const key = randomUUID();
    const missing = await alice.api('PATCH', `/Projects/${randomUUID()}`, { body: { name: 'Nowhere' }, headers: keyed(key) });
    expect(missing.status).toBe(404);
    const created = await alice.api('POST', '/Projects', { body: { name: 'After a 404' }, headers: keyed(key) });
    expect(created.status).toBe(201);
    expect(created.headers.get('idempotent-replayed')).toBeNull();
  });

  /** The answer kept with one of Alice's keys, as stored. */
  const keptAnswer = async (key: string) => {
    const { rows } = await backend.running.db.asOwner((tx) =>
      tx.query<{ status: number | null; body: string | null }>(`SELECT "status", "body" FROM "authstrap_idempotency_key" WHERE "caller" = $1 AND "key" = $2`, [`user:${alice.user.id}`, key]),
    );
    return rows[0];
  };
  /** A request's answer as bytes: status, headers, body text. */
  const sent = async (method: string, path: string, key: string, body?: unknown) => {
    const response = await fetch(`${backend.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${alice.token}`, 'x-organization-id': alice.organizationId, 'Idempotency-Key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };

  it("keeps a generated route's answer in its write's own statement, in clear, and replays it byte for byte: create, PUT, PATCH and DELETE", async () => {
    const createKey = randomUUID();
    const created = await sent('POST', '/Projects', createKey, { name: 'Kept in clear' });
    expect(created.status).toBe(201);
    // The row's JSON is in the database in clear already: its answer is kept as it was sent.
    expect(await keptAnswer(createKey)).toEqual({ status: 201, body: created.text });
    const id = JSON.parse(created.text).data.id as string;
    for (const [method, body, status] of [['PUT', { name: 'Put' }, 200], ['PATCH', { description: 'Patched' }, 200], ['DELETE', undefined, 204]] as const) {
      const key = randomUUID();
      const first = await sent(method, `/Projects/${id}`, key, body);
      expect(first.status, method).toBe(status);
      expect(await keptAnswer(key), method).toEqual({ status, body: first.text });
      const again = await sent(method, `/Projects/${id}`, key, body);
      expect(again.status, method).toBe(status);
      expect(again.text, method).toBe(first.text);
      expect(again.headers.get('idempotent-replayed'), method).toBe('true');
      expect(again.headers.get('content-type'), method).toBe(first.headers.get('content-type'));
    }
    const again = await sent('POST', '/Projects', createKey, { name: 'Kept in clear' });
    expect([again.status, again.text, again.headers.get('idempotent-replayed')]).toEqual([201, created.text, 'true']);
    // Another request with the key: 422, and nothing written.
    expect((await sent('POST', '/Projects', createKey, { name: 'Another' })).status).toBe(422);
    expect(await named(alice.api, 'Another')).toBe(0);
  });

  it('keeps the answer of a write that is not one generated statement sealed, in its held transaction, and replays it', async () => {
    const project = (await alice.api('POST', '/Projects', { body: { name: 'Parent' } })).body.data;
    const key = randomUUID();
    const created = await sent('POST', `/Projects/${project.id}/Tasks`, key, { title: 'Sealed' });
    expect(created.status).toBe(201);
    const kept = await keptAnswer(key);
    expect(kept?.status).toBe(201);
    expect(kept?.body).toMatch(/^sealed:v1:/);
    const again = await sent('POST', `/Projects/${project.id}/Tasks`, key, { title: 'Sealed' });
    expect([again.status, again.text, again.headers.get('idempotent-replayed')]).toEqual([201, created.text, 'true']);
  });

  it('keeps nothing for a write that found nothing, under the new path too: the key is free', async () => {
    const key = randomUUID();
    expect((await sent('DELETE', `/Projects/${randomUUID()}`, key)).status).toBe(404);
    expect((await sent('PUT', `/Projects/${randomUUID()}`, key, { name: 'Nowhere' })).status).toBe(404);
    expect(await keptAnswer(key)).toBeUndefined();
  });

  it("scopes a key to its caller and organization: another user's same key is another request", async () => {
    const key = randomUUID();
    const mine = await alice.api('POST', '/Projects', { body: { name: 'Same key' }, headers: keyed(key) });
    const theirs = await bob.api('POST', '/Projects', { body: { name: 'Same key' }, headers: keyed(key) });
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
    expect(theirs.body.data.organizationId).toBe(bob.organizationId);
    // Bob, invited into Alice's organization, still has keys of his own there.
    const invited = await alice.api('POST', '/members', { body: { email: 'bob@example.com', role: 'member' } });
    expect(invited.status).toBe(202);
    const inAlices = await bob.api('POST', '/Projects', { body: { name: 'Same key' }, headers: keyed(key), organizationId: alice.organizationId });
    // Not a member yet (the invitation is unanswered): refused, and no replay of Alice's answer leaks.
    expect(inAlices.status).toBe(403);
    expect(inAlices.body.data).toBeUndefined();
  });

  it('refuses a malformed key with a 400 naming the header, after the 401 of a caller without a session', async () => {
    const malformed = await alice.api('POST', '/Projects', { body: { name: 'Bad key' }, headers: keyed('x'.repeat(256)) });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.message).toContain('Idempotency-Key');
    const anonymous = await apiClient(backend.url)('POST', '/Projects', { body: { name: 'Bad key' }, headers: keyed('bad key with spaces'), organizationId: alice.organizationId });
    expect(anonymous.status).toBe(401);
    expect(await named(alice.api, 'Bad key')).toBe(0);
  });

  it('applies concurrent repeats once: each waits for the first and gets its answer (or a 409 with Retry-After)', async () => {
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 6 }, () => alice.api('POST', '/Projects', { body: { name: 'Concurrent' }, headers: keyed(key) })));
    expectOneFirstAnswer(answers);
    expect(await named(alice.api, 'Concurrent')).toBe(1);
  });

  it('answers concurrent repeats of a DELETE with its 204, never a 404: the ones that find the row gone look the key up', async () => {
    const created = (await alice.api('POST', '/Projects', { body: { name: 'Deleted at once' } })).body.data;
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 6 }, () => alice.api('DELETE', `/Projects/${created.id}`, { headers: keyed(key) })));
    for (const answer of answers) expect([204, 409]).toContain(answer.status);
    expect(answers.filter((answer) => answer.status === 204 && answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    for (const answer of answers.filter((answer) => answer.status === 409)) expect(answer.headers.get('retry-after')).toBe('1');
    // A DELETE with a new key is a new request: the row is gone.
    expect((await alice.api('DELETE', `/Projects/${created.id}`, { headers: keyed(randomUUID()) })).status).toBe(404);
  });

  it('applies once a write whose answer was lost (the client hung up) when it is sent again with its key', async () => {
    const key = randomUUID();
    const body = JSON.stringify({ name: 'Answer lost' });
    const { hostname, port } = new URL(backend.url);
    // The request is sent whole, and the connection dropped before any answer is read.
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.end(
          `POST /Projects HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
            `Authorization: Bearer ${alice.token}\r\nx-organization-id: ${alice.organizationId}\r\nIdempotency-Key: ${key}\r\n\r\n${body}`,
          () => resolve(),
        );
      });
      socket.on('error', reject);
    });
    const sentAgain = await alice.api('POST', '/Projects', { body: { name: 'Answer lost' }, headers: keyed(key) });
    expect(sentAgain.status).toBe(201);
    expect(await named(alice.api, 'Answer lost')).toBe(1);
  });

  it('works for a machine key, whose keys are its own', async () => {
    const made = await alice.api('POST', '/api/auth/api-keys', { body: { name: 'ci', permissions: { Project: ['list', 'create'] } } });
    expect(made.status).toBe(201);
    const withKey = (idempotencyKey: string) =>
      apiClient(backend.url)('POST', '/Projects', { body: { name: 'By key' }, headers: { 'x-api-key': made.body.data.key, ...keyed(idempotencyKey) } });
    const key = randomUUID();
    const first = await withKey(key);
    expect(first.status).toBe(201);
    const again = await withKey(key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    // Alice's own request with the same key is hers, not the machine key's.
    const hers = await alice.api('POST', '/Projects', { body: { name: 'By key' }, headers: keyed(key) });
    expect(hers.headers.get('idempotent-replayed')).toBeNull();
    expect(await named(alice.api, 'By key')).toBe(2);
  });

  it('frees a key past its time: the prune deletes it, and an expired one is given up at once', async () => {
    const key = randomUUID();
    expect((await alice.api('POST', '/Projects', { body: { name: 'Old key' }, headers: keyed(key) })).status).toBe(201);
    const age = (sql: string) => backend.running.db.asOwner((tx) => tx.query(sql, [key]));
    await age(`UPDATE "authstrap_idempotency_key" SET "expiresAt" = now() - interval '1 minute' WHERE "key" = $1`);
    // Expired but not pruned yet: the key is given up, and the request sent again is a new one.
    const expired = await alice.api('POST', '/Projects', { body: { name: 'New use' }, headers: keyed(key) });
    expect(expired.status).toBe(409);
    expect(expired.headers.get('retry-after')).toBe('1');
    expect((await alice.api('POST', '/Projects', { body: { name: 'New use' }, headers: keyed(key) })).status).toBe(201);

    await age(`UPDATE "authstrap_idempotency_key" SET "expiresAt" = now() - interval '1 minute' WHERE "key" = $1`);
    const { rows } = await backend.running.db.query<{ pruned: number }>('SELECT authstrap.prune_idempotency_keys() AS "pruned"');
    expect(rows[0]!.pruned).toBeGreaterThanOrEqual(1);
    const afterPrune = await alice.api('POST', '/Projects', { body: { name: 'Third use' }, headers: keyed(key) });
    expect(afterPrune.status).toBe(201);
    expect(afterPrune.headers.get('idempotent-replayed')).toBeNull();
  });

  it('answers reads and writes without a key as before, and a GET ignores the header', async () => {
    const read = await alice.api('GET', '/Projects', { headers: keyed(randomUUID()) });
    expect(read.status).toBe(200);
    const a = await alice.api('POST', '/Projects', { body: { name: 'Unkeyed' } });
    const b = await alice.api('POST', '/Projects', { body: { name: 'Unkeyed' } });
    expect(a.body.data.id).not.toBe(b.body.data.id);
  });
});

/**
 * The service key's writes (the trusted server: a Better Auth adapter) with an Idempotency-Key:
 * the same semantics, under keys that are the service key's own (no organization).
 */
describe.each(databaseKinds)("Idempotency-Key on the service key's writes on the %s database", (kind) => {
  let backend: TestBackend;
  let service: Api;
  let alice: SignedUp;

  beforeAll(async () => {
    backend = await startBackend(kind);
    service = apiClient(backend.url, { token: serviceApiKey });
    alice = await signUp(backend.url, 'alice.service@example.com');
  });
  afterAll(() => backend?.stop());

  const keyed = (key: string) => ({ 'Idempotency-Key': key });
  const where = (clauses: unknown) => `where=${encodeURIComponent(JSON.stringify(clauses))}`;
  const inOneDay = () => new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString();
  /** How many verifications have this identifier. */
  const verifications = async (identifier: string) => (await service('GET', `/verifications?${where([{ field: 'identifier', value: identifier }])}`)).body.data.length as number;
  const verification = (identifier: string, value = 'v') => ({ identifier, value, expiresAt: inOneDay() });

  it('applies a create once and answers every repeat with the first answer, marked as replayed', async () => {
    const key = randomUUID();
    const body = verification('svc:once');
    const first = await service('POST', '/verifications', { body, headers: keyed(key) });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    for (let repeat = 0; repeat < 3; repeat++) {
      const again = await service('POST', '/verifications', { body, headers: keyed(key) });
      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    }
    expect(await verifications('svc:once')).toBe(1);
  });

  it('replays a user created with its personal organization, an update by filter, a consume-one and a delete', async () => {
    const key = randomUUID();
    const body = { name: 'Keyed', email: 'keyed.service@example.com' };
    const created = await service('POST', '/Users?personalOrganization=true', { body, headers: keyed(key) });
    expect(created.status).toBe(201);
    const again = await service('POST', '/Users?personalOrganization=true', { body, headers: keyed(key) });
    expect(again.body).toEqual(created.body);
    const memberships = await service('GET', `/members?${where([{ field: 'userId', value: created.body.data.id }])}`);
    expect(memberships.body.data).toHaveLength(1);

    await service('POST', '/verifications', { body: verification('svc:many') });
    const renameKey = randomUUID();
    const renamed = await service('PATCH', `/verifications?${where([{ field: 'identifier', value: 'svc:many' }])}`, { body: { value: 'renamed' }, headers: keyed(renameKey) });
    expect(renamed.body.data).toEqual({ count: 1 });
    // A second matching row since: the repeat answers what the first did, and changes nothing.
    await service('POST', '/verifications', { body: verification('svc:many') });
    const renamedAgain = await service('PATCH', `/verifications?${where([{ field: 'identifier', value: 'svc:many' }])}`, { body: { value: 'renamed' }, headers: keyed(renameKey) });
    expect(renamedAgain.body.data).toEqual({ count: 1 });
    expect(renamedAgain.headers.get('idempotent-replayed')).toBe('true');
    const values = (await service('GET', `/verifications?${where([{ field: 'identifier', value: 'svc:many' }])}`)).body.data.map((row: { value: string }) => row.value).sort();
    expect(values).toEqual(['renamed', 'v']);

    // A single-use value consumed, its answer lost: sent again, the same row, not null.
    await service('POST', '/verifications', { body: verification('svc:token', 'secret') });
    const consumeKey = randomUUID();
    const consumed = await service('POST', `/verifications/consume-one?${where([{ field: 'identifier', value: 'svc:token' }])}`, { headers: keyed(consumeKey) });
    expect(consumed.body.data.value).toBe('secret');
    const consumedAgain = await service('POST', `/verifications/consume-one?${where([{ field: 'identifier', value: 'svc:token' }])}`, { headers: keyed(consumeKey) });
    expect(consumedAgain.body).toEqual(consumed.body);
    expect((await service('POST', `/verifications/consume-one?${where([{ field: 'identifier', value: 'svc:token' }])}`)).body.data).toBeNull();

    const deleteKey = randomUUID();
    expect((await service('DELETE', `/Users/${created.body.data.id}`, { headers: keyed(deleteKey) })).status).toBe(204);
    const deletedAgain = await service('DELETE', `/Users/${created.body.data.id}`, { headers: keyed(deleteKey) });
    expect(deletedAgain.status).toBe(204);
    expect(deletedAgain.headers.get('idempotent-replayed')).toBe('true');
  });

  it('refuses the same key with another body (422), and writes nothing', async () => {
    const key = randomUUID();
    expect((await service('POST', '/verifications', { body: verification('svc:first'), headers: keyed(key) })).status).toBe(201);
    const other = await service('POST', '/verifications', { body: verification('svc:second'), headers: keyed(key) });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await verifications('svc:second')).toBe(0);
  });

  it('keeps no failed answer: after a 409 of a taken address the key is free', async () => {
    const key = randomUUID();
    const taken = await service('POST', '/Users', { body: { name: 'Taken', email: alice.user.email }, headers: keyed(key) });
    expect(taken.status).toBe(409);
    const created = await service('POST', '/Users', { body: { name: 'Free', email: 'free.service@example.com' }, headers: keyed(key) });
    expect(created.status).toBe(201);
    expect(created.headers.get('idempotent-replayed')).toBeNull();
  });

  it('applies concurrent repeats once: each waits for the first and gets its answer (or a 409 with Retry-After)', async () => {
    const key = randomUUID();
    const body = verification('svc:concurrent');
    const answers = await Promise.all(Array.from({ length: 6 }, () => service('POST', '/verifications', { body, headers: keyed(key) })));
    expectOneFirstAnswer(answers);
    expect(await verifications('svc:concurrent')).toBe(1);
  });

  it("keeps the service key's keys apart from a user's: the same key never replays the other's answer", async () => {
    const serviceFirst = randomUUID();
    const apart = verification('svc:apart');
    const byService = await service('POST', '/verifications', { body: apart, headers: keyed(serviceFirst) });
    expect(byService.status).toBe(201);
    const byAlice = await alice.api('POST', '/Projects', { body: { name: 'Apart' }, headers: keyed(serviceFirst) });
    expect(byAlice.status).toBe(201);
    expect(byAlice.headers.get('idempotent-replayed')).toBeNull();
    expect(byAlice.body.data.name).toBe('Apart');

    const aliceFirst = randomUUID();
    expect((await alice.api('POST', '/Projects', { body: { name: 'Hers first' }, headers: keyed(aliceFirst) })).status).toBe(201);
    const thenService = await service('POST', '/verifications', { body: verification('svc:after-alice'), headers: keyed(aliceFirst) });
    expect(thenService.status).toBe(201);
    expect(thenService.headers.get('idempotent-replayed')).toBeNull();
    expect(thenService.body.data.identifier).toBe('svc:after-alice');
    // Each repeat gets its own caller's answer.
    expect((await alice.api('POST', '/Projects', { body: { name: 'Apart' }, headers: keyed(serviceFirst) })).body).toEqual(byAlice.body);
    expect((await service('POST', '/verifications', { body: apart, headers: keyed(serviceFirst) })).body).toEqual(byService.body);
  });

  it('applies once a write whose answer was lost (the client hung up) when it is sent again with its key', async () => {
    const key = randomUUID();
    const body = JSON.stringify(verification('svc:lost'));
    const { hostname, port } = new URL(backend.url);
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.end(
          `POST /verifications HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
            `Authorization: Bearer ${serviceApiKey}\r\nIdempotency-Key: ${key}\r\n\r\n${body}`,
          () => resolve(),
        );
      });
      socket.on('error', reject);
    });
    const sentAgain = await service('POST', '/verifications', { body: JSON.parse(body), headers: keyed(key) });
    expect(sentAgain.status).toBe(201);
    expect(await verifications('svc:lost')).toBe(1);
  });

  it('refuses a key inside a transaction (400): a transaction is sent again as a whole', async () => {
    const transaction = randomUUID();
    expect((await service('POST', '/api/service/transactions', { headers: { 'x-authstrap-transaction': transaction } })).status).toBe(201);
    const inside = await service('POST', '/verifications', { body: verification('svc:in-transaction'), headers: { 'x-authstrap-transaction': transaction, ...keyed(randomUUID()) } });
    expect(inside.status).toBe(400);
    expect(inside.body.error.message).toContain('Idempotency-Key');
    await service('POST', '/api/service/transactions/rollback', { headers: { 'x-authstrap-transaction': transaction } });
    expect(await verifications('svc:in-transaction')).toBe(0);
  });
});

describe.runIf(postgresAdminUrl)('a repeat while the first request with its key still runs (PostgreSQL)', () => {
  it('waits for the first for half the statement timeout, then answers 409 with Retry-After, and writes nothing', async () => {
    const backend = await startBackend('postgres', { DATABASE_QUERY_TIMEOUT_MS: '2000' });
    const held = new pg.Client({ connectionString: backend.running.config.databaseUrl });
    try {
      const alice = await signUp(backend.url, 'held@example.com');
      const key = randomUUID();
      // "The first request": a transaction that has taken the key and not ended, as a keyed write does until its answer is kept.
      await held.connect();
      await held.query('BEGIN');
      await held.query(
        `INSERT INTO "authstrap_idempotency_key" ("organizationId", "caller", "key", "fingerprint", "expiresAt") VALUES ($1, $2, $3, 'first', now() + interval '1 hour')`,
        [alice.organizationId, `user:${alice.user.id}`, key],
      );
      const started = performance.now();
      const repeat = await alice.api('POST', '/Projects', { body: { name: 'Waited' }, headers: { 'Idempotency-Key': key } });
      const waitedMs = performance.now() - started;
      expect(repeat.status).toBe(409);
      expect(repeat.headers.get('retry-after')).toBe('1');
      expect(repeat.body.error.message).toContain('still being processed');
      // It waited for the first, half of DATABASE_QUERY_TIMEOUT_MS (1 s); the statement timeout (2 s) would have been a 503.
      expect(waitedMs).toBeGreaterThanOrEqual(950);
      await held.query('ROLLBACK');
      // The first gave the key up: the repeat is now a first use.
      const after = await alice.api('POST', '/Projects', { body: { name: 'Waited' }, headers: { 'Idempotency-Key': key } });
      expect(after.status).toBe(201);
      expect((await alice.api('GET', '/Projects?name=Waited')).body.meta.total).toBe(1);
    } finally {
      await held.end().catch(() => {});
      await backend.stop();
    }
  });
});

describe.runIf(postgresAdminUrl)("a repeat while a generated route's first write with its key still runs (PostgreSQL)", () => {
  it("waits on the key's index for the first's end, then replays the answer the first kept; past half the statement timeout it is a 409", async () => {
    const backend = await startBackend('postgres', { DATABASE_QUERY_TIMEOUT_MS: '2000' });
    const first = new pg.Client({ connectionString: backend.running.config.databaseUrl });
    try {
      const alice = await signUp(backend.url, 'locked@example.com');
      const caller = `user:${alice.user.id}`;
      await first.connect();
      const fingerprint = createHash('sha256').update('POST /Projects\n').update(JSON.stringify({ name: 'Waited for' })).digest('base64url');
      const firstAnswer = '{"success":true,"data":{"id":"first"}}';
      /** "The first request", as a generated route's keyed write runs (keys.ts, keptWithStatement): its key's row and answer, inserted and not committed yet. */
      const firstWrite = (key: string) =>
        first.query(
          `INSERT INTO "authstrap_idempotency_key" ("organizationId", "caller", "key", "fingerprint", "expiresAt", "status", "body") VALUES ($1, $2, $3, $4, now() + interval '1 hour', 201, $5)`,
          [alice.organizationId, caller, key, fingerprint, firstAnswer],
        );

      const key = randomUUID();
      await first.query('BEGIN');
      await firstWrite(key);
      const started = performance.now();
      const repeat = alice.api('POST', '/Projects', { body: { name: 'Waited for' }, headers: { 'Idempotency-Key': key } });
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The first commits: the repeat, which waited, gets the answer it kept.
      await first.query('COMMIT');
      const answer = await repeat;
      expect(performance.now() - started).toBeGreaterThanOrEqual(290);
      expect(answer.status).toBe(201);
      expect(answer.headers.get('idempotent-replayed')).toBe('true');
      expect(answer.body).toEqual(JSON.parse(firstAnswer));
      expect((await alice.api('GET', '/Projects?name=Waited%20for')).body.meta.total).toBe(0);

      // A first that runs past half of DATABASE_QUERY_TIMEOUT_MS (1 s): a 409 with Retry-After, nothing written.
      const stuck = randomUUID();
      await first.query('BEGIN');
      await firstWrite(stuck);
      const waitedFrom = performance.now();
      const refused = await alice.api('POST', '/Projects', { body: { name: 'Stuck' }, headers: { 'Idempotency-Key': stuck } });
      expect(performance.now() - waitedFrom).toBeGreaterThanOrEqual(950);
      expect(refused.status).toBe(409);
      expect(refused.headers.get('retry-after')).toBe('1');
      await first.query('ROLLBACK');
      expect((await alice.api('POST', '/Projects', { body: { name: 'Stuck' }, headers: { 'Idempotency-Key': stuck } })).status).toBe(201);
      expect((await alice.api('GET', '/Projects?name=Stuck')).body.meta.total).toBe(1);
    } finally {
      await first.end().catch(() => {});
      await backend.stop();
    }
  });
});

describe.runIf(postgresAdminUrl)("a key's lookups, however many keys its organization has (PostgreSQL)", () => {
  it("find the key by organization, caller and key in the index's condition, under row-level security", async () => {
    const backend = await startBackend('postgres');
    try {
      const alice = await signUp(backend.url, 'many-keys@example.com');
      const { db } = backend.running;
      const scope = [alice.organizationId, alice.user.id];
      const plans = await db.transaction(async (tx) => {
        await tx.query(`SELECT set_config('authstrap.organization_id', $1, true), set_config('authstrap.user_id', $2, true)`, scope);
        // As the planner chooses once the table has grown: an index scan, whose condition decides how much of the index is read.
        await tx.query('SET LOCAL enable_seqscan = off');
        await tx.query('SET LOCAL enable_bitmapscan = off');
        const explain = async ({ text, params }: { text: string; params: unknown[] }) => (await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${text}`, params)).rows[0]!['QUERY PLAN'][0].Plan;
        return [await explain(storedAnswerStatement(callerOwner, 'a-key'))];
      });
      /** The conditions of the plan's scans of the key index. */
      const conditions = (node: PlanNode): string[] => [...(node['Index Name'] === 'authstrap_idempotency_key_caller_key_idx' ? [node['Index Cond'] ?? ''] : []), ...(node.Plans ?? []).flatMap(conditions)];
      for (const plan of plans) {
        const [condition] = conditions(plan);
        // Without the caller in it, the scan reads every key of the organization (bench/README.md).
        expect(condition).toMatch(/\bcaller = /);
        expect(condition).toMatch(/\bkey = /);
      }
    } finally {
      await backend.stop();
    }
  });
});

interface PlanNode {
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}
