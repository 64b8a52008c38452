import { z } from 'zod';
import type { Queryable } from '../db/database.js';
import { setClause, quoteIdentifier, type ColumnMap } from '../db/sql.js';
import { badRequest, forbidden } from './errors.js';
import { DateTimeInput, dateTimeHint } from '../generated/date-time.js';

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
 *
 * The trusted server (the service key) also has `where`, `offset` and the secret fields: see
 * "Where clauses" below. Dates are compared at millisecond precision: PostgreSQL keeps
 * microseconds, but a client only ever sends (and receives) milliseconds, so a row is found by
 * the very timestamp the API gave out.
 */

/** How a field's values are read from a query string and compared. */
export type ListFieldType = 'string' | 'uuid' | 'integer' | 'number' | 'boolean' | 'datetime';

export interface ListField {
  column: string;
  type: ListFieldType;
  nullable?: boolean;
  /** The allowed values of an enum field. */
  values?: readonly string[];
  /** A password hash or token: only the trusted server filters or sorts by it (or reads it). */
  secret?: boolean;
}

export interface ListSpec {
  /** Entity name, for messages. */
  entity: string;
  table: string;
  /** The SELECT list: every column except secrets. */
  selectList: string;
  /** Every field a list may be sorted and filtered by, with its column (secret ones marked). */
  fields: Readonly<Record<string, ListField>>;
  /** Columns that `search` matches. */
  searchColumns: readonly string[];
  /** The field lists are sorted by when the request names none. */
  defaultSort: string;
  /** The column `createdAfter` filters on; null for a table without a creation time. */
  createdAtColumn: string | null;
  /**
   * The SELECT list with every value as its JSON (timestamps as ISO 8601 text), for reads whose
   * JSON PostgreSQL writes itself (listJson). Absent where PostgreSQL's JSON could differ from
   * what `pg` and JSON.stringify make of a value (numbers, json fields, a table authstrap did not create).
   */
  jsonSelectList?: string;
}

export const defaultPageSize = 20;
export const maxPageSize = 100;
const maxInValues = 100;

/** The list parameters that are not field filters; a field of the same name is filtered as `name[eq]`. */
export const listParameters = ['page', 'limit', 'sort', 'order', 'search', 'createdAfter', 'where', 'offset', 'join'] as const;
/** The list parameters only the trusted server may send. */
const serviceParameters = ['where', 'offset', 'join'];

/** Who is asking: a signed-in user, or the trusted server (the service key). */
export type ListCaller = 'user' | 'service';
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
    case 'datetime': {
      // As a body reads one: a date (midnight UTC), or a date and time with its offset.
      const parsed = DateTimeInput.safeParse(raw);
      return parsed.success ? new Date(parsed.data) : undefined;
    }
  }
}

/** What a value of each field type looks like, for messages and the OpenAPI document. */
export const typeHint: Record<ListFieldType, string> = {
  string: 'text',
  uuid: 'an id (uuid)',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  datetime: dateTimeHint,
};

/** `amountCents[gte]` -> ['amountCents', 'gte']; `status` -> ['status', 'eq']. */
function splitFilterName(name: string): [string, string] {
  const match = /^([^[\]]+)\[([^[\]]*)\]$/.exec(name);
  return match ? [match[1]!, match[2]!] : [name, 'eq'];
}

/** The fields this caller may filter and sort by: a user never names a secret one. */
function fieldsFor(spec: ListSpec, caller: ListCaller): Readonly<Record<string, ListField>> {
  if (caller === 'service') return spec.fields;
  // Worked out once per entity, not on every request.
  let fields = userFields.get(spec);
  if (!fields) {
    fields = Object.fromEntries(Object.entries(spec.fields).filter(([, field]) => !field.secret));
    userFields.set(spec, fields);
  }
  return fields;
}
const userFields = new WeakMap<ListSpec, Readonly<Record<string, ListField>>>();

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

