import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';

/**
 * Wake-ups for the outbox worker from PostgreSQL itself. The SQL that writes webhook deliveries
 * (the event trigger and `authstrap.record_event`, event-sql in the generator) runs
 * `pg_notify('authstrap_outbox', '')`, which PostgreSQL sends when, and only if, the transaction
 * commits. Every instance LISTENs on one connection of its own and wakes its worker, so a delivery
 * leaves at once instead of at the next poll; polling stays, for what a lost notification missed.
 *
 * LISTEN needs a session of its own on PostgreSQL itself: DATABASE_DIRECT_URL when DATABASE_URL
 * is a pooler such as PgBouncer (which hands a session's statements to any server connection).
 * A dropped connection is opened again, with backoff; it never stops the process, and each
 * reconnect wakes the worker once, for what was committed in between.
 */

export const outboxNotifyChannel = 'authstrap_outbox';

export interface OutboxWakeUps {
  /** Whether the LISTEN connection is up now (for the tests and the logs). */
  readonly listening: boolean;
  close(): Promise<void>;
}

/**
 * The embedded database's wake-ups: its NOTIFY is heard in this process, which is the only one
 * on it. Undefined for a database that cannot listen in process (PostgreSQL: listenForOutboxWakeUps).
 */
export async function listenInProcess(db: Pick<Database, 'listen'>, wake: () => void): Promise<OutboxWakeUps | undefined> {
  if (!db.listen) return undefined;
  const unlisten = await db.listen(outboxNotifyChannel, wake);
  let listening = true;
  return {
    get listening() {
      return listening;
    },
    async close() {
      listening = false;
      await unlisten();
    },
  };
}

const firstRetryMs = 250;
const longestRetryMs = 30_000;

export function listenForOutboxWakeUps({ url, logger, wake }: { url: string; logger: Logger; wake: () => void }): OutboxWakeUps {
  let client: pg.Client | undefined;
  let listening = false;
  let closed = false;
  let failures = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;

  async function connect() {
    if (closed) return;
    const connection = new pg.Client({ connectionString: url, keepAlive: true, application_name: 'authstrap outbox listener' });
    client = connection;
    // Without a listener, an 'error' event on a broken connection would end the process.
    connection.on('error', (error) => dropped(connection, error));
    connection.on('end', () => dropped(connection));
    connection.on('notification', (message) => {
      if (message.channel === outboxNotifyChannel) wake();
    });
    try {
      await connection.connect();
      await connection.query(`LISTEN ${outboxNotifyChannel}`);
      if (closed || client !== connection) return void connection.end().catch(() => {});
      listening = true;
      if (failures > 0) logger.info({ failures }, 'outbox: listening for wake-ups again');
      failures = 0;
      // What was committed while no one listened.
      wake();
    } catch (error) {
      dropped(connection, error as Error);
    }
  }

  function dropped(connection: pg.Client, error?: Error) {
    if (client !== connection) return;
    client = undefined;
    listening = false;
    connection.end().catch(() => {});
    if (closed) return;
    failures++;
    const ceiling = Math.min(longestRetryMs, firstRetryMs * 2 ** Math.min(failures - 1, 20));
    const delayMs = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
    logger.warn({ err: error?.message, retryInMs: delayMs }, 'outbox: the wake-up connection was lost; deliveries wait for the poll until it is back');
    retry = setTimeout(() => void connect(), delayMs);
    retry.unref();
  }

  void connect();
  return {
    get listening() {
      return listening;
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      const connection = client;
      client = undefined;
      listening = false;
      await connection?.end().catch(() => {});
    },
  };
}
