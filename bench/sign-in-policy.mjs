#!/usr/bin/env node
// What the sign-in rule adds to a password sign-in (docs/enterprise-identity.md, 3.2; goal: under
// 1 ms). The rule adds two things to the sign-in's work, and nothing else: one statement before the
// bcrypt comparison (`SELECT authstrap.sign_in_verdict(...)`, the domain's verdict: a round trip),
// and the session trigger's work inside the INSERT the sign-in makes anyway. Both are timed here
// on the example's own migration, one connection, statement by statement (a whole sign-in is a
// bcrypt comparison of ~20 ms at cost 10, whose spread would hide a millisecond):
//   - the verdict's round trip, against `SELECT 1`'s (what any statement costs);
//   - the session INSERT with the trigger, against the same INSERT with the trigger disabled (in
//     a transaction rolled back after, so that the commit, the same for both, adds no noise);
// for an address outside any claimed domain (nearly every sign-in) and for an owner's break-glass
// sign-in in a domain that requires SSO (every probe of the rule runs). Rounds alternate the
// variants; each figure is the median of its round medians.
//
//   node bench/sign-in-policy.mjs
//
// Settings: BENCH_PG_URL, BENCH_ROUNDS (5), BENCH_ITERATIONS (2000). Writes
// bench/results/sign-in-policy.json.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { exampleDir, median, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'sign-in-policy.json');
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const iterations = Number(process.env.BENCH_ITERATIONS ?? 2000);
const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');

/** Median time of `iterations` runs of `statement`, in µs. */
async function timed(client, statement) {
  const times = [];
  for (let i = 0; i < iterations; i++) {
    const started = performance.now();
    await statement(i);
    times.push((performance.now() - started) * 1000);
  }
  return median(times);
}

const database = await throwawayDatabase('signinpolicy');
const client = new pg.Client({ connectionString: database.url });
try {
  await client.connect();
  await client.query(fs.readFileSync(path.join(exampleDir, 'migrations', '0001_init.sql'), 'utf8'));
  const one = async (sql, params) => (await client.query(`${sql} RETURNING "id"`, params)).rows[0].id;
  const acme = await one(`INSERT INTO "Organization" ("name", "slug") VALUES ('Acme', 'acme')`);
  const owner = await one(`INSERT INTO "User" ("email", "name") VALUES ('owner@acme.example', 'Owner')`);
  const outsider = await one(`INSERT INTO "User" ("email", "name") VALUES ('someone@elsewhere.example', 'Someone')`);
  await client.query(`INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, 'owner'), ($1, $3, 'member')`, [acme, owner, outsider]);
  await client.query(`INSERT INTO "authstrap_domain" ("organizationId", "domain", "state", "txtToken") VALUES ($1, 'acme.example', 'verified', 't')`, [acme]);
  await client.query(`INSERT INTO "authstrap_sso_policy" ("organizationId", "ssoRequired", "requiredSince") VALUES ($1, true, now())`, [acme]);

  const cases = { outside: { userId: outsider, email: 'someone@elsewhere.example' }, breakGlass: { userId: owner, email: 'owner@acme.example' } };
  const insertSession = (userId) => (i) =>
    client.query(`INSERT INTO "session" ("userId", "token", "expiresAt", "authMethod", "activeOrganizationId") VALUES ($1, $2, now() + interval '7 days', 'password', $3)`, [
      userId,
      `${userId}-${i}-${Math.random()}`,
      acme,
    ]);
  const trigger = (on) => client.query(`ALTER TABLE "session" ${on ? 'ENABLE' : 'DISABLE'} TRIGGER "authstrap_sign_in_policy"`);

  const samples = { selectOne: [], verdict: { outside: [], breakGlass: [] }, insertWith: { outside: [], breakGlass: [] }, insertWithout: { outside: [], breakGlass: [] } };
  // A warm-up round first, not kept.
  for (let round = -1; round < rounds; round++) {
    const keep = (list, value) => round >= 0 && list.push(value);
    keep(samples.selectOne, await timed(client, () => client.query('SELECT 1')));
    for (const [name, { userId, email }] of Object.entries(cases)) {
      keep(samples.verdict[name], await timed(client, () => client.query(`SELECT authstrap.sign_in_verdict($1, NULL, 'password', NULL, NULL) AS "verdict"`, [email])));
      const order = round % 2 === 0 ? [true, false] : [false, true];
      for (const on of order) {
        // In a transaction rolled back after: the commit's WAL flush (the same with or without the
        // trigger, and the noisiest part of an INSERT) stays out of the difference.
        await client.query('BEGIN');
        await trigger(on);
        keep((on ? samples.insertWith : samples.insertWithout)[name], await timed(client, insertSession(userId)));
        await client.query('ROLLBACK');
      }
    }
  }

  const figure = (list) => Number(median(list).toFixed(1));
  const added = (name) => Number((median(samples.verdict[name]) + median(samples.insertWith[name]) - median(samples.insertWithout[name])).toFixed(1));
  const results = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, node: process.version, loadAverage: os.loadavg().map((load) => Number(load.toFixed(2))) },
    rounds,
    iterations,
    microseconds: {
      selectOneRoundTrip: figure(samples.selectOne),
      verdictRoundTrip: { outside: figure(samples.verdict.outside), breakGlass: figure(samples.verdict.breakGlass) },
      sessionInsert: {
        outside: { withTrigger: figure(samples.insertWith.outside), withoutTrigger: figure(samples.insertWithout.outside) },
        breakGlass: { withTrigger: figure(samples.insertWith.breakGlass), withoutTrigger: figure(samples.insertWithout.breakGlass) },
      },
      // The verdict's statement plus what the trigger adds to the INSERT.
      addedToSignIn: { outside: added('outside'), breakGlass: added('breakGlass') },
    },
  };
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  const { microseconds: us } = results;
  console.log(
    `[bench] the rule adds to a password sign-in: ${us.addedToSignIn.outside} µs outside any claimed domain, ${us.addedToSignIn.breakGlass} µs for an owner's break-glass ` +
      `(verdict round trip ${us.verdictRoundTrip.outside} / ${us.verdictRoundTrip.breakGlass} µs against SELECT 1's ${us.selectOneRoundTrip}; ` +
      `session INSERT ${us.sessionInsert.outside.withTrigger} / ${us.sessionInsert.outside.withoutTrigger} µs outside, ${us.sessionInsert.breakGlass.withTrigger} / ${us.sessionInsert.breakGlass.withoutTrigger} µs break-glass, with / without the trigger)`,
  );
} finally {
  await client.end().catch(() => {});
  await database.drop();
}