/**
 * Where clauses: the filters a Better Auth database adapter sends, as the URL-encoded JSON of
 * `?where=[{ "field": "email", "operator": "eq", "value": "a@example.com" }, ...]`.
 *
 *   operator   eq (default), ne, lt, lte, gt, gte, in, not_in, contains, starts_with, ends_with
 *   value      typed as the field: a string, number, boolean, ISO date or uuid; an array for
 *              in / not_in; null with eq / ne for IS NULL / IS NOT NULL
 *   connector  AND (default) or OR. As in Better Auth's own SQL adapters, the AND clauses must
 *              all hold and, when there are OR clauses, at least one of them must hold too:
 *              `a AND b AND (c OR d)`.
 *   mode       'insensitive' compares text case-insensitively; 'sensitive' is the default.
 *
 * `ne` and `not_in` keep the rows whose value is null, like the `[ne]` filter above.
 */
export const whereOperators = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'not_in', 'contains', 'starts_with', 'ends_with'] as const;
export type WhereOperator = (typeof whereOperators)[number];

export interface WhereClause {
  field: string;
  operator: WhereOperator;
  /** Typed as the field; an array for in / not_in; null for IS (NOT) NULL. */
  value: unknown;
  connector: 'AND' | 'OR';
  insensitive: boolean;
}

/** Enough for any adapter query (Better Auth sends a handful), small enough to bound the SQL. */
export const maxWhereClauses = 50;
const clauseKeys = new Set(['field', 'operator', 'value', 'connector', 'mode']);
const textOperators = new Set<WhereOperator>(['contains', 'starts_with', 'ends_with']);
const rangeOperators = new Set<WhereOperator>(['lt', 'lte', 'gt', 'gte']);

/** The where operators a field of this type accepts: ranges also on text, as Better Auth allows. */
export const whereOperatorsFor = (field: ListField): WhereOperator[] =>
  whereOperators.filter(
    (operator) =>
      (!rangeOperators.has(operator) || rangeTypes.has(field.type) || field.type === 'string') &&
      (!textOperators.has(operator) || field.type === 'string'),
  );

/** One JSON value as the field's type; undefined when it is not one. */
function readJsonValue(field: ListField, value: unknown, anyText: boolean): unknown {
  switch (field.type) {
    case 'string':
      if (typeof value !== 'string') return undefined;
      return anyText ? (value.length <= 1000 ? value : undefined) : readValue(field, value);
    case 'integer':
    case 'number':
      return typeof value === 'number' ? readValue(field, String(value)) : undefined;
    case 'boolean':
      return typeof value === 'boolean' ? value : undefined;
    case 'uuid':
    case 'datetime':
      return typeof value === 'string' ? readValue(field, value) : undefined;
  }
}

/** A query parameter holding JSON (`where`, `join`); `invalid` makes its 400. */
function jsonParameter(raw: string, invalid: (message: string) => Error, expected: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    throw invalid(`must be ${expected}, URL-encoded`);
  }
}

function parseWhere(spec: ListSpec, fields: Readonly<Record<string, ListField>>, raw: string): WhereClause[] {
  const invalid = (message: string) => badRequest(`Invalid where: ${message}`, { where: message });
  const clauses = jsonParameter(raw, invalid, 'a JSON array of clauses');
  if (!Array.isArray(clauses)) throw invalid('must be a JSON array of clauses');
  if (clauses.length > maxWhereClauses) throw invalid(`at most ${maxWhereClauses} clauses`);
  return clauses.map((clause: unknown, index): WhereClause => {
    const at = `clause ${index + 1}`;
    if (clause === null || typeof clause !== 'object' || Array.isArray(clause)) throw invalid(`${at} must be an object`);
    const { field: name, operator = 'eq', value, connector = 'AND', mode = 'sensitive' } = clause as Record<string, unknown>;
    const unknownKey = Object.keys(clause).find((key) => !clauseKeys.has(key));
    if (unknownKey !== undefined) throw invalid(`${at} has an unknown key; use field, operator, value, connector, mode`);
    if (typeof name !== 'string' || !Object.hasOwn(fields, name)) {
      throw invalid(`${at}: unknown field${typeof name === 'string' ? ` "${name.slice(0, 100)}"` : ''} for ${spec.entity}; use one of: ${Object.keys(fields).join(', ')}`);
    }
    const field = fields[name]!;
    const allowed = whereOperatorsFor(field);
    if (typeof operator !== 'string' || !(allowed as string[]).includes(operator)) {
      throw invalid(`${at}: ${name} cannot be compared with "${String(operator).slice(0, 50)}"; use one of: ${allowed.join(', ')}`);
    }
    if (connector !== 'AND' && connector !== 'OR') throw invalid(`${at}: connector must be AND or OR`);
    if (mode !== 'sensitive' && mode !== 'insensitive') throw invalid(`${at}: mode must be sensitive or insensitive`);
    const insensitive = mode === 'insensitive';
    if (insensitive && field.type !== 'string') throw invalid(`${at}: mode insensitive is for text fields, not ${name}`);

    const expected = `${name} must be ${field.values ? `one of: ${field.values.join(', ')}` : typeHint[field.type]}`;
    // A substring need not be a whole enum value; case-insensitive equality need not either.
    const anyText = textOperators.has(operator as WhereOperator) || insensitive;
    const read = (item: unknown) => {
      const parsed = readJsonValue(field, item, anyText);
      if (parsed === undefined) throw invalid(`${at}: ${expected}`);
      return parsed;
    };
    let typed: unknown;
    if (operator === 'in' || operator === 'not_in') {
      if (!Array.isArray(value)) throw invalid(`${at}: ${operator} takes an array of values for ${name}`);
      if (value.length > maxInValues) throw invalid(`${at}: at most ${maxInValues} values for ${name}`);
      typed = value.map(read);
    } else if (value === null && (operator === 'eq' || operator === 'ne')) {
      typed = null;
    } else {
      typed = read(value);
    }
    return { field: name, operator: operator as WhereOperator, value: typed, connector, insensitive };
  });
}

