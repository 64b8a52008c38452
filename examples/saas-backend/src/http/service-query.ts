import type { Queryable } from '../db/database.js';
import { setClause, quoteIdentifier, type ColumnMap } from '../db/sql.js';
import { badRequest } from './errors.js';
import { comparisonOperators, comparisonSql, fieldsFor, maxInValues, maxPageSize, rangeTypes, readFieldValue, typeHint, type ComparisonOperator, type ListField, type ListFieldType, type ListSpec } from './list-fields.js';

/**
 * The trusted server's language: what a Better Auth database adapter sends to the service routes
 * with the service key, beyond the user's query string (list-query.ts, which hands this module a
 * list's `where` and `join`). Three parts, each read and then written as SQL here:
 *
 *   where    filters with operators and connectors, on a list and on a write by filter
 *   join     related records embedded in each row of a list
 *   writes   update-many, delete-many, consume-one and increment-one, by a `where`
 *
 * Where clauses: the URL-encoded JSON of
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
 * `ne` and `not_in` keep the rows whose value is null, like the query string's `[ne]` filter.
 */
export const whereOperators = comparisonOperators;
export type WhereOperator = ComparisonOperator;

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
      return anyText ? (value.length <= 1000 ? value : undefined) : readFieldValue(field, value);
    case 'integer':
    case 'number':
      return typeof value === 'number' ? readFieldValue(field, String(value)) : undefined;
    case 'boolean':
      return typeof value === 'boolean' ? value : undefined;
    case 'uuid':
    case 'datetime':
      return typeof value === 'string' ? readFieldValue(field, value) : undefined;
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

/** A `where` parameter's clauses, over the fields the caller may filter by; anything malformed is a 400 naming the clause. */
export function parseWhere(spec: ListSpec, fields: Readonly<Record<string, ListField>>, raw: string): WhereClause[] {
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
 * Where clauses as SQL conditions, pushed onto `conditions` (a statement's WHERE joins them with
 * AND): each AND clause, then the OR clauses as one condition. `param` adds a value and returns
 * its placeholder.
 */
export function pushWhereConditions(spec: ListSpec, where: readonly WhereClause[], param: (value: unknown) => string, conditions: string[]): void {
  const anyOf: string[] = [];
  for (const clause of where) {
    (clause.connector === 'OR' ? anyOf : conditions).push(comparisonSql(spec.fields[clause.field]!, clause, param));
  }
  if (anyOf.length > 0) conditions.push(`(${anyOf.join(' OR ')})`);
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

/** A `join` parameter's joins, each to one of `targets`; anything malformed is a 400 naming the join. */
export function parseJoins(spec: ListSpec, raw: string, targets: Readonly<Record<string, JoinTarget>>): Join[] {
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
export function joinColumnSql(table: string, join: Join): string {
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
export function readJoinedDates(row: Record<string, unknown>, joins: Join[]): void {
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

/** The WHERE of a write by filter (none for `all=true`), its values pushed onto `params`. */
function writeWhereSql(spec: ListSpec, where: WhereClause[], params: unknown[]): string {
  const conditions: string[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  pushWhereConditions(spec, where, param, conditions);
  return conditions.length ? ` WHERE ${conditions.join(' AND ')}` : '';
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
  const { rowCount } = await db.query(`UPDATE ${quoteIdentifier(spec.table)} SET ${assignments}${writeWhereSql(spec, where, params)}`, params);
  return rowCount;
}

/** The ids of the records a write filter matches (for deletes that check each record first). */
export async function idsMatching(db: Queryable, spec: ListSpec, where: WhereClause[]): Promise<string[]> {
  const params: unknown[] = [];
  const { rows } = await db.query<{ id: string }>(`SELECT "id" FROM ${quoteIdentifier(spec.table)}${writeWhereSql(spec, where, params)}`, params);
  return rows.map((row) => row.id);
}

/** DELETE every row matching `where` (the trusted server's delete-many); returns how many went. */
export async function deleteMatching(db: Queryable, spec: ListSpec, where: WhereClause[]): Promise<number> {
  const params: unknown[] = [];
  const { rowCount } = await db.query(`DELETE FROM ${quoteIdentifier(spec.table)}${writeWhereSql(spec, where, params)}`, params);
  return rowCount;
}

/**
 * The row a write of one record acts on: the first that `where` matches, locked, as a subquery.
 * Locked rows are waited for and re-checked against `where` once their writer commits, so a
 * concurrent writer that changed or removed the row makes this pick another match, or none.
 */
function oneMatchingRow(spec: ListSpec, where: WhereClause[], params: unknown[]): string {
  return `"id" = (SELECT "id" FROM ${quoteIdentifier(spec.table)}${writeWhereSql(spec, where, params)} LIMIT 1 FOR UPDATE)`;
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
