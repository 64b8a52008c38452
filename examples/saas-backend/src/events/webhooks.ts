import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import type { WebhookSettings } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import { withScope } from '../db/scope.js';
import { messages } from '../extensions/mail/messages.js';
import { pinnedLookup } from '../http/pinned-fetch.js';
import { mailChannelName, type MailPayload } from '../mail/mail.js';
import { enqueue, PermanentDeliveryError, type Channel, type OutboxMessage } from '../outbox/outbox.js';
import { recordEvent, type StoredEvent } from './events.js';
import { parseWebhookUrl, RefusedWebhookAddress, resolveWebhookAddress } from './webhook-address.js';
import { webhookSecretSeal } from './webhook-secrets.js';

/**
 * Webhooks: an organization's events, POSTed to the endpoints its owners and admins registered,
 * signed as the Standard Webhooks specification says (https://www.standardwebhooks.com).
 *
 * - `authstrap.record_event` puts one outbox message per subscribed endpoint in the transaction
 *   of the event (event-sql in the generator), so a delivery exists exactly when its event does.
 * - The outbox's workers deliver them, in every instance, at least once (src/outbox/outbox.ts):
 *   retried with exponential backoff and jitter (WEBHOOK_RETRY_MS doubling, at most an hour
 *   apart) up to WEBHOOK_MAX_ATTEMPTS, then marked failed. An endpoint whose deliveries failed for
 *   good WEBHOOK_DISABLE_AFTER times in a row is disabled, and its organization's owners mailed.
 * - `webhook-id` is the delivery's id: the same on every attempt and on a redelivery, so a
 *   receiver drops what it has seen. Deliveries are not ordered: the body's `timestamp` is.
 * - Every attempt resolves and checks the address again (webhook-address.ts).
 */

export const webhookChannelName = 'webhook';

/** What the outbox keeps for one delivery (written by `authstrap.record_event`). */
export interface WebhookPayload {
  endpointId: string;
  organizationId: string;
  /** The event as the event log holds it (its row as JSON: the time as text). */
  event: Omit<StoredEvent, 'createdAt'> & { createdAt: string };
}

/** A new endpoint's signing secret: `whsec_` and 24 random bytes in base64, as Standard Webhooks has it. */
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/**
 * The `webhook-signature` of a body: `v1,` and the base64 HMAC-SHA256, keyed with the secret's
 * bytes, of `<webhook-id>.<webhook-timestamp>.<body>`; one per secret, separated by spaces, as
 * Standard Webhooks allows while a rotated secret is still in its grace period. A receiver
 * accepts the delivery when any of them matches a secret it holds.
 */
export function signWebhook(secrets: string | string[], id: string, timestamp: number, body: string): string {
  return [secrets]
    .flat()
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}

/** The JSON body an endpoint receives: the event without the request's address and user agent. */
export function webhookBody(event: WebhookPayload['event']): string {
  const { id, type, organizationId, userId, actorType, actorId, entity, entityId, data, createdAt } = event;
  return JSON.stringify({
    id,
    type,
    timestamp: new Date(createdAt).toISOString(),
    organizationId,
    data: { actor: { type: actorType, id: actorId }, userId, entity, entityId, ...data },
  });
}

interface Endpoint {
  url: string;
  secret: string;
  /** The secret before the last rotation, while it still signs; null otherwise. */
  previousSecret: string | null;
  /** A previous secret past its grace period is still stored: to be dropped. */
  previousSecretExpired: boolean;
  enabled: boolean;
  failureCount: number;
}

/** How much of an answer is read (for the delivery log's error); the rest is dropped. */
const answerKept = 512;

/**
 * POSTs `body` to `url`, connecting to `address` (checked) and never following a redirect.
 * Resolves on a 2xx answer; throws otherwise.
 */
