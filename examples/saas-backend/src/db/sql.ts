/** Small builders for the statements whose column list depends on the request (INSERT, UPDATE). */

export const quoteIdentifier = (name: string): string => `"${name.replace(/"/g, '""')}"`;

export interface Statement {
  text: string;
  params: unknown[];
}

/**
 * Objects and arrays go to jsonb columns as JSON text; passed as they are, `pg` would turn an
 * array into a PostgreSQL array literal.
 */
function toParam(value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) return JSON.stringify(value);
  return value;
}

/** API field -> column name, for the fields a statement may write. */
export type ColumnMap = Readonly<Record<string, string>>;

/** The [field, column] pairs of the defined values; an unknown field is a programming mistake. */
function writableFields(table: string, values: Record<string, unknown>, columns: ColumnMap): [string, string][] {
  return Object.keys(values)
    .filter((field) => values[field] !== undefined)
    .map((field) => {
      // Input is validated before it gets here; this guards against a mistake in code.
      if (!Object.hasOwn(columns, field)) throw new Error(`"${field}" is not a writable field of ${table}`);
      return [field, columns[field]!];
    });
}

/** What a write adds of its own beyond the caller's values: SQL, never request data. */
export interface WriteOptions {
  /** Columns set by an SQL expression of the statement (`{ organizationId: 'authstrap.organization_id()' }`). */
  computed?: Readonly<Record<string, string>>;
  /**
   * SQL the write must satisfy to change anything (the caller's role may create, may update this
   * row). An INSERT's may be made from its values: `(value) => \`${value('authorId')} = authstrap.user_id()\``,
   * where `value` gives a field's parameter (NULL when the write leaves it out).
   */
  onlyIf?: string | ((value: (field: string) => string) => string);
  /** Fields only some roles may write, with the SQL that says the caller's role may: required of each one written. */
  writers?: Readonly<Record<string, string>>;
}

/**
 * onlyIf, and for each field written that only some roles may write, that the caller's role may
 * (or, on an UPDATE, that the value does not change), as one condition; undefined for none.
 * `value` gives a field's parameter, `keeps` the condition that a field's value stays as it is.
 */
function writeCondition(options: WriteOptions, written: [string, string][], value: (field: string) => string, keeps?: (field: string, column: string) => string): string | undefined {
  const onlyIf = typeof options.onlyIf === 'function' ? options.onlyIf(value) : options.onlyIf;
  const writers = options.writers ?? {};
  const guarded = written
    .filter(([field]) => Object.hasOwn(writers, field))
    .map(([field, column]) => (keeps ? `(${keeps(field, column)} OR ${writers[field]})` : writers[field]!));
  const conditions = [...(onlyIf === undefined ? [] : [onlyIf]), ...guarded];
  if (conditions.length === 0) return undefined;
  return conditions.length === 1 ? conditions[0] : conditions.map((condition) => `(${condition})`).join(' AND ');
}

/**
 * `INSERT INTO table (a, b) VALUES ($1, $2) RETURNING ...` for the defined values; with `onlyIf`,
 * `INSERT INTO table (a, b) SELECT $1, $2 WHERE <onlyIf> RETURNING ...` (no row when it fails).
 */
export function insertStatement(
  table: string,
  values: Record<string, unknown>,
  columns: ColumnMap,
  returning: string,
  options: WriteOptions = {},
): Statement {
  const fields = writableFields(table, values, columns);
  const computed = Object.entries(options.computed ?? {});
  const names = [...fields.map(([, column]) => column), ...computed.map(([column]) => column)];
  const expressions = [...fields.map((_, index) => `$${index + 1}`), ...computed.map(([, sql]) => sql)];
  const params = fields.map(([field]) => toParam(values[field]));
  const condition = writeCondition(options, fields, (field) => {
    const index = fields.findIndex(([name]) => name === field);
    return index === -1 ? 'NULL' : `$${index + 1}`;
  });
  if (names.length === 0 && condition === undefined) return { text: `INSERT INTO ${quoteIdentifier(table)} DEFAULT VALUES RETURNING ${returning}`, params };
  const rows = condition === undefined ? `VALUES (${expressions.join(', ')})` : `SELECT ${expressions.join(', ')} WHERE ${condition}`;
  return { text: `INSERT INTO ${quoteIdentifier(table)} (${names.map(quoteIdentifier).join(', ')}) ${rows} RETURNING ${returning}`, params };
}

