import net from 'node:net';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorHandler } from '../src/http/errors.js';
import { jsonBody, plainJsonLength, refuseInvalidUtf8 } from '../src/http/json-body.js';

/**
 * A plain JSON body of announced length is read by src/http/json-body.ts itself instead of
 * express.json (issue 32). Every request here is sent, byte for byte, to an app with jsonBody and
 * to one with express.json as the backend used it before (same limit, same UTF-8 check, same error
 * handler), and the two raw answers must be the same: what each parsed (echoed), or the same error.
 *
 * jsonBody reads a body two ways: from the request's stream as it arrives (`/ours`, where it is
 * the first middleware and runs before Node's parser has read the body), and, when the whole body
 * is already in the stream's buffer, from there at once (`/ours-after-await`, behind a middleware
 * that awaits once, as the rate limit does in the backend).
 */
let server: ReturnType<ReturnType<typeof express>['listen']>;
let port: number;
/** For each request to /ours-after-await: was its whole body in the stream's buffer when jsonBody ran? */
const bufferedWhenRead: boolean[] = [];

beforeAll(async () => {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const echo = (req: express.Request, res: express.Response) => void res.status(200).json({ body: req.body === undefined ? '(undefined)' : req.body });
  app.use('/ours', jsonBody('1kb'));
  app.use(
    '/ours-after-await',
    async (req, _res, next) => {
      await Promise.resolve();
      bufferedWhenRead.push(req.readableLength === Number(req.headers['content-length']));
      next();
    },
    jsonBody('1kb'),
  );
  app.use('/theirs', express.json({ limit: '1kb', verify: refuseInvalidUtf8 }));
  app.all('/{*rest}', echo);
  app.use(errorHandler());
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

/** Sends the raw request and reads the raw answer, its Date header set aside. */
function send(path: string, headers: Record<string, string>, body: Buffer, { close = false, pauseAfter }: { close?: boolean; pauseAfter?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1').replace(/\r\nDate: [^\r]*/, '')));
    const head = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
    const request = Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
    if (pauseAfter === undefined) socket.write(request);
    else {
      // The rest of the body a moment later, as from a slow client.
      const split = request.length - body.length + pauseAfter;
      socket.write(request.subarray(0, split));
      setTimeout(() => socket.write(request.subarray(split)), 50);
    }
    // A client that gives up before the whole body is sent.
    if (close) socket.end();
  });
}

const json = (text: string | Buffer, type = 'application/json') => {
  const body = typeof text === 'string' ? Buffer.from(text) : text;
  return { headers: { 'Content-Type': type, 'Content-Length': String(body.length) }, body };
};

const cases: [name: string, request: { headers: Record<string, string>; body: Buffer }][] = [
  ['an object', json('{"name":"Zoë – “quoted” \\u2028 😀","n":1.5e3,"nested":{"list":[true,null]}}')],
  ['an array', json('[1,2,3]')],
  ['whitespace around', json(' \n\t{"a":1}\r\n ')],
  ['a byte order mark before it', json('\ufeff{"name":"With BOM"}')],
  ['an empty body', json('')],
  ['only whitespace', json('   ')],
  ['a string', json('"text"')],
  ['a number', json('123')],
  ['null', json('null')],
  ['true', json('true')],
  ['malformed', json('{"name": "x')],
  ['a trailing comma', json('{"a":1,}')],
  ['a lone surrogate escape', json('{"name":"\\ud800"}')],
  ['duplicate keys', json('{"a":1,"a":2}')],
  ['__proto__', json('{"__proto__":{"admin":true},"a":1}')],
  ['invalid UTF-8', json(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]))],
  ['exactly the limit', json(`{"a":"${'x'.repeat(1024 - 8)}"}`)],
  ['one byte past the limit', json(`{"a":"${'x'.repeat(1024 - 7)}"}`)],
  ['charset=utf-8', json('{"a":1}', 'application/json; charset=utf-8')],
  ['charset=UTF-8 without a space', json('{"a":1}', 'application/json;charset=UTF-8')],
  ['upper-case media type', json('{"a":1}', 'Application/JSON')],
  ['charset=latin1', json('{"a":1}', 'application/json; charset=latin1')],
  ['a +json type', json('{"a":1}', 'application/merge-patch+json')],
  ['text/plain', json('{"a":1}', 'text/plain')],
  ['no media type', { headers: { 'Content-Length': '7' }, body: Buffer.from('{"a":1}') }],
  ['chunked', { headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, body: Buffer.from('7\r\n{"a":1}\r\n0\r\n\r\n') }],
  ['Content-Encoding: identity', { headers: { ...json('{"a":1}').headers, 'Content-Encoding': 'identity' }, body: Buffer.from('{"a":1}') }],
  ['an unknown Content-Encoding', { headers: { ...json('{"a":1}').headers, 'Content-Encoding': 'compress' }, body: Buffer.from('{"a":1}') }],
];

describe('a plain JSON body read by jsonBody', () => {
  it.each(cases)('%s: the same answer as express.json, read from the stream or from its buffer', async (_name, request) => {
    const theirs = await send('/theirs', request.headers, request.body);
    expect(theirs).toMatch(/^HTTP\/1\.1 \d{3} /);
    expect(await send('/ours', request.headers, request.body)).toBe(theirs);
    expect(await send('/ours-after-await', request.headers, request.body)).toBe(theirs);
  });

  it('takes a body that arrived with its headers from the buffer, and waits for one that comes later', async () => {
    const request = json('{"name":"In two parts","n":1}');
    const theirs = await send('/theirs', request.headers, request.body);
    bufferedWhenRead.length = 0;
    expect(await send('/ours-after-await', request.headers, request.body)).toBe(theirs);
    expect(await send('/ours-after-await', request.headers, request.body, { pauseAfter: 5 })).toBe(theirs);
    // The first was read from the buffer, the second from the stream: both paths ran.
    expect(bufferedWhenRead).toEqual([true, false]);
  });

  it('reads the plain ones itself (the others go to express.json)', () => {
    const plain = cases.filter(([, request]) => plainJsonLength(Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), value])), 1024) !== undefined);
    expect(plain.map(([name]) => name)).toEqual([
      'an object', 'an array', 'whitespace around', 'a byte order mark before it', 'an empty body', 'only whitespace', 'a string', 'a number', 'null', 'true',
      'malformed', 'a trailing comma', 'a lone surrogate escape', 'duplicate keys', '__proto__', 'invalid UTF-8', 'exactly the limit',
      'charset=utf-8', 'charset=UTF-8 without a space', 'upper-case media type', 'Content-Encoding: identity',
    ]);
  });

  it('answers a body cut short by its client as incomplete, as express.json does', async () => {
    const headers = { 'Content-Type': 'application/json', 'Content-Length': '100' };
    const ours = await send('/ours', headers, Buffer.from('{"a":'), { close: true });
    const theirs = await send('/theirs', headers, Buffer.from('{"a":'), { close: true });
    expect(ours).toBe(theirs);
  });
});
