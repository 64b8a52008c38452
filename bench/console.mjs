#!/usr/bin/env node
// The team console's audit log (issue 41) with EVENTS (100,000) events in one organization,
// written straight into authstrap_event with SQL over the last 90 days (and as many again in
// another organization, so that the organization's index has to choose), then VACUUM ANALYZE (what
// autovacuum does after a bulk insert). Against the example,
// built as it is, on PostgreSQL, one request at a time, REQUESTS (50) of each:
//
//   list          GET /audit-events?limit=25                        the page's first request
//   list-type     GET /audit-events?type=project.updated&limit=25   one filter
//   list-deep     GET /audit-events?page=2000&limit=25              an OFFSET of 50,000
//   per-day       GET /audit-events/per-day                         the chart, the whole range
//   per-day-type  GET /audit-events/per-day?type=project.updated
//   per-day-week  GET /audit-events/per-day?createdAt[gte]=<7 days ago>
//   csv           GET /audit-events/export.csv                      all of them, 3 times
//
// and, with MEMBERS (1,000) members in the organization (users and memberships written with SQL),
// the members page's two requests: its page of members, then the users of that page.
//
//   members       GET /members?page=1&limit=50                       the page's first request
//   members-last  GET /members?page=20&limit=50                      the last page
//   member-users  GET /Users?limit=50&id[in]=<the page's 50 ids>     names and addresses
//
// p50 and p95 in ms, and the plans (EXPLAIN ANALYZE, as the owner: row-level security aside) of
// the per-day count and the first page.
//
//   npm run bootstrap && (cd examples/saas-backend && npm run build)
//   node bench/console.mjs
//
// Settings: BENCH_PG_URL, EVENTS, MEMBERS, REQUESTS. Writes bench/results/console.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, expectStatus, insertAuditEvents, queryAsOwner, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'console.json');
const eventCount = Number(process.env.EVENTS ?? 100_000);
const requests = Number(process.env.REQUESTS ?? 50);
const memberCount = Number(process.env.MEMBERS ?? 1000);
const percentile = (values, p) => values.slice().sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];
const round = (value) => Math.round(value * 10) / 10;

const database = await throwawayDatabase('console');
let backend;
try {
  backend = await startExampleBackend({ dbUrl: database.url, env: { LOG_LEVEL: 'error' } });
  const { base } = backend;
  const { token, organizationId } = await seedProjects(base, { email: 'console@example.com', projects: 0 });
  const userId = (await expectStatus(api(base, 'GET', '/api/auth/get-session', { token }), 200, 'get-session')).data.user.id;

  const insertEvents = (organization, actor) => insertAuditEvents(database.url, organization, actor, eventCount);
  const seeding = performance.now();
  await insertEvents(organizationId, userId);
  await insertEvents(crypto.randomUUID(), crypto.randomUUID());
  // What autovacuum does after a bulk insert (PostgreSQL 13+): statistics, and the visibility map index-only scans need.
  await queryAsOwner(database.url, 'VACUUM ANALYZE "authstrap_event"');
  console.log(`seeded ${2 * eventCount} events in ${Math.round(performance.now() - seeding)} ms`);
  // The owner and memberCount - 1 more people, each a user with a membership.
  await queryAsOwner(
    database.url,
    `WITH "people" AS (
       INSERT INTO "User" ("email", "name") SELECT 'member' || n || '@example.com', 'Member ' || n FROM generate_series(1, $2 - 1) n RETURNING "id"
     )
     INSERT INTO "member" ("organizationId", "userId", "role") SELECT $1, "id", 'member' FROM "people"`,
    [organizationId, memberCount],
  );
  await queryAsOwner(database.url, 'VACUUM ANALYZE "User", "member"');

  const weekAgo = new Date(Date.now() - 7 * 86400_000).toISOString();
  const routes = {
    list: '/audit-events?limit=25',
    'list-type': '/audit-events?type=project.updated&limit=25',
    'list-deep': '/audit-events?page=2000&limit=25',
    'per-day': '/audit-events/per-day',
    'per-day-type': '/audit-events/per-day?type=project.updated',
    'per-day-week': `/audit-events/per-day?createdAt[gte]=${weekAgo}`,
  };
  const headers = { authorization: `Bearer ${token}`, 'x-organization-id': organizationId };
  const timed = async (route) => {
    const started = performance.now();
    const response = await fetch(`${base}${route}`, { headers });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`${route}: ${response.status} ${body.slice(0, 200)}`);
    return { ms: performance.now() - started, body };
  };

  const results = { events: eventCount, members: memberCount, requests, routes: {} };
  const firstMembers = JSON.parse((await timed('/members?page=1&limit=50')).body).data;
  if (JSON.parse((await timed('/members?limit=1')).body).meta.total !== memberCount) throw new Error(`the organization does not have ${memberCount} members`);
  Object.assign(routes, {
    members: '/members?page=1&limit=50',
    'members-last': `/members?page=${Math.ceil(memberCount / 50)}&limit=50`,
    'member-users': `/Users?limit=50&id[in]=${firstMembers.map((member) => member.userId).join(',')}`,
  });
  for (const [name, route] of Object.entries(routes)) {
    await timed(route); // warm: the prepared statement, the pages of the index
    const times = [];
    for (let index = 0; index < requests; index++) times.push((await timed(route)).ms);
    results.routes[name] = { route, p50: round(percentile(times, 50)), p95: round(percentile(times, 95)), max: round(Math.max(...times)) };
    console.log(`${name.padEnd(13)} p50 ${results.routes[name].p50} ms  p95 ${results.routes[name].p95} ms  ${route.slice(0, 80)}`);
  }
  const csvTimes = [];
  let csvBytes = 0;
  for (let index = 0; index < 3; index++) {
    const { ms, body } = await timed('/audit-events/export.csv');
    csvTimes.push(ms);
    csvBytes = body.length;
    // The seeded events, one per seeded membership (member.created), and the few the sign-up
    // recorded (the organization, its first member).
    const rows = body.trimEnd().split('\r\n').length - 1;
    const seeded = eventCount + memberCount - 1;
    if (rows < seeded || rows > seeded + 5) throw new Error(`the CSV has ${rows} rows, not ${seeded} and the sign-up's`);
  }
  results.routes.csv = { route: '/audit-events/export.csv', median: round(percentile(csvTimes, 50)), max: round(Math.max(...csvTimes)), megabytes: round(csvBytes / 1e6) };
  console.log(`csv           median ${results.routes.csv.median} ms for ${eventCount} rows, ${results.routes.csv.megabytes} MB`);

  const explain = async (statement, params) => (await queryAsOwner(database.url, `EXPLAIN (ANALYZE, BUFFERS) ${statement}`, params)).rows.map((row) => row['QUERY PLAN']).join('\n');
  results.plans = {
    perDay: await explain(`SELECT ("createdAt" AT TIME ZONE 'UTC')::date AS "day", count(*)::int FROM "authstrap_event" WHERE "organizationId" = $1 GROUP BY 1 ORDER BY 1`, [organizationId]),
    firstPage: await explain(`SELECT *, (SELECT count(*) FROM "authstrap_event" WHERE "organizationId" = $1) FROM "authstrap_event" WHERE "organizationId" = $1 ORDER BY "createdAt" DESC, "id" DESC LIMIT 25`, [organizationId]),
  };
  console.log(`\nper-day plan:\n${results.plans.perDay}\n\nfirst page plan:\n${results.plans.firstPage}`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
} finally {
  if (backend) await stopChild(backend.child);
  await database.drop();
}