/**
 * `a = $1, "updatedAt" = GREATEST(now(), "updatedAt")` for the defined values, their parameters
 * pushed onto `params`. `updatedAtColumn` is null for a table without one; a value the caller
 * gives for it (the trusted server copying a record) is kept as given.
 */
export function setClause(
  table: string,
  values: Record<string, unknown>,
  columns: ColumnMap,
  updatedAtColumn: string | null,
  params: unknown[],
): string {
  const fields = writableFields(table, values, columns);
  const assignments = fields.map(([field, column]) => {
    params.push(toParam(values[field]));
    return `${quoteIdentifier(column)} = $${params.length}`;
  });
  // GREATEST: two updates of one row that overlap must not leave the earlier transaction's time
  // last (the row is re-read after waiting for its lock, so this compares with the newer value).
  if (updatedAtColumn !== null && !fields.some(([, column]) => column === updatedAtColumn)) {
    const column = quoteIdentifier(updatedAtColumn);
    assignments.push(`${column} = GREATEST(now(), ${column})`);
  }
  // Nothing to set (an empty PATCH on a table without updatedAt): "id" = itself keeps one statement.
  if (assignments.length === 0) assignments.push('"id" = "id"');
  return assignments.join(', ');
}

/**
 * `UPDATE table SET ... WHERE k = $2 AND ... RETURNING ...`. `where` holds the row's key (and, for
 * the trusted server's writes, nothing else); `options.onlyIf` adds SQL of the statement's own,
 * such as the caller's organization and what their role may change.
 */
export function updateStatement(
  table: string,
  values: Record<string, unknown>,
  columns: ColumnMap,
  where: Record<string, string>,
  returning: string,
  updatedAtColumn: string | null,
  options: { onlyIf?: string; writers?: WriteOptions['writers'] } = {},
): Statement {
  const params: unknown[] = [];
  const assignments = setClause(table, values, columns, updatedAtColumn, params);
  const conditions = Object.entries(where).map(([column, value]) => {
    params.push(value);
    return `${quoteIdentifier(column)} = $${params.length}`;
  });
  // setClause numbered the written values first, in this order.
  const written = writableFields(table, values, columns);
  const parameterOf = (field: string) => `$${written.findIndex(([name]) => name === field) + 1}`;
  const condition = writeCondition(options, written, parameterOf, (field, column) => `${quoteIdentifier(column)} IS NOT DISTINCT FROM ${parameterOf(field)}`);
  if (condition !== undefined) conditions.push(condition);
  return {
    text: `UPDATE ${quoteIdentifier(table)} SET ${assignments} WHERE ${conditions.join(' AND ')} RETURNING ${returning}`,
    params,
  };
}

/**
 * A timestamptz column as the text `JSON.stringify` gives the `Date` that `pg` reads from it
 * (`2026-11-24T15:30:43.123Z`: UTC, milliseconds cut, not rounded), for JSON that PostgreSQL
 * writes itself. Years outside 1-9999 follow JavaScript too (`0000`, `-000043`, `+010000`), and
 * what a `Date` cannot hold (infinity, past the year 275760) is null, as `JSON.stringify` makes it.
 */
export function isoTimestamp(column: string): string {
  const utc = `${column} AT TIME ZONE 'UTC'`;
  const monthToMilliseconds = `to_char(${utc}, '-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  // One CASE without a subquery: PostgreSQL would set one up again for every row (bench/README.md).
  // JavaScript writes years past 9999 with a sign and six digits, counts 1 BC as year 0, and 2 BC as -1.
  return `CASE WHEN NOT isfinite(${column}) OR ${column} > '275760-09-13 00:00:00+00' THEN NULL
    WHEN ${column} >= '0001-01-01 00:00:00+00' AND ${column} < '10000-01-01 00:00:00+00' THEN to_char(${utc}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    WHEN ${column} >= '10000-01-01 00:00:00+00' THEN '+' || lpad(extract(year FROM ${utc})::int::text, 6, '0') || ${monthToMilliseconds}
    WHEN ${column} >= '0001-01-01 00:00:00+00 BC' THEN '0000' || ${monthToMilliseconds}
    ELSE '-' || lpad((-1 - extract(year FROM ${utc})::int)::text, 6, '0') || ${monthToMilliseconds} END`;
}

/** One row as a JSON object of `jsonSelectList`'s columns, in their order (`{"id":"...","name":"..."}`). */
export const rowJson = (jsonSelectList: string): string => `(SELECT row_to_json("~row") FROM (SELECT ${jsonSelectList}) AS "~row")`;
