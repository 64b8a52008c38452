import { z } from 'zod';
import type { Queryable } from '../db/database.js';
import { quoteIdentifier } from '../db/sql.js';
import { badRequest } from './errors.js';

/**
 * The one list-query implementation every collection uses: page, limit, sort, order, status,
 * createdAfter and search, always combined with AND and with the caller's scope (organization,
 * parent record). Column names only ever come from the entity's generated description, never
 * from the request.
 */

export interface ListSpec {
  /** Entity name, for messages. */
  entity: string;
  table: string;
  /** The SELECT list: every column except secrets. */
  selectList: string;
  /** Field name -> column, for every field a list may be sorted by. */
  sortColumns: Readonly<Record<string, string>>;
  /** Columns that `search` matches. */
  searchColumns: readonly string[];
  /** The field lists are sorted by when the request names none. */
  defaultSort: string;
  /** Whether the entity has a `status` field to filter on. */
  hasStatus: boolean;
  /** The column `createdAfter` filters on; null for a table without a creation time. */
  createdAtColumn: string | null;
}

export const defaultPageSize = 20;
export const maxPageSize = 100;

const integer = (name: string) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .refine(Number.isSafeInteger, `${name} is too large`);

const listQuerySchema = z.object({
  page: integer('page').refine((page) => page >= 1, 'page starts at 1').default(1),
  // Out-of-range page sizes are clamped rather than refused: 0 -> 1, 500 -> 100.
  limit: integer('limit').transform((limit) => Math.min(Math.max(limit, 1), maxPageSize)).default(defaultPageSize),
  sort: z.string().optional(),
  order: z.enum(['asc', 'desc'], { error: 'order must be asc or desc' }).default('desc'),
  status: z.string().min(1).max(200).optional(),
  createdAfter: z
    .string()
    .refine((value) => !Number.isNaN(Date.parse(value)), 'createdAfter must be a date, e.g. 2025-01-31 or 2025-01-31T12:00:00Z')
    .transform((value) => new Date(value))
    .optional(),
  search: z.string().max(200, 'search is at most 200 characters').optional(),
});

export type ListQuery = z.infer<typeof listQuerySchema> & { sort: string };

/** Reads the list parameters of a request; anything malformed is a 400 naming the parameter. */
export function parseListQuery(query: unknown, spec: ListSpec): ListQuery {
  const raw = (query ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(raw)) {
    if (Array.isArray(value) || (typeof value === 'object' && value !== null)) {
      throw badRequest(`Query parameter "${name}" was given more than once or in an unsupported form`, { [name]: 'Give it once, as a plain value' });
    }
  }
  const parsed = listQuerySchema.safeParse(raw);
  if (!parsed.success) {
    const details = Object.fromEntries(parsed.error.issues.map((issue) => [String(issue.path[0] ?? 'query'), issue.message]));
    throw badRequest('Invalid list parameters', details);
  }
  const listQuery = { ...parsed.data, sort: parsed.data.sort ?? spec.defaultSort };
  if (!Object.hasOwn(spec.sortColumns, listQuery.sort)) {
    throw badRequest(`Cannot sort ${spec.entity} by "${listQuery.sort}"`, {
      sort: `Use one of: ${Object.keys(spec.sortColumns).join(', ')}`,
    });
  }
  if (listQuery.status !== undefined && !spec.hasStatus) {
    throw badRequest(`${spec.entity} has no status to filter on`, { status: 'Remove this parameter' });
  }
  if (listQuery.createdAfter !== undefined && spec.createdAtColumn === null) {
    throw badRequest(`${spec.entity} has no creation time to filter on`, { createdAfter: 'Remove this parameter' });
  }
  if (listQuery.search !== undefined && spec.searchColumns.length === 0) {
    throw badRequest(`${spec.entity} has no searchable fields`, { search: 'Remove this parameter' });
  }
  return listQuery;
}

/** Makes `%`, `_` and `\` in a search term match themselves in ILIKE. */
export function escapeLike(term: string): string {
  return term.replace(/[\\%_]/g, (character) => `\\${character}`);
}

export interface ListPage<Row> {
  rows: Row[];
  meta: { page: number; limit: number; total: number; totalPages: number };
}

/** A condition beyond equality, e.g. `"id" IN (SELECT "userId" FROM "member" WHERE ...)`. */
export interface Condition {
  sql: (placeholder: string) => string;
  value: unknown;
}

/**
 * Runs the count and the page query. `scope` holds the equality conditions that must always
 * apply (the organization, the parent id), so a caller cannot forget them; `extraConditions` adds
 * other ones (the auth entities' "visible to this caller" rules).
 */
export async function listRows<Row>(
  db: Queryable,
  spec: ListSpec,
  query: ListQuery,
  scope: Record<string, string>,
  extraConditions: Condition[] = [],
): Promise<ListPage<Row>> {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const addCondition = (sql: (placeholder: string) => string, value: unknown) => {
    params.push(value);
    conditions.push(sql(`$${params.length}`));
  };

  for (const [column, value] of Object.entries(scope)) addCondition((p) => `${quoteIdentifier(column)} = ${p}`, value);
  for (const condition of extraConditions) addCondition(condition.sql, condition.value);
  if (query.status !== undefined) addCondition((p) => `"status" = ${p}`, query.status);
  if (query.createdAfter !== undefined && spec.createdAtColumn !== null) {
    addCondition((p) => `${quoteIdentifier(spec.createdAtColumn!)} >= ${p}`, query.createdAfter);
  }
  if (query.search !== undefined) {
    addCondition(
      (p) => `(${spec.searchColumns.map((column) => `${quoteIdentifier(column)} ILIKE ${p} ESCAPE '\\'`).join(' OR ')})`,
      `%${escapeLike(query.search)}%`,
    );
  }

  const from = `FROM ${quoteIdentifier(spec.table)}${conditions.length ? ` WHERE ${conditions.join(' AND ')}` : ''}`;
  const { rows: countRows } = await db.query<{ total: number }>(`SELECT count(*)::int AS total ${from}`, params);
  const total = countRows[0]?.total ?? 0;

  const direction = query.order === 'asc' ? 'ASC' : 'DESC';
  // "id" breaks ties so that rows with equal sort values never move between pages.
  const orderBy = `ORDER BY ${quoteIdentifier(spec.sortColumns[query.sort]!)} ${direction}, "id" ${direction}`;
  const offset = (query.page - 1) * query.limit;
  const { rows } = await db.query<Row>(
    `SELECT ${spec.selectList} ${from} ${orderBy} LIMIT ${query.limit} OFFSET ${offset}`,
    params,
  );

  return {
    rows,
    meta: { page: query.page, limit: query.limit, total, totalPages: Math.ceil(total / query.limit) },
  };
}
