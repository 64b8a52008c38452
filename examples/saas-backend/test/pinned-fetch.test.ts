import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnswerTooLarge, pinnedFetch } from '../src/http/pinned-fetch.js';
import { guardedFetch, OidcProblem } from '../src/sso/oidc.js';

/**
 * The backend's requests to addresses an organization typed (an identity provider's endpoints)
 * connect to the address that was checked, not to whatever the name answers next (DNS
 * rebinding): proved with names that resolve to nothing at all, which reach the checked address
 * all the same. Against a real server on loopback.
 */
describe('pinnedFetch', () => {
  let server: http.Server;
  let port: number;
  const seen: { host?: string; method?: string; contentType?: string; body: string }[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        seen.push({ host: req.headers.host, method: req.method, contentType: req.headers['content-type'], body });
        if (req.url === '/redirect') return res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end();
        if (req.url === '/empty') return res.writeHead(204).end();
        if (req.url === '/large') return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(4096));
        if (req.url === '/slow') return setTimeout(() => res.writeHead(200).end('late'), 2_000);
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] }).end(JSON.stringify({ path: req.url }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const loopback = { address: '127.0.0.1', family: 4 as const };
  // `.invalid` never resolves (RFC 6761): a request that looked the name up again would fail.
  const unresolvable = (path: string) => new URL(`http://rebound.invalid:${port}${path}`);

  it('connects to the checked address whatever the name, and sends the name as Host', async () => {
    const answer = await pinnedFetch(unresolvable('/keys'), loopback);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ path: '/keys' });
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.headers.get('set-cookie')).toBe('a=1, b=2');
    expect(seen.at(-1)!.host).toBe(`rebound.invalid:${port}`);
    // Plain fetch looks the name up again, and gets nowhere.
    await expect(fetch(unresolvable('/keys'))).rejects.toThrow();
  });

  it('sends a form as a token request does, with its length and type', async () => {
    const answer = await pinnedFetch(unresolvable('/token'), loopback, { method: 'POST', headers: { accept: 'application/json' }, body: new URLSearchParams({ grant_type: 'authorization_code', code: 'c o d e' }) });
    expect(answer.status).toBe(200);
    expect(seen.at(-1)).toEqual({ host: `rebound.invalid:${port}`, method: 'POST', contentType: 'application/x-www-form-urlencoded;charset=UTF-8', body: 'grant_type=authorization_code&code=c+o+d+e' });
  });

  it('hands a redirect back without following it, and a 204 with no body', async () => {
    const redirect = await pinnedFetch(unresolvable('/redirect'), loopback);
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('http://169.254.169.254/latest/meta-data');
    const empty = await pinnedFetch(unresolvable('/empty'), loopback);
    expect([empty.status, empty.body]).toEqual([204, null]);
  });

  it('refuses an answer larger than allowed, and stops at the signal', async () => {
    await expect(pinnedFetch(unresolvable('/large'), loopback, { maxBytes: 1024 })).rejects.toBeInstanceOf(AnswerTooLarge);
    expect((await pinnedFetch(unresolvable('/large'), loopback, { maxBytes: 4096 })).status).toBe(200);
    await expect(pinnedFetch(unresolvable('/slow'), loopback, { signal: AbortSignal.timeout(100) })).rejects.toThrow(/abort/i);
  });

  it("openid-client's fetch refuses a loopback identity provider unless private addresses are allowed, and reaches it then", async () => {
    const options = { method: 'GET', headers: {}, body: undefined, redirect: 'manual' as const, signal: AbortSignal.timeout(5_000) };
    await expect(guardedFetch(false)(`https://127.0.0.1:${port}/keys`, options)).rejects.toThrow(OidcProblem);
    await expect(guardedFetch(false)(`http://127.0.0.1:${port}/keys`, options)).rejects.toThrow(/https/);
    const allowed = await guardedFetch(true)(`http://127.0.0.1:${port}/keys`, options);
    expect(await allowed.json()).toEqual({ path: '/keys' });
  });
});
