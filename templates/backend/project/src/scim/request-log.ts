import type { Logger } from 'pino';
import type { Database } from '../db/database.js';

/**
 * The last requests of each directory and their outcome (`authstrap_scim_request`), for the
 * owners who set provisioning up: "did Okta's deactivation reach us, and what did we answer?".
 * Requests are noted in memory and written about once a second per instance, in one statement for
 * all directories (`authstrap.record_scim_requests`, which also keeps each log to seven days and
 * 1,000 rows): a sync's thousands of requests cost one write a second, not one each. A crash may
 * lose the last second; it is a diagnostic log. The path is kept without its query: a filter holds
 * addresses.
 */

export interface ScimRequestEntry {
  directoryId: string;
  method: string;
  path: string;
  status: number;
  scimType?: string;
  detail?: string;
  durationMs: number;
  createdAt: Date;
}

/** At most this many entries wait for the next write; beyond, the oldest are dropped (and counted in the log). */
const maxWaiting = 10_000;

export function createScimRequestLog(db: Database, logger: Logger, flushMs = 1000) {
  let waiting: ScimRequestEntry[] = [];
  let dropped = 0;
  let writing: Promise<void> | undefined;

  async function flush(): Promise<void> {
    if (writing) return writing;
    if (waiting.length === 0) return;
    const batch = waiting;
    waiting = [];
    writing = db
      .query('SELECT authstrap.record_scim_requests($1::jsonb)', [JSON.stringify(batch)])
      .then(() => undefined)
      .catch((error: unknown) => logger.warn({ err: (error as Error).message, requests: batch.length }, 'scim: could not keep the request log'))
      .finally(() => {
        writing = undefined;
      });
    return writing;
  }

  const timer = setInterval(() => {
    if (dropped > 0) {
      logger.warn({ dropped }, 'scim: the request log fell behind; the oldest entries were not kept');
      dropped = 0;
    }
    void flush();
  }, flushMs);
  timer.unref();

  return {
    note(entry: ScimRequestEntry): void {
      waiting.push({ ...entry, detail: entry.detail?.slice(0, 500) });
      if (waiting.length > maxWaiting) {
        waiting.shift();
        dropped += 1;
      }
    },
    /** Writes what waits now (tests; a stopping server). */
    flush,
    stop(): void {
      clearInterval(timer);
    },
  };
}

export type ScimRequestLog = ReturnType<typeof createScimRequestLog>;
