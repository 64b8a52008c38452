import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthstrapError, createAuthstrapClient } from '../client/authstrap-client.js';
import { parseCsv } from './support/csv.js';
import { addMember, apiClient, databaseKinds, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * The audit log's counts per day (GET /audit-events/per-day) and its CSV export
 * (GET /audit-events/export.csv), on a real listening backend: both over exactly the rows the list
 * route's filter matches, all pages of them; only for the organization's owners and admins; never
 * another organization's events. The events are written straight into the table (as the owner of
 * the tables), on three days of their own three weeks ago (within the events' retention), so that
 * a time range picks exactly them.
 */

/** Midnight UTC `offset` days after the day three weeks ago, as ISO text. */
const dayStart = (offset: number) => {
  const today = new Date();
  return new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - 21 + offset)).toISOString();
};
const day = (offset: number) => dayStart(offset).slice(0, 10);

interface Listed {
  id: string;
  type: string;
  actorId: string | null;
  entity: string | null;
  createdAt: string;
  summary: string;
}

describe.each(databaseKinds)('the audit log per day and as CSV on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  let adam: SignedUp;
  let mia: SignedUp;
  let bob: SignedUp;
  const range = `createdAt[gte]=${dayStart(0)}&createdAt[lt]=${dayStart(3)}`;

  /** Every event the filter matches, through the paged list (page after page of 7). */
  const allListed = async (who: SignedUp, query: string) => {
    const rows: Listed[] = [];
    for (let page = 1; ; page++) {
      const response = await who.api('GET', `/audit-events?${query}&limit=7&page=${page}`);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      rows.push(...response.body.data);
      if (page >= response.body.meta.totalPages) return rows;
    }
  };
  const perDay = async (who: SignedUp, query: string) => {
    const response = await who.api('GET', `/audit-events/per-day?${query}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data as { day: string; count: number }[];
  };
  const csv = async (who: SignedUp, query: string) => {
    const response = await fetch(new URL(`/audit-events/export.csv?${query}`, backend.url), { headers: { authorization: `Bearer ${who.token}`, 'x-organization-id': who.organizationId } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-log-\d{4}-\d{2}-\d{2}\.csv"$/);
    const [header, ...rows] = parseCsv(await response.text());
    expect(header).toEqual(['id', 'createdAt', 'type', 'actorType', 'actorId', 'entity', 'entityId', 'userId', 'requestId', 'ipAddress', 'userAgent', 'data', 'summary']);
    return rows;
  };
  /** Per day as counted from the rows themselves. */
  const countedPerDay = (rows: Listed[]) => {
    const counts = new Map<string, number>();
    for (const row of rows) counts.set(row.createdAt.slice(0, 10), (counts.get(row.createdAt.slice(0, 10)) ?? 0) + 1);
    return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([day, count]) => ({ day, count }));
  };

  beforeAll(async () => {
    backend = await startBackend(kind);
    alice = await signUp(backend.url, 'alice@example.com');
    bob = await signUp(backend.url, 'bob@example.com');
    adam = await addMember(backend.url, alice, 'adam@example.com', 'admin');
    mia = await addMember(backend.url, alice, 'mia@example.com', 'member');
    // Alice's organization: 40 events over three days (by Alice and by Adam, of two types and two
    // entities); two of them with text a spreadsheet must not run. Bob's: 10 on the same days.
    await backend.running.db.asOwner(async (tx) => {
      for (let index = 0; index < 40; index++) {
        await tx.query(
          `INSERT INTO "authstrap_event" ("type", "organizationId", "actorType", "actorId", "entity", "entityId", "data", "userAgent", "createdAt")
           VALUES ($1, $2, 'user', $3, $4, $5, $6::jsonb, $7, $8)`,
          [
            index % 2 ? 'project.updated' : 'project.created',
            alice.organizationId,
            index % 4 < 2 ? alice.user.id : adam.user.id,
            index % 5 ? 'Project' : 'member',
            index === 0 ? '-2+3,\r\n"quoted"' : `entity-${index}`,
            JSON.stringify({ index }),
            index === 1 ? '=HYPERLINK("https://evil.example","click")' : 'audit-test/1',
            `${day(index % 3)}T${String(index % 24).padStart(2, '0')}:15:00.123456Z`,
          ],
        );
      }
      for (let index = 0; index < 10; index++) {
        await tx.query(
          `INSERT INTO "authstrap_event" ("type", "organizationId", "actorType", "actorId", "entity", "createdAt") VALUES ('project.created', $1, 'user', $2, 'Project', $3)`,
          [bob.organizationId, bob.user.id, `${day(index % 3)}T12:00:00Z`],
        );
      }
    });
  });
  afterAll(() => backend?.stop());

  it('counts per day exactly the rows the list matches, filter by filter, over all pages', async () => {
    for (const query of [range, `${range}&actorId=${adam.user.id}`, `${range}&type=project.updated`, `${range}&entity=member`, `${range}&type=project.created&actorId=${alice.user.id}`, `createdAt[gte]=${dayStart(1)}&createdAt[lt]=${dayStart(3)}`]) {
      const filter = query;
      const listed = await allListed(alice, query);
      expect(listed.length, filter).toBeGreaterThan(0);
      expect(await perDay(alice, query), filter).toEqual(countedPerDay(listed));
    }
    expect(await perDay(alice, range)).toEqual([
      { day: day(0), count: 14 },
      { day: day(1), count: 13 },
      { day: day(2), count: 13 },
    ]);
    // An admin sees the same; a filter the log does not have is refused in words.
    expect(await perDay(adam, range)).toEqual(await perDay(alice, range));
    const refused = await alice.api('GET', `/audit-events/per-day?colour=red`);
    expect(refused.status).toBe(400);
  });

  it('exports exactly the filtered rows, newest first, escaped and safe from formulas', async () => {
    for (const filter of ['', `&actorId=${adam.user.id}`, '&entity=member&type=project.created']) {
      const query = `${range}${filter}`;
      const listed = await allListed(alice, query);
      const exported = await csv(alice, query);
      expect(exported.map((row) => row[0]), filter).toEqual(listed.map((row) => row.id));
      expect(exported.map((row) => [row[1], row[2], row[4], row[5], row[12]])).toEqual(listed.map((row) => [row.createdAt, row.type, row.actorId, row.entity, row.summary]));
    }
    const rows = await csv(alice, range);
    expect(rows).toHaveLength(40);
    // A leading -, = (or +, @) is kept from a spreadsheet's formula bar by an apostrophe; commas, quotes and line breaks stay in their field.
    expect(rows.map((row) => row[6])).toContain(`'-2+3,\r\n"quoted"`);
    expect(rows.map((row) => row[10])).toContain(`'=HYPERLINK("https://evil.example","click")`);
    expect(rows.every((row) => row.length === 13)).toBe(true);
    expect(JSON.parse(rows.find((row) => row[6] === 'entity-7')![11]!)).toEqual({ index: 7 });
  });

  it('exports more rows than one batch of the stream, in order, each once', async () => {
    await backend.running.db.asOwner((tx) =>
      tx.query(
        `INSERT INTO "authstrap_event" ("type", "organizationId", "actorType", "actorId", "entity", "createdAt")
         SELECT 'report.exported', $1, 'user', $2, 'Report', $3::timestamptz + (n % 700) * interval '1 second' FROM generate_series(1, 2500) n`,
        [alice.organizationId, alice.user.id, dayStart(10)],
      ),
    );
    const query = 'type=report.exported';
    const rows = await csv(alice, query);
    expect(rows).toHaveLength(2500);
    expect(new Set(rows.map((row) => row[0])).size).toBe(2500);
    const times = rows.map((row) => row[1]!);
    expect([...times].sort().reverse()).toEqual(times);
    expect(await perDay(alice, query)).toEqual([{ day: day(10), count: 2500 }]);
  });

  it('answers the same through the typed client: list, perDay and exportCsv, and a refusal as an AuthstrapError', async () => {
    const client = (who: SignedUp) => createAuthstrapClient({ baseUrl: backend.url, token: who.token, organizationId: who.organizationId });
    const filter = { actorId: adam.user.id, createdAt: { gte: dayStart(0), lt: dayStart(3) } };
    const query = `${range}&actorId=${adam.user.id}`;
    expect(await client(alice).auditEvents.perDay(filter)).toEqual(await perDay(alice, query));
    const listed = await allListed(alice, query);
    expect((await client(alice).auditEvents.list({ filter, limit: 100 })).data.map((event) => event.id)).toEqual(listed.map((row) => row.id));
    const [, ...exported] = parseCsv(await (await client(alice).auditEvents.exportCsv(filter)).text());
    expect(exported.map((row) => row[0])).toEqual(listed.map((row) => row.id));
    const refused = await client(mia).auditEvents.exportCsv(filter).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AuthstrapError);
    expect((refused as AuthstrapError).status).toBe(403);
  });

  it("refuses a member, the service key and another organization's owner sees only their own events", async () => {
    for (const route of ['/audit-events/per-day', '/audit-events/export.csv']) {
      const response = await mia.api('GET', `${route}?${range}`);
      expect(response.status, route).toBe(403);
      expect(response.body.error.message).toMatch(/owner|admin/i);
      expect((await alice.api('GET', route, { token: '' })).status).toBe(401);
    }
    expect(await perDay(bob, range)).toEqual([
      { day: day(0), count: 4 },
      { day: day(1), count: 3 },
      { day: day(2), count: 3 },
    ]);
    const bobs = await csv(bob, range);
    expect(bobs).toHaveLength(10);
    expect(bobs.every((row) => row[4] === bob.user.id)).toBe(true);
    // Naming Alice's organization does not help Bob: he is no member of it.
    const intruding = await bob.api('GET', `/audit-events/export.csv?${range}`, { organizationId: alice.organizationId });
    expect(intruding.status).toBe(403);
    // Asking for Alice's actor in his own organization finds nothing.
    expect(await perDay(bob, `${range}&actorId=${alice.user.id}`)).toEqual([]);
    expect(await csv(bob, `${range}&actorId=${alice.user.id}`)).toEqual([]);
  });
});

