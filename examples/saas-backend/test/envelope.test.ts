import net from 'node:net';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendData, sendJsonData, sendJsonList } from '../src/http/envelope.js';

/**
 * The envelope writes its JSON answers itself instead of through Express's res.send (issue 32).
 * Every answer must stay byte for byte what res.json sends: each route here answers the same
 * body both ways, and the two raw responses (status line, headers, body) are compared, with only
 * the Date header set aside.
 */
const record = { id: 'b7c1e1de-2c2f-4a43-9a4e-1a6d7c1f0a10', name: 'Zoë – “quoted” \u2028 <tag> & 😀', count: 3, tags: ['a', 'b'], nothing: null };
const bigRows = Array.from({ length: 40 }, (_, index) => ({ ...record, index }));
const meta = { page: 2, limit: 40, total: 95, totalPages: 3 };

let server: ReturnType<ReturnType<typeof express>['listen']>;
let port: number;

beforeAll(async () => {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get('/ours/data', (_req, res) => sendData(res, record));
  app.get('/express/data', (_req, res) => void res.status(200).json({ success: true, data: record }));
  app.post('/ours/created', (_req, res) => sendData(res, record, 201));
  app.post('/express/created', (_req, res) => void res.status(201).json({ success: true, data: record }));
  app.get('/ours/json', (_req, res) => sendJsonData(res, JSON.stringify(record)));
  app.get('/express/json', (_req, res) => void res.status(200).json({ success: true, data: record }));
  app.get('/ours/list', (_req, res) => sendJsonList(res, { json: JSON.stringify(bigRows), meta }));
  app.get('/express/list', (_req, res) => void res.status(200).json({ success: true, data: bigRows, meta }));
  await new Promise<void>((resolve) => {
    server = app.listen(0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** The raw bytes of one answer, Date header aside. */
function raw(method: string, path: string, headers: Record<string, string> = {}): Promise<string> {
  const lines = [`${method} ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Connection: close', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1').replace(/\r\nDate: [^\r]*/, '')));
    socket.write(`${lines.join('\r\n')}\r\n${method === 'POST' ? 'Content-Length: 0\r\n' : ''}\r\n`);
  });
}

describe('the envelope, written without res.send', () => {
  const cases: [string, string, Record<string, string>][] = [
    ['GET', 'data', {}],
    ['HEAD', 'data', {}],
    ['POST', 'created', {}],
    ['GET', 'json', {}],
    ['HEAD', 'json', {}],
    ['GET', 'list', {}],
    ['HEAD', 'list', {}],
    // Conditional requests go through res.send's freshness check, as before.
    ['GET', 'list', { 'If-None-Match': '*' }],
    ['GET', 'data', { 'If-Modified-Since': 'Thu, 01 Jan 2026 00:00:00 GMT' }],
  ];

  it.each(cases)('%s %s %j: the same bytes as res.json', async (method, route, headers) => {
    const ours = await raw(method, `/ours/${route}`, headers);
    const theirs = await raw(method, `/express/${route}`, headers);
    expect(ours).toBe(theirs);
    expect(ours).toMatch(/^HTTP\/1\.1 (200|201|304) /);
  });
});
