import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appPrototypes } from '../src/http/app-prototypes.js';
import { apiClient, signUp, startBackend, type TestBackend } from './support/backend.js';

/**
 * Requests and responses are made with the Express app's prototypes (src/http/app-prototypes.ts),
 * so that Express's own `Object.setPrototypeOf` in `app.handle` has nothing to change: what that
 * change costs is in bench/README.md. Nothing else may differ.
 */

/** The prototypes a request and its response had when Node handed them over, and after Express answered. */
function watchPrototypes(server: http.Server) {
  const seen: { url: string; before: [object, object]; after?: [object, object] }[] = [];
  // In front of every other listener, so before Express sees the request.
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const entry: (typeof seen)[number] = { url: req.url ?? '', before: [Object.getPrototypeOf(req), Object.getPrototypeOf(res)] };
    seen.push(entry);
    res.once('finish', () => (entry.after = [Object.getPrototypeOf(req), Object.getPrototypeOf(res)]));
  });
  return seen;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('appPrototypes', () => {
  it("makes requests with Node's prototypes until an app is adopted, and with the app's after", async () => {
    const prototypes = appPrototypes();
    let handler: http.RequestListener = (_req, res) => res.end('plain');
    const server = http.createServer({ IncomingMessage: prototypes.IncomingMessage, ServerResponse: prototypes.ServerResponse }, (req, res) => handler(req, res));
    const seen = watchPrototypes(server);
    const url = await listen(server);
    try {
      expect(await (await fetch(`${url}/before`)).text()).toBe('plain');
      // Node's own classes, extended by nothing: no Express method or `app` yet.
      const [request, response] = seen[0]!.before;
      expect(Object.getPrototypeOf(request)).toBe(http.IncomingMessage.prototype);
      expect(Object.getPrototypeOf(response)).toBe(http.ServerResponse.prototype);
      expect(['app' in request, 'app' in response]).toEqual([false, false]);

      const app = express();
      app.get('/after', (req, res) => res.status(201).json({ query: req.query, header: req.get('x-probe'), isRequest: req instanceof http.IncomingMessage }));
      prototypes.adopt(app);
      // What an app adds to its response after that reaches every response, as in any Express app.
      (app.response as unknown as { teapot(this: express.Response): void }).teapot = function () {
        this.status(418).send('short and stout');
      };
      app.get('/teapot', (_req, res) => (res as unknown as { teapot(): void }).teapot());
      handler = app;
      const answer = await fetch(`${url}/after?a=1`, { headers: { 'x-probe': 'yes' } });
      expect(answer.status).toBe(201);
      expect(await answer.json()).toEqual({ query: { a: '1' }, header: 'yes', isRequest: true });
      expect(seen[1]?.before[0]).toBe(app.request);
      expect(seen[1]?.before[1]).toBe(app.response);
      expect(seen[1]?.after?.[0]).toBe(app.request);
      expect(seen[1]?.after?.[1]).toBe(app.response);
      const teapot = await fetch(`${url}/teapot`);
      expect([teapot.status, await teapot.text()]).toEqual([418, 'short and stout']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('the backend', () => {
  let backend: TestBackend;
  let seen: ReturnType<typeof watchPrototypes>;
  beforeAll(async () => {
    backend = await startBackend('embedded');
    seen = watchPrototypes(backend.running.server);
  });
  afterAll(() => backend?.stop());

  it("hands Express requests and responses that already have the app's prototypes", async () => {
    const owner = await signUp(backend.url, 'prototypes@example.com');
    const api = apiClient(backend.url, { token: owner.token, organizationId: owner.organizationId });
    expect((await api('POST', '/Projects', { body: { name: 'Born' } })).status).toBe(201);
    const list = await api('GET', '/Projects');
    expect(list.status).toBe(200);
    expect(list.body.data.map((project: { name: string }) => project.name)).toEqual(['Born']);

    const projects = seen.filter((entry) => entry.url.startsWith('/Projects'));
    expect(projects).toHaveLength(2);
    for (const { before, after } of projects) {
      // An Express app's request and response prototypes (each carries its `app`), unchanged by Express.
      expect((before[0] as { app?: unknown }).app).toBeTypeOf('function');
      expect((before[1] as { app?: unknown }).app).toBeTypeOf('function');
      expect(after).toEqual(before);
    }
  });
});
