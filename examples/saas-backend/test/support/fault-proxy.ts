import net from 'node:net';

/**
 * A loopback TCP proxy between the backend and PostgreSQL or Redis that can misbehave the way a
 * failing network or server does, without touching the shared server:
 * - `stall()`: connections stay open but nothing is forwarded either way (a frozen server, a
 *   failover in progress, a dropped route); new connections are accepted and hang the same way;
 * - `stallOpen()`: the connections open now stall so, new ones work (a NAT or a load balancer that
 *   forgot a connection without resetting it);
 * - `resume()`: forwarding goes on, including what was held back;
 * - `cut()`: every open connection is reset mid-conversation; new ones work;
 * - `close()` / `open()`: nothing listens (connection refused), then it listens again on the same port;
 * - `retarget(url)`: new connections go to another server from now on (a failover's new primary,
 *   or an old one coming back); the open ones stay where they are until `cut()`.
 */
export interface FaultProxy {
  port: number;
  /** `target` with the proxy's host and port instead of the server's. */
  url: string;
  stall(): void;
  stallOpen(): void;
  resume(): void;
  cut(): void;
  retarget(target: string): void;
  close(): Promise<void>;
  open(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  held: { toUpstream: Buffer[]; toClient: Buffer[] };
  stalled: boolean;
}

export async function faultProxy(target: string): Promise<FaultProxy> {
  const portOf = (url: URL) => Number(url.port || (url.protocol.startsWith('redis') ? 6379 : 5432));
  let targetUrl = new URL(target);
  let targetPort = portOf(targetUrl);
  const pairs = new Set<Pair>();
  let stalled = false;
  let server: net.Server | undefined;
  let port = 0;

  const forward = (pair: Pair, direction: 'toUpstream' | 'toClient', chunk: Buffer) => {
    if (stalled || pair.stalled) pair.held[direction].push(chunk);
    else (direction === 'toUpstream' ? pair.upstream : pair.client).write(chunk);
  };

  const accept = (client: net.Socket) => {
    const upstream = net.connect(targetPort, targetUrl.hostname);
    const pair: Pair = { client, upstream, held: { toUpstream: [], toClient: [] }, stalled: false };
    pairs.add(pair);
    const end = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('data', (chunk) => forward(pair, 'toUpstream', chunk));
    upstream.on('data', (chunk) => forward(pair, 'toClient', chunk));
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  };

  const open = () =>
    new Promise<void>((resolve, reject) => {
      server = net.createServer(accept);
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });

  const cut = () => {
    for (const pair of [...pairs]) {
      pair.client.resetAndDestroy();
      pair.upstream.destroy();
    }
  };

  await open();
  const proxied = new URL(target);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(port);
  return {
    port,
    url: proxied.toString(),
    stall: () => {
      stalled = true;
    },
    stallOpen: () => {
      for (const pair of pairs) pair.stalled = true;
    },
    resume: () => {
      stalled = false;
      for (const pair of pairs) {
        pair.stalled = false;
        for (const chunk of pair.held.toUpstream.splice(0)) pair.upstream.write(chunk);
        for (const chunk of pair.held.toClient.splice(0)) pair.client.write(chunk);
      }
    },
    cut,
    retarget(next) {
      targetUrl = new URL(next);
      targetPort = portOf(targetUrl);
    },
    async close() {
      const closing = server;
      server = undefined;
      cut();
      if (closing?.listening) await new Promise((resolve) => closing.close(resolve));
    },
    open,
  };
}
