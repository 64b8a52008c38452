import { z } from 'zod';
import type { Queryable } from '../db/database.js';
import { quoteIdentifier } from '../db/sql.js';
import { badRequest, forbidden } from './errors.js';
import { DateTimeInput } from '../generated/date-time.js';
import { comparisonSql, defaultPageSize, escapeLike, fieldsFor, maxInValues, maxPageSize, rangeTypes, readFieldValue, typeHint, type ListCaller, type ListField, type ListSpec } from './list-fields.js';
import { joinColumnSql, parseJoins, parseWhere, pushWhereConditions, readJoinedDates, type Join, type JoinTarget, type WhereClause } from './service-query.js';

/**
 * The user's list language, the query string of every list route, read into a ListQuery; and the
 * page a ListQuery reads. The one list-query implementation every collection uses: page, limit,
 * sort, order, search, createdAfter and a filter on any field, always combined with AND and with
 * the caller's scope (organization, parent record). Column names only ever come from the entity's
 * generated description, never from the request; values always travel as parameters. The fields,
 * their types and how a value is compared with one are in list-fields.ts.
 *
 * Field filters (the spec's `status=` is one of them):
 *   ?projectId=<id>            equal            ?dueAt=null        is null (nullable fields)
 *   ?status[ne]=done           not equal        ?status[in]=a,b    one of (up to 100)
 *   ?amountCents[gte]=100      gt, gte, lt, lte on numbers and dates
 *
 * The trusted server (the service key) also has `where`, `offset`, `join` and the secret fields:
 * `offset` is read here, `where` and `join` in service-query.ts. Below the parser, the page:
 * listRows and listJson read what a ListQuery asks for (its where and joins included) in one
 * statement, under whereSql's WHERE.
 */

/** The list parameters that are not field filters; a field of the same name is filtered as `name[eq]`. */
export const listParameters = ['page', 'limit', 'sort', 'order', 'search', 'createdAfter', 'where', 'offset', 'join'] as const;
/** The list parameters only the trusted server may send. */
const serviceParameters = ['where', 'offset', 'join'];

/** The operators of a field filter (`name[op]=`): some of the comparisons of list-fields.ts. */
export const filterOperators = ['eq', 'ne', 'in', 'gt', 'gte', 'lt', 'lte'] as const;
export type FilterOperator = (typeof filterOperators)[number];

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
  page: integer('page').refine((page) => page >= 1, 'page starts at 1').optional(),
  // Rows to skip, as a database adapter pages; an alternative to `page`.
  offset: integer('offset').optional(),
  // Out-of-range page sizes are clamped rather than refused: 0 -> 1, 500 -> 100.
  limit: integer('limit').transform((limit) => Math.min(Math.max(limit, 1), maxPageSize)).default(defaultPageSize),
  sort: z.string().optional(),
  order: z.enum(['asc', 'desc'], { error: 'order must be asc or desc' }).default('desc'),
  // Read as every date filter reads one (generated/date-time.ts).
  createdAfter: DateTimeInput.transform((value) => new Date(value)).optional(),
  search: z.string().max(200, 'search is at most 200 characters').optional(),
  where: z.string().optional(),
  join: z.string().optional(),
});

export interface FieldFilter {
  field: string;
  operator: FilterOperator;
  /** `null` with eq/ne means IS NULL / IS NOT NULL; `in` has an array. */
  value: unknown;
}

export type ListQuery = Omit<z.infer<typeof listQuerySchema>, 'where' | 'page' | 'join'> & {
  page: number;
  sort: string;
  filters: FieldFilter[];
  where: WhereClause[];
  /** Related records embedded in each row (the trusted server's `join`). */
  joins?: Join[];
};

/** `amountCents[gte]` -> ['amountCents', 'gte']; `status` -> ['status', 'eq']. */
function splitFilterName(name: string): [string, string] {
  const match = /^([^[\]]+)\[([^[\]]*)\]$/.exec(name);
  return match ? [match[1]!, match[2]!] : [name, 'eq'];
}

/** What this caller may send for this entity, for the answer that names an unknown parameter. */
function parametersFor(spec: ListSpec, caller: ListCaller, fields: Readonly<Record<string, ListField>>): string[] {
  const applies = (name: string) =>
    (caller === 'service' || !serviceParameters.includes(name)) &&
    (name !== 'createdAfter' || spec.createdAtColumn !== null) &&
    (name !== 'search' || spec.searchColumns.length > 0);
  return [...listParameters.filter(applies), ...Object.keys(fields)];
}

