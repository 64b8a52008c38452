#!/usr/bin/env node
// What the Idempotency-Key's row costs PostgreSQL, piece by piece (issue 51's goal: a keyed write
// at most 5 % slower than a plain one). The backend's bench (bench/idempotency.mjs) puts the key at
// 60 to 110 µs of PostgreSQL's CPU a write, too coarse to tell which part of the row is worth
// taking away. This one sends the generated POST /Projects statement itself, as the backend sends
// it (the caller's scope, then the write with the key's row in its CTE, in one transaction, as
// the app's role under row-level security), over one connection, and reads that connection's
// backend's own CPU time from /proc/<pid>/schedstat (nanoseconds) around each batch: no HTTP, no
// Node in the figure, and a loaded machine moves it far less than rates.
//
// The variants are copies of `authstrap_idempotency_key` that each lack one part (its `id`
// primary key, its foreign key to Organization, its BRIN index on expiresAt, its row-level
// security), all in one database, run in alternating order, BENCH_ROUNDS times BENCH_WRITES writes.
//
//   node bench/key-row.mjs     # about 3 minutes; the example built (npm run build); PostgreSQL at BENCH_PG_URL, on this machine (it reads /proc)
//
// Writes bench/results/key-row.json.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { exampleDir, median, throwawayDatabase } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'key-row.json');
const rounds = Number(process.env.BENCH_ROUNDS ?? 10);
const writes = Number(process.env.BENCH_WRITES ?? 2000);
const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');

/** The generated route's write, as the backend sends it (src/generated/Project/project.repository.ts): its RETURNING is the answer's JSON. */
const { isoTimestamp } = await import(path.join(exampleDir, 'dist', 'db', 'sql.js'));
const write = `INSERT INTO "Project" ("name", "organizationId") VALUES ($1, authstrap.organization_id()) RETURNING (SELECT row_to_json("~row") FROM (SELECT "id", "organizationId", "name", "description", "status", ${isoTimestamp('"createdAt"')} AS "createdAt", ${isoTimestamp('"updatedAt"')} AS "updatedAt") AS "~row")::text AS "json"`;
const caller = `COALESCE('user:' || authstrap.user_id(), 'key:' || NULLIF(current_setting('authstrap.key_id', true), ''))`;
/** src/idempotency/keys.ts's keptWithStatement, with the table's name free. */
const keyed = (table) => `WITH "written" AS (${write}),
  "kept" AS (INSERT INTO "${table}" ("organizationId", "caller", "key", "fingerprint", "expiresAt", "status", "body")
    SELECT authstrap.organization_id(), ${caller}, $2::text, $3::text, now() + make_interval(hours => $4::int), $5::int, '{"success":true,"data":' || "written"."json" || '}'
      FROM (SELECT * FROM "written" LIMIT 1) AS "written", (SELECT set_config('lock_timeout', $6::text, true)) AS "bounded"
     WHERE authstrap.organization_id() IS NOT NULL AND ${caller} IS NOT NULL)
SELECT * FROM "written"`;

/** Each variant: the table it keeps keys in, and what that table lacks. */
const variants = [
  { name: 'plain', what: 'no key' },
  { name: 'key', table: 'authstrap_idempotency_key', what: 'the key table as generated' },
  { name: 'no-id', table: 'key_no_id', what: 'without the id primary key', id: false },
  { name: 'no-fk', table: 'key_no_fk', what: 'without the foreign key to Organization', fk: false },
  { name: 'no-brin', table: 'key_no_brin', what: 'without the BRIN index on expiresAt', brin: false },
  { name: 'lean', table: 'key_lean', what: 'without all three', id: false, fk: false, brin: false },
  { name: 'lean-no-rls', table: 'key_lean_no_rls', what: 'without all three and without row-level security (not an option: for scale)', id: false, fk: false, brin: false, rls: false },
];

