import net from 'node:net';

/**
 * A loopback TCP proxy between the backend and PostgreSQL that can lose the answer to a commit:
 * it reads PostgreSQL's messages to the backend and, once armed (`holdNextKeptAnswer`), holds
 * back, on the connection where it happens, the first commit of a keyed write's kept answer that
 * PostgreSQL reports done, and everything after it: a `COMMIT` right after an `UPDATE 1` (a write
 * that keeps its answer with an UPDATE of its key's row, and commits in the same round trip), or
 * the ReadyForQuery that ends a pipeline whose last statements were `INSERT 0 0` then `SELECT 1`
 * (a generated route's write: the key found unused, then the write keeping its answer in its own
 * statement, committed by the pipeline's Sync): src/idempotency/keyed-write.ts. The database has
 * committed; the backend never hears so. What the test does next (kill the primary,
 * `cut()` the connection) decides what the backend sees.
 *
 * It reads the answers, not the statements: the backend prepares its statements once per
 * connection, so a later `COMMIT` goes as a name, never as text, while its answer is always the
 * CommandComplete message `COMMIT`.
 */
export interface LostAnswerProxy {
  /** `target` with the proxy's host and port instead of the server's. */
  url: string;
  /** Resolves once a kept answer's COMMIT is done on the server and held back from the backend. */
  holdNextKeptAnswer(): Promise<void>;
  /** Resets the connection whose answer is held (and every other one): the backend sees it break. */
  cut(): void;
  close(): Promise<void>;
}

/** PostgreSQL's SSLRequest code: answered with one byte ('S' or 'N'), not a message. */
const sslRequestCode = 80877103;

interface Connection {
  client: net.Socket;
  upstream: net.Socket;
  /** PostgreSQL's bytes not yet forwarded: the start of a message not complete yet. */
  pending: Buffer;
  /** The client asked for TLS first: the server's first byte is its answer, not a message. */
  sslAnswerDue: boolean;
  /** The tag of the last CommandComplete on this connection, and of the one before. */
  lastTag: string;
  tagBefore: string;
  /** Holding back everything PostgreSQL sends from the held COMMIT on. */
  held: boolean;
}

export async function lostAnswerProxy(target: string): Promise<LostAnswerProxy> {
  const targetUrl = new URL(target);
  const connections = new Set<Connection>();
  let armed: (() => void) | undefined;

  /** Forwards PostgreSQL's complete messages one by one, and holds from the armed COMMIT on. */
  const fromServer = (connection: Connection, chunk: Buffer) => {
    if (connection.held) return;
    let bytes = Buffer.concat([connection.pending, chunk]);
    if (connection.sslAnswerDue && bytes.length > 0) {
      connection.sslAnswerDue = false;
      connection.client.write(bytes.subarray(0, 1));
      bytes = bytes.subarray(1);
    }
    let offset = 0;
    while (bytes.length - offset >= 5) {
      const length = bytes.readUInt32BE(offset + 1);
      if (bytes.length - offset < 1 + length) break;
      const message = bytes.subarray(offset, offset + 1 + length);
      offset += 1 + length;
      const tag = message[0] === 0x43 /* CommandComplete */ ? message.subarray(5, message.length - 1).toString('utf8') : undefined;
      const keptInHeldTransaction = tag === 'COMMIT' && connection.lastTag === 'UPDATE 1';
      const keptInOwnStatement = message[0] === 0x5a /* ReadyForQuery */ && connection.tagBefore === 'INSERT 0 0' && connection.lastTag === 'SELECT 1';
      if (armed && (keptInHeldTransaction || keptInOwnStatement)) {
        connection.held = true;
        connection.pending = Buffer.alloc(0);
        const resolve = armed;
        armed = undefined;
        resolve();
        return;
      }
      if (tag !== undefined) [connection.tagBefore, connection.lastTag] = [connection.lastTag, tag];
      if (message[0] === 0x5a) [connection.tagBefore, connection.lastTag] = ['', ''];
      connection.client.write(message);
    }
    connection.pending = Buffer.from(bytes.subarray(offset));
  };

  const server = net.createServer((client) => {
    const upstream = net.connect(Number(targetUrl.port || 5432), targetUrl.hostname);
    const connection: Connection = { client, upstream, pending: Buffer.alloc(0), sslAnswerDue: false, lastTag: '', tagBefore: '', held: false };
    connections.add(connection);
    let firstFromClient = true;
    client.on('data', (chunk) => {
      if (firstFromClient) {
        firstFromClient = false;
        connection.sslAnswerDue = chunk.length >= 8 && chunk.readUInt32BE(0) === 8 && chunk.readUInt32BE(4) === sslRequestCode;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => fromServer(connection, chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      connections.delete(connection);
    };
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const proxied = new URL(target);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as net.AddressInfo).port);

  const cut = () => {
    for (const connection of [...connections]) {
      connection.client.resetAndDestroy();
      connection.upstream.destroy();
    }
  };
  return {
    url: proxied.toString(),
    holdNextKeptAnswer: () => {
      if (armed) throw new Error('the proxy is holding for a kept answer already');
      return new Promise<void>((resolve) => (armed = resolve));
    },
    cut,
    async close() {
      armed = undefined;
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
