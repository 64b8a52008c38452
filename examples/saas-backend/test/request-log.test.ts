import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, signUp } from './support/backend.js';
import { spawnBackend, type BackendProcess } from './support/process.js';

/**
 * The request log (src/logger.ts): one JSON line per request, tagged with the request's id, at a
 * level that follows the status, and never a header (they carry cookies and tokens).
 */

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  req?: { method: string; url: string; keyId?: string };
  res?: { statusCode: number };
  responseTime?: number;
}

describe('the request log', () => {
  let backend: BackendProcess;
  let url: string;
  const lines = () =>
    backend
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
  /** The log lines of one request, once its completion line is written. */
  const linesOf = async (requestId: string) => {
    for (let attempt = 0; attempt < 100; attempt++) {
      const found = lines().filter((line) => line.reqId === requestId);
      if (found.some((line) => line.msg.startsWith('request '))) return found;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`no log line for request ${requestId}:\n${backend.output()}`);
  };

  beforeAll(async () => {
    // bcrypt at cost 13 takes a good half second: long enough for a client to give up on a sign-in.
    backend = spawnBackend({ EMBEDDED_DB_DIR: 'memory://', AUTH_SECRET: 'a-test-secret-with-enough-different-characters-0123', BCRYPT_COST: '13' });
    url = await backend.listening;
  });
  afterAll(async () => {
    backend?.child.kill('SIGTERM');
    await backend?.exited;
  });

  it('logs one line per answer, at info, warn or error by its status, with the id the client got', async () => {
    const ok = await fetch(`${url}/health?probe=1`, { headers: { 'x-request-id': 'trace-ok' } });
    expect(ok.headers.get('x-request-id')).toBe('trace-ok');
    const [completed, ...others] = await linesOf('trace-ok');
    expect(others).toEqual([]);
    expect(completed).toMatchObject({ level: 30, msg: 'request completed', req: { method: 'GET', url: '/health?probe=1' }, res: { statusCode: 200 } });
    expect(completed!.responseTime).toBeGreaterThanOrEqual(0);

    const missing = await fetch(`${url}/no-such-route`);
    const [notFound] = await linesOf(missing.headers.get('x-request-id')!);
    expect(notFound).toMatchObject({ level: 40, res: { statusCode: 404 } });
  });

  it('never logs a header, a token or a password', async () => {
    const user = await signUp(url, 'logged@example.com', 'a password nobody may log');
    const response = await apiClient(url, { token: user.token })('GET', '/api/auth/get-session', { headers: { cookie: 'session=cookie-secret', 'x-request-id': 'trace-secrets' } });
    expect(response.status).toBe(200);
    await linesOf('trace-secrets');
    for (const secret of [user.token, 'cookie-secret', 'a password nobody may log', 'authorization', 'cookie']) expect(backend.output()).not.toContain(secret);
  });

  it("names a machine key's request by the key's id, never by the key", async () => {
    const owner = await signUp(url, 'keys@example.com');
    const made = (await owner.api('POST', '/api/auth/api-keys', { body: { name: 'logged', permissions: { Project: ['list'] } } })).body.data;
    const response = await apiClient(url)('GET', '/Projects', { headers: { 'x-api-key': made.key, 'x-request-id': 'trace-key' } });
    expect(response.status).toBe(200);
    const [completed] = await linesOf('trace-key');
    expect(completed).toMatchObject({ req: { method: 'GET', url: '/Projects', keyId: made.id }, res: { statusCode: 200 } });
    expect(backend.output()).not.toContain(made.key);
  });

  it('logs a request whose client went away before the answer as aborted', async () => {
    // A sign-in (a bcrypt comparison of a good half second) whose client hangs up after 50 ms.
    const body = JSON.stringify({ email: 'nobody@example.com', password: 'wrong password' });
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`POST /api/auth/sign-in/email HTTP/1.1\r\nHost: x\r\nx-request-id: trace-gone\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    const found = await linesOf('trace-gone');
    expect(found.at(-1)).toMatchObject({ level: 40, msg: 'request aborted', req: { method: 'POST', url: '/api/auth/sign-in/email' } });
  });
});
