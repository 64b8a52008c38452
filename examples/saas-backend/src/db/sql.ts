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

/** `INSERT INTO table (a, b) VALUES ($1, $2) RETURNING ...` for the defined values. */
export function insertStatement(
  table: string,
  values: Record<string, unknown>,
  columns: ColumnMap,
  returning: string,
): Statement {
  const fields = writableFields(table, values, columns);
  if (fields.length === 0) return { text: `INSERT INTO ${quoteIdentifier(table)} DEFAULT VALUES RETURNING ${returning}`, params: [] };
  return {
    text:
      `INSERT INTO ${quoteIdentifier(table)} (${fields.map(([, column]) => quoteIdentifier(column)).join(', ')}) ` +
      `VALUES (${fields.map((_, index) => `$${index + 1}`).join(', ')}) RETURNING ${returning}`,
    params: fields.map(([field]) => toParam(values[field])),
  };
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
 * `UPDATE table SET ... WHERE k = $2 AND ... RETURNING ...`. `where` holds the row's key and, for
 * tenant-scoped tables, its organization.
 */
export function updateStatement(
  table: string,
  values: Record<string, unknown>,
  columns: ColumnMap,
  where: Record<string, string>,
  returning: string,
  updatedAtColumn: string | null,
): Statement {
  const params: unknown[] = [];
  const assignments = setClause(table, values, columns, updatedAtColumn, params);
  const conditions = Object.entries(where).map(([column, value]) => {
    params.push(value);
    return `${quoteIdentifier(column)} = $${params.length}`;
  });
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

/**
 * The same write, changing nothing unless `condition` holds, for the shapes built here:
 *   INSERT INTO t (a, b) VALUES ($1, $2) ...  ->  INSERT INTO t (a, b) SELECT $1, $2 WHERE <condition> ...
 *   UPDATE t SET ... WHERE k = $3 ...         ->  UPDATE t SET ... WHERE <condition> AND k = $3 ...
 *   DELETE FROM t WHERE k = $1 ...            ->  DELETE FROM t WHERE <condition> AND k = $1 ...
 * (an INSERT's parameters still take their columns' types). Undefined for any other statement,
 * and the caller must then check the condition on its own first. guards/tenant.guard.ts uses it to
 * put the caller check in a write's own statement.
 */
export function onlyIf(text: string, condition: string): string | undefined {
  const insert = insertShape.exec(text);
  if (insert) return `${insert[1]} SELECT ${insert[2]} WHERE ${condition}${insert[3] ?? ''}`;
  const change = updateOrDeleteShape.exec(text);
  if (change) return `${change[1]} WHERE ${condition} AND ${change[2]}`;
  return undefined;
}

// The statements insertStatement, updateStatement and the repositories' DELETE write, exactly.
const name = '"(?:[^"]|"")+"';
const equalsParam = `${name} = \\$\\d+`;
const assignment = `${name} = (?:\\$\\d+|GREATEST\\(now\\(\\), ${name}\\)|"id")`;
const returning = '( RETURNING [\\s\\S]*)?';
const insertShape = new RegExp(`^(INSERT INTO ${name} \\(${name}(?:, ${name})*\\)) VALUES \\((\\$\\d+(?:, \\$\\d+)*)\\)${returning}$`);
const updateOrDeleteShape = new RegExp(
  `^(UPDATE ${name} SET ${assignment}(?:, ${assignment})*|DELETE FROM ${name}) WHERE (${equalsParam}(?: AND ${equalsParam})*${returning})$`,
);
