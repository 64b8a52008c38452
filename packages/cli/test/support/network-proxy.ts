import http from 'node:http';
import type net from 'node:net';

/**
 * A forward HTTP proxy on loopback for one browser context (Playwright's `proxy` option), standing
 * for that browser's network: `drop()` resets every connection through it, a long-lived stream
 * included (Chromium's offline emulation fails only new requests; it leaves an open response
 * streaming). It forwards plain HTTP only, which is all the tests' app and backend speak.
 */
export interface NetworkProxy {
  /** For Playwright: `browser.newContext({ proxy: proxy.settings })`. */
  settings: { server: string; bypass: string };
  /** Resets every open connection, both sides, mid-answer; new ones work. */
  drop(): void;
  close(): Promise<void>;
}

export async function startNetworkProxy(): Promise<NetworkProxy> {
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const server = http.createServer((request, response) => {
    // A proxy is asked with the absolute URL: `GET http://localhost:3000/realtime?... HTTP/1.1`.
    const target = new URL(request.url!);
    const upstream = http.request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(response);
    });
    upstream.on('socket', track);
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  server.on('connection', track);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    // Chromium sends requests for localhost around any proxy unless told otherwise.
    settings: { server: `http://127.0.0.1:${port}`, bypass: '<-loopback>' },
    drop() {
      for (const socket of sockets) socket.resetAndDestroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
