import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** How the receiver answers one request: 200, an error status, never in time, a dropped connection, a redirect. */
export type Answer = 'ok' | 500 | 'slow' | 'drop' | { redirect: string };

export interface Received {
  headers: Record<string, string>;
  body: string;
  /** The body, when it verified with the endpoint's secret (the standardwebhooks package); undefined otherwise. */
  verified?: { id: string; type: string; timestamp: string; organizationId: string; data: Record<string, unknown> };
  answer: Answer;
}

/**
 * A real webhook receiver on loopback: every request is kept, verified with the `standardwebhooks`
 * package once `secret` is known, and answered as `answers` says (in turn; then `fallback`).
 */
export async function startReceiver(port = 0) {
  const received: Received[] = [];
  const state = { secret: undefined as string | undefined, answers: [] as Answer[], fallback: 'ok' as Answer };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, String(value)]));
      let verified: Received['verified'];
      try {
        if (state.secret) verified = new Webhook(state.secret).verify(body, headers) as Received['verified'];
      } catch {
        verified = undefined;
      }
      const answer = state.answers.shift() ?? state.fallback;
      received.push({ headers, body, verified, answer });
      if (answer === 'ok') res.writeHead(200).end('ok');
      else if (answer === 'slow') setTimeout(() => res.writeHead(200).end('too late'), 3000).unref();
      else if (answer === 'drop') req.socket.destroy();
      else if (typeof answer === 'number') res.writeHead(answer).end('receiver error');
      else res.writeHead(302, { location: answer.redirect }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: listening } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${listening}/hooks`,
    port: listening,
    received,
    state,
    /** The deliveries that verified, by webhook-id: each id once however often it came. */
    verifiedIds: () => received.filter((entry) => entry.verified).map((entry) => entry.headers['webhook-id']!),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
