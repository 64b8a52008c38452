#!/usr/bin/env node
// A directory's initial sync (issue 49, "Measure"; docs/scim.md): 10,000 users and 200 groups
// through /scim/v2 with 4 requests at a time, as an identity provider sends them (Okta and Entra ID
// look each user up by filter before they create it: two requests a user; a group is created with
// its members in one body), against the example built as it is, on PostgreSQL. Measured:
//   - the sync's time (goal: under 2 minutes on this machine), and the 429s it met (the directory's
//     limits: SCIM_RATE_LIMIT_MAX a minute, SCIM_MAX_CONCURRENT_PER_DIRECTORY in flight), waited out
//     as identity providers do, by Retry-After;
//   - `GET /Users?filter=userName eq "..."` at 10,000 users: p50 and p95 of 500 lookups, one at a
//     time (goal: p95 under 20 ms);
//   - another organization's list and write rates while the sync runs, against the same rates with
//     nothing else running (goal: at least 0.8 of idle): wrk, 2 threads, 8 connections, one window
//     of each before the sync and one during it. The list and the writes go to two organizations
//     of their own, so that no list counts the rows the write windows made (the list's total is a
//     count: until 2026-12-06 both went to one organization, and the list during the sync counted
//     some 20,000 more projects than the list before it).
//
//   npm run bootstrap && node bench/scim-sync.mjs
//
// Settings: BENCH_PG_URL, BENCH_USERS (10000), BENCH_GROUPS (200), BENCH_CONCURRENCY (4),
// BENCH_WINDOW_SECONDS (8), SCIM_MAX_CONCURRENT_WHILE_BUSY and SCIM_RATE_WHILE_BUSY (the backend's, 1 and 20:
// the directory's share while another caller waits). Linux; needs wrk. Writes bench/results/scim-sync.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, children, expectStatus, median, repoDir, runWrk, seedProjects, startExampleBackend, stopChild, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'scim-sync.json');
const users = Number(process.env.BENCH_USERS ?? 10_000);
const groups = Number(process.env.BENCH_GROUPS ?? 200);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 4);
const windowSeconds = Number(process.env.BENCH_WINDOW_SECONDS ?? 8);
const whileBusy = process.env.SCIM_MAX_CONCURRENT_WHILE_BUSY;
const rateWhileBusy = process.env.SCIM_RATE_WHILE_BUSY;
const report = path.join(repoDir, 'bench', 'wrk-report.lua');
const scimJson = 'application/scim+json';
const coreUser = 'urn:ietf:params:scim:schemas:core:2.0:User';
const coreGroup = 'urn:ietf:params:scim:schemas:core:2.0:Group';

const percentile = (values, p) => values.slice().sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))];

/** wrk's arguments for the other organization's list or write. */
function otherLoad(kind, base, others) {
  const { token, organizationId } = others[kind];
  const auth = ['-H', `Authorization: Bearer ${token}`, '-H', `x-organization-id: ${organizationId}`];
  return kind === 'list'
    ? ['-t', '2', '-c', '8', '--timeout', '5s', '-s', report, ...auth, `${base}/Projects?limit=20`]
    : ['-t', '2', '-c', '8', '--timeout', '5s', '-s', path.join(repoDir, 'bench', 'wrk-create.lua'), ...auth, `${base}/Projects`];
}
const rateOf = async (kind, base, other) => Math.round((await runWrk([...otherLoad(kind, base, other), '-d', `${windowSeconds}s`], windowSeconds, { ...process.env, BENCH_REPORT_LUA: report })).rps);