async function main() {
  const database = await throwawayDatabase('keyrow');
  const admin = new pg.Client({ connectionString: database.url });
  try {
    for (const file of fs.readdirSync(path.join(exampleDir, 'migrations')).filter((name) => name.endsWith('.sql')).sort()) {
      execFileSync('psql', ['-q', '-v', 'VERBOSITY=terse', '-v', 'ON_ERROR_STOP=1', '-d', database.url, '-f', path.join(exampleDir, 'migrations', file)], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, PGOPTIONS: '-c client_min_messages=warning' } });
    }
    await admin.connect();
    const organizationId = (await admin.query(`INSERT INTO "Organization" ("name", "slug") VALUES ('Bench', 'bench') RETURNING "id"`)).rows[0].id;
    const userId = (await admin.query(`SELECT gen_random_uuid() AS "id"`)).rows[0].id;
    const policies = (await admin.query(`SELECT policyname, cmd, roles::text[] AS roles, qual, with_check FROM pg_policies WHERE tablename = 'authstrap_idempotency_key'`)).rows;
    for (const variant of variants.filter((candidate) => candidate.table && candidate.table !== 'authstrap_idempotency_key')) {
      await admin.query(`CREATE TABLE "${variant.table}" (
        ${variant.id === false ? '' : `"id" uuid PRIMARY KEY DEFAULT gen_random_uuid(),`}
        "organizationId" uuid ${variant.fk === false ? '' : `REFERENCES "Organization" ("id") ON DELETE CASCADE`},
        "caller" text NOT NULL, "key" text NOT NULL, "fingerprint" text NOT NULL, "status" integer, "body" text,
        "createdAt" timestamptz NOT NULL DEFAULT now(), "expiresAt" timestamptz NOT NULL)`);
      await admin.query(`CREATE UNIQUE INDEX ON "${variant.table}" ("organizationId", "caller", "key")`);
      await admin.query(`CREATE UNIQUE INDEX ON "${variant.table}" ("caller", "key") WHERE "organizationId" IS NULL`);
      if (variant.brin !== false) await admin.query(`CREATE INDEX ON "${variant.table}" USING brin ("expiresAt")`);
      await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON "${variant.table}" TO "authstrap_app"`);
      if (variant.rls === false) continue;
      await admin.query(`ALTER TABLE "${variant.table}" ENABLE ROW LEVEL SECURITY`);
      await admin.query(`ALTER TABLE "${variant.table}" FORCE ROW LEVEL SECURITY`);
      for (const policy of policies) {
        const roles = policy.roles.includes('public') ? '' : ` TO ${policy.roles.map((role) => `"${role}"`).join(', ')}`;
        await admin.query(`CREATE POLICY "${policy.policyname}" ON "${variant.table}" FOR ${policy.cmd}${roles}${policy.qual ? ` USING (${policy.qual})` : ''}${policy.with_check ? ` WITH CHECK (${policy.with_check})` : ''}`);
      }
    }

    const session = new pg.Client({ connectionString: database.url });
    await session.connect();
    await session.query(`SET ROLE "authstrap_app"`);
    await session.query(`SET synchronous_commit = off`); // the commit's fsync is the same for every variant, and the noisiest part
    const pid = (await session.query('SELECT pg_backend_pid() AS "pid"')).rows[0].pid;
    const cpuNs = () => Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
    let serial = 0;
    const batch = async (variant, count) => {
      const text = variant.table ? keyed(variant.table) : write;
      const started = cpuNs();
      for (let index = 0; index < count; index++) {
        serial += 1;
        const params = variant.table ? [`Project ${serial}`, `key-${process.pid}-${serial}`, 'fingerprint-0123456789abcdef0123456789abcdef0123', 24, 201, '5000ms'] : [`Project ${serial}`];
        await session.query('BEGIN');
        await session.query({ name: 'scope', text: `SELECT set_config('authstrap.organization_id', $1, true), set_config('authstrap.user_id', $2, true), set_config('authstrap.role', $3, true)`, values: [organizationId, userId, 'owner'] });
        await session.query({ name: variant.name, text, values: params });
        await session.query('COMMIT');
      }
      return (cpuNs() - started) / count / 1000;
    };
    for (const variant of variants) await batch(variant, 200); // prepared, cached, warm
    const perRound = [];
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? variants : variants.slice().reverse();
      const measured = {};
      for (const variant of order) measured[variant.name] = await batch(variant, writes);
      perRound.push(measured);
      console.log(`round ${round + 1}: ${variants.map((variant) => `${variant.name} ${measured[variant.name].toFixed(1)}`).join(', ')} µs`);
    }
    await session.end();

    const summary = variants.map((variant) => {
      const values = perRound.map((measured) => measured[variant.name]);
      const overPlain = perRound.map((measured) => measured[variant.name] - measured.plain);
      return { variant: variant.name, what: variant.what, medianUs: round1(median(values)), overPlainUs: round1(median(overPlain)), rangeUs: [round1(Math.min(...values)), round1(Math.max(...values))] };
    });
    console.table(summary.map(({ variant, medianUs, overPlainUs, rangeUs }) => ({ variant, 'µs a write': medianUs, 'over plain': overPlainUs, range: rangeUs.join(' to ') })));
    fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
    fs.writeFileSync(resultsFile, `${JSON.stringify({ measuredAt: new Date().toISOString(), rounds, writes, loadAverage: (await import('node:os')).loadavg(), summary, perRound }, null, 2)}\n`);
  } finally {
    await admin.end().catch(() => {});
    await database.drop();
  }
}

const round1 = (value) => Math.round(value * 10) / 10;

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
