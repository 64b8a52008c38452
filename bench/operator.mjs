#!/usr/bin/env node
// The operators' searches and overview (issue 50) at the scale the issue names: USERS (100,000)
// users, ORGANIZATIONS (20,000) organizations of five members each, and EVENTS (2,000,000) events
// by those users spread over the last 365 days, all written with SQL as the tables' owner, then
// VACUUM ANALYZE (what autovacuum does after a bulk insert). Against the example, built as it is,
// on PostgreSQL, one request at a time, REQUESTS (50) of each, as a signed-in operator:
//
//   users            GET /api/operator/users                              the users page's first request
//   users-search     GET /api/operator/users?search=user-4242@            part of an address
//   users-miss       GET /api/operator/users?search=nobody-at-all         a search that finds nothing
//   users-page-deep  GET /api/operator/users?page=2000                    an OFFSET of 40,000
//   orgs             GET /api/operator/organizations
//   orgs-search      GET /api/operator/organizations?search=org-1234-     part of a slug
//   orgs-member      GET /api/operator/organizations?search=user-4242@    a member's address
//   overview-first   GET /api/operator/overview?days=366                  once: every past day counted
//   overview-year    GET /api/operator/overview?days=366                  then, the days kept
//   overview-month   GET /api/operator/overview?days=30
//
// p50 and p95 in ms. Goals (the issue): searches p95 < 100 ms, the overview p95 < 300 ms.
//
//   npm run bootstrap && node bench/operator.mjs
//
// Settings: BENCH_PG_URL, USERS, ORGANIZATIONS, EVENTS, REQUESTS. Writes bench/results/operator.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, expectStatus, queryAsOwner, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'operator.json');
const userCount = Number(process.env.USERS ?? 100_000);
const organizationCount = Number(process.env.ORGANIZATIONS ?? 20_000);
const eventCount = Number(process.env.EVENTS ?? 2_000_000);
const requests = Number(process.env.REQUESTS ?? 50);
const percentile = (values, p) => values.slice().sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];
const round = (value) => Math.round(value * 10) / 10;