const database = await throwawayDatabase('scimsync');
let backend;
try {
  // The directory's share while others wait, from the environment, to compare its yield with none
  // (SCIM_MAX_CONCURRENT_WHILE_BUSY=4 SCIM_RATE_WHILE_BUSY=0).
  const share = { ...(whileBusy ? { SCIM_MAX_CONCURRENT_WHILE_BUSY: whileBusy } : {}), ...(rateWhileBusy ? { SCIM_RATE_WHILE_BUSY: rateWhileBusy } : {}) };
  backend = await startExampleBackend({ dbUrl: database.url, env: share });
  const base = backend.base;
  const other = {
    list: await seedProjects(base, { email: 'lister@bench.example', projects: 20 }),
    write: await seedProjects(base, { email: 'writer@bench.example', projects: 0 }),
  };
  const owner = await seedProjects(base, { email: 'owner@synced.example', projects: 0 });
  const made = await expectStatus(api(base, 'POST', '/scim-directories', { token: owner.token, organizationId: owner.organizationId, body: { name: 'Bench', preset: 'okta' } }), 201, 'POST /scim-directories');
  const scimBase = `${base}${new URL(made.data.baseUrl).pathname}`;
  let tooMany = 0;
  /** One SCIM request, sent again after Retry-After when the directory's limits say 429. */
  async function scim(method, route, body) {
    for (;;) {
      const response = await fetch(`${scimBase}${route}`, {
        method,
        headers: { authorization: `Bearer ${made.data.token}`, accept: scimJson, ...(body ? { 'content-type': scimJson } : {}) },
        body: body && JSON.stringify(body),
      });
      const json = await response.json();
      if (response.status !== 429) return { status: response.status, json };
      tooMany += 1;
      await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get('retry-after') ?? 1) * 1000));
    }
  }

  // Idle: the other organization alone.
  for (const kind of ['list', 'write']) await runWrk([...otherLoad(kind, base, other), '-d', '3s'], 3, { ...process.env, BENCH_REPORT_LUA: report });
  const idle = { list: await rateOf('list', base, other), write: await rateOf('write', base, other) };
  console.log(`idle: list ${idle.list} rps, write ${idle.write} rps`);

  // The sync: users, then groups of 50 members each.
  const ids = new Array(users);
  let next = 0;

  const syncStarted = performance.now();
  const userSync = Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < users) {
        const index = next++;
        const userName = `person${index}@synced.example`;
        const found = await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
        if (found.status !== 200 || found.json.totalResults !== 0) throw new Error(`lookup of ${userName}: ${found.status} ${JSON.stringify(found.json)}`);
        const created = await scim('POST', '/Users', {
          schemas: [coreUser],
          userName,
          name: { givenName: 'Person', familyName: String(index) },
          emails: [{ value: userName, type: 'work', primary: true }],
          externalId: `ext-${index}`,
          active: true,
        });
        if (created.status !== 201) throw new Error(`create of ${userName}: ${created.status} ${JSON.stringify(created.json)}`);
        ids[index] = created.json.id;
      }
    }),
  );
  // During the sync: the other organization's rates, a window each, once the sync is under way.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const during = { list: await rateOf('list', base, other), write: await rateOf('write', base, other) };
  console.log(`during the sync: list ${during.list} rps, write ${during.write} rps`);
  await userSync;
  const usersMs = performance.now() - syncStarted;
  let nextGroup = 0;
  const perGroup = Math.floor(users / groups);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (nextGroup < groups) {
        const index = nextGroup++;
        const members = ids.slice(index * perGroup, (index + 1) * perGroup).map((value) => ({ value }));
        const created = await scim('POST', '/Groups', { schemas: [coreGroup], displayName: `Group ${index}`, externalId: `group-${index}`, members });
        if (created.status !== 201) throw new Error(`group ${index}: ${created.status} ${JSON.stringify(created.json).slice(0, 300)}`);
      }
    }),
  );
  const syncMs = performance.now() - syncStarted;

  console.log(`sync: ${users} users in ${(usersMs / 1000).toFixed(1)} s, with ${groups} groups ${(syncMs / 1000).toFixed(1)} s; 429s waited out: ${tooMany}`);

  // The lookup an identity provider makes before every create, at 10,000 users.
  const lookups = [];
  for (let i = 0; i < 500; i++) {
    const userName = `person${Math.floor(Math.random() * users)}@synced.example`;
    const started = performance.now();
    const found = await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
    lookups.push(performance.now() - started);
    if (found.json.totalResults !== 1) throw new Error(`lookup of ${userName} found ${found.json.totalResults}`);
  }
  const filter = { p50Ms: Number(median(lookups).toFixed(2)), p95Ms: Number(percentile(lookups, 95).toFixed(2)) };
  console.log(`filter userName eq at ${users} users: p50 ${filter.p50Ms} ms, p95 ${filter.p95Ms} ms`);

  const result = {
    measuredAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((load) => Number(load.toFixed(1))) },
    users,
    groups,
    concurrency,
    maxConcurrentWhileBusy: Number(whileBusy ?? 1),
    rateWhileBusy: Number(rateWhileBusy ?? 20),
    sync: { usersSeconds: Number((usersMs / 1000).toFixed(1)), totalSeconds: Number((syncMs / 1000).toFixed(1)), requests: users * 2 + groups, tooManyWaitedOut: tooMany },
    filter,
    otherOrganization: {
      idle,
      duringSync: during,
      listRatio: Number((during.list / idle.list).toFixed(3)),
      writeRatio: Number((during.write / idle.write).toFixed(3)),
    },
  };
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result, null, 2));
} finally {
  if (backend) await stopChild(backend.child);
  for (const child of children) await stopChild(child);
  await database.drop();
}
