import { z } from 'zod';
import type { Queryable } from '../db/database.js';
import { quoteIdentifier } from '../db/sql.js';
import { badRequest } from './errors.js';

/**
 * The one list-query implementation every collection uses: page, limit, sort, order, search,
 * createdAfter and a filter on any field, always combined with AND and with the caller's scope
 * (organization, parent record). Column names only ever come from the entity's generated
 * description, never from the request; values always travel as parameters.
 *
 * Field filters (the spec's `status=` is one of them):
 *   ?projectId=<id>            equal            ?dueAt=null        is null (nullable fields)
 *   ?status[ne]=done           not equal        ?status[in]=a,b    one of (up to 100)
 *   ?amountCents[gte]=100      gt, gte, lt, lte on numbers and dates
 */

/** How a field's values are read from a query string and compared. */
export type ListFieldType = 'string' | 'uuid' | 'integer' | 'number' | 'boolean' | 'datetime';

export interface ListField {
  column: string;
  type: ListFieldType;
  nullable?: boolean;
  /** The allowed values of an enum field. */
  values?: readonly string[];
}

export interface ListSpec {
  /** Entity name, for messages. */
  entity: string;
  table: string;
  /** The SELECT list: every column except secrets. */
  selectList: string;
  /** Every field a list may be sorted and filtered by, with its column. */
  fields: Readonly<Record<string, ListField>>;
  /** Columns that `search` matches. */
  searchColumns: readonly string[];
  /** The field lists are sorted by when the request names none. */
  defaultSort: string;
  /** The column `createdAfter` filters on; null for a table without a creation time. */
  createdAtColumn: string | null;
}

export const defaultPageSize = 20;
export const maxPageSize = 100;
const maxInValues = 100;

/** The list parameters that are not field filters; a field of the same name is filtered as `name[eq]`. */
export const listParameters = ['page', 'limit', 'sort', 'order', 'search', 'createdAfter'] as const;
export const filterOperators = ['eq', 'ne', 'in', 'gt', 'gte', 'lt', 'lte'] as const;
export type FilterOperator = (typeof filterOperators)[number];
const rangeTypes = new Set<ListFieldType>(['integer', 'number', 'datetime']);

/** The operators a field of this type accepts. */
export const operatorsFor = (field: ListField): FilterOperator[] =>
  filterOperators.filter((operator) => !['gt', 'gte', 'lt', 'lte'].includes(operator) || rangeTypes.has(field.type));

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
  createdAfter: z
    .string()
    .refine((value) => !Number.isNaN(Date.parse(value)), 'createdAfter must be a date, e.g. 2025-01-31 or 2025-01-31T12:00:00Z')
    .transform((value) => new Date(value))
    .optional(),
  search: z.string().max(200, 'search is at most 200 characters').optional(),
});

export interface FieldFilter {
  field: string;
  operator: FilterOperator;
  /** `null` with eq/ne means IS NULL / IS NOT NULL; `in` has an array. */
  value: unknown;
}

export type ListQuery = z.infer<typeof listQuerySchema> & { sort: string; filters: FieldFilter[] };

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One query-string value as the field's type; undefined when it is not one. */
function readValue(field: ListField, raw: string): unknown {
  switch (field.type) {
    case 'string':
      if (field.values) return field.values.includes(raw) ? raw : undefined;
      return raw.length <= 1000 ? raw : undefined;
    case 'uuid':
      return uuidPattern.test(raw) ? raw.toLowerCase() : undefined;
    case 'integer':
      return /^-?\d{1,16}$/.test(raw) && Number.isSafeInteger(Number(raw)) ? Number(raw) : undefined;
    case 'number':
      return /^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(raw) && Number.isFinite(Number(raw)) ? Number(raw) : undefined;
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : undefined;
    case 'datetime':
      return /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/i.test(raw) && !Number.isNaN(Date.parse(raw)) ? new Date(raw) : undefined;
  }
}

const typeHint: Record<ListFieldType, string> = {
  string: 'text',
  uuid: 'an id (uuid)',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  datetime: 'a date, e.g. 2025-01-31 or 2025-01-31T12:00:00Z',
};