// The machine's load (1, 5 and 15 minutes) before and after: on a shared machine, what the numbers were measured under.
const loadBefore = os.loadavg().map(round);
const database = await throwawayDatabase('operator');
let backend;
try {
  backend = await startExampleBackend({ dbUrl: database.url, env: { LOG_LEVEL: 'error' } });
  const { base } = backend;
  const signUp = await expectStatus(api(base, 'POST', '/api/auth/sign-up/email', { body: { email: 'support@platform.example', name: 'Support', password: 'bench-password-1' } }), 201, 'sign-up');
  const token = signUp.data.token;
  await queryAsOwner(database.url, `INSERT INTO "authstrap_operator" ("userId", "grantedBy") VALUES ($1, 'command line')`, [signUp.data.user.id]);

  const seeding = performance.now();
  const yearAgo = `now() - interval '365 days'`;
  // Users and organizations made evenly over the year; each organization has five of the users (user n is in organization n % ORGANIZATIONS).
  await queryAsOwner(database.url, `INSERT INTO "User" ("email", "name", "createdAt") SELECT 'user-' || n || '@customer' || (n % 997) || '.example', 'User ' || n, ${yearAgo} + (n * 365.0 / $1) * interval '1 day' FROM generate_series(1, $1) n`, [userCount]);
  await queryAsOwner(database.url, `INSERT INTO "Organization" ("name", "slug", "createdAt") SELECT 'Organization ' || n, 'org-' || n || '-' || substr(md5(n::text), 1, 6), ${yearAgo} + (n * 365.0 / $1) * interval '1 day' FROM generate_series(1, $1) n`, [organizationCount]);
  await queryAsOwner(
    database.url,
    `INSERT INTO "member" ("organizationId", "userId", "role")
     SELECT o."id", u."id", CASE WHEN u.n <= $1 THEN 'owner' ELSE 'member' END
       FROM (SELECT "id", row_number() OVER (ORDER BY "createdAt", "id") AS n FROM "User" WHERE "email" LIKE 'user-%') u
       JOIN (SELECT "id", row_number() OVER (ORDER BY "createdAt", "id") AS n FROM "Organization" WHERE "slug" LIKE 'org-%') o ON o.n = 1 + (u.n - 1) % $1`,
    [organizationCount],
  );
  // Events by the users, in time order (as they are written), a fifth of them by machine keys.
  await queryAsOwner(
    database.url,
    `INSERT INTO "authstrap_event" ("type", "organizationId", "actorType", "actorId", "entity", "entityId", "data", "createdAt")
     SELECT 'project.updated', gen_random_uuid(), CASE WHEN n % 5 = 0 THEN 'machine_key' ELSE 'user' END, md5((n % ($2::int))::text), 'Project', gen_random_uuid()::text,
            '{"record":{"name":"Project"}}'::jsonb, ${yearAgo} + (n * 365.0 / $1) * interval '1 day'
       FROM generate_series(1, $1) n`,
    [eventCount, Math.max(1, Math.floor(userCount / 3))],
  );
  for (const table of ['User', 'Organization', 'member', 'authstrap_event']) await queryAsOwner(database.url, `VACUUM ANALYZE "${table}"`);
  const seededMs = Math.round(performance.now() - seeding);
  console.log(`seeded ${userCount} users, ${organizationCount} organizations, ${eventCount} events in ${seededMs} ms`);

  const time = async (route) => {
    const started = performance.now();
    await expectStatus(api(base, 'GET', route, { token }), 200, route);
    return performance.now() - started;
  };
  const measure = async (name, route, times = requests) => {
    await time(route); // once to warm the connection and the plan
    const durations = [];
    for (let index = 0; index < times; index += 1) durations.push(await time(route));
    const row = { name, route, requests: times, p50: round(percentile(durations, 50)), p95: round(percentile(durations, 95)) };
    console.log(`${name.padEnd(16)} p50 ${String(row.p50).padStart(7)} ms   p95 ${String(row.p95).padStart(7)} ms   ${route}`);
    return row;
  };

  const rows = [];
  // The first overview counts every past day of the year once (authstrap_activity_day): timed alone.
  const firstOverviewMs = round(await time('/api/operator/overview?days=366'));
  console.log(`overview-first   ${firstOverviewMs} ms (once)`);
  rows.push({ name: 'overview-first', route: '/api/operator/overview?days=366', requests: 1, p50: firstOverviewMs, p95: firstOverviewMs });
  rows.push(await measure('overview-year', '/api/operator/overview?days=366'));
  rows.push(await measure('overview-month', '/api/operator/overview?days=30'));
  rows.push(await measure('users', '/api/operator/users'));
  rows.push(await measure('users-search', `/api/operator/users?search=${encodeURIComponent('user-4242@')}`));
  rows.push(await measure('users-miss', '/api/operator/users?search=nobody-at-all'));
  // Two characters: too short for a trigram, so the substring is looked for in every row.
  rows.push(await measure('users-short', '/api/operator/users?search=42'));
  rows.push(await measure('users-page-deep', '/api/operator/users?page=2000'));
  rows.push(await measure('orgs', '/api/operator/organizations'));
  rows.push(await measure('orgs-search', '/api/operator/organizations?search=org-1234-'));
  rows.push(await measure('orgs-short', '/api/operator/organizations?search=12'));
  rows.push(await measure('orgs-member', `/api/operator/organizations?search=${encodeURIComponent('user-4242@')}`));

  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify({ at: new Date().toISOString(), users: userCount, organizations: organizationCount, events: eventCount, seededMs, loadAverage: { before: loadBefore, after: os.loadavg().map(round) }, rows }, null, 2)}\n`);
} finally {
  if (backend) await stopChild(backend.child);
  await database.drop();
}
