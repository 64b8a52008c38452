import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgbouncerBinary, startPgbouncer, type PgBouncer } from '../../../bench/lib/pgbouncer.mjs';
import { clusterSettings, missingPackages, startReplicatedPostgres, type ReplicatedPostgres } from '../../../scripts/replicated-postgres.mjs';
import { signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { openStream, type OpenStream, type StreamMessage } from './support/sse.js';
import { startReceiver } from './support/webhook-receiver.js';

/**
 * The backend on a replicated PostgreSQL (scripts/replicated-postgres.mjs: three nodes under
 * Patroni with a strict synchronous standby, etcd's v2 store, HAProxy on Patroni's /primary
 * check), through HAProxy (and, for one backend, PgBouncer in transaction mode in front of it), while
 * the primary fails: writes sent with an Idempotency-Key, and sent again with it until
 * acknowledged, must be served again within a bound, and every acknowledged write must be on the
 * new primary, once. Through the killed postmaster, the lost node and the frozen primary, what
 * leaves the backend is counted too (watchDeliveries): every committed event reaches a live
 * subscriber once and a webhook receiver once (a repeat with the same webhook-id), and a password
 * reset asked for during the fault is mailed once per request that committed.
 */

const missing = [...missingPackages(), ...(pgbouncerBinary ? [] : ['pgbouncer'])];
if (process.env.CI && missing.length) throw new Error(`CI is set but Debian's ${missing.join(', ')} is not installed: .ci/run installs them`);

/** A webhook receiver on loopback, retried quickly (src/events/webhooks.ts). */
const loopbackWebhooks = { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_MS: '100', WEBHOOK_TIMEOUT_MS: '2000' };

/** Concurrent writers, each sending its next write once the last is acknowledged. */
const writers = 2;
/** Writes served before the fault, and after writes are served again. */
const steadyMs = 1500;
/** Bounds on one fault's load, whatever happens to the cluster. */
const maxFaultMs = 60_000;
const retryPauseMs = 100;
/** Writes served again within this after the fault (the issue's goal for a killed postmaster). */
const servedAgainWithinMs = 10_000;
/**
 * For a lost node or a frozen primary, whose leader key must run out first: three ttls. The
 * issue's goal is ttl + 3 s, which bench/failover.mjs measures on a quiet machine; here Patroni's
 * Python loop shares 2 cores with the rest of the suite, and its promotion alone has taken 3 to
 * 10 s after the ttl (a lost node served again after 13.4 to 21.1 s at load 6 to 13). What this
 * test holds to is that writes come back and nothing is lost or doubled.
 */
const servedAgainAfterTtlMs = 3 * clusterSettings.ttl * 1000;
/** How long the primary stays frozen: past the ttl, so that the standby is promoted meanwhile and the old primary wakes up as a stale one. */
const frozenMs = (clusterSettings.ttl + 8) * 1000;

/** What settle() had to reinitialize, for a report line ('' when nothing). */
function reinitializedNote(reinitialized: { node: string; state: string }[]): string {
  return reinitialized.length ? `; reinitialized: ${reinitialized.map((entry) => `${entry.node} (${entry.state})`).join(', ')}` : '';
}

function withinMs<T>(work: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message())), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

interface Failure {
  atMs: number;
  status?: number;
  retryAfter?: string | null;
  error?: string;
}

interface FaultRun {
  /** Names of the writes acknowledged (201). */
  acknowledged: string[];
  failures: Failure[];
  /** When the fault was done, from the start of the run (as Failure.atMs). */
  faultAtMs: number;
  /** From the fault to the first write acknowledged after the last failure. */
  servedAgainMs: number;
}

/** A backend on the cluster, its database, the user that writes, and every write it acknowledged. */
interface Writer {
  backend: TestBackend;
  owner: SignedUp;
  databaseUrl: string;
  acknowledged: string[];
}

