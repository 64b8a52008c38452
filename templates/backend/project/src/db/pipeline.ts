import { createRequire } from 'node:module';
import type pg from 'pg';

/** pg's own conversion of a parameter to its wire form (Dates, arrays, JSON), as its queries use it. */
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue(value: unknown): unknown };

/**
 * Several statements sent to PostgreSQL at once and answered at once: one round trip. They run in
 * one transaction (the extended protocol keeps every statement up to a Sync in one implicit
 * transaction), so a setting one of them makes with `set_config(..., true)` holds for the next
 * ones and is gone after: this is how a request's scope reaches the row-level security policies
 * in the same round trip as the request's statement (src/db/scope.ts).
 *
 * A statement that fails ends the transaction: nothing of it is kept, the statements after it do
 * not run, and the results of the ones before it are still returned with the error.
 */

export interface PipelinedStatement {
  text: string;
  values: unknown[];
  /** A prepared statement's name: parsed once per connection, then only executed. */
  name?: string;
}

/** One statement's answer: its rows (objects keyed by column name, read with the pool's type parsers) and how many rows it touched. */
export interface PipelinedResult {
  rows: Record<string, unknown>[];
  rowCount: number;
}

export interface PipelineOutcome {
  /** One per statement that completed, in order. */
  results: PipelinedResult[];
  /** What PostgreSQL answered to the statement that failed (results.length is its index). */
  error?: unknown;
}

/** The part of pg's connection this uses: its messages, and its record of prepared statements. */
interface WireConnection {
  stream: { cork?(): void; uncork?(): void };
  parsedStatements: Record<string, string>;
  parse(message: { text: string; name: string }): void;
  bind(message: { statement: string; values: unknown[]; valueMapper: (value: unknown) => unknown }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string }): void;
  sync(): void;
  on(event: 'parseComplete', listener: () => void): void;
  removeListener(event: 'parseComplete', listener: () => void): void;
}

/** How values are read: the type parsers the pool was made with. */
export interface TypeParsers {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown;
}

type RowReader = { columns: string[]; parsers: ((value: string) => unknown)[] };
/**
 * How to read each prepared statement's rows, by its name, per connection: a name means one
 * statement on the connection that prepared it (another database in the same process may give
 * the same name to another statement).
 */
const rowReaders = new WeakMap<WireConnection, Map<string, RowReader>>();
const readersOf = (connection: WireConnection): Map<string, RowReader> => {
  let readers = rowReaders.get(connection);
  if (readers === undefined) rowReaders.set(connection, (readers = new Map()));
  return readers;
};
/** As many as database.ts prepares at most (preparedStatementNames), with room for the ones it renamed. */
const maxReaders = 1000;

/**
 * A pg "submittable" (the interface pg-cursor uses): pg hands it the connection when it is this
 * query's turn and passes it each message of the answer.
 */
class Pipeline {
  private readonly results: PipelinedResult[] = [];
  /** The rows of the statement being answered, and how to read them (from its RowDescription). */
  private rows: Record<string, unknown>[] = [];
  private columns: string[] = [];
  private parsers: ((value: string) => unknown)[] = [];
  /** Named statements sent for parsing, in order; each ParseComplete records the next as prepared. */
  private readonly parsing: PipelinedStatement[] = [];
  private connection: WireConnection | undefined;
  callback: ((error: unknown, outcome: PipelineOutcome) => void) | undefined;

  constructor(
    private readonly statements: PipelinedStatement[],
    private readonly types: TypeParsers,
  ) {}

  private readonly parsed = () => {
    const statement = this.parsing.shift();
    if (statement?.name && this.connection) this.connection.parsedStatements[statement.name] = statement.text;
  };

  submit(connection: WireConnection): null {
    this.connection = connection;
    connection.on('parseComplete', this.parsed);
    connection.stream.cork?.();
    try {
      for (const statement of this.statements) {
        if (!statement.name || connection.parsedStatements[statement.name] === undefined) {
          connection.parse({ text: statement.text, name: statement.name ?? '' });
          this.parsing.push(statement);
        }
        connection.bind({ statement: statement.name ?? '', values: statement.values, valueMapper: prepareValue });
        connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '' });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  // The answer is read here rather than by pg's Result, which builds a template object per
  // statement and copies it into every row: for the one or two short rows of a request's
  // statements that was the larger part of reading them (bench/README.md, issue 32).
  handleRowDescription(message: { fields: { name: string; dataTypeID: number }[] }) {
    // A prepared statement answers with the same columns every time (when its tables change,
    // PostgreSQL refuses it and it is prepared again under a new name: database.ts), so how to read
    // them is worked out once per name. That also keeps the column names as the same strings, which
    // V8 then finds at once as property keys, instead of looking each new copy up again.
    const name = this.statements[this.results.length]?.name;
    const readers = this.connection === undefined ? undefined : readersOf(this.connection);
    const known = name === undefined ? undefined : readers?.get(name);
    if (known !== undefined && known.columns.length === message.fields.length) {
      ({ columns: this.columns, parsers: this.parsers } = known);
      return;
    }
    this.columns = message.fields.map((field) => field.name);
    // Every value comes as text: no statement here asks for binary results.
    this.parsers = message.fields.map((field) => this.types.getTypeParser(field.dataTypeID, 'text'));
    if (name !== undefined && readers !== undefined && readers.size < maxReaders) readers.set(name, { columns: this.columns, parsers: this.parsers });
  }

  handleDataRow(message: { fields: (string | null)[] }) {
    const row: Record<string, unknown> = {};
    const { columns, parsers } = this;
    for (let i = 0; i < columns.length; i++) {
      const raw = message.fields[i];
      row[columns[i]!] = raw === null || raw === undefined ? null : parsers[i]!(raw);
    }
    this.rows.push(row);
  }

  handleCommandComplete(message: { text: string }) {
    // "SELECT 2", "INSERT 0 1", "UPDATE 3": the last number is the rows touched.
    const count = /(\d+)$/.exec(message.text);
    this.results.push({ rows: this.rows, rowCount: count ? Number(count[1]) : 0 });
    this.rows = [];
    this.columns = [];
    this.parsers = [];
  }

  handleEmptyQuery() {
    this.results.push({ rows: [], rowCount: 0 });
  }

  // pg drops the query from its bookkeeping at an error (the rest of the answer is skipped up to
  // the Sync), so the error is the last this hears of it: the outcome is complete here.
  handleError(error: unknown) {
    this.finish(error);
  }

  handleReadyForQuery() {
    this.finish(undefined);
  }

  handlePortalSuspended() {}
  handleCopyInResponse() {}
  handleCopyData() {}

  private finish(error: unknown) {
    this.connection?.removeListener('parseComplete', this.parsed);
    const callback = this.callback;
    this.callback = undefined;
    callback?.(undefined, error === undefined ? { results: this.results } : { results: this.results, error });
  }
}

/**
 * Runs `statements` on `client` in one round trip and one transaction. Rejects only when the
 * connection itself fails (the outcome never arrives); PostgreSQL's refusal of a statement is the
 * outcome's `error`.
 */
export function runPipeline(client: pg.ClientBase, statements: PipelinedStatement[], types: TypeParsers): Promise<PipelineOutcome> {
  return new Promise((resolve, reject) => {
    const pipeline = new Pipeline(statements, types);
    pipeline.callback = (error, outcome) => (error ? reject(error) : resolve(outcome));
    // A connection error reaches the query through handleError too, without a SQLSTATE: it is
    // told apart by the caller (database.ts), which treats it as the database being unavailable.
    (client as unknown as { query(submittable: Pipeline): void }).query(pipeline);
  });
}
