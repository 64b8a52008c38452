#!/usr/bin/env node
// What the backend asks of PostgreSQL, statement by statement, checked against what distributing the
// tenant tables by organization id (Citus) would need of it (docs/scaling.md). The statements are
// the ones the example's HTTP suites made it send, read on the wire:
//
//   AUTHSTRAP_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres \
//   AUTHSTRAP_TEST_CAPTURE_SQL=/tmp/statements.txt npm test -- examples/saas-backend/test/
//   node bench/statements.mjs /tmp/statements.txt
//
// For each distinct statement: the tables it names, whether each tenant table in it is narrowed to
// one organization ("organizationId" = $n), and what Citus treats specially (row locks, advisory
// locks, ON CONFLICT, DDL). Statements the tests sent themselves through the backend's own
// database object (setup and inspection) are in the capture too; the report says which tables and
// constructs each statement involves, and docs/scaling.md reads it. Writes bench/results/statements.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { exampleDir } from './lib/harness.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results', 'statements.json');
const captureFile = process.argv[2];
if (!captureFile || !fs.existsSync(captureFile)) {
  console.error('usage: node bench/statements.mjs <file written by AUTHSTRAP_TEST_CAPTURE_SQL>');
  process.exit(2);
}

const snapshot = JSON.parse(fs.readFileSync(path.join(exampleDir, 'migrations', 'schema-snapshot.json'), 'utf8'));
const tables = snapshot.tables.map((table) => ({ name: table.name, tenant: table.columns.some((column) => column.name === 'organizationId') }));
const tableNames = [...tables.map((table) => table.name), 'authstrap_migrations'];
const tenantTables = tables.filter((table) => table.tenant).map((table) => table.name);

const named = (sql, name) => (/^[a-z_]+$/.test(name) && !/[A-Z]/.test(name) && name.startsWith('authstrap_') ? new RegExp(`\\b${name}\\b`).test(sql) : sql.includes(`"${name}"`));

const statements = [...new Set(fs.readFileSync(captureFile, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)))].sort();
const report = statements.map((sql) => {
  const involved = tableNames.filter((name) => named(sql, name));
  const kind = /^\s*(--|CREATE|ALTER|DROP)/i.test(sql) ? 'ddl' : /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i.test(sql) ? 'transaction control' : 'dml';
  return {
    sql,
    kind,
    tables: involved,
    tenantTables: involved.filter((name) => tenantTables.includes(name)),
    // One organization: the statement says which, as a parameter (a filter, or the value of an
    // INSERT's "organizationId"), so Citus can send it to the one node that holds it.
    oneOrganization: /"organizationId"\s*=\s*\$\d+/.test(sql) || /^\s*INSERT INTO "\w+" \([^)]*"organizationId"[^)]*\) VALUES \(/i.test(sql),
    rowLocks: /\bFOR (UPDATE|SHARE|NO KEY UPDATE|KEY SHARE)\b/i.test(sql),
    skipLocked: /\bSKIP LOCKED\b/i.test(sql),
    advisoryLock: /pg_advisory/i.test(sql),
    onConflict: /\bON CONFLICT\b/i.test(sql),
    writes: /^\s*(WITH\b[\s\S]*\b)?(INSERT|UPDATE|DELETE)\b/i.test(sql),
  };
});

const dml = report.filter((entry) => entry.kind === 'dml');
const withTenant = dml.filter((entry) => entry.tenantTables.length > 0);
const summary = {
  statements: report.length,
  dml: dml.length,
  tenantTables,
  onTenantTables: withTenant.length,
  onTenantTablesForOneOrganization: withTenant.filter((entry) => entry.oneOrganization).length,
  acrossOrganizations: withTenant.filter((entry) => !entry.oneOrganization).map((entry) => entry.sql),
  byTables: Object.entries(
    dml.reduce((counts, entry) => {
      const key = entry.tables.join(' + ') || '(no table)';
      return { ...counts, [key]: (counts[key] ?? 0) + 1 };
    }, {}),
  ).sort((a, b) => b[1] - a[1]),
  rowLocks: dml.filter((entry) => entry.rowLocks).map((entry) => entry.sql),
  advisoryLocks: dml.filter((entry) => entry.advisoryLock).map((entry) => entry.sql),
  onConflict: dml.filter((entry) => entry.onConflict).map((entry) => entry.sql),
};

console.log(`${summary.statements} distinct statements, ${summary.dml} of them reads and writes; tenant tables: ${tenantTables.join(', ')}`);
console.log(`${summary.onTenantTables} name a tenant table; ${summary.onTenantTablesForOneOrganization} of those narrow it to one organization ("organizationId" = $n)`);
console.log('\nby tables:');
for (const [key, count] of summary.byTables) console.log(`  ${String(count).padStart(4)}  ${key}`);
for (const [title, list] of [
  ['across organizations (a tenant table, no single organization)', summary.acrossOrganizations],
  ['row locks', summary.rowLocks],
  ['advisory locks', summary.advisoryLocks],
  ['ON CONFLICT', summary.onConflict],
]) {
  console.log(`\n${title}: ${list.length}`);
  for (const sql of list) console.log(`  - ${sql.length > 220 ? `${sql.slice(0, 220)}...` : sql}`);
}
fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
fs.writeFileSync(resultsFile, `${JSON.stringify({ date: new Date().toISOString(), summary, statements: report }, null, 2)}\n`);
