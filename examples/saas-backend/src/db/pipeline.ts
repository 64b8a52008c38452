import { createRequire } from 'node:module';
import pg from 'pg';

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

export interface PipelineOutcome {
  /** One per statement that completed, in order. */
  results: pg.QueryResult[];
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

/**
 * A pg "submittable" (the interface pg-cursor uses): pg hands it the connection when it is this
 * query's turn and passes it each message of the answer.
 */
class Pipeline {
  private readonly results: pg.QueryResult[] = [];
  private current: pg.Result | undefined;
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

  private result(): pg.Result {
    // Rows as objects (no row mode), read with the pool's own parsers.
    return (this.current ??= new pg.Result(undefined as never, this.types as never));
  }

  handleRowDescription(message: { fields: unknown[] }) {
    (this.result() as unknown as { addFields(fields: unknown[]): void }).addFields(message.fields);
  }

  handleDataRow(message: { fields: unknown[] }) {
    const result = this.result() as unknown as { parseRow(fields: unknown[]): unknown; addRow(row: unknown): void };
    result.addRow(result.parseRow(message.fields));
  }

  handleCommandComplete(message: unknown) {
    const result = this.result();
    (result as unknown as { addCommandComplete(message: unknown): void }).addCommandComplete(message);
    this.results.push(result);
    this.current = undefined;
  }

  handleEmptyQuery() {
    this.results.push(this.result());
    this.current = undefined;
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