/**
 * Joins: related records of other entities, embedded in each row of a trusted-server list, so
 * that a Better Auth adapter reads a session and its user (or a user and their accounts) in one
 * request and one statement:
 *
 *   ?join={"user": {"entity": "User", "from": "userId", "to": "id", "relation": "one-to-one"}}
 *
 * Each key names the property the related record(s) appear under; `from` is a field of this
 * entity, `to` a field of `entity` (one of the entities the trusted server manages). one-to-one
 * embeds the record or null; one-to-many (the default) an array of up to `limit` (default and at
 * most 100) records, oldest first.
 */
export interface JoinTarget {
  spec: ListSpec;
  /** The columns the trusted server reads of it, secrets included. */
  selectList: string;
}

export interface Join {
  as: string;
  target: JoinTarget;
  /** The related entity's timestamp fields, read back as Dates. */
  datetimeFields: string[];
  fromColumn: string;
  toColumn: string;
  limit: number;
  one: boolean;
}

const maxJoins = 5;
const joinKeys = new Set(['entity', 'from', 'to', 'relation', 'limit']);

function parseJoins(spec: ListSpec, raw: string, targets: Readonly<Record<string, JoinTarget>>): Join[] {
  const invalid = (message: string) => badRequest(`Invalid join: ${message}`, { join: message });
  const joins = jsonParameter(raw, invalid, 'a JSON object');
  if (joins === null || typeof joins !== 'object' || Array.isArray(joins)) throw invalid('must be a JSON object of joins by name');
  const entries = Object.entries(joins);
  if (entries.length > maxJoins) throw invalid(`at most ${maxJoins} joins`);
  return entries.map(([as, join]): Join => {
    if (!/^[A-Za-z][A-Za-z0-9_]{0,62}$/.test(as) || Object.hasOwn(spec.fields, as)) {
      throw invalid(`"${as.slice(0, 64)}" must be a name of letters, digits and _ that is not a field of ${spec.entity}`);
    }
    if (join === null || typeof join !== 'object' || Array.isArray(join)) throw invalid(`${as} must be an object`);
    const { entity, from, to, relation = 'one-to-many', limit = maxPageSize } = join as Record<string, unknown>;
    const unknownKey = Object.keys(join).find((key) => !joinKeys.has(key));
    if (unknownKey !== undefined) throw invalid(`${as} has an unknown key; use entity, from, to, relation, limit`);
    if (typeof entity !== 'string' || !Object.hasOwn(targets, entity)) throw invalid(`${as}: entity must be one of: ${Object.keys(targets).join(', ')}`);
    const target = targets[entity]!;
    if (typeof from !== 'string' || !Object.hasOwn(spec.fields, from)) throw invalid(`${as}: from must be a field of ${spec.entity}`);
    if (typeof to !== 'string' || !Object.hasOwn(target.spec.fields, to)) throw invalid(`${as}: to must be a field of ${entity}`);
    const fromField = spec.fields[from]!;
    const toField = target.spec.fields[to]!;
    if (!comparable(fromField, toField)) {
      throw invalid(`${as}: ${spec.entity}.${from} (${fromField.type}) cannot be matched with ${entity}.${to} (${toField.type}); join fields of one type`);
    }
    if (relation !== 'one-to-one' && relation !== 'one-to-many') throw invalid(`${as}: relation must be one-to-one or one-to-many`);
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > maxPageSize) throw invalid(`${as}: limit must be a whole number from 1 to ${maxPageSize}`);
    const one = relation === 'one-to-one';
    const datetimeFields = Object.keys(target.spec.fields).filter((name) => target.spec.fields[name]!.type === 'datetime');
    return { as, target, datetimeFields, fromColumn: spec.fields[from]!.column, toColumn: target.spec.fields[to]!.column, limit: one ? 1 : limit, one };
  });
}

