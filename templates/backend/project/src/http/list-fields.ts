import { quoteIdentifier } from '../db/sql.js';
import { DateTimeInput, dateTimeHint } from '../generated/date-time.js';

/**
 * What the two list languages share: the fields a list is over (an entity's ListSpec), a value
 * read as its field's type, and a field compared with a value, written as SQL. The user's query
 * string is read in list-query.ts, the trusted server's `where` and `join` in service-query.ts;
 * every filter of either ends as one of the comparisons here. Column names only ever come from
 * the entity's generated description, never from the request; values always travel as parameters.
 *
 * Dates are compared at millisecond precision: PostgreSQL keeps microseconds, but a client only
 * ever sends (and receives) milliseconds, so a row is found by the very timestamp the API gave out.
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

/** A page's size when the request names none. */
export const defaultPageSize = 20;
/** The most records a page holds (a larger `limit` is clamped to it), and the most a join embeds. */
export const maxPageSize = 100;
/** The most values one `in` (or `not_in`) compares with. */
export const maxInValues = 100;

/** Who is asking: a signed-in user, or the trusted server (the service key). */
export type ListCaller = 'user' | 'service';

/** The fields this caller may filter and sort by: a user never names a secret one. */
export function fieldsFor(spec: ListSpec, caller: ListCaller): Readonly<Record<string, ListField>> {
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

/** The field types compared by range (gt, gte, lt, lte). */
export const rangeTypes = new Set<ListFieldType>(['integer', 'number', 'datetime']);

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One query-string value as the field's type; undefined when it is not one. */
export function readFieldValue(field: ListField, raw: string): unknown {
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

/**
 * Every comparison a list can make of a field with a value. The trusted server's `where` offers
 * them all (service-query.ts); the query string's filters offer eq, ne, in and the ranges
 * (filterOperators in list-query.ts).
 */
export const comparisonOperators = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'not_in', 'contains', 'starts_with', 'ends_with'] as const;
export type ComparisonOperator = (typeof comparisonOperators)[number];

/** A field filter or a where clause, as comparisonSql writes it. */
export interface Comparison {
  operator: ComparisonOperator;
  /** Typed as the field; an array for in / not_in; null with eq / ne for IS (NOT) NULL. */
  value: unknown;
  /** Text compared case-insensitively (a where clause's mode). */
  insensitive?: boolean;
}

/** One field filter or where clause as SQL; `param` adds a value and returns its placeholder. */
export function comparisonSql(field: ListField, clause: Comparison, addParam: (value: unknown) => string): string {
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
function millisecondRangeSql(column: string, operator: ComparisonOperator, addValue: () => string): string | undefined {
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

/** Makes `%`, `_` and `\` in a search term match themselves in ILIKE. */
export function escapeLike(term: string): string {
  return term.replace(/[\\%_]/g, (character) => `\\${character}`);
}
