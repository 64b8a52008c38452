import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiClient,
  pooledDatabaseKinds,
  serviceApiKey,
  signUp,
  startBackend,
  type Api,
  type ApiResponse,
  type SignedUp,
  type TestBackend,
} from './support/backend.js';
import { expectNoSecrets, sha256 } from './support/secrets.js';

interface Clause {
  field: unknown;
  operator?: unknown;
  value?: unknown;
  connector?: unknown;
  mode?: unknown;
}

/** `where=<URL-encoded JSON>`, as the Better Auth adapter sends it. */
const where = (clauses: unknown) => `where=${encodeURIComponent(typeof clauses === 'string' ? clauses : JSON.stringify(clauses))}`;
const inOneDay = () => new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString();

// The trusted server's API (`Authorization: Bearer <SERVICE_API_KEY>`), which a Better Auth
// database adapter uses: `where` filters with Better Auth's operators, sort by any field, offset
// paging, counts, update-many and delete-many, secrets and timestamps. None of it for a user.
describe.each(pooledDatabaseKinds)('the service API on the %s database', (kind) => {
  let backend: TestBackend;
  let service: Api;
  let person: SignedUp;

  beforeAll(async () => {
    backend = await startBackend(kind);
    service = apiClient(backend.url, { token: serviceApiKey });
    person = await signUp(backend.url, 'person@example.com');
  });
  afterAll(() => backend?.stop());

  /** Creates Users with the service key; each test uses an e-mail prefix of its own. */
  async function users(prefix: string, rows: Record<string, unknown>[]): Promise<{ id: string; email: string; name: string }[]> {
    const created = [];
    for (const row of rows) {
      const response = await service('POST', '/Users', { body: { name: `${row.email}`.split('@')[0], ...row, email: `${prefix}.${row.email}` } });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      created.push(response.body.data);
    }
    return created;
  }

  /** The e-mail local parts (before the prefix) of the Users a where matches, sorted. */
  async function matching(prefix: string, clauses: Clause[], path = '/Users'): Promise<string[]> {
    const scoped = [{ field: 'email', operator: 'starts_with', value: `${prefix}.` }, ...clauses];
    const response = await service('GET', `${path}?${where(scoped)}&limit=100`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data.map((user: { email: string }) => user.email.slice(prefix.length + 1).split('@')[0]).sort();
  }

  it('filters with every comparison operator, null and lists', async () => {
    await users('ops', [
      { email: 'ada@example.com', name: 'Ada', email_verified: true },
      { email: 'bob@example.com', name: 'Bob', image: 'https://example.com/bob.png' },
      { email: 'cyd@example.com', name: 'Cyd', image: 'https://example.com/cyd.png' },
    ]);
    expect(await matching('ops', [])).toEqual(['ada', 'bob', 'cyd']);
    expect(await matching('ops', [{ field: 'name', value: 'Bob' }])).toEqual(['bob']);
    expect(await matching('ops', [{ field: 'name', operator: 'eq', value: 'Bob' }])).toEqual(['bob']);
    expect(await matching('ops', [{ field: 'name', operator: 'ne', value: 'Bob' }])).toEqual(['ada', 'cyd']);
    expect(await matching('ops', [{ field: 'email_verified', value: true }])).toEqual(['ada']);
    expect(await matching('ops', [{ field: 'email_verified', operator: 'ne', value: true }])).toEqual(['bob', 'cyd']);
    // null with eq / ne: IS NULL / IS NOT NULL.
    expect(await matching('ops', [{ field: 'image', value: null }])).toEqual(['ada']);
    expect(await matching('ops', [{ field: 'image', operator: 'ne', value: null }])).toEqual(['bob', 'cyd']);
    // ne keeps the rows whose value is null.
    expect(await matching('ops', [{ field: 'image', operator: 'ne', value: 'https://example.com/bob.png' }])).toEqual(['ada', 'cyd']);
    expect(await matching('ops', [{ field: 'name', operator: 'in', value: ['Ada', 'Cyd', 'Nobody'] }])).toEqual(['ada', 'cyd']);
    expect(await matching('ops', [{ field: 'name', operator: 'not_in', value: ['Ada', 'Cyd'] }])).toEqual(['bob']);
    expect(await matching('ops', [{ field: 'image', operator: 'not_in', value: ['https://example.com/bob.png'] }])).toEqual(['ada', 'cyd']);
    expect(await matching('ops', [{ field: 'name', operator: 'in', value: [] }])).toEqual([]);
    // Ranges, on text too (Better Auth compares ids and names this way).
    expect(await matching('ops', [{ field: 'name', operator: 'gt', value: 'Ada' }])).toEqual(['bob', 'cyd']);
    expect(await matching('ops', [{ field: 'name', operator: 'gte', value: 'Bob' }])).toEqual(['bob', 'cyd']);
    expect(await matching('ops', [{ field: 'name', operator: 'lt', value: 'Bob' }])).toEqual(['ada']);
    expect(await matching('ops', [{ field: 'name', operator: 'lte', value: 'Bob' }])).toEqual(['ada', 'bob']);
  });

  it('matches contains, starts_with and ends_with literally: % and _ are not wildcards', async () => {
    await users('like', [
      { email: 'pct@example.com', name: '100% sure' },
      { email: 'nopct@example.com', name: '100 x sure' },
      { email: 'under@example.com', name: 'a_b c' },
      { email: 'nounder@example.com', name: 'axb c' },
      { email: 'slash@example.com', name: 'back\\slash' },
    ]);
    expect(await matching('like', [{ field: 'name', operator: 'contains', value: '0%' }])).toEqual(['pct']);
    expect(await matching('like', [{ field: 'name', operator: 'contains', value: '%' }])).toEqual(['pct']);
    expect(await matching('like', [{ field: 'name', operator: 'starts_with', value: 'a_' }])).toEqual(['under']);
    expect(await matching('like', [{ field: 'name', operator: 'ends_with', value: '_b c' }])).toEqual(['under']);
    expect(await matching('like', [{ field: 'name', operator: 'contains', value: 'k\\s' }])).toEqual(['slash']);
    expect(await matching('like', [{ field: 'name', operator: 'starts_with', value: '100' }])).toEqual(['nopct', 'pct']);
    expect(await matching('like', [{ field: 'name', operator: 'ends_with', value: 'sure' }])).toEqual(['nopct', 'pct']);
    // Case matters unless the clause says otherwise.
    expect(await matching('like', [{ field: 'name', operator: 'contains', value: 'SURE' }])).toEqual([]);
  });

  it("compares text case-insensitively with mode 'insensitive'", async () => {
    await users('case', [
      { email: 'grace@example.com', name: 'Grace Hopper' },
      { email: 'alan@example.com', name: 'Alan Turing' },
    ]);
    const insensitive = { mode: 'insensitive' };
    expect(await matching('case', [{ field: 'name', value: 'grace hopper' }])).toEqual([]);
    expect(await matching('case', [{ field: 'name', value: 'grace hopper', ...insensitive }])).toEqual(['grace']);
    expect(await matching('case', [{ field: 'name', operator: 'ne', value: 'GRACE HOPPER', ...insensitive }])).toEqual(['alan']);
    expect(await matching('case', [{ field: 'name', operator: 'in', value: ['ALAN TURING', 'nobody'], ...insensitive }])).toEqual(['alan']);
    expect(await matching('case', [{ field: 'name', operator: 'not_in', value: ['ALAN TURING'], ...insensitive }])).toEqual(['grace']);
    expect(await matching('case', [{ field: 'name', operator: 'contains', value: 'HOP', ...insensitive }])).toEqual(['grace']);
    expect(await matching('case', [{ field: 'name', operator: 'starts_with', value: 'alan', ...insensitive }])).toEqual(['alan']);
    expect(await matching('case', [{ field: 'name', operator: 'ends_with', value: 'TURING', ...insensitive }])).toEqual(['alan']);
    expect(await matching('case', [{ field: 'name', value: 'Grace Hopper', mode: 'sensitive' }])).toEqual(['grace']);
  });

  it('groups connectors as Better Auth does: every AND clause, and one of the OR clauses', async () => {
    await users('conn', [
      { email: 'ann@example.com', name: 'Ann', email_verified: true },
      { email: 'ben@example.com', name: 'Ben', email_verified: false },
      { email: 'col@example.com', name: 'Col', email_verified: true },
      { email: 'dee@example.com', name: 'Dee', email_verified: false },
    ]);
    const or = (value: string) => ({ field: 'name', value, connector: 'OR' });
    // prefix AND (Ann OR Ben)
    expect(await matching('conn', [or('Ann'), or('Ben')])).toEqual(['ann', 'ben']);
    // prefix AND verified AND (Ann OR Ben), wherever the AND clause stands
    expect(await matching('conn', [or('Ann'), or('Ben'), { field: 'email_verified', value: true }])).toEqual(['ann']);
    expect(await matching('conn', [{ field: 'email_verified', value: true, connector: 'AND' }, or('Ben'), or('Col')])).toEqual(['col']);
    // A single OR clause must hold like any other.
    expect(await matching('conn', [or('Dee')])).toEqual(['dee']);
    // Two AND clauses on one field: nothing is both.
    expect(await matching('conn', [{ field: 'name', value: 'Ann' }, { field: 'name', value: 'Ben' }])).toEqual([]);
    // Only OR clauses, nothing else: the prefix clause of `matching` is left out here.
    const onlyOr = await service('GET', `/Users?${where([{ field: 'email', value: 'conn.ann@example.com', connector: 'OR' }, { field: 'email', value: 'conn.dee@example.com', connector: 'OR' }])}`);
    expect(onlyOr.body.data.map((user: { name: string }) => user.name).sort()).toEqual(['Ann', 'Dee']);
  });

  it('compares dates at millisecond precision: a row is found by the timestamp the API gave out', async () => {
    // now() keeps microseconds; the API answers with milliseconds.
    const created = await service('POST', '/verifications', { body: { identifier: 'precision:a', value: 'v', expiresAt: inOneDay() } });
    expect(created.status).toBe(201);
    const { id, createdAt, expiresAt } = created.body.data;
    const byDate = async (clauses: Clause[]) =>
      (await service('GET', `/verifications?${where([{ field: 'identifier', value: 'precision:a' }, ...clauses])}`)).body.data.map((row: { id: string }) => row.id);
    expect(await byDate([{ field: 'createdAt', value: createdAt }])).toEqual([id]);
    expect(await byDate([{ field: 'createdAt', operator: 'in', value: [createdAt] }])).toEqual([id]);
    expect(await byDate([{ field: 'createdAt', operator: 'lte', value: createdAt }])).toEqual([id]);
    expect(await byDate([{ field: 'createdAt', operator: 'gte', value: createdAt }])).toEqual([id]);
    expect(await byDate([{ field: 'createdAt', operator: 'gt', value: createdAt }])).toEqual([]);
    expect(await byDate([{ field: 'createdAt', operator: 'lt', value: createdAt }])).toEqual([]);
    expect(await byDate([{ field: 'createdAt', operator: 'ne', value: createdAt }])).toEqual([]);
    expect(await byDate([{ field: 'expiresAt', value: expiresAt }])).toEqual([id]);

    // Stored with microseconds (as PostgreSQL's now() stores them), read and found in milliseconds.
    const micro = await service('POST', '/verifications', {
      body: { identifier: 'precision:micro', value: 'v', expiresAt: '2032-01-01T00:00:00.123456Z', createdAt: '2020-06-07T08:09:10.987654Z' },
    });
    expect(micro.body.data).toMatchObject({ expiresAt: '2032-01-01T00:00:00.123Z', createdAt: '2020-06-07T08:09:10.987Z' });
    const microIds = async (clauses: Clause[]) =>
      (await service('GET', `/verifications?${where([{ field: 'identifier', value: 'precision:micro' }, ...clauses])}`)).body.data.map((row: { id: string }) => row.id);
    expect(await microIds([{ field: 'expiresAt', value: '2032-01-01T00:00:00.123Z' }])).toEqual([micro.body.data.id]);
    expect(await microIds([{ field: 'createdAt', value: micro.body.data.createdAt }])).toEqual([micro.body.data.id]);
    expect(await microIds([{ field: 'expiresAt', operator: 'gt', value: '2032-01-01T00:00:00.123Z' }])).toEqual([]);
    expect(await microIds([{ field: 'expiresAt', operator: 'lte', value: '2032-01-01T00:00:00.123Z' }])).toEqual([micro.body.data.id]);

    // A row created with a given ISO date is found by eq on that same string, and by an offset form of it.
    const chosen = '2031-02-03T04:05:06.789Z';
    const dated = await service('POST', '/verifications', { body: { identifier: 'precision:b', value: 'v', expiresAt: chosen } });
    const found = await service('GET', `/verifications?${where([{ field: 'expiresAt', value: chosen }])}`);
    expect(found.body.data.map((row: { id: string }) => row.id)).toEqual([dated.body.data.id]);
    const offsetForm = await service('GET', `/verifications?${where([{ field: 'expiresAt', value: '2031-02-03T06:05:06.789+02:00' }])}`);
    expect(offsetForm.body.data.map((row: { id: string }) => row.id)).toEqual([dated.body.data.id]);
    const oneMsLater = await service('GET', `/verifications?${where([{ field: 'expiresAt', value: '2031-02-03T04:05:06.790Z' }])}`);
    expect(oneMsLater.body.data).toEqual([]);
  });

  it('sorts by any field, pages by offset, and counts a filter in meta.total', async () => {
    const names = ['Eve', 'Ann', 'Dan', 'Bea', 'Cal'];
    await users('page', names.map((name) => ({ email: `${name.toLowerCase()}@example.com`, name })));
    const scoped = where([{ field: 'email', operator: 'starts_with', value: 'page.' }]);
    const page = async (query: string) => {
      const response = await service('GET', `/Users?${scoped}&${query}`);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response.body;
    };
    expect((await page('sort=name&order=asc&limit=100')).data.map((user: { name: string }) => user.name)).toEqual(['Ann', 'Bea', 'Cal', 'Dan', 'Eve']);
    expect((await page('sort=email&order=desc&limit=2&offset=1')).data.map((user: { name: string }) => user.name)).toEqual(['Dan', 'Cal']);
    // Offset paging visits every row once, and an offset need not be a multiple of the limit.
    const seen: string[] = [];
    for (let offset = 0; offset < 5; offset += 2) seen.push(...(await page(`sort=name&order=asc&limit=2&offset=${offset}`)).data.map((user: { name: string }) => user.name));
    expect(seen).toEqual(['Ann', 'Bea', 'Cal', 'Dan', 'Eve']);
    expect((await page('sort=name&order=asc&limit=2&offset=3')).data.map((user: { name: string }) => user.name)).toEqual(['Dan', 'Eve']);
    expect((await page('sort=name&order=asc&offset=5')).data).toEqual([]);
    // A count: limit=1 and meta.total.
    const counted = await page('limit=1');
    expect(counted.data).toHaveLength(1);
    expect(counted.meta).toMatchObject({ total: 5, limit: 1 });
    // The limit is still capped at 100.
    expect((await page('limit=1000&offset=0')).meta.limit).toBe(100);
    // Secret fields sort too, for the service key.
    for (const value of ['s-2', 's-1', 's-3']) await service('POST', '/verifications', { body: { identifier: 'sorted', value, expiresAt: inOneDay() } });
    const sorted = await service('GET', `/verifications?${where([{ field: 'identifier', value: 'sorted' }])}&sort=value&order=asc`);
    expect(sorted.body.data.map((row: { value: string }) => row.value)).toEqual(['s-1', 's-2', 's-3']);
    expect(sorted.body.meta.total).toBe(3);
  });

  it('updates and deletes by filter, answering the count and leaving other rows alone', async () => {
    const make = (identifier: string, value: string) => service('POST', '/verifications', { body: { identifier, value, expiresAt: inOneDay() } });
    for (const [identifier, value] of [['bulk:a', 'one'], ['bulk:b', 'two'], ['keep:c', 'three']] as const) expect((await make(identifier, value)).status).toBe(201);
    const bulk = where([{ field: 'identifier', operator: 'starts_with', value: 'bulk:' }]);
    const values = async () =>
      Object.fromEntries(
        (await service('GET', `/verifications?${where([{ field: 'identifier', operator: 'in', value: ['bulk:a', 'bulk:b', 'keep:c'] }])}`)).body.data.map(
          (row: { identifier: string; value: string }) => [row.identifier, row.value],
        ),
      );

    const updated = await service('PATCH', `/verifications?${bulk}`, { body: { value: 'changed' } });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({ success: true, data: { count: 2 } });
    expect(await values()).toEqual({ 'bulk:a': 'changed', 'bulk:b': 'changed', 'keep:c': 'three' });
    const none = await service('PATCH', `/verifications?${where([{ field: 'identifier', value: 'bulk:none' }])}`, { body: { value: 'x' } });
    expect(none.body.data).toEqual({ count: 0 });
    // The body is checked like any update's.
    expect((await service('PATCH', `/verifications?${bulk}`, { body: { value: 5 } })).status).toBe(422);
    expect((await service('PATCH', `/verifications?${bulk}`, { body: { identifier: 'x', nope: 1 } })).status).toBe(422);

    // No where, or an empty one, is never a whole-table write.
    for (const query of ['', `?${where([])}`, '?where=', '?other=1', '?all=false', '?all=1', `?all=true&${bulk}`]) {
      const patch = await service('PATCH', `/verifications${query}`, { body: { value: 'everything' } });
      expect(patch.status, query).toBe(400);
      const remove = await service('DELETE', `/verifications${query}`);
      expect(remove.status, query).toBe(400);
    }
    expect(await values()).toEqual({ 'bulk:a': 'changed', 'bulk:b': 'changed', 'keep:c': 'three' });

    const deleted = await service('DELETE', `/verifications?${bulk}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true, data: { count: 2 } });
    expect(await values()).toEqual({ 'keep:c': 'three' });
    expect((await service('DELETE', `/verifications?${bulk}`)).body.data).toEqual({ count: 0 });
  });

  it('writes every record only when asked in so many words: all=true', async () => {
    for (const identifier of ['all:a', 'all:b']) {
      expect((await service('POST', '/verifications', { body: { identifier, value: 'v', expiresAt: inOneDay() } })).status).toBe(201);
    }
    const total = (await service('GET', '/verifications?limit=1')).body.meta.total;
    expect(total).toBeGreaterThanOrEqual(2);
    const patched = await service('PATCH', '/verifications?all=true', { body: { value: 'everything' } });
    expect(patched.body.data).toEqual({ count: total });
    const removed = await service('DELETE', '/verifications?all=true');
    expect(removed.body.data).toEqual({ count: total });
    expect((await service('GET', '/verifications?limit=1')).body.meta.total).toBe(0);
    // Not for a user.
    expect((await person.api('DELETE', '/sessions?all=true')).status).toBe(403);
    expect((await person.api('GET', '/sessions')).body.meta.total).toBeGreaterThan(0);
  });

  it('updates Users and memberships by filter, across organizations', async () => {
    const [ann, ben] = await users('many', [{ email: 'ann@example.com', name: 'Ann' }, { email: 'ben@example.com', name: 'Ben' }]);
    const verified = await service('PATCH', `/Users?${where([{ field: 'id', operator: 'in', value: [ann!.id, ben!.id] }])}`, { body: { email_verified: true } });
    expect(verified.body.data).toEqual({ count: 2 });
    expect(await matching('many', [{ field: 'email_verified', value: true }])).toEqual(['ann', 'ben']);
    expect((await service('GET', `/Users/${person.user.id}`)).body.data.email_verified).toBe(false);

    // The service key manages memberships of any organization, without an organization header.
    const other = await signUp(backend.url, 'other-org@example.com');
    const joined = await service('POST', '/members', { body: { organizationId: other.organizationId, userId: ann!.id, role: 'member' } });
    expect(joined.status, JSON.stringify(joined.body)).toBe(201);
    expect(joined.body.data).toMatchObject({ organizationId: other.organizationId, userId: ann!.id, role: 'member' });
    const inOther = where([{ field: 'organizationId', value: other.organizationId }]);
    const listed = await service('GET', `/members?${inOther}&sort=role&order=asc`);
    expect(listed.body.data.map((row: { userId: string; role: string }) => [row.userId, row.role])).toEqual([
      [ann!.id, 'member'],
      [other.user.id, 'owner'],
    ]);
    const promoted = await service('PATCH', `/members?${where([{ field: 'organizationId', value: other.organizationId }, { field: 'role', value: 'member' }])}`, {
      body: { role: 'admin' },
    });
    expect(promoted.body.data).toEqual({ count: 1 });
    // The other organization's owner, and the first person's organization, are untouched.
    expect((await other.api('GET', '/members')).body.data.map((row: { role: string }) => row.role).sort()).toEqual(['admin', 'owner']);
    expect((await person.api('GET', '/members')).body.data).toHaveLength(1);
    const removed = await service('DELETE', `/members?${where([{ field: 'userId', value: ann!.id }])}`);
    expect(removed.body.data).toEqual({ count: 1 });
    expect((await other.api('GET', '/members')).body.meta.total).toBe(1);
  });

  it('reads and writes the secret columns for the service key, and never shows them to a user', async () => {
    const secret = randomBytes(32).toString('base64url');
    const session = await service('POST', '/sessions', { body: { userId: person.user.id, token: sha256(secret), expiresAt: inOneDay() } });
    expect(session.status).toBe(201);
    expect(session.body.data.token).toBe(sha256(secret));
    expect((await service('GET', `/sessions/${session.body.data.id}`)).body.data.token).toBe(sha256(secret));
    // Better Auth finds a session by its token.
    const byToken = await service('GET', `/sessions?${where([{ field: 'token', value: sha256(secret) }])}`);
    expect(byToken.body.data.map((row: { id: string; token: string }) => [row.id, row.token])).toEqual([[session.body.data.id, sha256(secret)]]);

    const account = await service('POST', '/accounts', {
      body: { userId: person.user.id, accountId: 'gh-1', providerId: 'github', accessToken: 'gho_secret_access', refreshToken: 'ghr_secret', idToken: 'id.secret' },
    });
    expect(account.body.data).toMatchObject({ accessToken: 'gho_secret_access', refreshToken: 'ghr_secret', idToken: 'id.secret', password: null });
    const rotated = await service('PATCH', `/accounts/${account.body.data.id}`, { body: { accessToken: 'gho_rotated' } });
    expect(rotated.body.data.accessToken).toBe('gho_rotated');
    const listed = await service('GET', `/accounts?${where([{ field: 'userId', value: person.user.id }])}&sort=providerId&order=asc`);
    expect(listed.body.data.map((row: { providerId: string; password: string | null }) => [row.providerId, row.password?.startsWith('$2b$') ?? null])).toEqual([
      ['credential', true],
      ['github', null],
    ]);
    const verification = await service('POST', '/verifications', { body: { identifier: 'secret-check', value: 'v-secret-value', expiresAt: inOneDay() } });
    expect(verification.body.data.value).toBe('v-secret-value');

    // The user whose rows these are sees neither hashes nor tokens, in lists or alone.
    const secrets = ['gho_rotated', 'ghr_secret', 'id.secret', sha256(secret), sha256(person.token)];
    expectNoSecrets(await person.api('GET', '/accounts'), secrets);
    expectNoSecrets(await person.api('GET', `/accounts/${account.body.data.id}`), secrets);
    expectNoSecrets(await person.api('GET', '/sessions'), secrets);
    expectNoSecrets(await person.api('GET', `/sessions/${session.body.data.id}`), secrets);
    // Nor can a user filter or sort by one, which would reveal it a character at a time.
    for (const query of [`token=${sha256(secret)}`, 'token[ne]=x', 'sort=token', 'sort=password']) {
      const path = query.includes('password') ? '/accounts' : '/sessions';
      const response = await person.api('GET', `${path}?${query}`);
      expect(response.status, query).toBe(400);
    }
  });

  it('creates a user with an organization of their own when asked (?personalOrganization=true), in one transaction', async () => {
    const plain = await service('POST', '/Users', { body: { email: 'plain-service@example.com', name: 'Plain' } });
    expect(plain.status).toBe(201);
    expect((await service('GET', `/members?userId=${plain.body.data.id}`)).body.data).toEqual([]);

    const owner = await service('POST', '/Users?personalOrganization=true', { body: { email: 'owning-service@example.com', name: 'Owning' } });
    expect(owner.status).toBe(201);
    const memberships = (await service('GET', `/members?userId=${owner.body.data.id}`)).body.data;
    expect(memberships).toEqual([expect.objectContaining({ role: 'owner' })]);
    expect((await service('GET', `/Organizations/${memberships[0].organizationId}`)).body.data.name).toBe("Owning's organization");

    // All or nothing: a user that cannot be created leaves no organization behind.
    const organizationsBefore = (await service('GET', '/Organizations?limit=1')).body.meta.total;
    const duplicate = await service('POST', '/Users?personalOrganization=true', { body: { email: 'owning-service@example.com', name: 'Twin' } });
    expect(duplicate.status).toBe(409);
    expect((await service('GET', '/Organizations?limit=1')).body.meta.total).toBe(organizationsBefore);
  });

  it('lets the service key set createdAt and updatedAt; a user may not', async () => {
    const createdAt = '2020-01-02T03:04:05.006Z';
    const updatedAt = '2021-01-02T03:04:05.006Z';
    const created = await service('POST', '/Organizations', { body: { name: 'Copied Org', slug: `copied-${randomUUID()}`, createdAt, updatedAt } });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ createdAt, updatedAt });
    const later = '2022-05-06T07:08:09.010Z';
    const patched = await service('PATCH', `/Organizations/${created.body.data.id}`, { body: { updatedAt: later } });
    expect(patched.body.data).toMatchObject({ createdAt, updatedAt: later });
    // Without one, an update still moves updatedAt to now.
    const renamed = await service('PATCH', `/Organizations/${created.body.data.id}`, { body: { name: 'Renamed Org' } });
    expect(Date.parse(renamed.body.data.updatedAt)).toBeGreaterThan(Date.parse(later));
    const many = await service('PATCH', `/Organizations?${where([{ field: 'id', value: created.body.data.id }])}`, { body: { createdAt: later } });
    expect(many.body.data).toEqual({ count: 1 });
    expect((await service('GET', `/Organizations/${created.body.data.id}`)).body.data.createdAt).toBe(later);
    const user = await service('POST', '/Users', { body: { email: 'dated@example.com', name: 'Dated', createdAt } });
    expect(user.body.data.createdAt).toBe(createdAt);

    // A user's bodies refuse the timestamps as unknown fields.
    const own = await person.api('POST', '/Organizations', { body: { name: 'Mine', slug: `mine-${randomUUID()}`, createdAt } });
    expect(own.status).toBe(422);
    expect(own.body.error.details).toHaveProperty('createdAt');
    const renameOwn = await person.api('PATCH', `/Organizations/${person.organizationId}`, { body: { updatedAt } });
    expect(renameOwn.status).toBe(422);
    const self = await person.api('PATCH', `/Users/${person.user.id}`, { body: { createdAt } });
    expect(self.status).toBe(422);
  });

  it('embeds related records with join: one-to-one as an object, one-to-many as an array, in one request', async () => {
    const [owner] = await users('join', [{ email: 'owner@example.com' }]);
    const lonely = (await service('POST', '/Users', { body: { email: `join.lonely-${randomUUID()}@example.com`, name: 'Lonely' } })).body.data;
    const token = randomBytes(16).toString('hex').slice(0, 32);
    await service('POST', '/sessions', { body: { userId: owner!.id, token, expiresAt: inOneDay() } });
    for (const providerId of ['credential', 'github']) {
      await service('POST', '/accounts', { body: { userId: owner!.id, accountId: `${providerId}-${owner!.id}`, providerId, password: providerId === 'credential' ? '$2b$04$hash' : null } });
    }
    const join = (joins: unknown) => `join=${encodeURIComponent(JSON.stringify(joins))}`;

    const session = await service('GET', `/sessions?${where([{ field: 'token', value: token }])}&limit=1&${join({ user: { entity: 'User', from: 'userId', to: 'id', relation: 'one-to-one' } })}`);
    expect(session.status, JSON.stringify(session.body)).toBe(200);
    const [row] = session.body.data;
    expect(row).toMatchObject({ token, userId: owner!.id, user: { id: owner!.id, email: owner!.email, email_verified: false } });
    // Embedded timestamps are formatted as the row's own.
    expect(row.user.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(row.user.createdAt).toBe((await service('GET', `/Users/${owner!.id}`)).body.data.createdAt);

    const withAccounts = await service('GET', `/Users?${where([{ field: 'id', operator: 'in', value: [owner!.id, lonely.id] }])}&sort=email&order=desc&${join({ account: { entity: 'account', from: 'id', to: 'userId' } })}`);
    const byId = Object.fromEntries(withAccounts.body.data.map((user: { id: string }) => [user.id, user]));
    // The trusted server reads the secret columns of embedded records too.
    expect(byId[owner!.id].account.map((account: { providerId: string }) => account.providerId).sort()).toEqual(['credential', 'github']);
    expect(byId[owner!.id].account.find((account: { providerId: string }) => account.providerId === 'credential').password).toBe('$2b$04$hash');
    expect(byId[lonely.id].account).toEqual([]);
    const limited = await service('GET', `/Users/?${where([{ field: 'id', value: owner!.id }])}&${join({ account: { entity: 'account', from: 'id', to: 'userId', limit: 1 } })}`);
    expect(limited.body.data[0].account).toHaveLength(1);
    // A one-to-one join with nothing to embed is null.
    const orphan = await service('GET', `/Users?${where([{ field: 'id', value: lonely.id }])}&${join({ session: { entity: 'session', from: 'id', to: 'userId', relation: 'one-to-one' } })}`);
    expect(orphan.body.data[0].session).toBeNull();
  });

  it('refuses a join it cannot do with a 400 naming it, and a user any join', async () => {
    const join = (joins: string) => `/sessions?join=${encodeURIComponent(joins)}`;
    const refused: [string, string][] = [
      ['not JSON', '{user:'],
      ['an array', '[{"entity":"User"}]'],
      ['an unknown entity', '{"user":{"entity":"Project","from":"userId","to":"id"}}'],
      ['an unknown from field', '{"user":{"entity":"User","from":"nope","to":"id"}}'],
      ['an unknown to field', '{"user":{"entity":"User","from":"userId","to":"nope"}}'],
      ['SQL in a field', '{"user":{"entity":"User","from":"userId\\" OR 1=1 --","to":"id"}}'],
      ['SQL in the name', '{"u\\" FROM x; --":{"entity":"User","from":"userId","to":"id"}}'],
      ['a name that is a field', '{"token":{"entity":"User","from":"userId","to":"id"}}'],
      ['a bad relation', '{"user":{"entity":"User","from":"userId","to":"id","relation":"many-to-many"}}'],
      ['a limit of 0', '{"user":{"entity":"User","from":"userId","to":"id","limit":0}}'],
      ['a limit of 101', '{"user":{"entity":"User","from":"userId","to":"id","limit":101}}'],
      ['an unknown key', '{"user":{"entity":"User","from":"userId","to":"id","where":"1=1"}}'],
      ['six joins', JSON.stringify(Object.fromEntries(Array.from({ length: 6 }, (_, index) => [`u${index}`, { entity: 'User', from: 'userId', to: 'id' }])))],
    ];
    for (const [name, raw] of refused) {
      const response = await service('GET', join(raw));
      expect(response.status, `${name}: ${JSON.stringify(response.body)}`).toBe(400);
      expect(response.body.error.details, name).toHaveProperty('join');
    }
    const byUser = await person.api('GET', join('{"user":{"entity":"User","from":"userId","to":"id"}}'));
    expect(byUser.status).toBe(403);
  });

  it('refuses a user session every part of it, and changes nothing', async () => {
    const before = (await service('GET', '/Users?limit=1')).body.meta.total;
    const filter = where([{ field: 'email', value: person.user.email }]);
    const attempts: [string, string, unknown?][] = [
      ['GET', `/Users?${filter}`],
      ['GET', '/Users?offset=0'],
      ['GET', `/accounts?${filter.replace('email', 'userId')}`],
      ['GET', '/sessions?offset=1'],
      ['GET', `/members?${where([{ field: 'role', value: 'owner' }])}`],
      ['GET', `/Organizations?${where([{ field: 'name', value: 'x' }])}`],
      ['PATCH', `/Users?${filter}`, { name: 'Everyone' }],
      ['DELETE', `/Users?${filter}`],
      ['PATCH', `/accounts?${where([{ field: 'providerId', value: 'credential' }])}`, { password: null }],
      ['DELETE', `/sessions?${where([{ field: 'userId', value: person.user.id }])}`],
      ['PATCH', `/Organizations?${where([{ field: 'id', value: person.organizationId }])}`, { name: 'Taken' }],
      ['DELETE', `/Organizations?${where([{ field: 'id', value: person.organizationId }])}`],
      ['PATCH', `/members?${where([{ field: 'role', value: 'owner' }])}`, { role: 'member' }],
      ['DELETE', `/members?${where([{ field: 'role', value: 'owner' }])}`],
      ['GET', `/verifications?${where([{ field: 'identifier', value: 'x' }])}`],
      ['DELETE', `/verifications?${where([{ field: 'identifier', value: 'x' }])}`],
    ];
    for (const [method, path, body] of attempts) {
      const response = await person.api(method, path, { body });
      expect([400, 403], `${method} ${path}: ${response.status}`).toContain(response.status);
      expect(response.body.success).toBe(false);
    }
    expect((await service('GET', '/Users?limit=1')).body.meta.total).toBe(before);
    expect((await person.api('GET', '/members')).body.data).toMatchObject([{ userId: person.user.id, role: 'owner' }]);
    expect((await person.api('GET', `/Organizations/${person.organizationId}`)).status).toBe(200);
    expect((await person.api('GET', '/sessions')).body.meta.total).toBeGreaterThan(0);
  });

  it('keeps the organization filter for users: their lists show their organization only', async () => {
    const outsider = await signUp(backend.url, `outsider-${randomUUID()}@example.com`);
    // The service key sees both organizations' members; each user only their own.
    const all = await service('GET', `/members?${where([{ field: 'organizationId', operator: 'in', value: [person.organizationId, outsider.organizationId] }])}`);
    expect(all.body.meta.total).toBe(2);
    for (const someone of [person, outsider]) {
      const members = await someone.api('GET', '/members?limit=100');
      expect(members.body.data.map((row: { organizationId: string }) => row.organizationId)).toEqual([someone.organizationId]);
      const people = await someone.api('GET', '/Users?limit=100');
      expect(people.body.data.map((row: { id: string }) => row.id)).toEqual([someone.user.id]);
    }
  });

  it('lists where, offset and the writes by filter in the OpenAPI document, for these entities only', async () => {
    const document = (await person.api('GET', '/api/docs/openapi.json')).body;
    const parameters = (path: string, method: string) =>
      document.paths[path][method].parameters.map((parameter: { name: string; required?: boolean }) => [parameter.name, parameter.required ?? false]);
    for (const path of ['/Users', '/accounts', '/sessions', '/verifications', '/Organizations', '/members']) {
      expect(parameters(path, 'get'), path).toEqual(expect.arrayContaining([['where', false], ['offset', false], ['join', false]]));
      for (const method of ['patch', 'delete']) {
        // The writes by filter take an Idempotency-Key, as every write of the service key does.
        expect(parameters(path, method), `${method} ${path}`).toEqual([['where', false], ['all', false], ['Idempotency-Key', false]]);
        expect(Object.keys(document.paths[path][method].responses), `${method} ${path}`).toEqual(expect.arrayContaining(['200', '400', '403']));
      }
    }
    expect(document.paths['/Projects'].get.parameters.map((parameter: { name: string }) => parameter.name)).not.toContain('where');
    expect(document.paths['/Projects'].get.parameters.map((parameter: { name: string }) => parameter.name)).not.toContain('join');
    expect(document.paths['/Projects'].patch).toBeUndefined();
    // The secret fields are no filter or sort a user could use.
    const sessionParameters = document.paths['/sessions'].get.parameters as { name: string; schema: { enum?: string[] } }[];
    expect(sessionParameters.map((parameter) => parameter.name)).not.toContain('token');
    expect(sessionParameters.find((parameter) => parameter.name === 'sort')!.schema.enum).not.toContain('token');
    expect(document.paths['/sessions'].get.description).toContain('token');
  });

  it('keeps an e-mail address as the service key writes it, unique whatever its case', async () => {
    const created = await service('POST', '/Users', { body: { email: 'Mixed.Case@Example.COM', name: 'Mixed' } });
    expect(created.status).toBe(201);
    expect(created.body.data.email).toBe('Mixed.Case@Example.COM');
    const again = await service('POST', '/Users', { body: { email: 'mixed.case@example.com', name: 'Again' } });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toBe('A record with the same email already exists');
    // The backend's own sign-up lowercases, and finds the address taken too.
    const signUp = await apiClient(backend.url)('POST', '/api/auth/sign-up/email', { body: { email: 'MIXED.case@example.com', name: 'Third', password: 'correct horse battery' } });
    expect(signUp.status).toBe(409);
    // A case-sensitive where tells the two apart; an insensitive one does not.
    expect((await service('GET', `/Users?${where([{ field: 'email', value: 'mixed.case@example.com' }])}`)).body.data).toEqual([]);
    expect((await service('GET', `/Users?${where([{ field: 'email', value: 'mixed.case@example.com', mode: 'insensitive' }])}`)).body.data).toHaveLength(1);
  });

  it('consumes one record by filter, and refuses increments of fields that are not numbers', async () => {
    const [user] = await users('consume', [{ email: 'once@example.com' }]);
    const byId = where([{ field: 'id', value: user!.id }]);
    const consumed = await service('POST', `/Users/consume-one?${byId}`);
    expect(consumed.status).toBe(200);
    expect(consumed.body.data).toMatchObject({ id: user!.id, email: user!.email });
    expect((await service('POST', `/Users/consume-one?${byId}`)).body.data).toBeNull();
    // A write by filter: a where (or all=true) is required.
    expect((await service('POST', '/Users/consume-one')).status).toBe(400);

    const [other] = await users('increment', [{ email: 'count@example.com' }]);
    const otherId = where([{ field: 'id', value: other!.id }]);
    const notANumber = await service('POST', `/Users/increment-one?${otherId}`, { body: { increment: { name: 1 } } });
    expect(notANumber.status).toBe(422);
    expect(notANumber.body.error.details).toEqual({ 'increment.name': 'User has no number fields' });
    expect((await service('POST', `/Users/increment-one?${otherId}`, { body: {} })).status).toBe(422);
    const set = await service('POST', `/Users/increment-one?${otherId}`, { body: { set: { name: 'Renamed' } } });
    expect(set.body.data).toMatchObject({ id: other!.id, name: 'Renamed' });
    // Not for a user.
    expect((await person.api('POST', `/Users/consume-one?${byId}`)).status).toBeGreaterThanOrEqual(400);
    expect((await person.api('POST', `/Users/consume-one?${byId}`)).status).toBeLessThan(500);
  });

  describe('hostile where values get a 400, never a 500', () => {
    const hostile: [string, string][] = [
      ['not JSON', '{field:'],
      ['an object', '{"field":"name","value":"x"}'],
      ['a string', '"name"'],
      ['null', 'null'],
      ['a number', '42'],
      ['a clause that is an array', '[["name","x"]]'],
      ['a clause that is null', '[null]'],
      // Empty clauses, so that the URL stays under Node's 16 KB header limit: the count is checked first.
      ['1000 clauses', JSON.stringify(Array.from({ length: 1000 }, () => ({})))],
      ['51 clauses', JSON.stringify(Array.from({ length: 51 }, () => ({ field: 'name', value: 'x' })))],
      ['a nested object as value', JSON.stringify([{ field: 'name', value: { $gt: '' } }])],
      ['an array as value of eq', JSON.stringify([{ field: 'name', value: ['x'] }])],
      ['a nested array in in', JSON.stringify([{ field: 'name', operator: 'in', value: [['x']] }])],
      ['in without an array', JSON.stringify([{ field: 'name', operator: 'in', value: 'x' }])],
      ['in with 101 values', JSON.stringify([{ field: 'name', operator: 'in', value: Array.from({ length: 101 }, (_, index) => `n${index}`) }])],
      ['in with a null', JSON.stringify([{ field: 'name', operator: 'in', value: [null] }])],
      ['SQL in a field name', JSON.stringify([{ field: 'name" = name OR 1=1 --', value: 'x' }])],
      ['an unknown field', JSON.stringify([{ field: 'nmae', value: 'x' }])],
      ['a field that is not a string', JSON.stringify([{ field: 1, value: 'x' }])],
      ['a missing field', JSON.stringify([{ value: 'x' }])],
      ['a prototype field', JSON.stringify([{ field: '__proto__', value: 'x' }])],
      ['an unknown operator', JSON.stringify([{ field: 'name', operator: 'like', value: 'x' }])],
      ['SQL in an operator', JSON.stringify([{ field: 'name', operator: '= 1 OR 1=1 --', value: 'x' }])],
      ['contains on a boolean', JSON.stringify([{ field: 'email_verified', operator: 'contains', value: 'tr' }])],
      ['a range on a boolean', JSON.stringify([{ field: 'email_verified', operator: 'gt', value: false }])],
      ['a string for a boolean', JSON.stringify([{ field: 'email_verified', value: 'true' }])],
      ['a number for text', JSON.stringify([{ field: 'name', value: 5 }])],
      ['not a date', JSON.stringify([{ field: 'createdAt', value: 'yesterday' }])],
      ['a number for a date', JSON.stringify([{ field: 'createdAt', operator: 'gt', value: 0 }])],
      ['not a uuid', JSON.stringify([{ field: 'id', value: "1' OR '1'='1" }])],
      ['null with a range', JSON.stringify([{ field: 'createdAt', operator: 'lt', value: null }])],
      ['contains with null', JSON.stringify([{ field: 'name', operator: 'contains', value: null }])],
      ['an unknown connector', JSON.stringify([{ field: 'name', value: 'x', connector: 'XOR' }])],
      ['a connector that is an object', JSON.stringify([{ field: 'name', value: 'x', connector: { or: true } }])],
      ['an unknown mode', JSON.stringify([{ field: 'name', value: 'x', mode: 'fuzzy' }])],
      ['insensitive on a boolean', JSON.stringify([{ field: 'email_verified', value: true, mode: 'insensitive' }])],
      ['an unknown key', JSON.stringify([{ field: 'name', value: 'x', raw: 'OR 1=1' }])],
      ['a very long value', JSON.stringify([{ field: 'name', value: 'x'.repeat(5000) }])],
    ];
    it.each(hostile)('%s', async (_, raw) => {
      for (const [method, body] of [['GET'], ['PATCH', { name: 'Hacked' }], ['DELETE']] as const) {
        const response: ApiResponse = await service(method, `/Users?${where(raw)}`, { body });
        expect(response.status, `${method}: ${JSON.stringify(response.body)}`).toBe(400);
        expect(response.body.error.code).toBe('BAD_REQUEST');
        expect(response.body.error.details).toHaveProperty('where');
      }
      expect((await service('GET', `/Users/${person.user.id}`)).body.data.name).not.toBe('Hacked');
    });

    it('names the unknown field and the refused operator', async () => {
      const field = await service('GET', `/Users?${where([{ field: 'nmae', value: 'x' }])}`);
      expect(field.body.error.message).toContain('"nmae"');
      const operator = await service('GET', `/Users?${where([{ field: 'email_verified', operator: 'contains', value: 'x' }])}`);
      expect(operator.body.error.message).toContain('email_verified');
      expect(operator.body.error.message).toContain('"contains"');
    });

    it('refuses where twice, a bad offset, and page with offset', async () => {
      const clause = where([{ field: 'name', value: 'x' }]);
      for (const query of [`${clause}&${clause}`, 'offset=-1', 'offset=abc', 'offset=1.5', 'offset=1&page=2', 'offset=1&offset=2']) {
        const response = await service('GET', `/Users?${query}`);
        expect(response.status, query).toBe(400);
      }
    });
  });
});