/** Whether PostgreSQL can compare two fields' columns with `=`: one type, or two kinds of number. */
const numeric = new Set<ListFieldType>(['integer', 'number']);
const comparable = (a: ListField, b: ListField) => a.type === b.type || (numeric.has(a.type) && numeric.has(b.type));

/** The SELECT column that embeds one join's records as JSON, correlated with the listed row. */
function joinColumnSql(table: string, join: Join): string {
  const { spec, selectList } = join.target;
  const related = `SELECT ${selectList} FROM ${quoteIdentifier(spec.table)} AS "~related" WHERE "~related".${quoteIdentifier(join.toColumn)} = ${quoteIdentifier(table)}.${quoteIdentifier(join.fromColumn)}`;
  if (join.one) return `(SELECT row_to_json("~one") FROM (${related} LIMIT 1) AS "~one") AS ${quoteIdentifier(join.as)}`;
  const oldestFirst = spec.createdAtColumn ? `${quoteIdentifier(spec.createdAtColumn)}, "id"` : '"id"';
  return `(SELECT coalesce(json_agg("~many"), '[]'::json) FROM (${related} ORDER BY ${oldestFirst} LIMIT ${join.limit}) AS "~many") AS ${quoteIdentifier(join.as)}`;
}

/**
 * JSON carries the embedded records' timestamps in PostgreSQL's own format (microseconds,
 * +00:00); they are read as Dates, so they are sent as the row's own timestamps are.
 */
function readJoinedDates(row: Record<string, unknown>, joins: Join[]): void {
  for (const join of joins) {
    const value = row[join.as];
    for (const record of (Array.isArray(value) ? value : value ? [value] : []) as Record<string, unknown>[]) {
      for (const name of join.datetimeFields) if (typeof record[name] === 'string') record[name] = new Date(record[name] as string);
    }
  }
}

/**
 * The `where` of an update-many or delete-many: required and non-empty, so no request writes a
 * whole table by accident. Every row is only ever written on purpose, with `?all=true` and no
 * `where` (what a Better Auth adapter's `deleteMany` with an empty where means).
 */
export function parseWriteFilter(query: unknown, spec: ListSpec): WhereClause[] {
  const raw = (query ?? {}) as Record<string, unknown>;
  const other = Object.keys(raw).find((name) => name !== 'where' && name !== 'all');
  if (other !== undefined) throw badRequest(`Unknown query parameter "${other.slice(0, 100)}" for a write by filter`, { [other.slice(0, 100)]: 'Only where (or all=true) is accepted' });
  if (raw.all !== undefined) {
    if (raw.all !== 'true' || raw.where !== undefined) throw badRequest('all=true writes every record and takes no where', { all: 'Send all=true alone, or a where without all' });
    return [];
  }
  if (typeof raw.where !== 'string') {
    throw badRequest('A where filter is required to change or delete several records', { where: 'Give it once, as URL-encoded JSON (or all=true for every record)' });
  }
  const where = parseWhere(spec, fieldsFor(spec, 'service'), raw.where);
  if (where.length === 0) throw badRequest('A where filter needs at least one clause', { where: 'An empty filter would match every record; send all=true instead of where to mean that' });
  return where;
}

