#!/usr/bin/env node
// The other half of bench/events-write-cost.mjs's decoding side: a prototype of events taken from
// the write-ahead log instead of written by a trigger. Not the backend's code, and not a design:
// a measuring tool that does the work such a design would have to do, so that its cost can be set
// beside the trigger's.
//
// It reads the committed changes of one database from a logical replication slot (test_decoding),
// and for each insert, update or delete of a table that has events it writes the event row the
// trigger would have written, with the record, the organization and the request's context (which
// the backend put in the same transaction's WAL with pg_logical_emit_message), many transactions'
// events in one INSERT. Its own writes carry a replication origin, so the slot skips them
// ('only-local'). Two readers:
// - by default a walsender streams the changes, as to a replica (pg_recvlogical, a child process):
//   the cheaper one, but pg_recvlogical confirms what it has read, not what has been written, so a
//   consumer killed between the two would lose events (a design would confirm after its commit);
// - DECODING_READER=sql: pg_logical_slot_get_changes, read and written in one transaction, which
//   decodes again from the slot's restart point at every call.
//
//   node bench/lib/decoding-consumer.mjs <database url> <slot>
//
// Settings: DECODING_POLL_MS (20), DECODING_BATCH (5000 changes, the sql reader's), BENCH_PG_BIN.
// On SIGTERM it finishes its batch and prints one line: DECODING_JSON {"transactions", "events", "batches"}.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const exampleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'saas-backend');
const pg = createRequire(path.join(exampleDir, 'package.json'))('pg');
const [url, slot] = process.argv.slice(2);
const pollMs = Number(process.env.DECODING_POLL_MS ?? 20);
const batchChanges = Number(process.env.DECODING_BATCH ?? 5000);

/** The tables with events, as the migration's triggers name them: the event's prefix and the column that holds the organization. */
const tables = {
  'public."Project"': { prefix: 'project', entity: 'Project', organizationColumn: 'organizationId' },
  'public."Task"': { prefix: 'task', entity: 'Task', organizationColumn: 'organizationId' },
  'public.member': { prefix: 'member', entity: 'member', organizationColumn: 'organizationId' },
  'public."Organization"': { prefix: 'organization', entity: 'Organization', organizationColumn: 'id' },
};

// test_decoding's line for a row: `table <name>: <INSERT|UPDATE|DELETE>: <column>[<type>]:<value> ...`
const changeLine = /^table (.+?): (INSERT|UPDATE|DELETE): (.*)$/;
const column = /("(?:[^"]|"")*"|[^\s[]+)\[((?:[^\]]|\[\])*)\]:('(?:[^']|'')*'|\S+)/g;

function parseColumns(text) {
  const record = {};
  for (const [, name, , value] of text.matchAll(column)) {
    const key = name.startsWith('"') ? name.slice(1, -1).replaceAll('""', '"') : name;
    record[key] = value === 'null' ? null : value.startsWith("'") ? value.slice(1, -1).replaceAll("''", "'") : value;
  }
  return record;
}

const client = new pg.Client({ connectionString: url });
await client.connect();
await client.query(`SELECT pg_replication_origin_create('authstrap_events') WHERE NOT EXISTS (SELECT FROM pg_replication_origin WHERE roname = 'authstrap_events')`);
await client.query(`SELECT pg_replication_origin_session_setup('authstrap_events')`);

let stopping = false;
process.once('SIGTERM', () => (stopping = true));
const totals = { transactions: 0, events: 0, batches: 0 };

