import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';

/**
 * Webhook signing secrets at rest. The backend must read a secret to sign with it, so it cannot
 * keep only a hash; it keeps it sealed with AES-256-GCM under a key derived (HKDF-SHA256) from
 * AUTH_SECRET, so a copy of the database (a backup, a dump, a read replica) holds no usable secret.
 * Stored as `sealed:v1:<iv>:<ciphertext>:<tag>` (base64url).
 *
 * A secret stored before sealing existed reads as it is, and is sealed: at startup where the
 * backend's database user owns the tables (sealStoredWebhookSecrets), and otherwise at the
 * endpoint's next delivery (webhooks.ts). Without AUTH_SECRET (development) secrets stay plain.
 * Changing AUTH_SECRET makes the sealed secrets unreadable: rotate each endpoint's secret then.
 */

const prefix = 'sealed:v1:';

export interface WebhookSecretSeal {
  /** Whether secrets are sealed (AUTH_SECRET is set). */
  readonly sealing: boolean;
  /** What to store for `secret`. */
  seal(secret: string): string;
  /** The secret a stored value holds (a plain one as it is); throws when it was sealed under another key. */
  open(stored: string): string;
  /** Whether a stored value still needs sealing. */
  isPlain(stored: string): boolean;
}

export function webhookSecretSeal(authSecret: string | undefined): WebhookSecretSeal {
  return secretSeal(authSecret, 'webhook signing secrets');
}

/**
 * The same seal for another kind of secret at rest, under a key of its own (`purpose` is HKDF's
 * info): the answers a keyed write keeps (src/idempotency/), which may hold a secret shown once.
 */
export type SecretSeal = WebhookSecretSeal;

export function secretSeal(authSecret: string | undefined, purpose: string): SecretSeal {
  const key = authSecret ? Buffer.from(hkdfSync('sha256', authSecret, 'authstrap', purpose, 32)) : undefined;
  return {
    sealing: key !== undefined,
    seal(secret) {
      if (!key) return secret;
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return `${prefix}${[iv, sealed, cipher.getAuthTag()].map((part) => part.toString('base64url')).join(':')}`;
    },
    open(stored) {
      if (!stored.startsWith(prefix)) return stored;
      if (!key) throw new Error('this webhook secret is sealed, and AUTH_SECRET is not set');
      const [iv, sealed, tag] = stored.slice(prefix.length).split(':').map((part) => Buffer.from(part, 'base64url'));
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv!);
        decipher.setAuthTag(tag!);
        return Buffer.concat([decipher.update(sealed!), decipher.final()]).toString('utf8');
      } catch {
        throw new Error('this webhook secret was sealed under another AUTH_SECRET: rotate the endpoint\'s secret (POST /webhook-endpoints/:id/rotate-secret)');
      }
    },
    isPlain: (stored) => Boolean(key) && !stored.startsWith(prefix),
  };
}

/**
 * Seals the secrets stored before sealing existed, in every organization: only where the backend
 * logs in as the tables' owner (asOwner sees no tenant rows otherwise, and the deliveries seal them).
 */
export async function sealStoredWebhookSecrets(db: Database, seal: WebhookSecretSeal, logger: Logger): Promise<void> {
  if (!seal.sealing) return;
  const sealed = await db.asOwner(async (tx) => {
    const { rows } = await tx.query<{ id: string; secret: string; previousSecret: string | null }>(
      `SELECT "id", "secret", "previousSecret" FROM "authstrap_webhook_endpoint" WHERE "secret" NOT LIKE '${prefix}%' OR "previousSecret" NOT LIKE '${prefix}%'`,
    );
    for (const row of rows) {
      await tx.query(`UPDATE "authstrap_webhook_endpoint" SET "secret" = $2, "previousSecret" = $3 WHERE "id" = $1`, [
        row.id,
        seal.isPlain(row.secret) ? seal.seal(row.secret) : row.secret,
        row.previousSecret !== null && seal.isPlain(row.previousSecret) ? seal.seal(row.previousSecret) : row.previousSecret,
      ]);
    }
    return rows.length;
  });
  if (sealed > 0) logger.info({ sealed }, 'webhook secrets stored in plain text are sealed now');
}
