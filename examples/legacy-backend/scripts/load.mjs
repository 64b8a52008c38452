#!/usr/bin/env node
// Loads schema.sql + seed.sql into the database named by DATABASE_URL (or --database-url).
//
//   node scripts/load.mjs [--database-url URL] [--reset]
//
// The database is created when it does not exist. A database that already has the app's tables
// is refused (loading twice would fail halfway) unless --reset, which drops and recreates it:
// that is how tests and the add-auth demo get the same starting point every time.
// Prints the row count of every table. Exit codes: 0 loaded, 1 failed, 2 bad usage.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const TABLES = ['users', 'accounts', 'invoices', 'sessions', 'session_attendees'];
const USAGE = 'usage: node scripts/load.mjs [--database-url URL] [--reset]   (or set DATABASE_URL)';

function fail(message, code = 1) {
  console.error(`load: ${message}`);
  process.exit(code);
}

function parseArgs(argv) {
  const options = { databaseUrl: process.env.DATABASE_URL, reset: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--reset') options.reset = true;
    else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else if (arg === '--database-url') {
      if (!argv[i + 1]) fail(`--database-url needs a value\n${USAGE}`, 2);
      options.databaseUrl = argv[++i];
    } else if (arg.startsWith('--database-url=')) options.databaseUrl = arg.slice('--database-url='.length);
    else fail(`unknown argument ${arg}\n${USAGE}`, 2);
  }
  if (!options.databaseUrl) fail(`no database given\n${USAGE}`, 2);
  return options;
}

// Where we connect, for messages: never the password.
function server(url) {
  return `${url.hostname || 'localhost'}:${url.port || 5432}`;
}
function describe(url) {
  return `${server(url)}/${decodeURIComponent(url.pathname.slice(1))}`;
}

const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET']);

async function connect(url) {
  const client = new pg.Client({ connectionString: url.href, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    return client;
  } catch (error) {
    await client.end().catch(() => {});
    if (error.code === '3D000') return null; // database does not exist: the caller creates it
    if (NETWORK_ERRORS.has(error.code) || /timeout/i.test(error.message)) {
      fail(`cannot reach PostgreSQL at ${server(url)} (${error.code ?? error.message}). Is it running? Check DATABASE_URL.`);
    }
    fail(`cannot connect to ${describe(url)}: ${error.message}`);
  }
}

// CREATE/DROP DATABASE cannot run inside the target database, so they go through the
// server's maintenance database `postgres`.
async function withServer(url, work) {
  const adminUrl = new URL(url.href);
  adminUrl.pathname = '/postgres';
  const admin = await connect(adminUrl);
  if (!admin) fail(`the server at ${describe(adminUrl)} has no "postgres" database to create ${describe(url)} from`);
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

async function main() {
  const { databaseUrl, reset } = parseArgs(process.argv.slice(2));
  let url;
  try {
    url = new URL(databaseUrl);
  } catch {
    fail(`not a URL: DATABASE_URL should look like postgresql://user@host:5432/dbname`, 2);
  }
  const dbName = decodeURIComponent(url.pathname.slice(1));
  if (!dbName) fail('DATABASE_URL names no database (…:5432/dbname)', 2);
  // --reset drops the database: never one the server itself needs.
  if (reset && ['postgres', 'template0', 'template1'].includes(dbName)) {
    fail(`refusing to drop the "${dbName}" database; point DATABASE_URL at a database of its own`, 2);
  }

  if (reset) {
    await withServer(url, async (admin) => {
      const name = admin.escapeIdentifier(dbName);
      // WITH (FORCE) ends other connections (a running server, a psql) instead of failing. PG 13+.
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${name}`);
    });
    console.log(`reset: dropped and recreated ${describe(url)}`);
  }

  let client = await connect(url);
  if (!client) {
    await withServer(url, (admin) => admin.query(`CREATE DATABASE ${admin.escapeIdentifier(dbName)}`));
    console.log(`created ${describe(url)}`);
    client = await connect(url);
  }

  try {
    const existing = await client.query(
      `SELECT table_name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_name = ANY($1) ORDER BY table_name`,
      [TABLES],
    );
    if (existing.rowCount > 0) {
      const names = existing.rows.map((row) => row.table_name).join(', ');
      fail(`${describe(url)} already has tables (${names}); pass --reset to drop and reload it`);
    }

    // One transaction: either the whole app is loaded or nothing is.
    const schema = fs.readFileSync(path.join(root, 'schema.sql'), 'utf8');
    const seed = fs.readFileSync(path.join(root, 'seed.sql'), 'utf8');
    await client.query('BEGIN');
    try {
      await client.query(schema);
      await client.query(seed);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      fail(`loading failed, nothing was kept: ${error.message}`);
    }

    console.log(`loaded ${describe(url)}`);
    for (const table of TABLES) {
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM ${client.escapeIdentifier(table)}`);
      console.log(`  ${table.padEnd(18)} ${String(rows[0].n).padStart(3)}`);
    }
  } finally {
    await client.end();
  }
}

main().catch((error) => fail(error.message));