describe.skipIf(missing.length)(`the backend on a replicated PostgreSQL${missing.length ? ` (skipped: Debian's ${missing.join(', ')} not installed)` : ''}`, () => {
  let cluster: ReplicatedPostgres;
  /** Through HAProxy. */
  let direct: Writer;
  /** Through PgBouncer in transaction mode in front of HAProxy (docs/deploy.md's settings), migrating on HAProxy. */
  let pooled: Writer;
  let pgbouncer: PgBouncer | undefined;

  async function startWriter(database: string, env: (url: string) => Record<string, string>): Promise<Writer> {
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    // DATABASE_URL over the kind's own database: the backend runs on the cluster.
    const url = databaseUrl(database);
    const backend = await startBackend('embedded', env(url));
    const writer: Writer = { backend, owner: await signUp(backend.url, `failover@${database.replaceAll("_", "-")}.example`), databaseUrl: url, acknowledged: [] };
    for (const name of ['before-0', 'before-1', 'before-2']) {
      await writeUntilAcknowledged(writer, name);
      writer.acknowledged.push(name);
    }
    return writer;
  }

  beforeAll(async () => {
    cluster = await startReplicatedPostgres({ nodes: 3 });
    direct = await startWriter('authstrap_failover', (url) => ({ DATABASE_URL: url, ...loopbackWebhooks }));
    pgbouncer = await startPgbouncer({ targetUrl: cluster.url });
    pooled = await startWriter('authstrap_failover_pooled', (url) => ({ DATABASE_URL: pgbouncer!.urlFor(url), DATABASE_DIRECT_URL: url }));
  }, 240_000);

  afterAll(async () => {
    try {
      // Bounded, so that the cluster is stopped whatever the backends do; a pool that cannot end
      // holds a connection some request never gave back.
      for (const writer of [direct, pooled]) {
        if (writer) await withinMs(writer.backend.stop(), 30_000, () => `a backend did not stop within 30 s; its pool: ${JSON.stringify(writer.backend.running.db.poolStats?.())}`);
      }
    } finally {
      await pgbouncer?.stop();
      await cluster?.stop();
    }
  }, 120_000);

  function databaseUrl(database: string): string {
    const url = new URL(cluster.url);
    url.pathname = `/${database}`;
    return url.toString();
  }

  /**
   * One write, sent again with its key until it is acknowledged; resolves when that was (from
   * `startedAt`). Every other answer goes to `failures`.
   */
  async function writeUntilAcknowledged({ owner }: Writer, name: string, failures: Failure[] = [], startedAt = Date.now(), deadline = Date.now() + maxFaultMs): Promise<number> {
    const key = randomUUID();
    while (Date.now() < deadline) {
      try {
        const response = await owner.api('POST', '/Projects', { body: { name }, headers: { 'Idempotency-Key': key } });
        if (response.status === 201) return Date.now() - startedAt;
        failures.push({ atMs: Date.now() - startedAt, status: response.status, retryAfter: response.headers.get('retry-after') });
      } catch (error) {
        failures.push({ atMs: Date.now() - startedAt, error: String(error) });
      }
      await new Promise((resolve) => setTimeout(resolve, retryPauseMs));
    }
    throw new Error(`write ${name} not acknowledged within ${maxFaultMs / 1000} s`);
  }

  /**
   * Writers run, `fault` is done after steadyMs, and the writers go on until writes have been
   * served again for steadyMs (or maxFaultMs has passed).
   */
  async function writeThrough(label: string, fault: () => unknown, through: Writer = direct): Promise<FaultRun> {
    const failures: Failure[] = [];
    const acknowledged: { name: string; atMs: number }[] = [];
    let stopAt = Date.now() + maxFaultMs;
    const startedAt = Date.now();
    const writer = async (writerIndex: number) => {
      for (let index = 0; Date.now() < stopAt; index++) {
        const name = `${label}-${writerIndex}-${index}`;
        const atMs = await writeUntilAcknowledged(through, name, failures, startedAt, startedAt + maxFaultMs + steadyMs);
        acknowledged.push({ name, atMs });
      }
    };
    const running = Promise.all(Array.from({ length: writers }, (_, index) => writer(index)));
    // Its failure (a write never acknowledged) is thrown below, once the writers are done.
    running.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, steadyMs));
    const faultAt = Date.now() - startedAt;
    await fault();
    // Go on until writes have been served again, without a failure, for steadyMs.
    while (Date.now() < stopAt) {
      const lastFailure = Math.max(faultAt, ...failures.map((failure) => failure.atMs));
      const lastAcknowledged = Math.max(0, ...acknowledged.map((write) => write.atMs));
      if (lastAcknowledged > lastFailure && Date.now() - startedAt - lastFailure > steadyMs) stopAt = Date.now();
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await running.catch(async (error: Error) => {
      // What the cluster looked like when writes did not come back: which member holds which role, on which timeline.
      throw new Error(`${error.message}; the cluster: ${JSON.stringify(await cluster.members())}`);
    });
    const lastFailure = Math.max(faultAt, ...failures.map((failure) => failure.atMs));
    const servedAgain = Math.min(...acknowledged.filter((write) => write.atMs > lastFailure).map((write) => write.atMs));
    through.acknowledged.push(...acknowledged.map((write) => write.name));
    return { acknowledged: acknowledged.map((write) => write.name), failures, faultAtMs: faultAt, servedAgainMs: servedAgain - faultAt };
  }

  /** How many times each project name is in the writer's database, read on the primary through HAProxy. */
  async function storedNames({ databaseUrl }: Writer): Promise<Map<string, number>> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string; times: number }>('SELECT name, count(*)::int AS times FROM "Project" GROUP BY name');
      return new Map(rows.map((row) => [row.name, row.times]));
    } finally {
      await client.end();
    }
  }

  /** Every acknowledged write so far is stored once, and nothing was stored twice. */
  async function expectEveryAcknowledgedWriteOnce(writer: Writer = direct) {
    const stored = await storedNames(writer);
    expect(writer.acknowledged.filter((name) => stored.get(name) !== 1), 'acknowledged writes missing or doubled').toEqual([]);
    expect([...stored].filter(([, times]) => times > 1), 'names stored twice').toEqual([]);
  }

  /**
   * What a client may see while the primary changes: a 503 that says when to come back, or a 409
   * for a write sent again while its first sending still holds the key (src/idempotency/), which
   * says the same; nothing else.
   */
  function expectOnlyRetryableAnswers(failures: Failure[]) {
    expect(failures.filter((failure) => failure.status !== 503 && failure.status !== 409), 'failures other than 503 and 409').toEqual([]);
    expect(failures.filter((failure) => !failure.retryAfter), 'answers without Retry-After').toEqual([]);
  }

  /**
   * What every fault must leave: writes acknowledged through it, served again within `boundMs`, only
   * retryable answers on the way, every acknowledged write stored once, and the backend ready.
   */
  async function expectFailoverHeld(run: FaultRun, boundMs: number, writer: Writer = direct) {
    expect(run.acknowledged.length).toBeGreaterThan(0);
    expect(run.servedAgainMs).toBeLessThan(boundMs);
    expectOnlyRetryableAnswers(run.failures);
    await expectEveryAcknowledgedWriteOnce(writer);
    expect((await fetch(`${writer.backend.url}/ready`)).status).toBe(200);
  }

  /** The projects stored whose name starts with `prefix`, by name: what the run committed, acknowledged or not. */
  async function storedProjects({ databaseUrl }: Writer, prefix: string): Promise<Map<string, string>> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ id: string; name: string }>('SELECT id, name FROM "Project" WHERE starts_with(name, $1)', [prefix]);
      return new Map(rows.map((row) => [row.name, row.id]));
    } finally {
      await client.end();
    }
  }

  /**
   * A live subscriber of the writer's projects that, like EventSource, opens its stream again with
   * Last-Event-ID whenever the server ends it (at most 50 times): `received()` is every message of
   * every stream it had, in order.
   */
  async function liveSubscriber({ backend, owner }: Writer) {
    const ended: StreamMessage[] = [];
    let current: OpenStream | undefined;
    let lastEventId: string | undefined;
    let closed = false;
    let opened = 0;
    const open = async () => {
      opened++;
      const headers = { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) };
      return openStream(backend.url, '/realtime?entity=Project', headers).catch(() => undefined);
    };
    const first = await open();
    if (first?.status !== 200) throw new Error(`the live stream was refused: ${first?.status} ${JSON.stringify(first?.body)}`);
    current = first;
    const following = (async () => {
      while (!closed && current) {
        await current.ended;
        ended.push(...current.messages);
        lastEventId = current.lastEventId ?? lastEventId;
        current = undefined;
        while (!closed && !current && opened < 50) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          const next = await open();
          if (next?.status === 200) current = next;
        }
      }
    })();
    return {
      received: () => [...ended, ...(current?.messages ?? [])],
      /** How many times the stream was opened (1 when the server never ended it). */
      opened: () => opened,
      async close() {
        closed = true;
        current?.close();
        await following;
      },
    };
  }

  /** A password reset for the writer's owner, asked for again until answered 200 (as a client would). */
  async function requestPasswordReset({ backend, owner }: Writer, failures: Failure[], startedAt: number): Promise<void> {
    const deadline = Date.now() + maxFaultMs;
    while (Date.now() < deadline) {
      try {
        const response = await fetch(`${backend.url}/api/auth/forgot-password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: owner.user.email }) });
        await response.arrayBuffer();
        if (response.status === 200) return;
        failures.push({ atMs: Date.now() - startedAt, status: response.status, retryAfter: response.headers.get('retry-after') });
      } catch (error) {
        failures.push({ atMs: Date.now() - startedAt, error: String(error) });
      }
      await new Promise((resolve) => setTimeout(resolve, retryPauseMs));
    }
    throw new Error(`the password reset was not answered within ${maxFaultMs / 1000} s`);
  }

  /** The reset mails the outbox holds for `email` (one per request that committed), and whether each was sent. */
  async function resetMailsOwed({ databaseUrl }: Writer, email: string): Promise<{ id: string; status: string }[]> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ id: string; status: string }>(
        `SELECT id, status FROM "authstrap_outbox" WHERE channel = 'mail' AND payload->>'kind' = 'reset-password' AND payload->>'to' = $1`,
        [email],
      );
      return rows;
    } finally {
      await client.end();
    }
  }

  function report(kind: string, run: FaultRun, detail: string) {
    const kinds = new Map<string, number>();
    for (const failure of run.failures) {
      const kind = failure.status ? String(failure.status) : (failure.error ?? 'error').slice(0, 60);
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
    const failed = run.failures.length
      ? `from ${run.failures[0]!.atMs - run.faultAtMs} to ${run.failures.at(-1)!.atMs - run.faultAtMs} ms after the fault: ${[...kinds].map(([kind, times]) => `${times} × ${kind}`).join(', ')}`
      : 'none';
    console.log(
      `[measured] ${kind}: writes served again ${run.servedAgainMs} ms after the fault; ${run.acknowledged.length} writes acknowledged by ${writers} writers, ` +
        `${run.failures.length} ${run.failures.length === 1 ? 'request' : 'requests'} failed (${failed}); ${detail}`,
    );
  }

  /**
   * What leaves the backend while a fault runs, watched from before it: a live subscriber of the
   * writer's projects, a webhook receiver subscribed to project.created, and a password reset
   * asked for once the fault is done (askForReset) and asked for again until answered.
   */
  async function watchDeliveries(writer: Writer) {
    const receiver = await startReceiver();
    const endpoint = await writer.owner.api('POST', '/webhook-endpoints', { body: { url: receiver.url, eventTypes: ['project.created'] } });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    receiver.state.secret = endpoint.body.data.secret;
    const subscriber = await liveSubscriber(writer).catch(async (error: Error) => {
      await receiver.close();
      throw error;
    });
    const resetFailures: Failure[] = [];
    let resetting: Promise<void> = Promise.resolve();
    const streamed = () => subscriber.received().filter((message) => message.event === 'project.created').map((message) => JSON.parse(message.data).entityId as string);
    const delivered = () => receiver.received.filter((entry) => entry.verified?.type === 'project.created');
    return {
      /** Asked for while the primary is down, and asked for again until answered. */
      askForReset() {
        resetting = requestPasswordReset(writer, resetFailures, Date.now());
      },
      /**
       * Every project the run committed (acknowledged, or committed with its answer lost): its
       * event reaches the live subscriber once, in a stream that resumed where it was cut if the
       * server ended it, and the webhook receiver under one webhook-id however often it came; the
       * reset is mailed once per request that committed (the outbox's rows), each mail once.
       * Resolves a line for the report.
       */
      async expectEachDeliveredOnce(run: FaultRun, prefix: string): Promise<string> {
        await resetting;
        expectOnlyRetryableAnswers(resetFailures);
        const committed = [...(await storedProjects(writer, prefix)).values()];
        expect(committed.length).toBeGreaterThanOrEqual(run.acknowledged.length);
        await expect.poll(() => committed.filter((id) => !streamed().includes(id)), { timeout: 20_000 }).toEqual([]);
        await expect.poll(() => committed.filter((id) => !delivered().some((entry) => entry.verified!.data.entityId === id)), { timeout: 30_000 }).toEqual([]);
        const streamedTimes = new Map<string, number>();
        for (const id of streamed()) streamedTimes.set(id, (streamedTimes.get(id) ?? 0) + 1);
        expect([...streamedTimes].filter(([, times]) => times > 1), 'events streamed twice').toEqual([]);
        const webhookIds = new Map<string, Set<string>>();
        for (const entry of delivered()) {
          const id = entry.verified!.data.entityId as string;
          webhookIds.set(id, (webhookIds.get(id) ?? new Set()).add(entry.headers['webhook-id']!));
        }
        expect([...webhookIds].filter(([, ids]) => ids.size !== 1), 'events delivered under more than one webhook-id').toEqual([]);
        expect(receiver.received.filter((entry) => !entry.verified), 'webhooks that did not verify').toEqual([]);

        // Every reset mail owed so far (this fault's and earlier ones') is sent, and mailed once.
        const { email } = writer.owner.user;
        await expect.poll(async () => (await resetMailsOwed(writer, email)).map((row) => row.status), { timeout: 20_000 }).toSatisfy(
          (statuses: string[]) => statuses.length > 0 && statuses.every((status) => status === 'sent'),
        );
        const owed = await resetMailsOwed(writer, email);
        const mailed = writer.backend.mailbox.to(email).filter((mail) => mail.link?.pathname === '/reset-password');
        expect(mailed.length).toBe(owed.length);
        expect(new Set(mailed.map((mail) => mail.messageId)).size).toBe(mailed.length);

        return (
          `${committed.length} projects committed (${run.acknowledged.length} acknowledged); the live stream opened ${subscriber.opened()} times, ` +
          `${streamed().length} events; ${delivered().length} webhooks for ${webhookIds.size} events; ${resetFailures.length} failed reset requests, ${mailed.length} reset mails so far`
        );
      },
      async close() {
        await subscriber.close();
        await receiver.close();
        // Later faults' projects are not delivered to a receiver that is gone.
        await writer.owner.api('DELETE', `/webhook-endpoints/${endpoint.body.data.id}`).catch(() => {});
      },
    };
  }

  it('serves writes again within 10 s of the primary postmaster being killed, with every acknowledged write kept once, and every committed event streamed, delivered and mailed once', async () => {
    const before = await cluster.waitForLeader();
    const deliveries = await watchDeliveries(direct);
    try {
      let killedPid = 0;
      const run = await writeThrough('postmaster-killed', () => {
        killedPid = cluster.killPostmaster(before);
        deliveries.askForReset();
      });
      const after = await cluster.waitForLeader();
      report('primary postmaster killed (SIGKILL)', run, `postmaster ${killedPid} of ${before} killed; ${after} leads after it`);

      await expectFailoverHeld(run, servedAgainWithinMs);
      console.log(`[measured] through the killed postmaster: ${await deliveries.expectEachDeliveredOnce(run, 'postmaster-killed-')}`);
    } finally {
      await deliveries.close();
    }
  }, 180_000);

  it("serves writes again within three of Patroni's ttls of the primary's whole node being lost (Patroni and PostgreSQL killed), with every acknowledged write kept once, and every committed event streamed, delivered and mailed once", async () => {
    // Every replica streaming again after the fault before (Patroni calls one `running` while it still restarts after a rewind).
    await cluster.settle();
    const before = await cluster.waitForLeader();
    const standby = await cluster.waitForSyncStandby();
    const deliveries = await watchDeliveries(direct);
    let after = '';
    let run: FaultRun;
    try {
      try {
        run = await writeThrough('node-killed', async () => {
          await cluster.killNode(before);
          deliveries.askForReset();
        });
        after = await cluster.waitForLeader();
        report('primary node killed (Patroni and PostgreSQL, SIGKILL)', run, `${before} lost; ${after} leads after it`);
      } finally {
        // The node comes back as a replica, whatever happened, so the cluster has its synchronous standby again for what follows.
        cluster.startNode(before);
        await cluster.waitForSyncStandby(90_000);
      }

      expect(after).toBe(standby);
      await expectFailoverHeld(run, servedAgainAfterTtlMs);
      console.log(`[measured] through the lost node: ${await deliveries.expectEachDeliveredOnce(run, 'node-killed-')}`);
    } finally {
      await deliveries.close();
    }
  }, 240_000);

  it("serves writes again within three of Patroni's ttls of the primary freezing (SIGSTOP, resumed past the ttl), loses no acknowledged write when it wakes up, and streams, delivers and mails every committed event once", async () => {
    // Every replica streaming again after the fault before (Patroni calls one `running` while it still restarts after a rewind).
    await cluster.settle();
    const before = await cluster.waitForLeader();
    const standby = await cluster.waitForSyncStandby();
    const deliveries = await watchDeliveries(direct);
    try {
      let frozen: number[] = [];
      let frozenAt = 0;
      const run = await writeThrough('frozen', async () => {
        frozen = cluster.freeze(before);
        frozenAt = Date.now();
        // Resumed while the writers run on: the old primary wakes up after the standby took over.
        setTimeout(() => cluster.resume(before), frozenMs).unref();
        deliveries.askForReset();
      });
      // The writers stop once writes are served again; the old primary may still be frozen: wait for it to wake up and settle.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, frozenAt + frozenMs + 1000 - Date.now())));
      const after = await cluster.waitForLeader();
      // Every node running again before the next fault (docs/deploy.md: the old primary may rejoin
      // unrewound, and is reinitialized then).
      const { reinitialized } = await cluster.settle();
      report(
        'primary frozen (SIGSTOP) and resumed',
        run,
        `${frozen.length} processes of ${before} frozen for ${frozenMs / 1000} s; ${after} leads after it (the standby was ${standby})${reinitializedNote(reinitialized)}`,
      );

      // The etcd v2 store compares the leader key before Patroni writes it: the old primary does not take it back when it wakes up.
      expect(after).toBe(standby);
      await expectFailoverHeld(run, servedAgainAfterTtlMs);
      console.log(`[measured] through the frozen primary: ${await deliveries.expectEachDeliveredOnce(run, 'frozen-')}`);
    } finally {
      await deliveries.close();
    }
  }, 360_000);

  it('serves writes again within 10 s of a planned switchover to the synchronous standby, with every acknowledged write kept once', async () => {
    const before = await cluster.waitForLeader();
    const standby = await cluster.waitForSyncStandby();
    let after = '';
    const run = await writeThrough('switchover', async () => (after = await cluster.switchover()));
    const { reinitialized } = await cluster.settle();
    report('planned switchover', run, `${before} to ${after}${reinitializedNote(reinitialized)}`);

    expect(after).toBe(standby);
    await expectFailoverHeld(run, servedAgainWithinMs);
  }, 240_000);

  it('through PgBouncer in front of HAProxy: serves writes again within 10 s of the primary postmaster being killed, with every acknowledged write kept once', async () => {
    const before = await cluster.waitForLeader();
    await cluster.waitForSyncStandby();
    let killedPid = 0;
    const run = await writeThrough('pooled-postmaster-killed', () => (killedPid = cluster.killPostmaster(before)), pooled);
    const after = await cluster.waitForLeader();
    report('through PgBouncer: primary postmaster killed (SIGKILL)', run, `postmaster ${killedPid} of ${before} killed; ${after} leads after it`);

    await expectFailoverHeld(run, servedAgainWithinMs, pooled);
  }, 120_000);
});