function parseFilter(spec: ListSpec, fields: Readonly<Record<string, ListField>>, caller: ListCaller, name: string, raw: string): FieldFilter {
  const [fieldName, operator] = splitFilterName(name);
  const field = Object.hasOwn(fields, fieldName) ? fields[fieldName]! : undefined;
  if (!field) {
    throw badRequest(`Unknown query parameter "${name}" for ${spec.entity}`, {
      [name]: `Use one of: ${parametersFor(spec, caller, fields).join(', ')}`,
    });
  }
  const allowed = operatorsFor(field);
  if (!(allowed as string[]).includes(operator)) {
    throw badRequest(`Cannot filter ${spec.entity}.${fieldName} with "${operator}"`, { [name]: `Use one of: ${allowed.join(', ')}` });
  }
  const read = (value: string) => {
    const parsed = readFieldValue(field, value);
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

/**
 * Reads the list parameters of a request; anything unknown or malformed is a 400 naming the
 * parameter. `where`, `offset` and the secret fields are the trusted server's: a user gets a 403.
 */
export function parseListQuery(query: unknown, spec: ListSpec, caller: ListCaller = 'user', joinTargets: Readonly<Record<string, JoinTarget>> = {}): ListQuery {
  const raw = (query ?? {}) as Record<string, unknown>;
  const paging = plainPaging(raw, spec, caller);
  if (paging !== undefined) return paging;
  const fields = fieldsFor(spec, caller);
  const listed: Record<string, string> = {};
  const filters: FieldFilter[] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value !== 'string') {
      throw badRequest(`Query parameter "${name}" was given more than once or in an unsupported form`, { [name]: 'Give it once, as a plain value' });
    }
    if (serviceParameters.includes(name) && caller !== 'service') throw forbidden(`"${name}" is for the trusted server (the service key), on the auth entities, Organizations and members`);
    if ((listParameters as readonly string[]).includes(name)) listed[name] = value;
    else filters.push(parseFilter(spec, fields, caller, name, value));
  }
  const parsed = listQuerySchema.safeParse(listed);
  if (!parsed.success) {
    const details = Object.fromEntries(parsed.error.issues.map((issue) => [String(issue.path[0] ?? 'query'), issue.message]));
    throw badRequest('Invalid list parameters', details);
  }
  const { where, page, join, offset } = parsed.data;
  if (page !== undefined && offset !== undefined) throw badRequest('Give page or offset, not both', { offset: 'Remove page or offset' });
  // Every key written out, not `{ ...parsed.data, page, ... }`: on Node 20, an object made by a
  // spread and then given more keys gets a hidden class of its own each time, which V8 keeps in
  // the old generation with the request's objects (bench/README.md, "A hidden class per request").
  const listQuery: ListQuery = {
    offset,
    limit: parsed.data.limit,
    order: parsed.data.order,
    createdAfter: parsed.data.createdAfter,
    search: parsed.data.search,
    page: page ?? 1,
    sort: parsed.data.sort ?? spec.defaultSort,
    filters,
    where: where === undefined ? [] : parseWhere(spec, fields, where),
    joins: join === undefined ? undefined : parseJoins(spec, join, joinTargets),
  };
  if (!Object.hasOwn(fields, listQuery.sort)) {
    throw badRequest(`Cannot sort ${spec.entity} by "${listQuery.sort}"`, {
      sort: `Use one of: ${Object.keys(fields).join(', ')}`,
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

/** What `limit` and `page` may be to take plainPaging's path: a few digits. */
const fewDigits = /^\d{1,6}$/;

/**
 * The query string most lists come with, `?limit=20`, `?limit=20&page=3` or none, read without
 * the schema: the same ListQuery the schema makes of it (defaults, the clamped limit), for less
 * than a tenth of its time. Anything else, a page below 1 included, is for parseListQuery's
 * schema, which also words the errors; undefined then.
 */
function plainPaging(raw: Record<string, unknown>, spec: ListSpec, caller: ListCaller): ListQuery | undefined {
  if (!Object.hasOwn(fieldsFor(spec, caller), spec.defaultSort)) return undefined;
  let limit = defaultPageSize;
  let page = 1;
  for (const name in raw) {
    const value = raw[name];
    if (typeof value !== 'string' || !fewDigits.test(value)) return undefined;
    if (name === 'limit') limit = Math.min(Math.max(Number(value), 1), maxPageSize);
    else if (name === 'page' && Number(value) >= 1) page = Number(value);
    else return undefined;
  }
  // The keys in parseListQuery's order: one hidden class for both ways of making it.
  return { offset: undefined, limit, order: 'desc', createdAfter: undefined, search: undefined, page, sort: spec.defaultSort, filters: [], where: [], joins: undefined };
}

/** A page of rows and where it stands in the list, as listRows reads it. */
export interface ListPage<Row> {
  rows: Row[];
  meta: ListMeta;
}

export interface ListMeta {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
}

/** A page as PostgreSQL wrote it: `json` is the rows' JSON array, ready to send. */
export interface JsonPage {
  json: string;
  meta: ListMeta;
}

/**
 * A condition beyond equality: SQL around one parameter (`"id" IN (SELECT "userId" FROM "member"
 * WHERE "organizationId" = $3)`), or SQL of the statement's own, never request data (the caller's
 * organization: `"organizationId" = authstrap.organization_id()`).
 */
export type Condition = ParamCondition | { sql: string };
export interface ParamCondition {
  sql: (placeholder: string) => string;
  value: unknown;
}

/** What narrows a list: everything of a list query except the paging. */
type RowFilter = Partial<Pick<ListQuery, 'filters' | 'where' | 'search' | 'createdAfter'>>;

/**
 * The WHERE of a statement, its values pushed onto `params`. `scope` holds the equality conditions
 * that must always apply (the organization, the parent id), so a caller cannot forget them;
 * `extraConditions` adds other ones (the auth entities' "visible to this caller" rules). Exported
 * for the reads that are not a page of rows over the same filter (the audit log's counts per day
 * and its CSV export: src/events/events.router.ts).
 */
export function whereSql(spec: ListSpec, filter: RowFilter, scope: Record<string, string>, extraConditions: Condition[], params: unknown[]): string {
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const conditions: string[] = [];
  for (const [column, value] of Object.entries(scope)) conditions.push(`${quoteIdentifier(column)} = ${param(value)}`);
  for (const condition of extraConditions) conditions.push('value' in condition ? condition.sql(param(condition.value)) : condition.sql);
  for (const fieldFilter of filter.filters ?? []) conditions.push(comparisonSql(spec.fields[fieldFilter.field]!, fieldFilter, param));
  pushWhereConditions(spec, filter.where ?? [], param, conditions);
  if (filter.createdAfter !== undefined && spec.createdAtColumn !== null) {
    conditions.push(`${quoteIdentifier(spec.createdAtColumn)} >= ${param(filter.createdAfter)}`);
  }
  if (filter.search !== undefined) {
    const pattern = param(`%${escapeLike(filter.search)}%`);
    conditions.push(`(${spec.searchColumns.map((column) => `${quoteIdentifier(column)} ILIKE ${pattern} ESCAPE '\\'`).join(' OR ')})`);
  }
  return conditions.length ? ` WHERE ${conditions.join(' AND ')}` : '';
}

/** The column that carries the total beside each row of a page; no field can be called that. */
const totalColumn = '~total';

/**
 * The parts of a page's statement: FROM and WHERE (values in `params`), ORDER BY (of the table,
 * or of a subquery's rows given its alias and a dot), and where the page starts.
 */
function pageStatement(spec: ListSpec, query: ListQuery, scope: Record<string, string>, extraConditions: Condition[]) {
  const params: unknown[] = [];
  const from = `FROM ${quoteIdentifier(spec.table)}${whereSql(spec, query, scope, extraConditions, params)}`;
  const direction = query.order === 'asc' ? 'ASC' : 'DESC';
  // "id" breaks ties so that rows with equal sort values never move between pages.
  const orderBy = (of = '') => `ORDER BY ${of}${quoteIdentifier(spec.fields[query.sort]!.column)} ${direction}, ${of}"id" ${direction}`;
  const offset = query.offset ?? (query.page - 1) * query.limit;
  // The page's bounds are parameters too: every page of a list is one prepared statement.
  const bounds = `LIMIT $${params.length + 1} OFFSET $${params.length + 2}`;
  return { from, orderBy, bounds, params, pagedParams: [...params, query.limit, offset], offset };
}

const listMeta = (query: ListQuery, offset: number, total: number): ListMeta => ({
  page: Math.floor(offset / query.limit) + 1,
  limit: query.limit,
  total,
  totalPages: Math.ceil(total / query.limit),
});

/**
 * Runs the count and the page query. `scope` and `extraConditions` always apply (see whereSql);
 * `selectList` is the entity's own unless the caller may read more (the trusted server's secrets).
 */
export async function listRows<Row>(
  db: Queryable,
  spec: ListSpec,
  query: ListQuery,
  scope: Record<string, string>,
  extraConditions: Condition[] = [],
  selectList: string = spec.selectList,
): Promise<ListPage<Row>> {
  const { from, orderBy, bounds, params, pagedParams, offset } = pageStatement(spec, query, scope, extraConditions);
  const joined = (query.joins ?? []).map((join) => `, ${joinColumnSql(spec.table, join)}`).join('');

  // The page and the total in one statement (one round trip): the count is an uncorrelated
  // subquery, which PostgreSQL runs once (an index-only count), beside the page read in sort order.
  const { rows } = await db.query<Row & { [totalColumn]?: number }>(
    `SELECT ${selectList}${joined}, (SELECT count(*)::int ${from}) AS "${totalColumn}" ${from} ${orderBy()} ${bounds}`,
    pagedParams,
  );
  let total = rows[0]?.[totalColumn] ?? 0;
  // A copy without the total rather than `delete`, which would slow every later read of the row.
  const page = rows.map(({ [totalColumn]: _total, ...row }) => row as Row);
  if (query.joins?.length) for (const row of page) readJoinedDates(row as Record<string, unknown>, query.joins);
  // A page past the end has no row to carry the total: only then is it counted on its own.
  if (rows.length === 0 && offset > 0) {
    const { rows: counted } = await db.query<{ total: number }>(`SELECT count(*)::int AS total ${from}`, params);
    total = counted[0]?.total ?? 0;
  }

  return { rows: page, meta: listMeta(query, offset, total) };
}

/**
 * listRows for a page that goes out as it is: PostgreSQL writes the rows' JSON array itself
 * (spec.jsonSelectList), so no value is parsed into an object only to be serialized again.
 * One row comes back, the total beside the page, so a page past the end needs no second count.
 * The page is read first and only its rows are written as JSON, each in the same plan node as
 * its read (a subquery per row costs more: bench/README.md). ARRAY(subquery) keeps the order of
 * the subquery's ORDER BY, which repeats the page's, so PostgreSQL does not sort again.
 */
export async function listJson(db: Queryable, spec: ListSpec, query: ListQuery, scope: Record<string, string>, extraConditions: Condition[] = []): Promise<JsonPage> {
  const offset = query.offset ?? (query.page - 1) * query.limit;
  const plain = plainListKey(query, scope, extraConditions);
  let text = plain === undefined ? undefined : plainListTexts.get(spec)?.get(plain);
  let params: unknown[] = [query.limit, offset];
  if (text === undefined) {
    ({ text, pagedParams: params } = listJsonStatement(spec, query, scope, extraConditions));
    if (plain !== undefined) rememberPlainList(spec, plain, text);
  }
  const { rows } = await db.query<{ total: number; json: string }>(text, params);
  const { total, json } = rows[0]!;
  return { json, meta: listMeta(query, offset, total) };
}

/** listJson's statement: its text, and its values with the page's bounds after them. */
function listJsonStatement(spec: ListSpec, query: ListQuery, scope: Record<string, string>, extraConditions: Condition[]) {
  if (!spec.jsonSelectList) throw new Error(`${spec.entity} has no JSON select list: use listRows`);
  const { from, orderBy, bounds, pagedParams } = pageStatement(spec, query, scope, extraConditions);
  const text = `SELECT (SELECT count(*)::int ${from}) AS "total",
       array_to_json(ARRAY(
         SELECT row_to_json("~row") FROM (SELECT * ${from} ${orderBy()} ${bounds}) AS "~page", LATERAL (SELECT ${spec.jsonSelectList}) AS "~row"
         ${orderBy('"~page".')}))::text AS "json"`;
  return { text, pagedParams };
}

/**
 * Most lists ask only for a page, in some order: no filter, no search, no value beyond the page's
 * bounds. Their statement depends only on the sort, the order and the route's own SQL conditions,
 * so it is written once per shape and kept, text and all: building it again for every request, and
 * hashing its text again to find its prepared statement's name, was a measurable part of a list's
 * time in Node (bench/README.md, issue 32). Anything else is written per request, as before.
 */
const plainListTexts = new WeakMap<ListSpec, Map<string, string>>();
/** How many shapes an entity keeps: its sortable fields, twice (asc, desc), for a few sets of conditions. */
const plainShapesPerEntity = 200;

/** The shape of a plain list (see plainListTexts); undefined when the query carries values of its own. */
function plainListKey(query: ListQuery, scope: Record<string, string>, extraConditions: Condition[]): string | undefined {
  if (query.filters.length > 0 || query.where.length > 0 || query.search !== undefined || query.createdAfter !== undefined || query.joins?.length) return undefined;
  for (const _column in scope) return undefined;
  let key = `${query.sort} ${query.order}`;
  for (const condition of extraConditions) {
    if ('value' in condition) return undefined;
    key += ` ${condition.sql}`;
  }
  return key;
}

function rememberPlainList(spec: ListSpec, key: string, text: string): void {
  let shapes = plainListTexts.get(spec);
  if (!shapes) plainListTexts.set(spec, (shapes = new Map()));
  if (shapes.size < plainShapesPerEntity) shapes.set(key, text);
}
