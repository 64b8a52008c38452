import net from 'node:net';

/**
 * A loopback HTTP/1.1 proxy in front of the backend that can lose answers, as a failover, a
 * restarted load balancer or a reset connection does. For the requests a rule matches (by their
 * request line, `POST /verifications`):
 *
 * - `loseAnswers`: the request goes through whole, the backend does the work and answers, and the
 *   proxy resets the client's connection the moment that answer arrives: the write is done, its
 *   client never hears so;
 * - `answerInstead`: the proxy answers itself (a 503 or 429 with Retry-After) and the request
 *   never reaches the backend.
 *
 * It reads the requests only as far as their heads (the request line, Content-Length and the
 * Idempotency-Key), one after another on each connection, as fetch sends them.
 */
export interface AnswerLosingProxy {
  url: string;
  /** Every request that reached the proxy: its request line and Idempotency-Key, in order. */
  seen: { line: string; idempotencyKey: string | undefined }[];
  /** The next `count` requests matching `line` reach the backend, and their answers are lost. */
  loseAnswers(line: RegExp, count?: number): void;
  /** The next `count` requests matching `line` are answered `status` (with `retryAfter`) by the proxy. */
  answerInstead(line: RegExp, status: number, retryAfter: string | undefined, count?: number): void;
  close(): Promise<void>;
}

type Rule = { line: RegExp; left: number } & ({ kind: 'lose' } | { kind: 'answer'; status: number; retryAfter: string | undefined });

export async function answerLosingProxy(target: string): Promise<AnswerLosingProxy> {
  const targetUrl = new URL(target);
  const rules: Rule[] = [];
  const seen: AnswerLosingProxy['seen'] = [];
  const sockets = new Set<net.Socket>();

  /** The rule the request with this line falls under (and uses up once), if any. */
  const ruleFor = (line: string) => {
    const rule = rules.find((candidate) => candidate.left > 0 && candidate.line.test(line));
    if (rule) rule.left -= 1;
    return rule;
  };

  const server = net.createServer((client) => {
    const upstream = net.connect(Number(targetUrl.port), targetUrl.hostname);
    sockets.add(client).add(upstream);
    client.once('close', () => sockets.delete(client));
    upstream.once('close', () => sockets.delete(upstream));
    let head = Buffer.alloc(0);
    /** Bytes of the current request's body still to come, and whether they go to the backend. */
    let bodyLeft = 0;
    let forwarding = true;
    /** The answer to the request in flight is to be lost. */
    let losing = false;

    const fromClient = (chunk: Buffer) => {
      while (chunk.length > 0) {
        if (bodyLeft > 0) {
          const part = chunk.subarray(0, bodyLeft);
          bodyLeft -= part.length;
          if (forwarding) upstream.write(part);
          chunk = chunk.subarray(part.length);
          continue;
        }
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) return;
        const text = head.subarray(0, end).toString('latin1');
        chunk = head.subarray(end + 4);
        head = Buffer.alloc(0);
        const [line = '', ...fields] = text.split('\r\n');
        const header = (name: string) => fields.find((field) => field.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim();
        seen.push({ line, idempotencyKey: header('idempotency-key') });
        bodyLeft = Number(header('content-length') ?? 0);
        const rule = ruleFor(line);
        forwarding = rule?.kind !== 'answer';
        if (rule?.kind === 'answer') {
          const body = JSON.stringify({ success: false, error: { code: rule.status === 503 ? 'SERVICE_UNAVAILABLE' : 'RATE_LIMITED', message: 'Answered by the test proxy' } });
          client.end(
            `HTTP/1.1 ${rule.status} Proxy\r\nContent-Type: application/json\r\n${rule.retryAfter === undefined ? '' : `Retry-After: ${rule.retryAfter}\r\n`}` +
              `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
          );
          upstream.destroy();
          return;
        }
        losing = rule?.kind === 'lose';
        upstream.write(`${text}\r\n\r\n`);
      }
    };

    client.on('data', fromClient);
    upstream.on('data', (chunk: Buffer) => {
      if (!losing) {
        client.write(chunk);
        return;
      }
      // The backend has answered: the client's connection breaks instead.
      client.resetAndDestroy();
      upstream.destroy();
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    loseAnswers: (line, count = 1) => rules.push({ kind: 'lose', line, left: count }),
    answerInstead: (line, status, retryAfter, count = 1) => rules.push({ kind: 'answer', line, status, retryAfter, left: count }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
