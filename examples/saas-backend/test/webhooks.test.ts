import pg from 'pg';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError, type EventType } from '../client/authstrap-client.js';
import { withScope } from '../src/db/scope.js';
import { sealStoredWebhookSecrets, webhookSecretSeal } from '../src/events/webhook-secrets.js';
import { eventTypes } from '../src/generated/events.js';
import { addMember, apiClient, authSecret, createThrowawayDatabase, databaseKinds, pooledDatabaseKinds, postgresAdminUrl, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';
import { startMailbox } from './support/mailbox.js';
import { freePort, spawnBackend } from './support/process.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

// Short bounds, so that retries and failures happen within a test: 4 attempts 100 ms, 200 ms,
// 400 ms apart (with jitter), 500 ms per attempt, an endpoint disabled after 2 failed deliveries.
const fastWebhooks = { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_MS: '100', WEBHOOK_MAX_ATTEMPTS: '4', WEBHOOK_TIMEOUT_MS: '500', WEBHOOK_DISABLE_AFTER: '2', OUTBOX_POLL_MS: '50' };

interface Delivery {
  id: string;
  eventId: string;
  eventType: string;
  status: string;
  attempts: number;
  lastError: string | null;
}

describe.each(databaseKinds)('webhooks on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  let receiver: Receiver;
  const endpoints: string[] = [];

  /** A new endpoint of Alice's organization for `url`, subscribed to `eventTypes`: its id and secret. */
  const addEndpoint = async (url: string, eventTypes = ['project.created', 'project.updated']) => {
    const response = await alice.api('POST', '/webhook-endpoints', { body: { url, eventTypes } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    endpoints.push(response.body.data.id);
    return response.body.data as { id: string; secret: string };
  };
  const deliveriesOf = async (endpointId: string) => {
    const response = await alice.api('GET', `/webhook-endpoints/${endpointId}/deliveries?order=asc&limit=100`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data as Delivery[];
  };
  const createProject = async (name: string) => {
    const response = await alice.api('POST', '/Projects', { body: { name } });
    expect(response.status).toBe(201);
    return response.body.data.id as string;
  };

  beforeAll(async () => {
    backend = await startBackend(kind, fastWebhooks);
    alice = await signUp(backend.url, 'alice@example.com');
    receiver = await startReceiver();
  });
  afterEach(async () => {
    // One test's endpoints do not receive the next one's events.
    while (endpoints.length > 0) await alice.api('DELETE', `/webhook-endpoints/${endpoints.pop()}`);
    receiver.state.answers = [];
    receiver.state.fallback = 'ok';
  });
  afterAll(async () => {
    await receiver?.close();
    await backend?.stop();
  });

  it('delivers an event, signed so that the standardwebhooks package verifies it', async () => {
    const endpoint = await addEndpoint(receiver.url);
    receiver.state.secret = endpoint.secret;
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const projectId = await createProject('Signed');

    await expect.poll(() => receiver.received.filter((entry) => entry.verified?.data.entityId === projectId).length, { timeout: 10_000 }).toBe(1);
    const delivery = receiver.received.find((entry) => entry.verified?.data.entityId === projectId)!;
    expect(delivery.verified).toMatchObject({ type: 'project.created', organizationId: alice.organizationId, data: { entity: 'Project', actor: { type: 'user', id: alice.user.id } } });
    expect(delivery.headers['webhook-id']).toBe((await deliveriesOf(endpoint.id))[0]!.id);
    // Tampered with, it no longer verifies: the check above could fail.
    receiver.state.secret = 'whsec_' + Buffer.from('another secret of 24 b..').toString('base64');
    expect(() => new Webhook(receiver.state.secret!).verify(delivery.body, delivery.headers)).toThrow();
    receiver.state.secret = endpoint.secret;

    // The secret was shown once: never listed again, never in an event, a delivery or the outbox.
    const listed = await alice.api('GET', '/webhook-endpoints');
    expect(JSON.stringify(listed.body)).not.toContain(endpoint.secret);
    const stored = await backend.running.db.asOwner((tx) =>
      tx.query<{ text: string }>(`SELECT (SELECT coalesce(string_agg(row_to_json(e)::text, ''), '') FROM "authstrap_event" e) || (SELECT coalesce(string_agg("payload"::text, ''), '') FROM "authstrap_outbox") AS "text"`),
    );
    expect(stored.rows[0]!.text).not.toContain(endpoint.secret.slice(6));
    expect(receiver.received.map((entry) => entry.body).join('')).not.toContain(endpoint.secret.slice(6));
  });

  it("verifies with the typed client's verifyWebhook too, which refuses a wrong secret, a changed body and an old timestamp", async () => {
    const endpoint = await addEndpoint(receiver.url);
    receiver.state.secret = endpoint.secret;
    const projectId = await createProject('Client-verified');
    await expect.poll(() => receiver.received.filter((entry) => entry.verified?.data.entityId === projectId).length, { timeout: 10_000 }).toBe(1);
    const { headers, body } = receiver.received.find((entry) => entry.verified?.data.entityId === projectId)!;

    const event = await verifyWebhook(endpoint.secret, headers, body);
    const type: EventType = event.type;
    expect(type).toBe('project.created');
    expect(event.webhookId).toBe(headers['webhook-id']);
    const otherSecret = (await addEndpoint(receiver.url)).secret;
    await expect(verifyWebhook(otherSecret, headers, body)).rejects.toThrow(WebhookVerificationError);
    await expect(verifyWebhook(endpoint.secret, headers, body.replace('Client-verified', 'Client-forged'))).rejects.toThrow(/signature/);
    await expect(verifyWebhook(endpoint.secret, headers, body, { now: new Date(Date.now() + 10 * 60_000) })).rejects.toThrow(/timestamp/);
  });

  it("lists every event type in the OpenAPI document's webhooks section, with the entity's record as payload", async () => {
    const document = (await apiClient(backend.url)('GET', '/api/docs/openapi.json')).body;
    expect(document.openapi).toBe('3.1.0');
    // Every recorded type, and the test event POST /webhook-endpoints/{id}/test sends.
    expect(Object.keys(document.webhooks).sort()).toEqual([...Object.keys(eventTypes), 'webhook.test'].sort());
    const created = document.webhooks['project.created'].post;
    const schema = created.requestBody.content['application/json'].schema;
    const body = schema.$ref ? document.components.schemas[schema.$ref.split('/').pop()] : schema;
    expect(body.properties.type.enum ?? [body.properties.type.const]).toEqual(['project.created']);
    // The record is a Project as the API returns it: its fields, its enum.
    const record = body.properties.data.properties.record;
    const project = record.$ref ? document.components.schemas[record.$ref.split('/').pop()] : record;
    expect(Object.keys(project.properties)).toEqual(expect.arrayContaining(['id', 'name', 'description', 'status']));
    expect(project.properties.status.enum).toEqual(['active', 'archived']);
    expect(created.parameters.map((parameter: { name: string }) => parameter.name).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    for (const path of ['/audit-events', '/audit-events/per-day', '/audit-events/export.csv', '/webhook-endpoints', '/webhook-endpoints/{id}/deliveries', '/webhook-endpoints/{id}/test', '/api/auth/security-events']) expect(document.paths[path], path).toBeDefined();
  });

  it('sends a signed test event to the one endpoint asked, whatever its event types; it shows in that delivery log only, and a member or a disabled endpoint is refused', async () => {
    const tested = await addEndpoint(receiver.url, ['project.deleted']);
    const other = await addEndpoint(receiver.url, []);
    receiver.state.secret = tested.secret;
    const sent = await alice.api('POST', `/webhook-endpoints/${tested.id}/test`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const delivery = sent.body.data as Delivery;
    expect(delivery).toMatchObject({ eventType: 'webhook.test', status: 'pending', attempts: 0 });

    await expect.poll(() => receiver.received.filter((entry) => entry.headers['webhook-id'] === delivery.id).length, { timeout: 10_000 }).toBe(1);
    const arrived = receiver.received.find((entry) => entry.headers['webhook-id'] === delivery.id)!;
    // Verified with the tested endpoint's secret by the standardwebhooks package.
    expect(arrived.verified).toMatchObject({ id: delivery.eventId, type: 'webhook.test', organizationId: alice.organizationId, data: { actor: { type: 'user', id: alice.user.id }, entity: 'webhook_endpoint', entityId: tested.id } });
    await expect.poll(async () => (await deliveriesOf(tested.id)).map((entry) => [entry.id, entry.eventType, entry.status])).toEqual([[delivery.id, 'webhook.test', 'sent']]);
    // Not an event of the organization: no other endpoint gets it (not even one for every event), the audit log has none.
    expect((await deliveriesOf(other.id)).filter((entry) => entry.eventType === 'webhook.test')).toEqual([]);
    expect((await alice.api('GET', '/audit-events?type=webhook.test')).body.data).toEqual([]);

    const mia = await addMember(backend.url, alice, `mia-${Date.now()}@example.com`, 'member');
    expect((await mia.api('POST', `/webhook-endpoints/${tested.id}/test`)).status).toBe(403);
    const bob = await signUp(backend.url, `bob-${Date.now()}@example.com`);
    expect((await bob.api('POST', `/webhook-endpoints/${tested.id}/test`)).status).toBe(404);
    expect((await alice.api('PATCH', `/webhook-endpoints/${tested.id}`, { body: { enabled: false } })).status).toBe(200);
    const disabled = await alice.api('POST', `/webhook-endpoints/${tested.id}/test`);
    expect(disabled.status).toBe(409);
    expect(disabled.body.error.message).toBe('This endpoint is disabled: enable it first to send it a test event');
    expect(receiver.received.filter((entry) => entry.verified?.type === 'webhook.test')).toHaveLength(1);
  });

  it('retries a receiver that answers 500, too slowly and not at all, then delivers once it is healthy', async () => {
    const endpoint = await addEndpoint(receiver.url);
    receiver.state.secret = endpoint.secret;
    receiver.state.answers = [500, 'slow', 'drop'];
    const projectId = await createProject('Retried');

    await expect.poll(async () => (await deliveriesOf(endpoint.id))[0]?.status, { timeout: 15_000 }).toBe('sent');
    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery).toMatchObject({ attempts: 4, lastError: null });
    const attempts = receiver.received.filter((entry) => entry.verified?.data.entityId === projectId);
    expect(attempts.map((entry) => entry.answer)).toEqual([500, 'slow', 'drop', 'ok']);
    // Every attempt is the same message: one webhook-id to deduplicate on.
    expect(new Set(attempts.map((entry) => entry.headers['webhook-id']))).toEqual(new Set([delivery!.id]));
  });

  it('marks a delivery failed after the last attempt, redelivers it on request, and disables an endpoint that keeps failing', async () => {
    // Nothing listens on this port yet: the receiver is down.
    const port = await freePort();
    const endpoint = await addEndpoint(`http://127.0.0.1:${port}/hooks`);
    const first = await createProject('Down 1');
    await expect.poll(async () => (await deliveriesOf(endpoint.id))[0]?.status, { timeout: 15_000 }).toBe('failed');
    expect((await deliveriesOf(endpoint.id))[0]).toMatchObject({ attempts: 4, lastError: expect.stringMatching(/ECONNREFUSED/) });
    expect((await alice.api('GET', '/webhook-endpoints')).body.data.find((e: { id: string }) => e.id === endpoint.id)).toMatchObject({ enabled: true, failureCount: 1 });

    // A second delivery fails for good: the endpoint is disabled, and its owner mailed.
    await createProject('Down 2');
    await expect.poll(async () => (await alice.api('GET', '/webhook-endpoints')).body.data.find((e: { id: string }) => e.id === endpoint.id)?.enabled, { timeout: 15_000 }).toBe(false);
    await expect.poll(() => backend.mailbox.to(alice.user.email).filter((mail) => /was disabled/.test(mail.subject)).length, { timeout: 10_000 }).toBe(1);
    const log = await alice.api('GET', `/audit-events?type=webhook_endpoint.updated&entityId=${endpoint.id}`);
    expect(log.body.data[0]).toMatchObject({ actorType: 'system', data: { enabled: false } });

    // The receiver is back; an admin enables the endpoint and redelivers the first one: same webhook-id.
    const back = await startReceiver(port);
    try {
      back.state.secret = endpoint.secret;
      expect((await alice.api('PATCH', `/webhook-endpoints/${endpoint.id}`, { body: { enabled: true } })).body.data).toMatchObject({ enabled: true, failureCount: 0, disabledReason: null });
      const failed = (await deliveriesOf(endpoint.id)).find((delivery) => delivery.status === 'failed')!;
      const redelivered = await alice.api('POST', `/webhook-endpoints/${endpoint.id}/deliveries/${failed.id}/redeliver`);
      expect(redelivered.status).toBe(202);
      await expect.poll(() => back.received.filter((entry) => entry.verified?.data.entityId === first).length, { timeout: 10_000 }).toBe(1);
      expect(back.received.find((entry) => entry.verified?.data.entityId === first)!.headers['webhook-id']).toBe(failed.id);
      await expect.poll(async () => (await deliveriesOf(endpoint.id)).find((delivery) => delivery.id === failed.id)?.status).toBe('sent');
      // Events after the endpoint was enabled again reach it as usual.
      const later = await createProject('Back');
      await expect.poll(() => back.received.filter((entry) => entry.verified?.data.entityId === later).length, { timeout: 10_000 }).toBe(1);
    } finally {
      await back.close();
    }
  });

  it('sends nothing for a change that was rolled back', async () => {
    const endpoint = await addEndpoint(receiver.url);
    receiver.state.secret = endpoint.secret;
    const scope = { organizationId: alice.organizationId, userId: alice.user.id, role: 'owner' };
    await expect(
      withScope(backend.running.db, scope).transaction(async (tx) => {
        await tx.query(`INSERT INTO "Project" ("organizationId", "name") VALUES (authstrap.organization_id(), 'Rolled back')`);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    // The same change committed is delivered: the receiver is listening.
    await withScope(backend.running.db, scope).transaction((tx) => tx.query(`INSERT INTO "Project" ("organizationId", "name") VALUES (authstrap.organization_id(), 'Committed')`));
    await expect.poll(() => receiver.received.filter((entry) => (entry.verified?.data.record as { name?: string })?.name === 'Committed').length, { timeout: 10_000 }).toBe(1);
    expect(receiver.received.some((entry) => (entry.verified?.data.record as { name?: string })?.name === 'Rolled back')).toBe(false);
    const outbox = await backend.running.db.asOwner((tx) => tx.query(`SELECT 1 FROM "authstrap_outbox" WHERE "payload"->'event'->'data'->'record'->>'name' = 'Rolled back'`));
    expect(outbox.rows).toEqual([]);
  });

  it('does not follow a redirect, even to an address it may reach', async () => {
    const elsewhere = await startReceiver();
    try {
      const endpoint = await addEndpoint(receiver.url);
      receiver.state.fallback = { redirect: elsewhere.url };
      await createProject('Redirected');
      await expect.poll(async () => (await deliveriesOf(endpoint.id))[0]?.status, { timeout: 15_000 }).toBe('failed');
      expect((await deliveriesOf(endpoint.id))[0]!.lastError).toMatch(/redirect/);
      expect(elsewhere.received).toEqual([]);
    } finally {
      await elsewhere.close();
    }
  });

  it('rotates a secret: both sign during the grace period (each verifies with the standardwebhooks package), then only the new one', async () => {
    const endpoint = await addEndpoint(receiver.url);
    const oldSecret = endpoint.secret;
    const verifiesWith = (secret: string, entry: { body: string; headers: Record<string, string> }) => {
      try {
        new Webhook(secret).verify(entry.body, entry.headers);
        return true;
      } catch {
        return false;
      }
    };
    const deliveredFor = async (name: string) => {
      await createProject(name);
      await expect.poll(() => receiver.received.find((entry) => entry.body.includes(`"name":"${name}"`)), { timeout: 10_000 }).toBeDefined();
      return receiver.received.find((entry) => entry.body.includes(`"name":"${name}"`))!;
    };

    // Only owners and admins, only the organization's endpoints.
    const member = await addMember(backend.url, alice, `rotating-member-${kind}@example.com`, 'member');
    expect((await member.api('POST', `/webhook-endpoints/${endpoint.id}/rotate-secret`)).status).toBe(403);
    const other = await signUp(backend.url, `rotating-other-${kind}@example.com`);
    expect((await other.api('POST', `/webhook-endpoints/${endpoint.id}/rotate-secret`)).status).toBe(404);

    const rotated = await alice.api('POST', `/webhook-endpoints/${endpoint.id}/rotate-secret`);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const newSecret = rotated.body.data.secret as string;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    expect(new Date(rotated.body.data.previousSecretExpiresAt).getTime() - Date.now()).toBeGreaterThan(23 * 60 * 60 * 1000);

    const during = await deliveredFor('Rotating');
    expect(during.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verifiesWith(newSecret, during)).toBe(true);
    expect(verifiesWith(oldSecret, during)).toBe(true);
    expect((await verifyWebhook(oldSecret, during.headers, during.body)).webhookId).toBe(during.headers['webhook-id']);

    // A grace period that ends: the old secret stops signing, and is not kept.
    const short = await alice.api('POST', `/webhook-endpoints/${endpoint.id}/rotate-secret`, { body: { graceSeconds: 1 } });
    expect(short.status).toBe(200);
    const newest = short.body.data.secret as string;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const after = await deliveredFor('Rotated');
    expect(after.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verifiesWith(newest, after)).toBe(true);
    expect(verifiesWith(newSecret, after)).toBe(false);
    expect(verifiesWith(oldSecret, after)).toBe(false);
    const stored = await backend.running.db.asOwner((tx) => tx.query(`SELECT "previousSecret" FROM "authstrap_webhook_endpoint" WHERE "id" = $1`, [endpoint.id]));
    expect(stored.rows).toEqual([{ previousSecret: null }]);

    // Recorded, never with a secret.
    const events = (await alice.api('GET', `/audit-events?type=webhook_endpoint.updated&entityId=${endpoint.id}`)).body.data as { data: { changedFields: string[] } }[];
    expect(events.map((event) => event.data.changedFields)).toEqual([['secret'], ['secret']]);
    for (const secret of [oldSecret, newSecret, newest]) expect(JSON.stringify(events)).not.toContain(secret.slice(6));
    expect((await alice.api('POST', `/webhook-endpoints/${endpoint.id}/rotate-secret`, { body: { graceSeconds: -1 } })).status).toBe(422);
  });

  it('stores secrets sealed (AES-256-GCM); a secret stored in plain text by an earlier version still signs, and is sealed at its delivery', async () => {
    const endpoint = await addEndpoint(receiver.url);
    const storedSecret = async () =>
      (await backend.running.db.asOwner((tx) => tx.query<{ secret: string }>(`SELECT "secret" FROM "authstrap_webhook_endpoint" WHERE "id" = $1`, [endpoint.id]))).rows[0]!.secret;
    const sealed = await storedSecret();
    expect(sealed).toMatch(/^sealed:v1:/);
    expect(sealed).not.toContain(endpoint.secret.slice(6));

    // As a project made before sealing has it.
    await backend.running.db.asOwner((tx) => tx.query(`UPDATE "authstrap_webhook_endpoint" SET "secret" = $2 WHERE "id" = $1`, [endpoint.id, endpoint.secret]));
    receiver.state.secret = endpoint.secret;
    const projectId = await createProject('Sealed later');
    await expect.poll(() => receiver.received.filter((entry) => entry.verified?.data.entityId === projectId).length, { timeout: 10_000 }).toBe(1);
    const resealed = await storedSecret();
    expect(resealed).toMatch(/^sealed:v1:/);
    expect(resealed).not.toBe(sealed);

    // At startup, where the backend's user owns the tables, every plain one is sealed at once.
    await backend.running.db.asOwner((tx) => tx.query(`UPDATE "authstrap_webhook_endpoint" SET "secret" = $2 WHERE "id" = $1`, [endpoint.id, endpoint.secret]));
    await sealStoredWebhookSecrets(backend.running.db, webhookSecretSeal(authSecret), pino({ level: 'silent' }));
    expect(webhookSecretSeal(authSecret).open(await storedSecret())).toBe(endpoint.secret);
    expect(() => webhookSecretSeal('another-auth-secret-0123456789abcdef').open(sealed)).toThrow(/another AUTH_SECRET/);
  });

  it('lets owners and admins manage endpoints, and no one else', async () => {
    const mia = await addMember(backend.url, alice, `mia-${kind}@example.com`, 'member');
    const adam = await addMember(backend.url, alice, `adam-${kind}@example.com`, 'admin');
    const bob = await signUp(backend.url, `bob-${kind}@example.com`);
    const endpoint = await addEndpoint(receiver.url);
    expect((await mia.api('GET', '/webhook-endpoints')).status).toBe(403);
    expect((await mia.api('POST', '/webhook-endpoints', { body: { url: receiver.url } })).status).toBe(403);
    expect((await adam.api('GET', '/webhook-endpoints')).body.data.map((e: { id: string }) => e.id)).toContain(endpoint.id);
    // Another organization's endpoint does not exist for Bob.
    expect((await bob.api('GET', '/webhook-endpoints')).body.data).toEqual([]);
    expect((await bob.api('PATCH', `/webhook-endpoints/${endpoint.id}`, { body: { enabled: false } })).status).toBe(404);
    expect((await bob.api('GET', `/webhook-endpoints/${endpoint.id}/deliveries`)).status).toBe(404);
    expect((await bob.api('DELETE', `/webhook-endpoints/${endpoint.id}`)).status).toBe(404);
  });
});

describe.each(databaseKinds)('webhook addresses on the %s database', (kind) => {
  let backend: TestBackend;
  let alice: SignedUp;
  let receiver: Receiver;

  beforeAll(async () => {
    // As in production: https only, no private address.
    backend = await startBackend(kind, { ...fastWebhooks, WEBHOOKS_ALLOW_PRIVATE: 'false' });
    alice = await signUp(backend.url, 'alice@example.com');
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await backend?.stop();
  });

  it('refuses loopback, private, link-local and metadata addresses, a name that resolves to one, and http://', async () => {
    for (const url of [
      'https://127.0.0.1/hooks',
      'https://10.1.2.3/hooks',
      'https://172.16.0.1/hooks',
      'https://192.168.1.1/hooks',
      'https://169.254.169.254/latest/meta-data/',
      'https://100.64.0.1/hooks',
      'https://0.0.0.0/hooks',
      'https://[::1]/hooks',
      'https://[fe80::1]/hooks',
      'https://[fd00::1]/hooks',
      'https://[::ffff:127.0.0.1]/hooks',
      'https://localhost/hooks',
      `http://example.com/hooks`,
    ]) {
      const response = await alice.api('POST', '/webhook-endpoints', { body: { url } });
      expect(response.status, url).toBe(422);
      expect(response.body.error.details.url, url).toBeTruthy();
    }
  });

  it('checks the address again on every attempt: an endpoint that came to point at loopback gets nothing', async () => {
    // Written past the API's check, as an endpoint whose name later resolved to a private address would be.
    const { rows } = await backend.running.db.asOwner((tx) =>
      tx.query<{ id: string }>(`INSERT INTO "authstrap_webhook_endpoint" ("organizationId", "url", "secret") VALUES ($1, $2, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw') RETURNING "id"`, [
        alice.organizationId,
        `https://localhost:${receiver.port}/hooks`,
      ]),
    );
    await alice.api('POST', '/Projects', { body: { name: 'Not for loopback' } });
    const deliveries = async () => (await alice.api('GET', `/webhook-endpoints/${rows[0]!.id}/deliveries`)).body.data as Delivery[];
    await expect.poll(async () => (await deliveries())[0]?.status, { timeout: 10_000 }).toBe('failed');
    expect((await deliveries())[0]!.lastError).toMatch(/refused: localhost resolves to (127\.0\.0\.1|::1)/);
    expect(receiver.received).toEqual([]);
  });
});

describe.runIf(postgresAdminUrl)('webhooks with two instances on one PostgreSQL database', () => {
  it('delivers every event when one instance is killed mid-delivery; a repeat carries the same webhook-id', async () => {
    const database = await createThrowawayDatabase();
    const receiver = await startReceiver();
    const mailbox = await startMailbox();
    // Claims run out 2 x 1.5 s + 5 s after they were taken (the longest channel timeout counts).
    const env = { DATABASE_URL: database.url, SMTP_URL: mailbox.url, SMTP_TIMEOUT_MS: '1000', ...fastWebhooks, WEBHOOK_TIMEOUT_MS: '1500', WEBHOOK_MAX_ATTEMPTS: '20', RATE_LIMIT_AUTH_MAX: '100000', RATE_LIMIT_DATA_MAX: '100000', SERVICE_API_KEY: 'x'.repeat(40) };
    const first = spawnBackend(env);
    let second: ReturnType<typeof spawnBackend> | undefined;
    try {
      const firstUrl = await first.listening;
      const owner = await signUp(firstUrl, 'owner@example.com');
      const created = await owner.api('POST', '/webhook-endpoints', { body: { url: receiver.url, eventTypes: ['project.created'] } });
      expect(created.status).toBe(201);
      receiver.state.secret = created.body.data.secret;

      // The first instance takes deliveries, and the receiver holds its answers; then it is killed.
      receiver.state.fallback = 'slow';
      const names = Array.from({ length: 10 }, (_, index) => `Killed ${index}`);
      for (const name of names) expect((await owner.api('POST', '/Projects', { body: { name } })).status).toBe(201);
      await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBeGreaterThan(0);
      first.child.kill('SIGKILL');
      await first.exited;
      receiver.state.fallback = 'ok';

      // The second instance delivers every one, after the dead one's claims run out.
      second = spawnBackend(env);
      const secondUrl = await second.listening;
      const more = Array.from({ length: 10 }, (_, index) => `After ${index}`);
      const again = apiClient(secondUrl, { token: owner.token, organizationId: owner.organizationId });
      for (const name of more) expect((await again('POST', '/Projects', { body: { name } })).status).toBe(201);
      const answeredOk = () => new Set(receiver.received.filter((entry) => entry.verified && entry.answer === 'ok').map((entry) => (entry.verified!.data.record as { name: string }).name));
      await expect.poll(() => [...answeredOk()].sort(), { timeout: 60_000 }).toEqual([...names, ...more].sort());

      // Repeats (a slow answer the dead instance never saw) share their webhook-id: one id per project.
      const idsByName = new Map<string, Set<string>>();
      for (const entry of receiver.received.filter((candidate) => candidate.verified)) {
        const name = (entry.verified!.data.record as { name: string }).name;
        idsByName.set(name, (idsByName.get(name) ?? new Set()).add(entry.headers['webhook-id']!));
      }
      expect([...idsByName.values()].map((ids) => ids.size)).toEqual([...idsByName.values()].map(() => 1));
      // Each one recorded as sent (the last answers' records may follow them by a moment).
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        const statuses = async () => (await client.query(`SELECT "status", count(*)::int AS "count" FROM "authstrap_outbox" WHERE "channel" = 'webhook' GROUP BY "status"`)).rows;
        await expect.poll(statuses, { timeout: 10_000 }).toEqual([{ status: 'sent', count: 20 }]);
      } finally {
        await client.end();
      }
    } finally {
      first.child.kill('SIGKILL');
      second?.child.kill('SIGTERM');
      await second?.exited;
      await receiver.close();
      await mailbox.close();
      await database.drop();
    }
  }, 120_000);
});

// Through PgBouncer, LISTEN goes to DATABASE_DIRECT_URL: a pooler cannot keep a session's LISTEN.
// The embedded database's NOTIFY is heard in the process itself.
describe.each(pooledDatabaseKinds)('delivery wake-ups on the %s database', (kind) => {
  const pollMs = 5000;
  let backend: TestBackend;
  let alice: SignedUp;
  let receiver: Receiver;
  /** PostgreSQL's own view of the backend's LISTEN connection (its pid), on the test's database. */
  const listenerPids = async () => {
    const { rows } = await backend.running.db.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE application_name = 'authstrap outbox listener' AND datname = current_database()`,
    );
    return rows.map((row) => row.pid);
  };
  /** Milliseconds from a committed POST /Projects to its delivery at the receiver. */
  const commitToDelivery = async (name: string) => {
    const started = performance.now();
    const response = await alice.api('POST', '/Projects', { body: { name } });
    expect(response.status).toBe(201);
    await expect.poll(() => receiver.received.some((entry) => (entry.verified?.data.record as { name?: string } | undefined)?.name === name), { timeout: 2 * pollMs, interval: 10 }).toBe(true);
    return performance.now() - started;
  };

  beforeAll(async () => {
    backend = await startBackend(kind, { ...fastWebhooks, OUTBOX_POLL_MS: String(pollMs) });
    alice = await signUp(backend.url, 'alice@example.com');
    receiver = await startReceiver();
    const created = await alice.api('POST', '/webhook-endpoints', { body: { url: receiver.url, eventTypes: ['project.created'] } });
    expect(created.status).toBe(201);
    receiver.state.secret = created.body.data.secret;
  });
  afterAll(async () => {
    await receiver?.close();
    await backend?.stop();
  });

  it(`delivers a trigger-recorded event at its commit, not at the next poll (OUTBOX_POLL_MS=${pollMs})`, async () => {
    if (kind !== 'embedded') await expect.poll(listenerPids).toHaveLength(1);
    const latencies: number[] = [];
    for (const name of ['Woken 1', 'Woken 2', 'Woken 3']) latencies.push(await commitToDelivery(name));
    expect(Math.max(...latencies), latencies.join(', ')).toBeLessThan(pollMs / 5);
  });

  // The embedded database has no connection to drop.
  if (kind === 'embedded') return;
  it('listens again after its connection is dropped, and the process keeps serving', async () => {
    const [pid] = await listenerPids();
    const admin = new pg.Client({ connectionString: postgresAdminUrl });
    await admin.connect();
    try {
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    } finally {
      await admin.end();
    }
    // A new connection, with a new pid, within the first backoff steps.
    await expect.poll(async () => (await listenerPids()).filter((other) => other !== pid).length, { timeout: 5000 }).toBe(1);
    expect((await apiClient(backend.url)('GET', '/health')).status).toBe(200);
    expect(await commitToDelivery('Woken after a reconnect')).toBeLessThan(pollMs / 5);
  });
});