/**
 * The audit log in sentences (src/events/sentences.ts, summaries.ts): what the API did reads as a
 * person would say it, with the names of the people, keys and directories as they are now, in the
 * list, the CSV export and the user's own security events.
 */
describe.each(databaseKinds)('the audit log in sentences on the %s database', (kind) => {
  let backend: TestBackend;
  let olivia: SignedUp;
  let ivy: SignedUp;
  const summaries = async (who: SignedUp, query: string) => {
    const response = await who.api('GET', `/audit-events?${query}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data.map((event: Listed) => event.summary) as string[];
  };

  beforeAll(async () => {
    backend = await startBackend(kind);
    olivia = await signUp(backend.url, 'olivia@example.com', undefined, 'Olivia Oakes');
    ivy = await addMember(backend.url, olivia, 'ivy@example.com', 'member', 'Ivy Invitee');
  });
  afterAll(() => backend?.stop());

  it("reads a role change made through the API as the owner changing the member's role from member to admin, in the list and the CSV", async () => {
    const row = (await olivia.api('GET', '/members?limit=100')).body.data.find((member: { userId: string }) => member.userId === ivy.user.id);
    expect((await olivia.api('PATCH', `/members/${row.id}`, { body: { role: 'admin' } })).status).toBe(200);
    const expected = "Olivia Oakes changed Ivy Invitee's role from member to admin";
    expect(await summaries(olivia, `type=member.updated&entityId=${row.id}`)).toEqual([expected]);
    // Her joining, in the words of the same log; and the export's last column says the same as the list.
    expect(await summaries(olivia, `type=member.created&entityId=${row.id}`)).toEqual(['Ivy Invitee joined the organization as member']);
    const response = await fetch(new URL(`/audit-events/export.csv?type=member.updated&entityId=${row.id}`, backend.url), { headers: { authorization: `Bearer ${olivia.token}`, 'x-organization-id': olivia.organizationId } });
    const [header, ...rows] = parseCsv(await response.text());
    expect(header!.at(-1)).toBe('summary');
    expect(rows.map((csvRow) => csvRow.at(-1))).toEqual([expected]);
    // Ivy, an admin now, reads the same sentence.
    expect(await summaries(ivy, `type=member.updated&entityId=${row.id}`)).toEqual([expected]);
  });

  it('names a machine key that acted, and says a revoked one and a deleted user as such', async () => {
    const key = await olivia.api('POST', '/api/auth/api-keys', { body: { name: 'ci-deploy', permissions: { Project: ['create'] } } });
    expect(key.status).toBe(201);
    const made = await apiClient(backend.url)('POST', '/Projects', { headers: { 'x-api-key': key.body.data.key }, body: { name: 'Apollo' } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const created = `type=project.created&entityId=${made.body.data.id}`;
    expect(await summaries(olivia, created)).toEqual(['Project "Apollo" was created by the key ci-deploy']);
    expect(await summaries(olivia, `type=key.created&entityId=${key.body.data.id}`)).toEqual(['Olivia Oakes made the machine key ci-deploy with the member role']);
    expect((await olivia.api('DELETE', `/api/auth/api-keys/${key.body.data.id}`)).status).toBe(204);
    expect(await summaries(olivia, created)).toEqual(['Project "Apollo" was created by a revoked machine key']);

    // A user who invited someone, then deleted their account: the log still reads.
    const dora = await addMember(backend.url, olivia, 'dora@example.com', 'admin', 'Dora Departed');
    expect((await dora.api('POST', '/members', { body: { email: 'newcomer@example.com', role: 'member' } })).status).toBe(202);
    const invitedBy = `type=invitation.sent&actorId=${dora.user.id}`;
    expect(await summaries(olivia, invitedBy)).toEqual(['Dora Departed invited newcomer@example.com as member']);
    expect((await dora.api('POST', '/api/auth/delete-account', { body: { password: 'correct horse battery' } })).status).toBe(200);
    expect(await summaries(olivia, invitedBy)).toEqual(['A deleted user invited newcomer@example.com as member']);
  });

  it("keeps a hostile name as plain text, and says the user's own security events in sentences too", async () => {
    await backend.running.db.asOwner((tx) => tx.query(`UPDATE "User" SET "name" = $2 WHERE "id" = $1`, [ivy.user.id, '<img src=x onerror=alert(1)>\u202Eevil\nname']));
    const response = await olivia.api('GET', '/audit-events?type=member.created');
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const joined = (await summaries(olivia, 'type=member.created')).filter((summary) => summary.includes('evil'));
    expect(joined).toEqual(['<img src=x onerror=alert(1)> evil name joined the organization as member']);
    await backend.running.db.asOwner((tx) => tx.query(`UPDATE "User" SET "name" = 'Ivy Invitee' WHERE "id" = $1`, [ivy.user.id]));

    const failed = await apiClient(backend.url)('POST', '/api/auth/sign-in/email', { body: { email: 'olivia@example.com', password: 'not her password' } });
    expect(failed.status).toBe(401);
    const own = await olivia.api('GET', '/api/auth/security-events?type=session.sign_in_failed');
    expect(own.body.data.map((event: Listed) => event.summary)).toEqual(['A sign-in as olivia@example.com failed']);
  });
});
