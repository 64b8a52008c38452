import type { DatabaseProbe } from '../verify/database.js';
import { fail, pass, plural, warn, type Check, type Outcome } from './check.js';

/**
 * The database `verify` reaches is the primary, and what stands behind it: its synchronous
 * standbys (an acknowledged write is one a synchronous standby has: docs/deploy.md, section 9) and
 * their lag. A standby at DATABASE_URL is a failure (every write would be refused); a production
 * database without a synchronous standby is a warning, not a failure: many run that way, knowing.
 */

export interface Standby {
  name: string;
  /** pg_stat_replication's sync_state: sync, quorum, potential or async (null: the role may not read it, pg_monitor can). */
  syncState: string | null;
  replayLagSeconds: number | null;
}

export interface ReplicationFacts {
  inRecovery: boolean;
  /** synchronous_standby_names: empty when the primary waits for no standby. */
  synchronousStandbyNames: string;
  standbys: Standby[];
}

export async function readReplication(db: DatabaseProbe): Promise<ReplicationFacts> {
  const [settings] = await db.query<{ inRecovery: boolean; synchronousStandbyNames: string }>(
    `SELECT pg_is_in_recovery() AS "inRecovery", current_setting('synchronous_standby_names') AS "synchronousStandbyNames"`,
  );
  const standbys = settings!.inRecovery
    ? []
    : await db.query<Standby>(
        `SELECT COALESCE(application_name, client_addr::text, 'unnamed') AS "name", sync_state AS "syncState",
                extract(epoch FROM replay_lag)::float8 AS "replayLagSeconds"
           FROM pg_stat_replication ORDER BY 1`,
      );
  return { inRecovery: settings!.inRecovery, synchronousStandbyNames: settings!.synchronousStandbyNames, standbys };
}

const isSynchronous = (standby: Standby) => standby.syncState === 'sync' || standby.syncState === 'quorum';
const lagOf = (standby: Standby) => (standby.replayLagSeconds === null ? 'no lag measured' : `replay lag ${standby.replayLagSeconds.toFixed(3)} s`);

/** Pure: what the facts mean, in production or not. */
export function replicationVerdict(facts: ReplicationFacts, production: boolean): Outcome {
  if (facts.inRecovery) {
    return fail('the database is a standby (in recovery): it takes no writes. Point DATABASE_URL at the primary (HAProxy on Patroni\'s /primary, or the managed service\'s writer endpoint)');
  }
  const synchronous = facts.standbys.filter(isSynchronous);
  const others = facts.standbys.filter((standby) => !isSynchronous(standby));
  const described = [
    ...synchronous.map((standby) => `${standby.name} (${standby.syncState}, ${lagOf(standby)})`),
    ...others.map((standby) => `${standby.name} (${standby.syncState ?? 'state unreadable without pg_monitor'}, ${lagOf(standby)})`),
  ].join(', ');
  if (facts.standbys.length === 0) {
    if (facts.synchronousStandbyNames.trim() !== '') {
      return warn(`a primary whose synchronous_standby_names is "${facts.synchronousStandbyNames}", with no standby connected: writes wait for one that is not there`);
    }
    return production
      ? warn('a primary with no standby: losing this server stops the service, and a crash may lose the last writes (docs/deploy.md, "High availability")')
      : pass('a primary, no standby (fine outside production)');
  }
  if (synchronous.length === 0) {
    const message = `a primary with ${plural(facts.standbys.length, 'standby', 'standbys')}, none synchronous: ${described}`;
    return production ? warn(`${message}. A failover may lose writes already acknowledged: set synchronous replication (Patroni's synchronous_mode)`) : pass(message);
  }
  return pass(`a primary with ${plural(synchronous.length, 'synchronous standby', 'synchronous standbys')}${others.length ? ` and ${others.length} other` : ''}: ${described}`);
}

export const databaseReplication: Check = {
  id: 'database-replication',
  title: 'Database is the primary, with its standbys',
  probe: {
    needs: 'database',
    async run({ db, nodeEnv }) {
      if (db!.kind === 'embedded') {
        const message = 'the embedded database: one process, no standby, no failover';
        return nodeEnv === 'production' ? warn(`${message}; set DATABASE_URL to a PostgreSQL server`) : pass(`${message} (fine outside production)`);
      }
      return replicationVerdict(await readReplication(db!), nodeEnv === 'production');
    },
  },
  advice: 'point DATABASE_URL at the primary, and give it a synchronous standby in production (docs/deploy.md, "High availability")',
};
