import { Router, type Request } from 'express';
import type { Database } from '../db/database.js';
import { assertRole } from '../extensions/auth/auth.decorator.js';
import { asCaller, parsedAfterChecks, tenantScoped, type TenantDeps } from '../generated/guards/tenant.guard.js';
import { sendData, sendList } from '../http/envelope.js';
import { forbidden } from '../http/errors.js';
import { listRows, parseListQuery, whereSql, type Condition, type ListQuery } from '../http/list-query.js';
import { streamCsv, type CsvCursor } from './csv.js';
import { auditEventListSpec, type AuditEvent, type StoredEvent } from './events.js';
import { withSummaries } from './summaries.js';

/**
 * The organization's event log, for its owners and admins, filtered by the one list-query module
 * (?type=, ?actorId=, ?entity=, ?entityId=, ?createdAt[gte]=, ?createdAt[lt]=):
 *
 *   GET /audit-events              a page of events, newest first (?page=, ?limit=), each with its `summary`
 *   GET /audit-events/per-day      how many events each day (UTC) of the filtered range had: [{ day, count }]
 *   GET /audit-events/export.csv   every event of the filtered range as CSV, newest first, streamed
 *
 * Row-level security shows the rows of the caller's own organization only, and only to an owner
 * or admin, whatever a route's filter says; the routes check the role first too, for a clear 403.
 */

/** The caller's own organization: said in the statement as well as by row-level security. */
const ownOrganization: Condition[] = [{ sql: '"organizationId" = authstrap.organization_id()' }];

/** The export's columns, in order: the event as the list answers it, its data as JSON, and its sentence (last, so that the columns before keep their places). */
const csvColumns = ['id', 'createdAt', 'type', 'actorType', 'actorId', 'entity', 'entityId', 'userId', 'requestId', 'ipAddress', 'userAgent', 'data', 'summary'] as const;

/**
 * Rows per statement of the export: big enough that 100,000 events take a hundred round trips,
 * small enough that the backend holds little of the file at a time.
 */
const csvBatch = 1000;

export function auditEventsRouter(deps: TenantDeps & { db: Database }) {
  const router = Router();

  /** The caller as an owner or admin, and the filter of the request (a bad one: 400 after the caller's 401/403). */
  const filteredAsAdmin = async (req: Request) => {
    const caller = callerOf(deps.db, req);
    const query = await parsedAfterChecks(caller, () => parseListQuery(req.query, auditEventListSpec));
    await caller.checkNow();
    assertRole(req.role, ['owner', 'admin']);
    return { caller, query };
  };

  router.get('/', async (req, res) => {
    const { caller, query } = await filteredAsAdmin(req);
    const page = await listRows<StoredEvent>(caller, auditEventListSpec, query, {}, ownOrganization);
    // The names the sentences need: one more statement for the page, as the same reader.
    sendList(res, { ...page, rows: await withSummaries(caller, page.rows) });
  });

  // Counted in SQL over the whole filtered range, not a page: the audit log's chart.
  router.get('/per-day', async (req, res) => {
    const { caller, query } = await filteredAsAdmin(req);
    const params: unknown[] = [];
    const where = whereSql(auditEventListSpec, filterOf(query), {}, ownOrganization, params);
    // Grouped by a date (4 bytes, sorted in memory), formatted only per day: grouping by the text
    // formats every row and, for 100,000 of them, sorts on disk (2.5 times slower: bench/console.mjs).
    const { rows } = await caller.query<{ day: string; count: number }>(
      `SELECT to_char("day", 'YYYY-MM-DD') AS "day", "count" FROM (
         SELECT ("createdAt" AT TIME ZONE 'UTC')::date AS "day", count(*)::int AS "count" FROM "authstrap_event"${where} GROUP BY 1
       ) AS "days" ORDER BY "days"."day"`,
      params,
    );
    sendData(res, rows);
  });

  router.get('/export.csv', async (req, res) => {
    const { caller, query } = await filteredAsAdmin(req);
    await streamCsv(res, { filename: `audit-log-${new Date().toISOString().slice(0, 10)}.csv`, columns: csvColumns, batch: csvBatch, next: (after: CsvCursor | undefined) => nextCsvBatch(caller, query, after) });
  });

  return tenantScoped(deps, router);
}

/** The filter of a list query without its paging: every row it matches. */
const filterOf = ({ filters, where, createdAfter }: ListQuery) => ({ filters, where, createdAfter });

/** The batch of the filtered events after `after`, newest first (keyset paging: no OFFSET to walk past). */
async function nextCsvBatch(caller: ReturnType<typeof asCaller>, query: ListQuery, after: CsvCursor | undefined) {
  const params: unknown[] = [];
  const afterCursor: Condition = { sql: (placeholder) => `("createdAt", "id") < ((${placeholder}::jsonb->>'at')::timestamptz, (${placeholder}::jsonb->>'id')::uuid)`, value: JSON.stringify(after) };
  const conditions = after ? [...ownOrganization, afterCursor] : ownOrganization;
  const where = whereSql(auditEventListSpec, filterOf(query), {}, conditions, params);
  params.push(csvBatch);
  const { rows } = await caller.query<StoredEvent & { cursorAt: string }>(
    `SELECT ${auditEventListSpec.selectList}, "createdAt"::text AS "cursorAt" FROM "authstrap_event"${where}
      ORDER BY "createdAt" DESC, "id" DESC LIMIT $${params.length}`,
    params,
  );
  // The batch's names in one statement, as the list's page.
  return withSummaries(caller, rows);
}

/** The database as this request's signed-in user; the service key reads no audit log (it belongs to no organization). */
function callerOf(db: Database, req: Request) {
  if (req.caller?.kind === 'service') throw forbidden('The audit log is for the owners and admins of an organization, not the service key');
  return asCaller(db, req);
}
