import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, databaseKinds, serviceApiKey, signUp, startBackend, type TestBackend } from './support/backend.js';
import { scimClient } from './support/scim.js';
import { openStream, type OpenStream } from './support/sse.js';

/**
 * 10,000 randomized requests across four organizations, each sent by a user of one organization
 * and mostly aimed at another's records (by id, in a filter, as a parent, in the header), with
 * both walls on: the generated statements' organization filter and PostgreSQL's row-level
 * security. A leak is any answer carrying another organization's record, any success in an
 * organization the caller is not a member of, and any write that reached another organization's
 * row; there must be none. The sequence is seeded, so a failure replays. Each organization's
 * owner and member hold a live stream of its changes (GET /realtime) meanwhile: every event
 * committed in the organization reaches both, once, and none of another organization's. About
 * one request in ten also sends a SCIM request with the organization's directory token, aimed
 * mostly at another organization's directory, users and groups: none may succeed there, answer
 * another's resource, or change one.
 */

const requests = 10_000;
const organizations = 4;

/** A small seeded generator (mulberry32): the same run every time. */
function random(seed: number) {
  let state = seed;
  const next = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]! };
}

interface Tenant {
  id: string;
  /** Its owner and a member; each also owns the organization sign-up made them (their active one). */
  people: { id: string; token: string; role: 'owner' | 'member'; own: string }[];
  projects: string[];
  tasks: string[];
  /** Its SCIM directory: the path of its service, its token, its users and a group. */
  directory: { path: string; token: string; users: string[]; group: string };
}