function post(url: URL, address: { address: string; family: 4 | 6 }, headers: Record<string, string>, body: string, timeoutMs: number, agents: Agents): Promise<void> {
  // The name is resolved once, by resolveWebhookAddress: the connection uses that answer.
  const lookup = pinnedLookup(address);
  const [client, agent] = url.protocol === 'https:' ? [https, agents.https] : [http, agents.http];
  return new Promise((resolve, reject) => {
    const request = client.request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'authstrap-webhooks/1', ...headers }, lookup, agent },
      (response) => {
        let answer = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (answer.length < answerKept) answer += chunk.slice(0, answerKept - answer.length);
        });
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve();
          else if (status >= 300 && status < 400) reject(new Error(`answered ${status}, a redirect (to ${response.headers.location ?? 'nowhere'}); webhooks do not follow redirects`));
          else reject(new Error(`answered ${status}${answer ? `: ${answer.replace(/\s+/g, ' ').trim()}` : ''}`));
        });
        response.on('error', reject);
      },
    );
    request.setTimeout(timeoutMs, () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * Connections kept open between deliveries to the same host and port (no TCP and TLS handshake
 * per delivery). A connection is made only after its address was checked; a kept one goes to that
 * same checked address, and every attempt still resolves and checks the name first.
 */
interface Agents {
  http: http.Agent;
  https: https.Agent;
}

export function webhookChannel(settings: WebhookSettings, { db, logger }: { db: Database; logger: Logger }): Channel<WebhookPayload> {
  const agents: Agents = { http: new http.Agent({ keepAlive: true, maxSockets: 10 }), https: new https.Agent({ keepAlive: true, maxSockets: 10 }) };
  const seal = webhookSecretSeal(settings.authSecret);
  /** The endpoint, read in its organization's scope (row-level security): null when it is gone. */
  const endpointOf = async (payload: WebhookPayload) => {
    const scoped = withScope(db, { organizationId: payload.organizationId, userId: '', role: '' });
    const { rows } = await scoped.query<Endpoint>(
      `SELECT "url", "secret", "enabled", "failureCount",
              CASE WHEN "previousSecretExpiresAt" > now() THEN "previousSecret" END AS "previousSecret",
              "previousSecret" IS NOT NULL AND "previousSecretExpiresAt" <= now() AS "previousSecretExpired"
         FROM "authstrap_webhook_endpoint" WHERE "id" = $1`,
      [payload.endpointId],
    );
    return { scoped, endpoint: rows[0] ?? null };
  };

  return {
    name: webhookChannelName,
    timeoutMs: settings.timeoutMs,
    retry: { retryMs: settings.retryMs, maxAttempts: settings.maxAttempts },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },

    async deliver(payload: WebhookPayload, message: OutboxMessage) {
      const { scoped, endpoint } = await endpointOf(payload);
      if (!endpoint) throw new PermanentDeliveryError('the endpoint was removed');
      if (!endpoint.enabled) throw new PermanentDeliveryError('the endpoint is disabled');
      let target: { url: URL; address: { address: string; family: 4 | 6 } };
      try {
        const url = parseWebhookUrl(endpoint.url, settings.allowPrivate);
        target = { url, address: await resolveWebhookAddress(url, settings.allowPrivate) };
      } catch (error) {
        // A refused address stays refused; a name that does not resolve now may later.
        if (error instanceof RefusedWebhookAddress) throw new PermanentDeliveryError(`refused: ${error.message}`);
        throw error;
      }
      // Its grace period over, a rotated-out secret is not kept (the first delivery after drops it).
      if (endpoint.previousSecretExpired) {
        await scoped.query(`UPDATE "authstrap_webhook_endpoint" SET "previousSecret" = NULL, "previousSecretExpiresAt" = NULL WHERE "id" = $1 AND "previousSecretExpiresAt" <= now()`, [payload.endpointId]);
      }
      // A secret stored before sealing existed is sealed now (webhook-secrets.ts).
      if (seal.isPlain(endpoint.secret) || (endpoint.previousSecret !== null && seal.isPlain(endpoint.previousSecret))) {
        await scoped.query(`UPDATE "authstrap_webhook_endpoint" SET "secret" = $2, "previousSecret" = $3 WHERE "id" = $1 AND "secret" = $4`, [
          payload.endpointId,
          seal.isPlain(endpoint.secret) ? seal.seal(endpoint.secret) : endpoint.secret,
          endpoint.previousSecret !== null && seal.isPlain(endpoint.previousSecret) ? seal.seal(endpoint.previousSecret) : endpoint.previousSecret,
          endpoint.secret,
        ]);
      }
      let secrets: string[];
      try {
        secrets = [endpoint.secret, ...(endpoint.previousSecret ? [endpoint.previousSecret] : [])].map((stored) => seal.open(stored));
      } catch (error) {
        throw new PermanentDeliveryError((error as Error).message);
      }
      const body = webhookBody(payload.event);
      const timestamp = Math.floor(Date.now() / 1000);
      await post(
        target.url,
        target.address,
        { 'webhook-id': message.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signWebhook(secrets, message.id, timestamp, body) },
        body,
        settings.timeoutMs,
        agents,
      );
      if (endpoint.failureCount > 0) await scoped.query(`UPDATE "authstrap_webhook_endpoint" SET "failureCount" = 0 WHERE "id" = $1`, [payload.endpointId]);
    },

    /** One more delivery failed for good: past WEBHOOK_DISABLE_AFTER in a row, the endpoint is disabled and its owners told. */
    async failed(payload: WebhookPayload) {
      const scoped = withScope(db, { organizationId: payload.organizationId, userId: '', role: '' });
      const disabled = await scoped.transaction(async (tx) => {
        const { rows } = await tx.query<{ url: string; enabled: boolean }>(
          `UPDATE "authstrap_webhook_endpoint"
              SET "failureCount" = "failureCount" + 1, "enabled" = "failureCount" + 1 < $2, "updatedAt" = now(),
                  "disabledReason" = CASE WHEN "failureCount" + 1 < $2 THEN NULL ELSE $3 END
            WHERE "id" = $1 AND "enabled" RETURNING "url", "enabled"`,
          [payload.endpointId, settings.disableAfter, `${settings.disableAfter} deliveries in a row failed`],
        );
        const endpoint = rows[0];
        if (!endpoint || endpoint.enabled) return undefined;
        await recordEvent(tx, { type: 'webhook_endpoint.updated', organizationId: payload.organizationId, entity: 'webhook_endpoint', entityId: payload.endpointId, data: { changedFields: ['enabled'], enabled: false, reason: 'failures' } }, { actorType: 'system' });
        await mailOwners(tx, payload.organizationId, endpoint.url, settings.disableAfter);
        return endpoint;
      });
      if (disabled) logger.warn({ endpointId: payload.endpointId, organizationId: payload.organizationId }, 'webhook endpoint disabled after repeated failures; its owners were mailed');
    },
  };
}

/** Tells the organization's owners that an endpoint was disabled (through the outbox, in `tx`). */
async function mailOwners(tx: Queryable, organizationId: string, url: string, failures: number) {
  const { rows } = await tx.query<{ email: string; name: string; organizationName: string }>(
    `SELECT u."email", u."name", o."name" AS "organizationName" FROM "member" m
       JOIN "User" u ON u."id" = m."userId" JOIN "Organization" o ON o."id" = m."organizationId"
      WHERE m."organizationId" = $1 AND m."role" = 'owner'`,
    [organizationId],
  );
  for (const owner of rows) {
    const message = messages.webhookEndpointDisabled({ name: owner.name, organizationName: owner.organizationName, url, failures });
    const mail: MailPayload = { kind: 'webhook-disabled', to: owner.email, ...message };
    await enqueue(tx, mailChannelName, mail);
  }
}
