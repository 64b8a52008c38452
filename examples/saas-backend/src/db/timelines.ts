import type pg from 'pg';

/**
 * A rewound primary, seen the moment it serves this instance again. A failover promotes a standby
 * onto a new timeline (PostgreSQL counts them: 1, 2, 3 ...). When the old primary comes back and
 * takes the lead again anyway (a frozen primary that resumes under a failover manager that lets it:
 * docs/deploy.md, "High availability"), it is on an older timeline than the one this instance has
 * already written on, and every write it takes is one the promoted node's history does not have.
 *
 * So each instance remembers the newest timeline its connections have reached, and a connection
 * to a primary on an older one is ended before its first statement goes out: its request gets a
 * 503 (try again: the proxy may have the new primary by then), the log an error, and the metrics
 * a count (authstrap_db_older_timeline_refusals_total). A split brain is seen at once, not found
 * later in missing rows.
 *
 * A new connection asks once, before it is handed out (a connection in the pool keeps what it
 * found); one kept from before a newer timeline was seen is ended when it is next handed out. A standby (the
 * question fails while it is in recovery) is left alone: it refuses writes itself (SQLSTATE 25006).
 * Through PgBouncer in transaction mode a connection is not one server's, and this cannot see a
 * rewind: the failover manager must prevent it (docs/deploy.md).
 */

export interface TimelineStats {
  /** The newest timeline a connection of this instance has reached (0 before the first). */
  newest: number;
  /** Connections ended because their primary was on an older timeline. */
  refused: number;
}

/** The timeline of the WAL the server writes now: the first 8 hex digits of its WAL file's name. */
const timelineQuery = `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int AS "timeline"`;

/** Why a new connection was not handed out: its primary is on an older timeline (a 503: no SQLSTATE). */
export class OlderTimelineError extends Error {
  override name = 'OlderTimelineError';
}

/**
 * The guard, for one pool: `onConnect` is pg-pool's hook (pg 8.20 and newer), awaited before a new
 * connection is handed out, so the question never shares the connection with the request's
 * statement; `onAcquire` ends a connection kept from before a newer timeline was seen.
 */
export function guardTimelines(onRefused: (seen: number, newest: number) => void) {
  const stats: TimelineStats = { newest: 0, refused: 0 };
  const seenBy = new WeakMap<pg.ClientBase, number>();
  return {
    async onConnect(client: pg.ClientBase): Promise<void> {
      let seen: number;
      try {
        seen = (await client.query<{ timeline: number }>(timelineQuery)).rows[0]!.timeline;
      } catch {
        // A standby (in recovery, it cannot say): it refuses writes itself.
        return;
      }
      if (seen < stats.newest) {
        stats.refused++;
        onRefused(seen, stats.newest);
        // pg-pool ends this connection and fails the request waiting for it (a 503).
        throw new OlderTimelineError(`This primary is on timeline ${seen}, older than ${stats.newest} which this instance has written on`);
      }
      stats.newest = seen;
      seenBy.set(client, seen);
    },
    onAcquire(client: pg.PoolClient): void {
      const seen = seenBy.get(client);
      if (seen === undefined || seen >= stats.newest) return;
      stats.refused++;
      onRefused(seen, stats.newest);
      // Synchronously, before pg sends the statement it was acquired for: that statement fails (a 503).
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    },
    stats: (): TimelineStats => ({ ...stats }),
  };
}