describe.each(databaseKinds)('tenant isolation under 10,000 randomized requests, %s database', (kind) => {
  let backend: TestBackend;
  const tenants: Tenant[] = [];

  beforeAll(async () => {
    backend = await startBackend(kind, { REQUIRE_EMAIL_VERIFICATION: 'false' });
    const trusted = apiClient(backend.url, { token: serviceApiKey });
    for (let index = 0; index < organizations; index++) {
      const owner = await signUp(backend.url, `owner${index}@example.com`);
      const member = await signUp(backend.url, `member${index}@example.com`);
      const added = await trusted('POST', '/members', { body: { organizationId: owner.organizationId, userId: member.user.id, role: 'member' } });
      expect(added.status).toBe(201);
      const tenant: Tenant = {
        id: owner.organizationId,
        people: [
          { id: owner.user.id, token: owner.token, role: 'owner', own: owner.organizationId },
          { id: member.user.id, token: member.token, role: 'member', own: member.organizationId },
        ],
        projects: [],
        tasks: [],
        directory: { path: '', token: '', users: [], group: '' },
      };
      for (let project = 0; project < 4; project++) {
        const created = await owner.api('POST', '/Projects', { body: { name: `org ${index} project ${project}` } });
        tenant.projects.push(created.body.data.id);
        for (let task = 0; task < 2; task++) {
          tenant.tasks.push((await owner.api('POST', `/Projects/${created.body.data.id}/Tasks`, { body: { title: `org ${index} task ${task}` } })).body.data.id);
        }
      }
      const made = await owner.api('POST', '/scim-directories', { body: { name: `Directory ${index}` } });
      const path = new URL(made.body.data.baseUrl).pathname;
      const scim = scimClient(backend.url, made.body.data.token);
      const users: string[] = [];
      for (let user = 0; user < 3; user++) {
        users.push((await scim('POST', `${path}/Users`, { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: `synced${user}@org${index}.example` })).body.id);
      }
      const group = (await scim('POST', `${path}/Groups`, { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: `Group ${index}`, members: [{ value: users[0] }] })).body.id;
      tenants.push({ ...tenant, directory: { path, token: made.body.data.token, users, group } });
    }
  }, 120_000);
  afterAll(() => backend?.stop());

  it('leaks nothing: no other organization\'s record in any answer, no success outside one\'s organizations, no write that reaches one', async () => {
    const rng = random(kind === 'postgres' ? 2026 : 1126);
    const leaks: string[] = [];
    const statuses = new Map<number, number>();
    const everyProject = tenants.flatMap((tenant) => tenant.projects);
    const everyTask = tenants.flatMap((tenant) => tenant.tasks);
    const ownerOf = new Map<string, string>([...tenants.flatMap((tenant) => [...tenant.projects, ...tenant.tasks].map((id) => [id, tenant.id] as const))]);

    /** One randomized request; returns what was leaked by it, if anything. */
    async function one(sequence: number) {
      const home = rng.pick(tenants);
      const person = rng.pick(home.people);
      // Mostly another organization's header; sometimes their own, sometimes none (the active one: their own).
      const aimed = rng.next() < 0.7 ? rng.pick(tenants) : home;
      const header = rng.next() < 0.15 ? undefined : aimed.id;
      const actingIn = header ?? person.own;
      const member = actingIn === person.own || actingIn === home.id;
      const project = rng.pick(rng.next() < 0.8 ? everyProject : home.projects);
      const task = rng.pick(rng.next() < 0.8 ? everyTask : home.tasks);
      const marker = `written ${sequence} in ${actingIn}`;
      const shapes = [
        ['GET', `/Projects?limit=100`],
        ['GET', `/Tasks?projectId=${project}`],
        ['GET', `/Tasks?projectId[in]=${rng.pick(everyProject)},${project}&sort=title`],
        ['GET', `/Projects/${project}`],
        ['GET', `/Tasks/${task}`],
        ['GET', `/Projects/${project}/Tasks`],
        ['PATCH', `/Projects/${project}`, { name: marker }],
        ['PUT', `/Tasks/${task}`, { title: marker, projectId: project }],
        ['POST', `/Projects/${project}/Tasks`, { title: marker }],
        ['POST', '/Tasks', { title: marker, projectId: project }],
        ['DELETE', `/Tasks/${task}`],
        ['GET', `/Projects?search=org&organizationId=${rng.pick(tenants).id}`],
      ] as const;
      const [method, path, body] = rng.pick(shapes);
      const answer = await apiClient(backend.url, { token: person.token })(method, path, { organizationId: header ?? '', ...(body ? { body } : {}) });
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      const where = `#${sequence} ${method} ${path} by a ${person.role} of ${home.id} in ${actingIn}`;
      if (answer.status < 300 && !member) leaks.push(`${where}: ${answer.status} outside their organizations`);
      const records: { id?: string; organizationId?: string }[] = answer.status < 300 && answer.body?.data ? [answer.body.data].flat() : [];
      for (const record of records) {
        if (record.organizationId !== undefined && record.organizationId !== actingIn) leaks.push(`${where}: answered a record of ${record.organizationId}`);
      }
      if (answer.status < 300 && method === 'DELETE' && ownerOf.get(task) !== actingIn) leaks.push(`${where}: deleted another organization's task`);
      if (rng.next() < 0.1) await scimRequest(sequence, home);
    }

    const everyScimUser = tenants.flatMap((tenant) => tenant.directory.users);
    const everyGroup = tenants.flatMap((tenant) => tenant.directory.group);
    /** A SCIM request with `home`'s directory token, mostly aimed at another organization's directory or resources. */
    async function scimRequest(sequence: number, home: Tenant) {
      const target = rng.next() < 0.5 ? rng.pick(tenants) : home;
      const user = rng.pick(rng.next() < 0.8 ? everyScimUser : home.directory.users);
      const group = rng.pick(everyGroup);
      const marker = `scim ${sequence} by ${home.id}`;
      const patchOp = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
      const shapes = [
        ['GET', `/Users/${user}`],
        ['GET', `/Users?filter=${encodeURIComponent(`userName sw "synced"`)}`],
        ['GET', `/Users?filter=${encodeURIComponent(`id eq "${user}"`)}`],
        ['PATCH', `/Users/${user}`, { schemas: [patchOp], Operations: [{ op: 'replace', path: 'displayName', value: marker }] }],
        ['GET', `/Groups/${group}`],
        ['GET', `/Groups?filter=${encodeURIComponent(`members[value eq "${user}"]`)}`],
        ['PATCH', `/Groups/${group}`, { schemas: [patchOp], Operations: [{ op: 'add', path: 'members', value: [{ value: user }] }] }],
      ] as const;
      const [method, path, body] = rng.pick(shapes);
      const answer = await scimClient(backend.url, home.directory.token)(method, `${target.directory.path}${path}`, body);
      const where = `SCIM #${sequence} ${method} ${target.directory.path}${path} with the token of ${home.id}`;
      if (answer.status < 300 && target !== home) leaks.push(`${where}: ${answer.status} on another organization's directory`);
      const own = new Set([...home.directory.users, home.directory.group]);
      const resources: { id: string; members?: { value: string }[] }[] = answer.status < 300 ? (answer.body?.Resources ?? (answer.body?.id ? [answer.body] : [])) : [];
      for (const resource of resources) {
        if (!own.has(resource.id)) leaks.push(`${where}: answered ${resource.id}, not its directory's`);
        for (const member of resource.members ?? []) if (!own.has(member.value)) leaks.push(`${where}: answered member ${member.value}`);
      }
    }

    // The live streams: each person's, in their organization, from a cursor known before the run.
    const streams: { tenant: Tenant; stream: OpenStream; from: number }[] = [];
    for (const tenant of tenants) {
      for (const person of tenant.people) {
        const stream = await openStream(backend.url, '/realtime?entity=Project,Task', { authorization: `Bearer ${person.token}`, 'x-organization-id': tenant.id });
        expect(stream.status).toBe(200);
        while (stream.lastEventId === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
        streams.push({ tenant, stream, from: Number(stream.lastEventId) });
      }
    }

    // Eight at a time, as concurrent clients would.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < requests) await one(next++);
      }),
    );

    // Every write landed in the organization it was made in: each marker names its row's own organization.
    const rows = await backend.running.db.asOwner((tx) =>
      tx.query<{ organizationId: string; text: string }>(`SELECT "organizationId", "name" AS "text" FROM "Project" UNION ALL SELECT "organizationId", "title" FROM "Task"`),
    );
    for (const row of rows.rows) {
      const written = /^written \d+ in (.+)$/.exec(row.text);
      if (written && written[1] !== row.organizationId) leaks.push(`a row of ${row.organizationId} holds "${row.text}"`);
    }
    // Every SCIM change landed in the directory whose token made it, and no group holds another's user.
    const scimRows = await backend.running.db.asOwner((tx) =>
      tx.query<{ organizationId: string; text: string | null }>(`SELECT "organizationId", "displayName" AS "text" FROM "authstrap_scim_user"`),
    );
    for (const row of scimRows.rows) {
      const written = /^scim \d+ by (.+)$/.exec(row.text ?? '');
      if (written && written[1] !== row.organizationId) leaks.push(`a SCIM user of ${row.organizationId} holds "${row.text}"`);
    }
    const crossed = await backend.running.db.asOwner((tx) =>
      tx.query(`SELECT 1 FROM "authstrap_scim_group_member" gm JOIN "authstrap_scim_user" su ON su."id" = gm."scimUserId" JOIN "authstrap_scim_group" g ON g."id" = gm."groupId" WHERE su."directoryId" <> g."directoryId"`),
    );
    if (crossed.rowCount) leaks.push(`${crossed.rowCount} group memberships across directories`);
    expect(scimRows.rows.some((row) => /^scim \d+ by /.test(row.text ?? ''))).toBe(true);
    // Each stream: every event of its organization since its cursor, once, and nothing else.
    for (const { tenant, stream, from } of streams) {
      const { rows: committed } = await backend.running.db.asOwner((tx) =>
        tx.query<{ id: string }>(`SELECT "id" FROM "authstrap_event" WHERE "organizationId" = $1 AND "entity" IN ('Project', 'Task') AND "position" > $2 ORDER BY "position"`, [tenant.id, from]),
      );
      const last = committed.at(-1)?.id;
      if (last) await stream.next((message) => JSON.parse(message.data).id === last, 20_000);
      const received = stream.events();
      for (const event of received) if (event.organizationId !== tenant.id) leaks.push(`a stream of ${tenant.id} carried ${event.type} of ${event.organizationId}`);
      expect(received.map((event) => event.id)).toEqual(committed.map((row) => row.id));
      stream.close();
    }
    expect(streams.every(({ stream }) => stream.events().length > 50)).toBe(true);
    expect(leaks).toEqual([]);
    // The run tried both sides: successes in one's own organization, refusals in the others.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(500);
    expect(statuses.get(403) ?? 0).toBeGreaterThan(3000);
    expect(statuses.get(404) ?? 0).toBeGreaterThan(100);
    expect([...statuses.values()].reduce((sum, count) => sum + count, 0)).toBe(requests);
  }, 600_000);
});