/** `amountCents[gte]` -> ['amountCents', 'gte']; `status` -> ['status', 'eq']. */
function splitFilterName(name: string): [string, string] {
  const match = /^([^[\]]+)\[([^[\]]*)\]$/.exec(name);
  return match ? [match[1]!, match[2]!] : [name, 'eq'];
}

function parseFilter(spec: ListSpec, name: string, raw: string): FieldFilter {
  const [fieldName, operator] = splitFilterName(name);
  const field = Object.hasOwn(spec.fields, fieldName) ? spec.fields[fieldName]! : undefined;
  if (!field) {
    throw badRequest(`Unknown query parameter "${name}" for ${spec.entity}`, {
      [name]: `Use one of: ${[...listParameters, ...Object.keys(spec.fields)].join(', ')}`,
    });
  }
  const allowed = operatorsFor(field);
  if (!(allowed as string[]).includes(operator)) {
    throw badRequest(`Cannot filter ${spec.entity}.${fieldName} with "${operator}"`, { [name]: `Use one of: ${allowed.join(', ')}` });
  }
  const read = (value: string) => {
    const parsed = readValue(field, value);
    if (parsed === undefined) {
      throw badRequest(`Invalid value for "${name}"`, { [name]: field.values ? `Must be one of: ${field.values.join(', ')}` : `Must be ${typeHint[field.type]}` });
    }
    return parsed;
  };
  if (operator === 'in') {
    const values = raw.split(',');
    if (values.length > maxInValues) throw badRequest(`Too many values for "${name}"`, { [name]: `At most ${maxInValues}` });
    return { field: fieldName, operator, value: values.map(read) };
  }
  if ((operator === 'eq' || operator === 'ne') && raw === 'null' && field.nullable) return { field: fieldName, operator, value: null };
  return { field: fieldName, operator: operator as FilterOperator, value: read(raw) };
}

/** Reads the list parameters of a request; anything unknown or malformed is a 400 naming the parameter. */
export function parseListQuery(query: unknown, spec: ListSpec): ListQuery {
  const raw = (query ?? {}) as Record<string, unknown>;
  const listed: Record<string, string> = {};
  const filters: FieldFilter[] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value !== 'string') {
      throw badRequest(`Query parameter "${name}" was given more than once or in an unsupported form`, { [name]: 'Give it once, as a plain value' });
    }
    if ((listParameters as readonly string[]).includes(name)) listed[name] = value;
    else filters.push(parseFilter(spec, name, value));
  }
  const parsed = listQuerySchema.safeParse(listed);
  if (!parsed.success) {
    const details = Object.fromEntries(parsed.error.issues.map((issue) => [String(issue.path[0] ?? 'query'), issue.message]));
    throw badRequest('Invalid list parameters', details);
  }
  const listQuery = { ...parsed.data, sort: parsed.data.sort ?? spec.defaultSort, filters };
  if (!Object.hasOwn(spec.fields, listQuery.sort)) {
    throw badRequest(`Cannot sort ${spec.entity} by "${listQuery.sort}"`, {
      sort: `Use one of: ${Object.keys(spec.fields).join(', ')}`,
    });
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
  for (const filter of query.filters) {
    const column = quoteIdentifier(spec.fields[filter.field]!.column);
    if (filter.value === null) {
      conditions.push(`${column} IS ${filter.operator === 'ne' ? 'NOT ' : ''}NULL`);
    } else if (filter.operator === 'in') {
      addCondition((p) => `${column} = ANY(${p})`, filter.value);
    } else {
      // `ne` keeps the rows whose value is null too: "not done" includes "no status yet".
      const sql = { eq: '=', ne: 'IS DISTINCT FROM', gt: '>', gte: '>=', lt: '<', lte: '<=' }[filter.operator];
      addCondition((p) => `${column} ${sql} ${p}`, filter.value);
    }
  }
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
  const orderBy = `ORDER BY ${quoteIdentifier(spec.fields[query.sort]!.column)} ${direction}, "id" ${direction}`;
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
