import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { Config, MailSettings } from '../config.js';
import type { Queryable } from '../db/database.js';
import type { Message } from '../extensions/mail/messages.js';
import { afterHeldCommit } from '../idempotency/held-transaction.js';
import { PermanentDeliveryError, type Channel, type Outbox, type OutboxMessage } from '../outbox/outbox.js';

/**
 * Mail: written to the outbox with the change that causes it (createMailer), delivered after
 * commit (mailChannel) over SMTP (SMTP_URL) or, without an SMTP server (development, the demo),
 * to a folder as .eml files, with one log line that shows the link.
 */

/** One message, as the outbox keeps it until it is sent. */
export interface MailPayload {
  /** What the message is for (`verify-email`, `reset-password`, ...), for logs and the sent record. */
  kind: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The link the message carries: shown in the log in development, when mail goes to the folder. */
  link?: string;
  /** The user whose action sent it (an inviter): per-sender limits count these. */
  sentBy?: string;
}

export const mailChannelName = 'mail';

export type Mailer = ReturnType<typeof createMailer>;

export function createMailer({ outbox, settings }: { outbox: Outbox; settings: MailSettings }) {
  return {
    /** A link to a page of the frontend (APP_URL): `/reset-password?token=...`. */
    link: (page: string, query: Record<string, string>) => `${settings.appUrl}/${page}?${new URLSearchParams(query)}`,
    /** Puts a message in the outbox, in the caller's transaction: it leaves only if that commits. */
    async send(tx: Queryable, mail: { kind: string; to: string; message: Message; link?: string; sentBy?: string }): Promise<void> {
      const payload: MailPayload = { kind: mail.kind, to: mail.to, ...mail.message, link: mail.link, sentBy: mail.sentBy };
      await outbox.enqueue(tx, mailChannelName, payload);
    },
    /** Puts a message for another channel in the outbox, in the caller's transaction (account-flows.ts's mail requests). */
    enqueue: (tx: Queryable, channel: string, payload: unknown) => outbox.enqueue(tx, channel, payload),
    /**
     * Call after the transaction committed: the worker sends now instead of at its next look (once
     * the request's keyed write is committed, when it has one: idempotency/held-transaction.ts).
     */
    sendCommitted: () => afterHeldCommit(() => outbox.wake()),
  };
}

/**
 * SMTP_URL with transport options added to its query, unless it sets them itself: nodemailer reads
 * a URL's options from its query only, and ignores options passed beside a `url`.
 */
function withOptions(smtpUrl: string, options: Record<string, string | number | boolean>): string {
  const url = new URL(smtpUrl);
  for (const [name, value] of Object.entries(options)) if (!url.searchParams.has(name)) url.searchParams.set(name, String(value));
  return url.toString();
}

/** `ada@example.com` -> `a***@example.com`: enough to tell messages apart in a log. */
const maskAddress = (address: string) => address.replace(/^(.)[^@]*/, '$1***');

export function mailChannel(settings: MailSettings, options: Pick<Config, 'projectDir' | 'nodeEnv'> & { logger: Logger }): Channel<MailPayload> {
  const { logger } = options;
  const domain = settings.from.match(/@([^>\s]+)/)?.[1] ?? 'localhost';
  const envelope = (payload: MailPayload, message: OutboxMessage) => ({
    from: settings.from,
    to: payload.to,
    subject: payload.subject,
    text: payload.text,
    html: payload.html,
    // The same on every attempt: a receiver that got a message twice (a worker died after the
    // server took it) can tell.
    messageId: `<${message.id}@${domain}>`,
  });

  // A few connections kept open and reused: a new connection per message costs its TCP and TLS
  // handshakes and the server's greeting (often delayed on purpose). Every wait on the server is
  // bounded; a broken or closed connection is replaced by the next message.
  const wait = settings.timeoutMs;
  const transport = settings.smtpUrl
    ? nodemailer.createTransport(withOptions(settings.smtpUrl, { pool: true, maxConnections: 5, connectionTimeout: wait, greetingTimeout: wait, socketTimeout: wait, dnsTimeout: wait }))
    : undefined;

  const deliverOverSmtp = async (payload: MailPayload, message: OutboxMessage) => {
    let deadline: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        transport!.sendMail(envelope(payload, message)),
        new Promise((_, reject) => {
          deadline = setTimeout(() => reject(new Error(`the SMTP server did not take the message within ${wait} ms`)), wait);
        }),
      ]);
    } catch (error) {
      // A 5xx answer is the server's final word (no such mailbox, refused sender): retrying cannot help.
      const code = (error as { responseCode?: number }).responseCode;
      if (code !== undefined && code >= 500 && code < 600) throw new PermanentDeliveryError(`the SMTP server refused the message: ${(error as Error).message}`);
      throw error;
    } finally {
      clearTimeout(deadline);
    }
  };

  const folder = path.resolve(options.projectDir, settings.folder);
  const fileTransport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  const writeToFolder = async (payload: MailPayload, message: OutboxMessage) => {
    const { message: raw } = await fileTransport.sendMail(envelope(payload, message));
    await fs.mkdir(folder, { recursive: true });
    const file = path.join(folder, `${new Date().toISOString().replace(/[:.]/g, '-')}-${payload.kind}-${message.id}.eml`);
    await fs.writeFile(file, raw as Buffer);
    const where = path.relative(options.projectDir, file);
    // The link is a secret (it signs someone in, resets a password): only development logs it.
    const link = options.nodeEnv !== 'production' && payload.link ? `; link: ${payload.link}` : '';
    logger.info({ mail: payload.kind, to: maskAddress(payload.to), file: where }, `mail (${payload.kind}) to ${maskAddress(payload.to)} written to ${where}${link}`);
  };

  return {
    name: mailChannelName,
    timeoutMs: settings.timeoutMs,
    deliver: transport ? deliverOverSmtp : writeToFolder,
    close: () => transport?.close(),
    // Once sent, the record keeps who, what and when, not the link.
    redact: (payload) => ({ kind: payload.kind, to: payload.to, subject: payload.subject, sentBy: payload.sentBy }),
  };
}
