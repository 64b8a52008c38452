import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/**
 * A real SMTP server on loopback (the `smtp-server` package) that keeps what it receives, parsed
 * (mailparser), for the tests to read: the backend's mail goes through nodemailer, over TCP, to
 * this. `refuseWith` makes it answer every message with an SMTP error instead, and `holdData`
 * makes it take a message's data but never answer (a stalled server).
 */
export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  /** The first http(s) link of the text part. */
  link?: URL;
}

export interface Mailbox {
  /** `smtp://127.0.0.1:<port>`, for SMTP_URL. */
  url: string;
  port: number;
  received: ReceivedMail[];
  /** An SMTP reply code (451: try later; 550: no such mailbox) for every message, or undefined to accept. */
  refuseWith?: number;
  /** Messages whose data arrives are left unanswered, so the sender waits. */
  holdData: boolean;
  /** How many connections senders opened. */
  connections: number;
  /** The first message to `to` (and matching `subject`, when given) that arrives, in `timeoutMs`. */
  next(to: string, subject?: RegExp, timeoutMs?: number): Promise<ReceivedMail>;
  /** Every message to `to` so far. */
  to(to: string): ReceivedMail[];
  close(): Promise<void>;
}

export async function startMailbox(): Promise<Mailbox> {
  const waiting = new Set<{ matches(mail: ReceivedMail): boolean; resolve(mail: ReceivedMail): void }>();
  const mailbox: Mailbox = {
    url: '',
    port: 0,
    received: [],
    holdData: false,
    connections: 0,
    async next(to, subject, timeoutMs = 10_000) {
      const matches = (mail: ReceivedMail) => mail.to === to.toLowerCase() && (!subject || subject.test(mail.subject));
      const already = mailbox.received.find(matches);
      if (already) return already;
      return new Promise((resolve, reject) => {
        const waiter = { matches, resolve: (mail: ReceivedMail) => (clearTimeout(timer), waiting.delete(waiter), resolve(mail)) };
        const timer = setTimeout(() => {
          waiting.delete(waiter);
          reject(new Error(`no mail to ${to}${subject ? ` matching ${subject}` : ''} within ${timeoutMs} ms (received: ${mailbox.received.map((mail) => `${mail.to}: ${mail.subject}`).join('; ') || 'nothing'})`));
        }, timeoutMs);
        waiting.add(waiter);
      });
    },
    to: (to) => mailbox.received.filter((mail) => mail.to === to.toLowerCase()),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };

  const server = new SMTPServer({
    // Closing does not wait long for a sender's connection to end.
    closeTimeout: 500,
    // No reverse DNS of 127.0.0.1 before the greeting: without a network it waits for a timeout.
    disableReverseLookup: true,
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onConnect(_session, callback) {
      mailbox.connections++;
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', async () => {
        if (mailbox.holdData) return;
        if (mailbox.refuseWith) {
          callback(Object.assign(new Error(`refused by the test mailbox (${mailbox.refuseWith})`), { responseCode: mailbox.refuseWith }));
          return;
        }
        const parsed = await simpleParser(Buffer.concat(chunks));
        const text = parsed.text ?? '';
        const link = text.match(/https?:\/\/\S+/)?.[0];
        for (const recipient of session.envelope.rcptTo) {
          const mail: ReceivedMail = {
            to: recipient.address.toLowerCase(),
            subject: parsed.subject ?? '',
            text,
            html: typeof parsed.html === 'string' ? parsed.html : '',
            messageId: parsed.messageId ?? '',
            link: link ? new URL(link) : undefined,
          };
          mailbox.received.push(mail);
          for (const waiter of waiting) if (waiter.matches(mail)) waiter.resolve(mail);
        }
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  mailbox.port = (server.server.address() as AddressInfo).port;
  mailbox.url = `smtp://127.0.0.1:${mailbox.port}`;
  return mailbox;
}

/** The `token` query parameter of a message's link. */
export function tokenOf(mail: ReceivedMail): string {
  const token = mail.link?.searchParams.get('token');
  if (!token) throw new Error(`no link with a token in the mail "${mail.subject}" to ${mail.to}:\n${mail.text}`);
  return token;
}
