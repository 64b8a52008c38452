import net from 'node:net';

/**
 * A loopback TCP proxy between the backend and PostgreSQL that can lose the answer to a commit:
 * it reads PostgreSQL's messages to the backend and, once armed (`holdNextKeptAnswer`), holds
 * back, on the connection where it happens, the first commit of a keyed write's kept answer that
 * PostgreSQL reports done, and everything after it: a `COMMIT` right after an `UPDATE 1` (a write
 * that keeps its answer with an UPDATE of its key's row, and commits in the same round trip), or
 * the ReadyForQuery that ends a pipeline in which a generated route's write kept its answer in its
 * own statement (keys.ts, keptWithStatement) and wrote a row (`SELECT 1`), committed by the
 * pipeline's Sync: src/idempotency/keyed-write.ts. The database has committed; the backend never
 * hears so. What the test does next (kill the primary, `cut()` the connection) decides what the
 * backend sees.
 *
 * A `COMMIT` is told by its answer, the CommandComplete message `COMMIT`: the backend prepares
 * its statements once per connection, so a later one goes as a name, never as text. The write
 * that keeps its answer is told by its statement: the proxy reads the backend's messages too, and
 * remembers which prepared statements (Parse) keep an answer with a key, and whether the pipeline
 * under way runs one (Bind).
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

/** What only the statement of a write keeping its answer with its key holds (keys.ts, keptWithStatement). */
const keepsAnswerWithKey = '"kept" AS (INSERT INTO "authstrap_idempotency_key"';

interface Connection {
  client: net.Socket;
  upstream: net.Socket;
  /** PostgreSQL's bytes not yet forwarded: the start of a message not complete yet. */
  pending: Buffer;
  /** The client asked for TLS first: the server's first byte is its answer, not a message. */
  sslAnswerDue: boolean;
  /** The tag of the last CommandComplete on this connection. */
  lastTag: string;
  /** Holding back everything PostgreSQL sends from the held COMMIT on. */
  held: boolean;
  /** The backend's bytes not yet read: the start of a message not complete yet. */
  clientPending: Buffer;
  /** The backend's next message has no type byte: its startup message (again after an SSLRequest). */
  untypedDue: boolean;
  /** The prepared statements (by name) that keep a write's answer with its key. */
  keepingStatements: Set<string>;
  /** The pipeline under way runs one of them. */
  keepingBound: boolean;
}

/** A message's NUL-terminated string at `offset`, and where the next one starts. */
function cString(body: Buffer, offset: number): [string, number] {
  const end = body.indexOf(0, offset);
  return [body.subarray(offset, end).toString('utf8'), end + 1];
}

/** Reads the backend's messages (already forwarded): which statements keep an answer with a key, and when one runs. */
function fromClient(connection: Connection, chunk: Buffer): void {
  const bytes = Buffer.concat([connection.clientPending, chunk]);
  let offset = 0;
  for (;;) {
    if (connection.untypedDue) {
      if (bytes.length - offset < 8) break;
      const length = bytes.readUInt32BE(offset);
      if (bytes.length - offset < length) break;
      connection.untypedDue = bytes.readUInt32BE(offset + 4) === sslRequestCode;
      offset += length;
      continue;
    }
    if (bytes.length - offset < 5) break;
    const length = bytes.readUInt32BE(offset + 1);
    if (bytes.length - offset < 1 + length) break;
    const type = String.fromCharCode(bytes[offset]!);
    const body = bytes.subarray(offset + 5, offset + 1 + length);
    offset += 1 + length;
    if (type === 'P') {
      const [name, textAt] = cString(body, 0);
      const [text] = cString(body, textAt);
      if (text.includes(keepsAnswerWithKey)) connection.keepingStatements.add(name);
      else connection.keepingStatements.delete(name);
    } else if (type === 'B') {
      const [, statementAt] = cString(body, 0);
      const [statement] = cString(body, statementAt);
      if (connection.keepingStatements.has(statement)) connection.keepingBound = true;
    }
  }
  connection.clientPending = Buffer.from(bytes.subarray(offset));
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
      const keptInOwnStatement = message[0] === 0x5a /* ReadyForQuery */ && connection.keepingBound && connection.lastTag === 'SELECT 1';
      if (armed && (keptInHeldTransaction || keptInOwnStatement)) {
        connection.held = true;
        connection.pending = Buffer.alloc(0);
        const resolve = armed;
        armed = undefined;
        resolve();
        return;
      }
      if (tag !== undefined) connection.lastTag = tag;
      if (message[0] === 0x5a) {
        connection.lastTag = '';
        connection.keepingBound = false;
      }
      connection.client.write(message);
    }
    connection.pending = Buffer.from(bytes.subarray(offset));
  };

  const server = net.createServer((client) => {
    const upstream = net.connect(Number(targetUrl.port || 5432), targetUrl.hostname);
    const connection: Connection = {
      client,
      upstream,
      pending: Buffer.alloc(0),
      sslAnswerDue: false,
      lastTag: '',
      held: false,
      clientPending: Buffer.alloc(0),
      untypedDue: true,
      keepingStatements: new Set(),
      keepingBound: false,
    };
    connections.add(connection);
    let firstFromClient = true;
    client.on('data', (chunk) => {
      if (firstFromClient) {
        firstFromClient = false;
        connection.sslAnswerDue = chunk.length >= 8 && chunk.readUInt32BE(0) === 8 && chunk.readUInt32BE(4) === sslRequestCode;
      }
      upstream.write(chunk);
      fromClient(connection, chunk);
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
