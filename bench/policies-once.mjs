#!/usr/bin/env node
// Row-level security's scope functions read once per statement, against once per row: the audit
// log's statements over EVENTS (100,000) events of one organization (and as many of another), as
// authstrap_app in a request's scope, with the policies of authstrap_event as generated
// (`(SELECT authstrap.organization_id())`, an initplan) and then with the bare calls authstrap
// 0.2.0 wrote (`authstrap.organization_id()`, STABLE, evaluated for every row the policy filters).
// The same statements, on the same database, one at a time: the median of ROUNDS (7) each.
//
//   count      SELECT count(*) ... of the organization        the list's "N in all"
//   per-day    the chart's count per day over the whole range  GET /audit-events/per-day
//   first-page the newest 25                                   GET /audit-events
//   deep-page  25 at OFFSET 50,000                             GET /audit-events?page=2001
//   week       count(*) of the last 7 days
//
//   npm run bootstrap && (cd examples/saas-backend && npm run build)
//   node bench/policies-once.mjs
//
// Settings: BENCH_PG_URL, EVENTS, ROUNDS. Writes bench/results/policies-once.json.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, exampleDir, expectStatus, insertAuditEvents, queryAsOwner, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'policies-once.json');
const eventCount = Number(process.env.EVENTS ?? 100_000);
const rounds = Number(process.env.ROUNDS ?? 7);
const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');

const ofOrganization = `FROM "authstrap_event" WHERE "organizationId" = authstrap.organization_id()`;
const statements = {
  count: `SELECT count(*) ${ofOrganization}`,
  perDay: `SELECT to_char("day", 'YYYY-MM-DD'), "count" FROM (SELECT ("createdAt" AT TIME ZONE 'UTC')::date AS "day", count(*)::int AS "count" ${ofOrganization} GROUP BY 1) AS "days" ORDER BY 1`,
  firstPage: `SELECT * ${ofOrganization} ORDER BY "createdAt" DESC, "id" DESC LIMIT 25`,
  deepPage: `SELECT * ${ofOrganization} ORDER BY "createdAt" DESC, "id" DESC LIMIT 25 OFFSET 50000`,
  week: `SELECT count(*) ${ofOrganization} AND "createdAt" >= now() - interval '7 days'`,
};

const database = await throwawayDatabase('policies');
const client = new pg.Client({ connectionString: database.url });
try {
  // The example's migrations make the tables, policies and functions; then it is not needed.
  const backend = await startExampleBackend({ dbUrl: database.url, env: { LOG_LEVEL: 'error' } });
  const { token, organizationId } = await seedProjects(backend.base, { email: 'policies@example.com', projects: 0 });
  const userId = (await expectStatus(api(backend.base, 'GET', '/api/auth/get-session', { token }), 200, 'get-session')).data.user.id;
  await stopChild(backend.child);

  const insertEvents = (organization, actor) => insertAuditEvents(database.url, organization, actor, eventCount);
  await insertEvents(organizationId, userId);
  await insertEvents(crypto.randomUUID(), crypto.randomUUID());
  await queryAsOwner(database.url, 'VACUUM ANALYZE "authstrap_event"');

  await client.connect();
  /** The median ms of each statement, as an owner of the organization in a request's scope. */
  const timeStatements = async () => {
    const medians = {};
    for (const [name, sql] of Object.entries(statements)) {
      const times = [];
      for (let round = 0; round < rounds; round++) {
        await client.query('BEGIN');
        await client.query('SET LOCAL ROLE authstrap_app');
        await client.query(`SELECT set_config('authstrap.organization_id', $1, true), set_config('authstrap.user_id', $2, true), set_config('authstrap.role', 'owner', true)`, [organizationId, userId]);
        const started = performance.now();
        await client.query(sql);
        times.push(performance.now() - started);
        await client.query('COMMIT');
      }
      medians[name] = Math.round(times.sort((a, b) => a - b)[Math.floor(rounds / 2)] * 10) / 10;
    }
    return medians;
  };

  const policies = (await client.query(`SELECT policyname, qual, with_check FROM pg_policies WHERE tablename = 'authstrap_event'`)).rows;
  if (!policies.some((policy) => policy.qual?.includes('SELECT authstrap.'))) throw new Error('authstrap_event\'s policies do not read the scope once per statement: rebuild the example (npm run refresh-example)');
  const once = await timeStatements();
  // The same policies with the bare calls, as 0.2.0 generated them.
  for (const policy of policies) {
    const bare = (sql) => sql && sql.replace(/\(\s*SELECT (authstrap\.\w+\(\)) AS \w+\)/g, '$1');
    await client.query(`ALTER POLICY "${policy.policyname}" ON "authstrap_event" USING (${bare(policy.qual)})${policy.with_check ? ` WITH CHECK (${bare(policy.with_check)})` : ''}`);
  }
  const perRow = await timeStatements();
  const ratio = Object.fromEntries(Object.keys(statements).map((name) => [name, Math.round((once[name] / perRow[name]) * 100) / 100]));
  const results = { when: new Date().toISOString(), events: eventCount, rounds, onceMs: once, perRowMs: perRow, onceOverPerRow: ratio };
  console.log(JSON.stringify(results, null, 2));
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
} finally {
  await client.end().catch(() => {});
  await database.drop();
}