/** Makes `%`, `_` and `\` in a search term match themselves in ILIKE. */
export function escapeLike(term: string): string {
  return term.replace(/[\\%_]/g, (character) => `\\${character}`);
}

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

/** One field filter or where clause as SQL; `param` adds a value and returns its placeholder. */
function comparisonSql(field: ListField, clause: FieldFilter | WhereClause, addParam: (value: unknown) => string): string {
  const insensitive = 'insensitive' in clause && clause.insensitive;
  // An integer column is compared with a bigint, so a value past a 32-bit column's range matches
  // nothing instead of failing the statement (the index still serves int4 = int8).
  const cast = field.type === 'integer' ? '::bigint' : '';
  const param = (raw: unknown) => `${addParam(raw)}${cast}`;
  let column = quoteIdentifier(field.column);
  if (field.type === 'datetime' && clause.value !== null) {
    const range = millisecondRangeSql(column, clause.operator, () => addParam(clause.value));
    if (range) return range;
    column = `date_trunc('milliseconds', ${column})`;
  }
  if (clause.value === null) return `${column} IS ${clause.operator === 'ne' ? 'NOT ' : ''}NULL`;
  // Case-insensitive: lower() on both sides, so PostgreSQL's own case rules apply to both.
  const compared = insensitive ? `lower(${column})` : column;
  const value = (raw: unknown) => (insensitive ? `lower(${param(raw)})` : param(raw));
  const oneOf = () => (insensitive ? `${compared} = ANY(SELECT lower(unnest(${addParam(clause.value)}::text[])))` : `${column} = ANY(${addParam(clause.value)}${cast && `${cast}[]`})`);
  const like = (pattern: string) => `${column} ${insensitive ? 'ILIKE' : 'LIKE'} ${param(pattern)} ESCAPE '\\'`;
  const text = () => escapeLike(clause.value as string);
  switch (clause.operator) {
    case 'eq':
      return `${compared} = ${value(clause.value)}`;
    case 'ne':
      // Keeps the rows whose value is null too: "not done" includes "no status yet".
      return `${compared} IS DISTINCT FROM ${value(clause.value)}`;
    case 'in':
      return oneOf();
    case 'not_in':
      return `(${oneOf()}) IS NOT TRUE`;
    case 'gt':
      return `${column} > ${param(clause.value)}`;
    case 'gte':
      return `${column} >= ${param(clause.value)}`;
    case 'lt':
      return `${column} < ${param(clause.value)}`;
    case 'lte':
      return `${column} <= ${param(clause.value)}`;
    case 'contains':
      return like(`%${text()}%`);
    case 'starts_with':
      return like(`${text()}%`);
    case 'ends_with':
      return like(`%${text()}`);
  }
}

/**
 * A date compared at the millisecond the API gives out (a stored value keeps PostgreSQL's
 * microseconds), written on the bare column so that an index on it still serves: for a value
 * `$v` (a JavaScript Date: whole milliseconds), `date_trunc('milliseconds', c) > $v` is
 * `c >= $v + 1 ms`, `<= $v` is `c < $v + 1 ms`, `= $v` is the millisecond from `$v`, and `>=`
 * and `<` hold as they are. `date_trunc` around the column hid the audit log's index on
 * ("organizationId", "createdAt"): a week of 100,000 events was counted by reading them all
 * (bench/console.mjs, per-day-week). Other operators get undefined (and the truncated column).
 */
function millisecondRangeSql(column: string, operator: FieldFilter['operator'] | WhereClause['operator'], addValue: () => string): string | undefined {
  const nextMillisecond = (value: string) => `${value}::timestamptz + interval '1 millisecond'`;
  switch (operator) {
    case 'gte':
      return `${column} >= ${addValue()}`;
    case 'lt':
      return `${column} < ${addValue()}`;
    case 'gt':
      return `${column} >= ${nextMillisecond(addValue())}`;
    case 'lte':
      return `${column} < ${nextMillisecond(addValue())}`;
    case 'eq': {
      const value = addValue();
      return `(${column} >= ${value} AND ${column} < ${nextMillisecond(value)})`;
    }
    default:
      return undefined;
  }
}

