// Types of replicated-postgres.mjs, for the tests that import it.

/** The Debian packages missing for a replicated PostgreSQL here (empty when it can start). */
export function missingPackages(): string[];

/** Patroni's settings for the whole cluster (its `bootstrap.dcs`). */
export const clusterSettings: {
  ttl: number;
  loop_wait: number;
  retry_timeout: number;
  maximum_lag_on_failover: number;
  synchronous_mode: boolean;
  synchronous_mode_strict: boolean;
  postgresql: { use_pg_rewind: boolean; use_slots: boolean; parameters: Record<string, string | number> };
};

export interface ClusterNode {
  name: string;
  pgPort: number;
  restPort: number;
  /** The node's postmaster, while it runs. */
  pid(): number | undefined;
}

/** A member as Patroni's GET /cluster lists it. */
export interface ClusterMember {
  name: string;
  role: 'leader' | 'sync_standby' | 'replica' | string;
  state: string;
  host: string;
  port: number;
  timeline?: number;
  lag?: number | string;
}

export interface ReplicatedPostgres {
  /** The primary, through HAProxy (database `postgres`, user `postgres`, trusted on loopback). */
  url: string;
  /** The running replicas, through HAProxy. */
  replicaUrl: string;
  /** The cluster's folder, removed by stop(). */
  dir: string;
  nodes: ClusterNode[];
  /** The node holding the leader key, as the DCS says (undefined while none does). */
  leader(): Promise<string | undefined>;
  members(): Promise<ClusterMember[] | undefined>;
  /** The leader key as etcd holds it (read from etcd, not through a Patroni): its holder, seconds left, expiry; undefined while none is held. */
  leaderKey(): Promise<{ holder: string; ttl?: number; expiration?: string } | undefined>;
  /** HAProxy's servers of `proxy` ('primary' by default) that are up. */
  serversUp(proxy?: 'primary' | 'replicas'): Promise<string[]>;
  /** The log file of a process the cluster started (a node's name for its Patroni and PostgreSQL, 'etcd', 'haproxy'). */
  logFile(name: string): string;
  /** Resolves the primary's name once HAProxy sends connections to it alone; throws after timeoutMs. */
  waitForLeader(timeoutMs?: number): Promise<string>;
  /** Resolves the synchronous standby's name once one runs; throws after timeoutMs. */
  waitForSyncStandby(timeoutMs?: number): Promise<string>;
  /** SIGKILL to the node's postmaster; resolves its pid. */
  killPostmaster(name: string): number;
  /** SIGKILL to the node's Patroni and all its PostgreSQL processes. */
  killNode(name: string): Promise<void>;
  /** Starts a node's Patroni again (after killNode). */
  startNode(name: string): void;
  /** SIGSTOP to the node's postmaster and backends; resolves the stopped pids. */
  freeze(name: string): number[];
  /** SIGCONT to what freeze() stopped. */
  resume(name: string): void;
  /** A planned switchover from the leader (to `to`, or the synchronous standby); resolves the new leader once the old one runs again as a replica. */
  switchover(to?: string): Promise<string>;
  /**
   * Resolves once the cluster is whole (a leader behind HAProxy, a running synchronous standby,
   * every started node running, the replicas streaming from the leader), reinitializing a node
   * left `start failed`, or not running or not streaming after stuckMs (40 s); throws after
   * timeoutMs (180 s).
   */
  settle(options?: { timeoutMs?: number; stuckMs?: number }): Promise<{ settleMs: number; reinitialized: { node: string; state: string; afterMs: number; answer?: number; log?: string[] }[] }>;
  /** The end of every process's log. */
  logs(): string;
  /** Stops everything it started and removes its folder. */
  stop(): Promise<void>;
}

export function startReplicatedPostgres(options?: { nodes?: number }): Promise<ReplicatedPostgres>;