/** Turns test_decoding's lines, whole transactions of them, into the events of their changes. */
function eventsOf(lines) {
  const events = [];
  let context = {};
  let userId = null;
  let pending = [];
  for (const data of lines) {
    if (data.startsWith('BEGIN')) {
      context = {};
      userId = null;
      pending = [];
    } else if (data.startsWith('message:')) {
      const content = data.slice(data.indexOf('content:') + 'content:'.length);
      const space = content.indexOf(' ');
      userId = content.slice(0, space) || null;
      context = JSON.parse(content.slice(space + 1));
    } else if (data.startsWith('COMMIT')) {
      const committedAt = data.slice(data.indexOf('(at ') + 4, -1);
      for (const event of pending) {
        events.push({ ...event, createdAt: committedAt, actorType: context.actorType ?? (userId ? 'user' : 'system'), actorId: context.actorId ?? userId, requestId: context.requestId ?? null, ipAddress: context.ipAddress ?? null, userAgent: context.userAgent?.slice(0, 512) ?? null });
      }
      totals.transactions += 1;
    } else {
      const match = changeLine.exec(data);
      const table = match && tables[match[1]];
      if (!table) continue;
      const record = parseColumns(match[3].replace(/^old-key: .*? new-tuple: /, ''));
      const operation = { INSERT: 'created', UPDATE: 'updated', DELETE: 'deleted' }[match[2]];
      pending.push({ type: `${table.prefix}.${operation}`, organizationId: record[table.organizationColumn] ?? null, entity: table.entity, entityId: record.id, data: operation === 'deleted' ? {} : { record } });
    }
  }
  return events;
}

const insertEvents = `INSERT INTO "authstrap_event" ("type", "organizationId", "actorType", "actorId", "entity", "entityId", "data", "requestId", "ipAddress", "userAgent", "createdAt")
  SELECT "type", "organizationId", "actorType", "actorId", "entity", "entityId", "data", "requestId", "ipAddress", "userAgent", "createdAt"
    FROM jsonb_to_recordset($1::jsonb) AS e("type" text, "organizationId" uuid, "actorType" text, "actorId" text, "entity" text, "entityId" text, "data" jsonb, "requestId" text, "ipAddress" text, "userAgent" text, "createdAt" timestamptz)`;

if (process.env.DECODING_READER === 'sql') {
  // Through SQL: each call decodes again from the slot's restart point, read and written in one transaction.
  while (!stopping) {
    await client.query('BEGIN');
    const { rows } = await client.query(`SELECT data FROM pg_logical_slot_get_changes($1, NULL, $2, 'skip-empty-xacts', '1', 'only-local', '1', 'include-timestamp', '1')`, [slot, batchChanges]);
    const events = eventsOf(rows.map((row) => row.data));
    if (events.length > 0) await client.query(insertEvents, [JSON.stringify(events)]);
    await client.query('COMMIT');
    totals.events += events.length;
    if (rows.length > 0) totals.batches += 1;
    if (rows.length < batchChanges) await sleep(pollMs);
  }
} else {
  // Streamed by a walsender (pg_recvlogical); the whole transactions read so far are written every pollMs.
  const target = new URL(url);
  const reader = spawn(path.join(process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin', 'pg_recvlogical'), ['-h', target.hostname, '-p', target.port, '-U', decodeURIComponent(target.username), '-d', target.pathname.slice(1), '-S', slot, '--start', '-f', '-', '-o', 'skip-empty-xacts=1', '-o', 'only-local=1', '-o', 'include-timestamp=1', '-F', '1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let partial = '';
  let lines = [];
  reader.stdout.setEncoding('utf8');
  reader.stdout.on('data', (chunk) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop();
    lines.push(...parts);
  });
  while (!stopping) {
    const lastCommit = lines.findLastIndex((line) => line.startsWith('COMMIT'));
    if (lastCommit >= 0) {
      const batch = lines.slice(0, lastCommit + 1);
      lines = lines.slice(lastCommit + 1);
      const events = eventsOf(batch);
      if (events.length > 0) await client.query(insertEvents, [JSON.stringify(events)]);
      totals.events += events.length;
      totals.batches += 1;
    }
    await sleep(pollMs);
  }
  reader.kill('SIGTERM');
}
console.log(`DECODING_JSON ${JSON.stringify(totals)}`);
await client.end();
