import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEventListSpec } from '../src/events/events.js';
import { parseListQuery, whereSql } from '../src/http/list-query.js';
import { pooledDatabaseKinds, serviceApiKey, signUp, startBackend, type Api, type TestBackend } from './support/backend.js';

describe.each(pooledDatabaseKinds)('list queries on the %s database', (kind) => {
  let backend: TestBackend;
  let api: Api;
  let org: string;
  let projectId: string;

  const list = (query: string, path = `/Projects/${projectId}/Tasks`) => api('GET', `${path}?${query}`, { organizationId: org });
  const titles = (response: { body: { data: { title: string }[] } }) => response.body.data.map((task) => task.title);

  beforeAll(async () => {
    backend = await startBackend(kind);
    const owner = await signUp(backend.url, 'lists@example.com');
    api = owner.api;
    org = owner.organizationId;
    projectId = (await api('POST', '/Projects', { organizationId: org, body: { name: 'Listed' } })).body.data.id;
    // 45 tasks, created in order so that createdAt grows with the number; every third is done.
    for (let n = 1; n <= 45; n += 1) {
      const status = n % 3 === 0 ? 'done' : 'todo';
      const title = `task ${String(n).padStart(2, '0')}`;
      const response = await api('POST', `/Projects/${projectId}/Tasks`, { organizationId: org, body: { title, status } });
      if (response.status !== 201) throw new Error(JSON.stringify(response.body));
    }
  });
  afterAll(() => backend?.stop());

  it('pages 45 rows by 20: three pages, the last holding 5', async () => {
    const first = await list('limit=20');
    expect(first.body.meta).toEqual({ page: 1, limit: 20, total: 45, totalPages: 3 });
    expect(first.body.data).toHaveLength(20);
    const third = await list('limit=20&page=3');
    expect(third.body.meta).toEqual({ page: 3, limit: 20, total: 45, totalPages: 3 });
    expect(third.body.data).toHaveLength(5);
    const beyond = await list('limit=20&page=4');
    expect(beyond.body.data).toEqual([]);
    expect(beyond.body.meta.total).toBe(45);
  });

  it('defaults to page 1, limit 20, newest first', async () => {
    const response = await list('');
    expect(response.body.meta).toEqual({ page: 1, limit: 20, total: 45, totalPages: 3 });
    expect(titles(response)[0]).toBe('task 45');
  });

  it('pages never repeat or skip a row', async () => {
    const seen = new Set<string>();
    for (let page = 1; page <= 5; page += 1) {
      for (const title of titles(await list(`limit=10&page=${page}&sort=status`))) seen.add(title);
    }
    expect(seen.size).toBe(45);
  });

  it('clamps limit into 1..100', async () => {
    expect((await list('limit=500')).body.meta.limit).toBe(100);
    expect((await list('limit=500')).body.data).toHaveLength(45);
    expect((await list('limit=0')).body.meta).toEqual({ page: 1, limit: 1, total: 45, totalPages: 45 });
  });

  it('sorts by a field of the entity in either order', async () => {
    expect(titles(await list('sort=title&order=asc&limit=3'))).toEqual(['task 01', 'task 02', 'task 03']);
    expect(titles(await list('sort=title&order=desc&limit=2'))).toEqual(['task 45', 'task 44']);
  });

  it('filters by status', async () => {
    const done = await list('status=done&limit=100');
    expect(done.body.meta.total).toBe(15);
    expect(done.body.data.every((task: { status: string }) => task.status === 'done')).toBe(true);
  });

  it('filters by createdAfter, inclusive', async () => {
    const all = (await list('sort=createdAt&order=asc&limit=100')).body.data;
    const pivot = all[40].createdAt;
    const response = await list(`createdAfter=${encodeURIComponent(pivot)}&limit=100`);
    const expected = all.filter((task: { createdAt: string }) => task.createdAt >= pivot).length;
    expect(response.body.meta.total).toBe(expected);
    expect(expected).toBeGreaterThanOrEqual(5);
    expect(expected).toBeLessThan(45);
  });

  it('searches case-insensitively for a substring of the searchable fields', async () => {
    const response = await list('search=TASK 1&limit=100');
    expect(titles(response).sort()).toEqual(['task 10', 'task 11', 'task 12', 'task 13', 'task 14', 'task 15', 'task 16', 'task 17', 'task 18', 'task 19']);
  });

  it('combines every filter with AND', async () => {
    const all = (await list('sort=createdAt&order=asc&limit=100')).body.data;
    const after = encodeURIComponent(all[19].createdAt); // task 20 onwards
    const response = await list(`status=done&search=task 2&createdAfter=${after}&sort=title&order=asc`);
    // done = multiples of 3; "task 2" = 20..29; created from task 20: 21, 24, 27
    expect(titles(response)).toEqual(['task 21', 'task 24', 'task 27']);
    expect(response.body.meta.total).toBe(3);
  });

  it('matches % and _ in search literally, not as wildcards', async () => {
    for (const title of ['100% done', 'snake_case', 'plain']) {
      await api('POST', `/Projects/${projectId}/Tasks`, { organizationId: org, body: { title } });
    }
    expect(titles(await list('search=%25'))).toEqual(['100% done']);
    expect(titles(await list('search=_'))).toEqual(['snake_case']);
    expect(titles(await list('search=e_c'))).toEqual(['snake_case']);
    expect((await list(`search=${encodeURIComponent("'; DROP TABLE \"Task\"; --")}`)).body.data).toEqual([]);
    expect((await list('search=\\')).body.data).toEqual([]);
    expect((await list('limit=100')).body.meta.total).toBe(48);
  });

  it('refuses an unknown sort field with 400 naming the allowed fields', async () => {
    for (const sort of ['password', 'nope', '"title"; DROP TABLE "Task"', 'createdAt desc']) {
      const response = await list(`sort=${encodeURIComponent(sort)}`);
      expect(response.status, sort).toBe(400);
      expect(response.body.error.code).toBe('BAD_REQUEST');
      expect(response.body.error.details.sort).toContain('title');
    }
  });

  it('refuses malformed parameters with 400 naming the parameter', async () => {
    const cases: [string, string][] = [
      ['page=0', 'page'],
      ['page=abc', 'page'],
      ['limit=-5', 'limit'],
      ['limit=1.5', 'limit'],
      ['order=sideways', 'order'],
      ['createdAfter=yesterday', 'createdAfter'],
      ['page=1&page=2', 'page'],
    ];
    for (const [query, parameter] of cases) {
      const response = await list(query);
      expect(response.status, query).toBe(400);
      expect(Object.keys(response.body.error.details), query).toContain(parameter);
    }
  });

  it('refuses filters an entity does not have', async () => {
    const response = await api('GET', '/organizations?status=active');
    expect(response.status).toBe(400);
    expect(response.body.error.message).toBe('Unknown query parameter "status" for Organization');
    expect(Object.keys(response.body.error.details)).toEqual(['status']);
  });

  it('offers only what the caller may send when a parameter is unknown', async () => {
    const offered = async (path: string, token?: string) => (await api('GET', path, token ? { token } : {})).body.error.details.nope as string;
    const projects = await offered('/Projects?nope=1');
    expect(projects).toMatch(/^Use one of: page, limit, sort, order, search, createdAfter, /);
    // The trusted server's where, offset and join: never offered to a user, who would get a 403.
    for (const serviceOnly of ['where', 'offset', 'join']) expect(projects.split(/, |: /)).not.toContain(serviceOnly);
    expect(await offered('/Users?nope=1', serviceApiKey)).toMatch(/where, offset, join/);
  });
});