/** What narrows a list or a write by filter: everything of a list query except the paging. */
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
  const anyOf: string[] = [];
  for (const clause of filter.where ?? []) {
    (clause.connector === 'OR' ? anyOf : conditions).push(comparisonSql(spec.fields[clause.field]!, clause, param));
  }
  if (anyOf.length > 0) conditions.push(`(${anyOf.join(' OR ')})`);
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

/** UPDATE every row matching `where` (the trusted server's update-many); returns how many changed. */
export async function updateMatching(
  db: Queryable,
  spec: ListSpec,
  where: WhereClause[],
  values: Record<string, unknown>,
  columns: ColumnMap,
  updatedAtColumn: string | null,
): Promise<number> {
  const params: unknown[] = [];
  const assignments = setClause(spec.table, values, columns, updatedAtColumn, params);
  const { rowCount } = await db.query(`UPDATE ${quoteIdentifier(spec.table)} SET ${assignments}${whereSql(spec, { where }, {}, [], params)}`, params);
  return rowCount;
}

/** The ids of the records a write filter matches (for deletes that check each record first). */
export async function idsMatching(db: Queryable, spec: ListSpec, where: WhereClause[]): Promise<string[]> {
  const params: unknown[] = [];
  const { rows } = await db.query<{ id: string }>(`SELECT "id" FROM ${quoteIdentifier(spec.table)}${whereSql(spec, { where }, {}, [], params)}`, params);
  return rows.map((row) => row.id);
}

/** DELETE every row matching `where` (the trusted server's delete-many); returns how many went. */
export async function deleteMatching(db: Queryable, spec: ListSpec, where: WhereClause[]): Promise<number> {
  const params: unknown[] = [];
  const { rowCount } = await db.query(`DELETE FROM ${quoteIdentifier(spec.table)}${whereSql(spec, { where }, {}, [], params)}`, params);
  return rowCount;
}

/**
 * The row a write of one record acts on: the first that `where` matches, locked, as a subquery.
 * Locked rows are waited for and re-checked against `where` once their writer commits, so a
 * concurrent writer that changed or removed the row makes this pick another match, or none.
 */
function oneMatchingRow(spec: ListSpec, where: WhereClause[], params: unknown[]): string {
  return `"id" = (SELECT "id" FROM ${quoteIdentifier(spec.table)}${whereSql(spec, { where }, {}, [], params)} LIMIT 1 FOR UPDATE)`;
}

/**
 * DELETE one row that `where` matches and return it (the trusted server's consume-one): a
 * single-use value is read and removed by one statement, so of concurrent consumers exactly
 * one gets it and the others get null.
 */
export async function consumeOneMatching<Row>(db: Queryable, spec: ListSpec, where: WhereClause[], returning: string): Promise<Row | null> {
  const params: unknown[] = [];
  const { rows } = await db.query<Row>(`DELETE FROM ${quoteIdentifier(spec.table)} WHERE ${oneMatchingRow(spec, where, params)} RETURNING ${returning}`, params);
  return rows[0] ?? null;
}

/**
 * Adds `increment`'s deltas to one row that `where` matches, and sets `values` on it, in one
 * statement (the trusted server's increment-one): `where` selects and guards, so "count < 10"
 * holds for the row as it is written. A null counter counts as 0. Returns the row, or null
 * when nothing matched.
 */
export async function incrementOneMatching<Row>(
  db: Queryable,
  spec: ListSpec,
  where: WhereClause[],
  increment: Record<string, number>,
  values: Record<string, unknown>,
  columns: ColumnMap,
  updatedAtColumn: string | null,
  returning: string,
): Promise<Row | null> {
  const params: unknown[] = [];
  const added = Object.entries(increment).map(([field, delta]) => {
    params.push(delta);
    const column = quoteIdentifier(spec.fields[field]!.column);
    return `${column} = coalesce(${column}, 0) + $${params.length}`;
  });
  // The set values and updatedAt (or, for a table without one and nothing to set, `"id" = "id"`).
  const assignments = setClause(spec.table, values, columns, updatedAtColumn, params);
  const { rows } = await db.query<Row>(
    `UPDATE ${quoteIdentifier(spec.table)} SET ${[...added, assignments].join(', ')} WHERE ${oneMatchingRow(spec, where, params)} RETURNING ${returning}`,
    params,
  );
  return rows[0] ?? null;
}
