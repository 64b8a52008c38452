import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthstrapError, createAuthstrapClient, type AuthstrapClient, type LiveSubscription, type TaskStreamEvent } from '../client/authstrap-client.js';
import { createThrowawayDatabase, databaseKinds, postgresAdminUrl, startBackend, type TestBackend } from './support/backend.js';
import { faultProxy, type FaultProxy } from './support/fault-proxy.js';

// The typed client's subscribe() (GET /realtime read with fetch) against real backends: typed
// events, filters, close(), refusals, and the reconnections it makes by itself.

const password = 'correct horse battery';
const email = (label: string) => `${label}-${randomUUID().slice(0, 8)}@example.com`;

/** A signed-up user's client, acting in their own organization. */
async function signedUp(baseUrl: string, label: string, fetchFn?: typeof fetch): Promise<AuthstrapClient> {
  const client = createAuthstrapClient({ baseUrl, ...(fetchFn && { fetch: fetchFn }) });
  await client.auth.signUp({ email: email(label), password, name: label });
  client.setOrganization((await client.auth.getSession())!.organizations[0]!.id);
  return client;
}

/** The events a subscription received, and a way to wait for one. */
function collector<Event extends { entityId: string | null }>() {
  const events: Event[] = [];
  return {
    events,
    onEvent: (event: Event) => void events.push(event),
    async until(match: (event: Event) => boolean, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (!events.some(match)) {
        if (Date.now() > deadline) throw new Error(`no such event within ${timeoutMs} ms; received: ${events.map((event) => `${(event as any).type} ${event.entityId}`).join(', ')}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

/** The backends' REALTIME_HEARTBEAT_MS: its least, so that a stalled connection is given up on within seconds. */
const heartbeatMs = 1000;

const settle = (ms = 400) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(databaseKinds)('subscribe() of the typed client on the %s database', (kind) => {
  let backend: TestBackend;
  let proxy: FaultProxy;
  let ada: AuthstrapClient;
  const subscriptions: LiveSubscription[] = [];
  beforeAll(async () => {
    backend = await startBackend(kind, { REALTIME_RECHECK_MS: '500', REALTIME_HEARTBEAT_MS: String(heartbeatMs) });
    proxy = await faultProxy(backend.url);
    ada = await signedUp(backend.url, 'ada');
  });
  afterAll(async () => {
    for (const subscription of subscriptions) subscription.close();
    await proxy?.close();
    await backend?.stop();
  });

  it('delivers typed events, only those its filter or id matches, and nothing after close()', async () => {
    const project = await ada.Project.create({ name: 'Live' });
    const every = collector<TaskStreamEvent>();
    const done = collector<TaskStreamEvent>();
    const one = collector<TaskStreamEvent>();
    subscriptions.push(await ada.Task.subscribe({ onEvent: every.onEvent }));
    subscriptions.push(await ada.Task.subscribe({ filter: { projectId: project.id, status: 'done' }, onEvent: done.onEvent }));
    const first = await ada.Task.create({ projectId: project.id, title: 'Write', status: 'done', points: 3 });
    const single = await ada.Task.subscribe({ id: first.id, onEvent: one.onEvent });
    subscriptions.push(single);
    const second = await ada.Task.create({ projectId: project.id, title: 'Test' });
    await ada.Task.update(first.id, { title: 'Write it' });
    await ada.Task.delete(second.id);
    await every.until((event) => event.type === 'task.deleted');
    await one.until((event) => event.type === 'task.updated');

    expect(every.events.map((event) => [event.type, event.entityId])).toEqual([
      ['task.created', first.id],
      ['task.created', second.id],
      ['task.updated', first.id],
      ['task.deleted', second.id],
    ]);
    const [created, , updated] = every.events;
    // The record as the list route shows it, typed as the client's Task.
    const title: string = created!.data.record.title;
    expect(title).toBe('Write');
    expect(created!.data.record).toEqual(first);
    expect(updated!.data.changedFields).toEqual(['title']);
    expect(updated!.data.previous).toEqual({ title: 'Write' });
    expect((await settle(), done.events).map((event) => [event.type, event.entityId])).toEqual([
      ['task.created', first.id],
      ['task.updated', first.id],
    ]);
    // Only its record's events (its creation too, when that committed as the stream began: "from now" is the stream's).
    expect(one.events.every((event) => event.entityId === first.id)).toBe(true);
    expect(one.events.filter((event) => event.type !== 'task.created').map((event) => event.type)).toEqual(['task.updated']);
    expect(single.lastEventId).toMatch(/^\d+$/);
    const heard = one.events.length;

    single.close();
    await expect(single.closed).resolves.toBeUndefined();
    await ada.Task.update(first.id, { title: 'After the close' });
    await every.until((event) => event.data.record.title === 'After the close');
    await settle();
    expect(one.events).toHaveLength(heard);
  });

  it('closes when its AbortSignal aborts', async () => {
    const controller = new AbortController();
    const received = collector<{ entityId: string | null }>();
    const subscription = await ada.Project.subscribe({ onEvent: received.onEvent, signal: controller.signal });
    await ada.Project.create({ name: 'Seen' });
    await received.until(() => true);
    controller.abort();
    await expect(subscription.closed).resolves.toBeUndefined();
    await ada.Project.create({ name: 'Not seen' });
    await settle();
    expect(received.events).toHaveLength(1);
  });

  it('rejects a refused subscription with the error envelope: another organization (403), a bad filter (400), no session (401)', async () => {
    const eve = await signedUp(backend.url, 'eve');
    eve.setOrganization((await ada.auth.getSession())!.organizations[0]!.id);
    const elsewhere = await eve.Task.subscribe({ onEvent: () => undefined }).catch((error: unknown) => error);
    expect(elsewhere).toBeInstanceOf(AuthstrapError);
    expect(elsewhere).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    expect((elsewhere as AuthstrapError).message).not.toBe('');

    const badFilter = await ada.Task.subscribe({ filter: { status: 'someday' as 'todo' }, onEvent: () => undefined }).catch((error: unknown) => error);
    expect(badFilter).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
    expect(Object.keys((badFilter as AuthstrapError).details ?? {}).join(' ')).toContain('status');

    const anonymous = createAuthstrapClient({ baseUrl: backend.url });
    await expect(anonymous.Task.subscribe({ onEvent: () => undefined })).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });

  it('stops, with onError, when its session ends', async () => {
    const grace = await signedUp(backend.url, 'grace');
    const errors: AuthstrapError[] = [];
    const subscription = await grace.Project.subscribe({ onEvent: () => undefined, onError: (error) => void errors.push(error) });
    await grace.auth.signOut();
    const stopped = await subscription.closed;
    expect(stopped).toMatchObject({ status: 401, code: 'SESSION_ENDED' });
    expect(errors).toEqual([stopped]);
  });

  it('reconnects after a dropped connection from its last event, missing nothing and repeating nothing', async () => {
    const viaProxy = createAuthstrapClient({ baseUrl: `http://127.0.0.1:${proxy.port}` });
    await viaProxy.auth.signIn({ email: (await ada.auth.getSession())!.user.email, password });
    viaProxy.setOrganization((await ada.auth.getSession())!.organizations[0]!.id);
    const project = await ada.Project.create({ name: 'Dropped' });
    const received = collector<TaskStreamEvent>();
    const connection: boolean[] = [];
    subscriptions.push(
      await viaProxy.Task.subscribe({ filter: { projectId: project.id }, onEvent: received.onEvent, onConnectionChange: (connected) => void connection.push(connected) }),
    );
    const before = await ada.Task.create({ projectId: project.id, title: 'before' });
    await received.until((event) => event.entityId === before.id);
    expect(connection).toEqual([]);
    proxy.cut();
    const during = await ada.Task.create({ projectId: project.id, title: 'during' });
    const after = await ada.Task.create({ projectId: project.id, title: 'after' });
    await received.until((event) => event.entityId === after.id);
    await settle();
    expect(received.events.map((event) => event.entityId)).toEqual([before.id, during.id, after.id]);
    // Told when the connection dropped, and when it was back.
    expect(connection).toEqual([false, true]);
  });

  it('replaces a connection that goes silent without closing (no event, no heartbeat), resuming from its last event', async () => {
    const viaProxy = createAuthstrapClient({ baseUrl: `http://127.0.0.1:${proxy.port}`, realtimeHeartbeatMs: heartbeatMs });
    await viaProxy.auth.signIn({ email: (await ada.auth.getSession())!.user.email, password });
    viaProxy.setOrganization((await ada.auth.getSession())!.organizations[0]!.id);
    const project = await ada.Project.create({ name: 'Stalled' });
    const received = collector<TaskStreamEvent>();
    const connection: { connected: boolean; at: number }[] = [];
    subscriptions.push(
      await viaProxy.Task.subscribe({
        filter: { projectId: project.id },
        onEvent: received.onEvent,
        onConnectionChange: (connected) => void connection.push({ connected, at: Date.now() }),
      }),
    );
    const before = await ada.Task.create({ projectId: project.id, title: 'before' });
    await received.until((event) => event.entityId === before.id);
    // The stream's connection stops forwarding, and stays open: only the client's watchdog can notice.
    const stalledAt = Date.now();
    proxy.stallOpen();
    const during = await ada.Task.create({ projectId: project.id, title: 'during' });
    await received.until((event) => event.entityId === during.id, heartbeatMs * 2.5 + 5000);
    const after = await ada.Task.create({ projectId: project.id, title: 'after' });
    await received.until((event) => event.entityId === after.id);
    await settle();
    expect(received.events.map((event) => event.entityId)).toEqual([before.id, during.id, after.id]);
    expect(connection.map((change) => change.connected)).toEqual([false, true]);
    // Given up on after two and a half heartbeats of silence (the last one may have come just before the stall).
    const silentFor = connection[0]!.at - stalledAt;
    expect(silentFor).toBeGreaterThanOrEqual(heartbeatMs * 1.5 - 100);
    expect(silentFor).toBeLessThan(heartbeatMs * 2.5 + 1000);
  });
});

/** Two instances on one PostgreSQL database behind one address, as a load balancer would put them. */
describe.runIf(postgresAdminUrl)('subscribe() across an instance restart', () => {
  let database: Awaited<ReturnType<typeof createThrowawayDatabase>>;
  const instances: TestBackend[] = [];
  let current: TestBackend;
  const balancer: typeof fetch = (input, init) => fetch(String(input).replace('http://api.test', current.url), init);
  beforeAll(async () => {
    database = await createThrowawayDatabase();
    current = await startBackend('embedded', { DATABASE_URL: database.url, SHUTDOWN_DRAIN_MS: '0' });
    instances.push(current);
  }, 60_000);
  afterAll(async () => {
    for (const instance of instances) await instance.stop().catch(() => undefined);
    await database?.drop();
  });

  it('resumes on the instance that answers next, with every event since exactly once', async () => {
    const ada = await signedUp('http://api.test', 'ada', balancer);
    const project = await ada.Project.create({ name: 'Failover' });
    const received = collector<TaskStreamEvent>();
    const subscription = await ada.Task.subscribe({ filter: { projectId: project.id }, onEvent: received.onEvent });
    try {
      const before = await ada.Task.create({ projectId: project.id, title: 'before' });
      await received.until((event) => event.entityId === before.id);
      // The instance stops (its streams end with SHUTTING_DOWN and retry:); another takes its place.
      const next = await startBackend('embedded', { DATABASE_URL: database.url, SHUTDOWN_DRAIN_MS: '0' });
      instances.push(next);
      await current.stop();
      current = next;
      const during = await ada.Task.create({ projectId: project.id, title: 'during' });
      const after = await ada.Task.create({ projectId: project.id, title: 'after' });
      await received.until((event) => event.entityId === after.id, 10_000);
      await settle();
      expect(received.events.map((event) => event.entityId)).toEqual([before.id, during.id, after.id]);
    } finally {
      subscription.close();
    }
  }, 60_000);
});