describe.each(pooledDatabaseKinds)('field filters on the %s database', (kind) => {
  let backend: TestBackend;
  let api: Api;
  let org: string;
  let projects: { a: string; b: string };
  const day = 24 * 60 * 60 * 1000;
  const base = Date.parse('2030-01-01T00:00:00Z');

  const tasks = async (query: string) => {
    const response = await api('GET', `/Tasks?limit=100&sort=title&order=asc&${query}`, { organizationId: org });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.meta.total).toBe(response.body.data.length);
    return response.body.data.map((task: { title: string }) => task.title) as string[];
  };

  beforeAll(async () => {
    backend = await startBackend(kind);
    const owner = await signUp(backend.url, 'filters@example.com');
    api = owner.api;
    org = owner.organizationId;
    const project = async (name: string) => (await api('POST', '/Projects', { organizationId: org, body: { name } })).body.data.id as string;
    projects = { a: await project('Alpha'), b: await project('Beta') };
    // In Beta: b0..b9 with points n (b9: none) and a due date n days after 2030-01-01 (b0, b4, b8: none); b1-b3 doing.
    for (let n = 0; n < 10; n += 1) {
      const body = {
        title: `b${n}`,
        points: n === 9 ? null : n,
        dueAt: n % 4 === 0 ? null : new Date(base + n * day).toISOString(),
        status: n >= 1 && n <= 3 ? 'doing' : 'todo',
      };
      expect((await api('POST', `/Projects/${projects.b}/Tasks`, { organizationId: org, body })).status).toBe(201);
    }
    for (const title of ['a0', 'a1']) await api('POST', `/Projects/${projects.a}/Tasks`, { organizationId: org, body: { title, status: 'done' } });
    // Another organization's task with the same shape must never appear.
    const stranger = await signUp(backend.url, 'stranger@example.com');
    const theirs = (await stranger.api('POST', '/Projects', { body: { name: 'Theirs' } })).body.data.id;
    await stranger.api('POST', `/Projects/${theirs}/Tasks`, { body: { title: 'b-theirs', points: 5, status: 'todo' } });
  });
  afterAll(() => backend?.stop());

  it('filters by equality on any field, a reference included', async () => {
    expect(await tasks(`projectId=${projects.a}`)).toEqual(['a0', 'a1']);
    expect(await tasks(`projectId=${projects.b}&status=doing`)).toEqual(['b1', 'b2', 'b3']);
    expect(await tasks('points=5')).toEqual(['b5']);
  });

  it('filters by null and not null', async () => {
    expect(await tasks(`projectId=${projects.b}&dueAt=null`)).toEqual(['b0', 'b4', 'b8']);
    expect(await tasks(`projectId=${projects.b}&dueAt[ne]=null`)).toEqual(['b1', 'b2', 'b3', 'b5', 'b6', 'b7', 'b9']);
    expect(await tasks('points=null')).toEqual(['a0', 'a1', 'b9']);
  });

  it('filters by in-lists and not-equal', async () => {
    expect(await tasks('status[in]=doing,done')).toEqual(['a0', 'a1', 'b1', 'b2', 'b3']);
    expect(await tasks(`projectId=${projects.b}&status[ne]=todo`)).toEqual(['b1', 'b2', 'b3']);
    expect(await tasks(`projectId[in]=${projects.a},${projects.b}&points[in]=0,9`)).toEqual(['b0']);
  });

  it('filters by ranges on numbers and dates', async () => {
    expect(await tasks('points[gte]=3&points[lt]=6')).toEqual(['b3', 'b4', 'b5']);
    expect(await tasks('points[gt]=7')).toEqual(['b8']);
    const from = new Date(base + 2 * day).toISOString();
    const to = new Date(base + 6 * day).toISOString();
    expect(await tasks(`dueAt[gte]=${encodeURIComponent(from)}&dueAt[lte]=${encodeURIComponent(to)}`)).toEqual(['b2', 'b3', 'b5', 'b6']);
    expect(await tasks('dueAt[lt]=2030-01-03')).toEqual(['b1']);
  });

  it('reads a date the same in a body and in a filter, and refuses the same with the same words', async () => {
    const alpha = `/Projects/${projects.a}/Tasks`;
    const created = await api('POST', alpha, { organizationId: org, body: { title: 'dated by day', status: 'todo', dueAt: '2031-03-01' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // A date is midnight UTC, whatever the database's time zone.
    expect(created.body.data.dueAt).toBe('2031-03-01T00:00:00.000Z');
    expect(await tasks('dueAt=2031-03-01')).toEqual(['dated by day']);
    expect(await tasks('dueAt[gte]=2031-03-01T00:00:00Z')).toEqual(['dated by day']);

    // A time without its offset means nothing certain: refused by both, in the same words.
    const body = await api('POST', alpha, { organizationId: org, body: { title: 'no offset', status: 'todo', dueAt: '2031-03-01T10:00' } });
    expect(body.status).toBe(422);
    const filter = await api('GET', '/Tasks?dueAt[gte]=2031-03-01T10:00', { organizationId: org });
    expect(filter.status).toBe(400);
    expect(body.body.error.details.dueAt).toBe(filter.body.error.details['dueAt[gte]']);
    expect(body.body.error.details.dueAt).toBe('Must be a date (2025-01-31: midnight UTC) or a date and time with its offset (2025-01-31T09:30:00Z)');
    // createdAfter reads dates as every other filter does, and a number is no date in a body either.
    const createdAfter = await api('GET', '/Tasks?createdAfter=2031-03-01T10:00', { organizationId: org });
    expect(createdAfter.status).toBe(400);
    expect(createdAfter.body.error.details.createdAfter).toBe(body.body.error.details.dueAt);
    const numeric = await api('POST', alpha, { organizationId: org, body: { title: 'a number', status: 'todo', dueAt: 1738324800000 } });
    expect(numeric.body.error.details.dueAt).toBe(body.body.error.details.dueAt);
    await api('DELETE', `/Tasks/${created.body.data.id}`, { organizationId: org });
  });

  it("never shows another organization's rows, whatever the filter", async () => {
    expect(await tasks('points=5')).toEqual(['b5']);
    expect(await tasks('title=b-theirs')).toEqual([]);
  });

  it('refuses a value of the wrong type, an unknown operator or field, with a 400 naming the parameter', async () => {
    for (const [query, parameter] of [
      ['points[gte]=many', 'points[gte]'],
      ['projectId=nope', 'projectId'],
      ['status=maybe', 'status'],
      ['dueAt[gt]=soon', 'dueAt[gt]'],
      ['title[gt]=b', 'title[gt]'],
      ['points[like]=1', 'points[like]'],
      ['stauts=done', 'stauts'],
    ]) {
      const response = await api('GET', `/Tasks?${query}`, { organizationId: org });
      expect(response.status, query).toBe(400);
      expect(Object.keys(response.body.error.details), query).toEqual([parameter]);
    }
  });

  it('lists every filter in the OpenAPI document', async () => {
    const document = (await api('GET', '/api/docs/openapi.json')).body;
    const names = document.paths['/Tasks'].get.parameters.map((parameter: { name: string }) => parameter.name);
    expect(names).toEqual(expect.arrayContaining(['projectId', 'projectId[in]', 'status[ne]', 'points[gte]', 'points[lt]', 'dueAt', 'dueAt[lte]', 'search']));
    expect(names).not.toContain('title[gt]');
  });
});

describe('date filters in SQL', () => {
  // The audit log's list spec: createdAt is a datetime, indexed with the organization.
  const sqlOf = (query: Record<string, string>) => {
    const params: unknown[] = [];
    const { filters, where, createdAfter } = parseListQuery(query, auditEventListSpec);
    return { where: whereSql(auditEventListSpec, { filters, where, createdAfter }, {}, [], params), params };
  };

  it('compares the bare column at the millisecond the API gives out, so that an index on it serves', () => {
    const at = '2026-12-01T10:00:00.123Z';
    expect(sqlOf({ 'createdAt[gte]': at }).where).toBe(' WHERE "createdAt" >= $1');
    expect(sqlOf({ 'createdAt[lt]': at }).where).toBe(' WHERE "createdAt" < $1');
    expect(sqlOf({ 'createdAt[gt]': at }).where).toBe(` WHERE "createdAt" >= $1::timestamptz + interval '1 millisecond'`);
    expect(sqlOf({ 'createdAt[lte]': at }).where).toBe(` WHERE "createdAt" < $1::timestamptz + interval '1 millisecond'`);
    expect(sqlOf({ 'createdAt[eq]': at }).where).toBe(` WHERE ("createdAt" >= $1 AND "createdAt" < $1::timestamptz + interval '1 millisecond')`);
    expect(sqlOf({ 'createdAt[gte]': at }).params).toEqual([new Date(at)]);
    // No index serves these; they keep comparing the truncated value.
    expect(sqlOf({ 'createdAt[ne]': at }).where).toContain(`date_trunc('milliseconds', "createdAt") IS DISTINCT FROM $1`);
  });
});
