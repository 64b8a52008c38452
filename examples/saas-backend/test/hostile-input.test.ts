import net from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds, serviceApiKey, signUp, startBackend, type SignedUp, type TestBackend } from './support/backend.js';

/**
 * Bad input, table-driven: whatever arrives (broken encodings and escapes, JSON edge cases, huge
 * and deep bodies, abused headers, hostile query strings), the answer is a 4xx with the error
 * envelope or a correct 2xx, never a 5xx, and the server stays healthy. Every request is sent
 * byte for byte over a plain socket, so nothing is cleaned up by an HTTP client on the way.
 */

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `head` + `body` as they are and reads the whole answer (the request asks to close). */
function sendRaw(port: number, head: string, body: Buffer = Buffer.alloc(0)): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('latin1');
      const split = raw.indexOf('\r\n\r\n');
      const [statusLine, ...headerLines] = raw.slice(0, split).split('\r\n');
      const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      let payload = raw.slice(split + 4);
      if (headers['transfer-encoding'] === 'chunked') {
        let decoded = '';
        for (let rest = payload; ; ) {
          const size = parseInt(rest, 16);
          if (!size) break;
          const start = rest.indexOf('\r\n') + 2;
          decoded += rest.slice(start, start + size);
          rest = rest.slice(start + size + 2);
        }
        payload = decoded;
      }
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body: Buffer.from(payload, 'latin1').toString('utf8') });
    });
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]));
  });
}

interface HostileCase {
  name: string;
  method?: string;
  path?: string;
  /** Headers beyond Host, Connection: close and (unless `anonymous`) the owner's credentials. */
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Sends no credentials. */
  anonymous?: boolean;
  /** Replaces the whole request head (for requests no well-formed head can express). */
  rawHead?: string;
  /** A 2xx is a correct answer for this one (it is odd, not wrong). */
  ok?: boolean;
}

const json = { 'content-type': 'application/json' };
const gzip = (text: string) => zlib.gzipSync(Buffer.from(text));
const deep = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const garbage = Buffer.from('this is not compressed at all, just bytes \x00\x01\x02\xff');

function hostileCases(projectId: string): HostileCase[] {
  const post = (name: string, body: string | Buffer, headers: Record<string, string> = json): HostileCase => ({ name, method: 'POST', path: '/Projects', headers, body });
  const list = (name: string, query: string, path = '/Projects'): HostileCase => ({ name, path: `${path}?${query}` });
  return [
    // Content encodings
    ...(['gzip', 'deflate', 'br'] as const).flatMap((encoding) => [
      post(`garbage as ${encoding}`, garbage, { ...json, 'content-encoding': encoding }),
      { name: `garbage as ${encoding}, anonymous sign-in`, method: 'POST', path: '/api/auth/sign-in/email', anonymous: true, headers: { ...json, 'content-encoding': encoding }, body: garbage },
      post(`empty body as ${encoding}`, Buffer.alloc(0), { ...json, 'content-encoding': encoding }),
    ]),
    post('truncated gzip', gzip(JSON.stringify({ name: 'x' })).subarray(0, 12), { ...json, 'content-encoding': 'gzip' }),
    post('gzip of malformed JSON', gzip('{"name": '), { ...json, 'content-encoding': 'gzip' }),
    post('gzip bomb past the body limit', zlib.gzipSync(Buffer.from(JSON.stringify({ name: 'x', pad: 'a'.repeat(5_000_000) }))), { ...json, 'content-encoding': 'gzip' }),
    { ...post('valid gzip of valid JSON', gzip(JSON.stringify({ name: 'Zipped' })), { ...json, 'content-encoding': 'gzip' }), ok: true },
    post('unknown encoding', '{"name":"x"}', { ...json, 'content-encoding': 'compress' }),
    post('two encodings', garbage, { ...json, 'content-encoding': 'gzip, br' }),
    post('latin1 charset', '{"name":"x"}', { 'content-type': 'application/json; charset=latin1' }),
    post('utf-16 charset', '{"name":"x"}', { 'content-type': 'application/json; charset=utf-16' }),
    post('made-up charset', '{"name":"x"}', { 'content-type': 'application/json; charset=klingon' }),
    post('text/plain body', '{"name":"x"}', { 'content-type': 'text/plain' }),
    post('form body', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' }),
    post('no content type', '{"name":"x"}', {}),
    post('invalid UTF-8', Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d])),
    // Percent-escapes and paths
    { name: 'broken escape in a nested path', path: '/Projects/%E0%A4%A/Tasks' },
    { name: 'broken escape as an id', path: '/Projects/%E0%A4%A' },
    { name: 'lone percent', path: '/Projects/%' },
    { name: 'non-hex escape', path: '/Projects/%zz' },
    { name: 'overlong UTF-8 slash', path: '/Projects/%C0%AF' },
    { name: 'NUL in the id', path: '/Projects/%00' },
    { name: 'encoded dot-dot', path: '/Projects/..%2F..%2Fetc%2Fpasswd' },
    { name: 'docs dot-dot to package.json', path: '/api/docs/../../package.json', anonymous: true },
    { name: 'docs encoded dot-dot', path: '/api/docs/%2e%2e/%2e%2e/package.json', anonymous: true },
    { name: 'docs broken escape', path: '/api/docs/%E0%A4%A', anonymous: true },
    { name: 'broken escape under /api/auth', method: 'POST', path: '/api/auth/%E0%A4%A', anonymous: true, headers: json, body: '{}' },
    { name: 'double slashes', path: '//Projects//' },
    { name: 'unicode path', path: '/Pröjects' },
    { name: 'very long id', path: `/Projects/${'a'.repeat(4000)}` },
    { name: 'uppercase id of another form', path: `/Projects/${projectId.toUpperCase()}`, ok: true },
    { name: 'nested under a missing parent', path: '/Projects/00000000-0000-0000-0000-000000000000/Tasks' },
    // JSON edge cases
    post('null', 'null'),
    post('array', '[]'),
    post('string', '"text"'),
    post('number', '123'),
    post('empty object', '{}'),
    post('null name', '{"name":null}'),
    post('number name', '{"name":123}'),
    post('object name', '{"name":{"$gt":""}}'),
    post('array name', '{"name":["a"]}'),
    post('__proto__ key', '{"__proto__":{"admin":true},"name":"x"}'),
    post('constructor key', '{"constructor":{"prototype":{"admin":true}},"name":"x"}'),
    post('unknown field', '{"name":"x","organizationId":"00000000-0000-0000-0000-000000000000"}'),
    post('trailing comma', '{"name":"x",}'),
    post('single quotes', "{'name':'x'}"),
    post('NaN', '{"name":"x","n":NaN}'),
    post('huge number', '{"name":1e400}'),
    post('lone surrogate', '{"name":"\\ud800"}'),
    post('NUL in a string', '{"name":"a\\u0000b"}'),
    { ...post('duplicate keys', '{"name":"first","name":"Duplicate"}'), ok: true },
    { ...post('BOM before JSON', '\ufeff{"name":"With BOM"}'), ok: true },
    post('empty body', ''),
    post('whitespace body', '   '),
    post('truncated JSON', '{"name": "x'),
    post('deep array', deep(10_000)),
    post('deep object', '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000)),
    post('body past the limit', JSON.stringify({ name: 'x'.repeat(200_000) })),
    post('name past its length', JSON.stringify({ name: 'x'.repeat(5_000) })),
    post('many keys', JSON.stringify(Object.fromEntries(Array.from({ length: 3_000 }, (_, n) => [`k${n}`, n])))),
    { name: 'PATCH with malformed JSON', method: 'PATCH', path: `/Projects/${projectId}`, headers: json, body: '{' },
    { name: 'PUT with an array', method: 'PUT', path: `/Projects/${projectId}`, headers: json, body: '[1,2]' },
    { name: 'PATCH setting the organization', method: 'PATCH', path: `/Projects/${projectId}`, headers: json, body: '{"organizationId":"00000000-0000-0000-0000-000000000000"}' },
    { name: 'sign-up with a 100 kB password', method: 'POST', path: '/api/auth/sign-up/email', anonymous: true, headers: json, body: JSON.stringify({ email: 'a@example.com', name: 'Big', password: 'x'.repeat(90_000) }) },
    { name: 'sign-in with an object password', method: 'POST', path: '/api/auth/sign-in/email', anonymous: true, headers: json, body: '{"email":"a@example.com","password":{"$ne":null}}' },
    { name: 'sign-in with array email', method: 'POST', path: '/api/auth/sign-in/email', anonymous: true, headers: json, body: '{"email":["a@example.com"],"password":"x"}' },
    // Headers
    { name: 'organization id not a uuid', path: '/Projects', headers: { 'x-organization-id': "' OR 1=1 --" } },
    { name: 'organization id of nobody', path: '/Projects', headers: { 'x-organization-id': '00000000-0000-0000-0000-000000000000' } },
    { name: 'organization id twice', rawHead: 'twice' },
    { name: 'very long organization id', path: '/Projects', headers: { 'x-organization-id': 'a'.repeat(8_000) } },
    { name: 'empty bearer', path: '/Projects', anonymous: true, headers: { authorization: 'Bearer ' } },
    { name: 'bearer with spaces', path: '/Projects', anonymous: true, headers: { authorization: 'Bearer a b c' } },
    { name: 'basic auth', path: '/Projects', anonymous: true, headers: { authorization: 'Basic YWRtaW46YWRtaW4=' } },
    { name: 'huge bearer', path: '/Projects', anonymous: true, headers: { authorization: `Bearer ${'x'.repeat(10_000)}` } },
    { name: 'service key prefix', path: '/Users', anonymous: true, headers: { authorization: `Bearer ${serviceApiKey.slice(0, -1)}` } },
    { name: 'broken cookie escape', path: '/Projects', anonymous: true, headers: { cookie: 'session=%E0%A4%A' } },
    { name: 'cookie without a value', path: '/Projects', anonymous: true, headers: { cookie: 'session=' } },
    { name: 'many cookies', path: '/Projects', anonymous: true, headers: { cookie: Array.from({ length: 300 }, (_, n) => `c${n}=${n}`).join('; ') } },
    { name: 'headers past the size limit', path: '/Projects', headers: { 'x-filler': 'x'.repeat(20_000) } },
    { name: 'content-length and transfer-encoding', rawHead: 'smuggle' },
    // No Content-Length at all: the JSON parser must still read it (whenBodySent lets it through).
    { name: 'JSON body in chunks, without a length', rawHead: 'chunked', ok: true },
    { name: 'content-length larger than the body', rawHead: 'short-body' },
    { name: 'negative content-length', rawHead: 'negative-length' },
    { name: 'space in the request line', rawHead: 'space-in-path' },
    { name: 'control character in a header', rawHead: 'control-header' },
    { name: 'HTTP/0.9 style request', rawHead: 'http09' },
    { name: 'garbage request line', rawHead: 'garbage' },
    { name: 'request id with injection', path: '/health', anonymous: true, headers: { 'x-request-id': '"><script>alert(1)</script>' }, ok: true },
    { name: 'forwarded-for garbage', path: '/health', anonymous: true, headers: { 'x-forwarded-for': 'not-an-ip, ;;;' }, ok: true },
    { name: 'cross-site cookie POST', method: 'POST', path: '/Projects', anonymous: true, headers: { ...json, cookie: 'session=abc', origin: 'https://evil.example' }, body: '{"name":"x"}' },
    { name: 'null origin', method: 'POST', path: '/Projects', anonymous: true, headers: { ...json, cookie: 'session=abc', origin: 'null' }, body: '{"name":"x"}' },
    // Query strings
    list('sort injection', 'sort=name;DROP TABLE "Project"'),
    list('sort given twice', 'sort=name&sort=createdAt'),
    list('sort as an object', 'sort[a]=name'),
    list('sort by __proto__', 'sort=__proto__'),
    list('sort by a secret-looking field', 'sort=organizationId%22%20--'),
    list('order injection', "order=ASC'"),
    list('negative page', 'page=-1'),
    list('page zero', 'page=0'),
    list('page past safe integers', 'page=99999999999999999999'),
    { ...list('page far past the end', 'page=100000000'), ok: true },
    list('fractional limit', 'limit=1.5'),
    list('limit as words', 'limit=ten'),
    { ...list('limit huge (clamped)', 'limit=1000000'), ok: true },
    { ...list('search with wildcards and quotes', "search=%25_%5C'%22;--"), ok: true },
    list('search too long', `search=${'a'.repeat(5_000)}`),
    list('createdAfter not a date', 'createdAfter=0000-99-99'),
    list('unknown parameter', 'stauts=done'),
    list('filter syntax of another API', 'filter=token||eq||X'),
    list('__proto__ parameter', '__proto__=1'),
    list('constructor parameter', 'constructor=1'),
    list('hasOwnProperty parameter', 'hasOwnProperty=1'),
    list('unknown operator', 'name[like]=%25'),
    list('range on a text field', 'name[gte]=a'),
    list('empty operator', 'name[]=x'),
    list('nested operator', 'name[in][0]=x'),
    list('uuid filter not a uuid', "id=1' OR '1'='1"),
    list('too many in-values', `id[in]=${Array.from({ length: 101 }, () => '00000000-0000-0000-0000-000000000000').join(',')}`),
    list('boolean filter on text', 'name=true&name=false'),
    list('many parameters', Array.from({ length: 500 }, (_, n) => `p${n}=${n}`).join('&')),
    { ...list('filter by null name', 'name=null'), ok: true },
    list('date range not a date', 'dueAt[gte]=soon', '/Tasks'),
    list('status filter wrong value type on tasks', 'projectId=42', '/Tasks'),
    // Methods
    { name: 'TRACE', method: 'TRACE', path: '/Projects' },
    { name: 'PROPFIND', method: 'PROPFIND', path: '/Projects' },
    { name: 'DELETE on the collection', method: 'DELETE', path: '/Projects' },
    { name: 'PATCH on the collection', method: 'PATCH', path: '/Projects', headers: json, body: '{}' },
  ];
}

/** The head of a request no well-formed head can express. */
function oddHead(kind: string, port: number, token: string, organizationId: string): { head: string; body?: Buffer } {
  const auth = `Authorization: Bearer ${token}\r\nx-organization-id: ${organizationId}\r\n`;
  const host = `Host: 127.0.0.1:${port}\r\n`;
  switch (kind) {
    case 'twice':
      return { head: `GET /Projects HTTP/1.1\r\n${host}Authorization: Bearer ${token}\r\nx-organization-id: ${organizationId}\r\nx-organization-id: ${organizationId}\r\nConnection: close\r\n\r\n` };
    case 'smuggle':
      return { head: `POST /Projects HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`, body: Buffer.from('0\r\n\r\n') };
    case 'chunked': {
      const halves = ['{"name":', '"Chunked"}'].map((half) => `${Buffer.byteLength(half).toString(16)}\r\n${half}\r\n`);
      return { head: `POST /Projects HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`, body: Buffer.from(`${halves.join('')}0\r\n\r\n`) };
    }
    case 'short-body':
      return { head: `POST /Projects HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n`, body: Buffer.from('{"name":"x"}') };
    case 'negative-length':
      return { head: `POST /Projects HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nContent-Length: -5\r\nConnection: close\r\n\r\n` };
    case 'space-in-path':
      return { head: `GET /Pro jects HTTP/1.1\r\n${host}Connection: close\r\n\r\n` };
    case 'control-header':
      return { head: `GET /Projects HTTP/1.1\r\n${host}X-Bad: a\x01b\r\nConnection: close\r\n\r\n` };
    case 'http09':
      return { head: `GET /Projects\r\n\r\n` };
    case 'garbage':
      return { head: `\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 definitely not http\r\n\r\n` };
    default:
      throw new Error(`unknown raw head ${kind}`);
  }
}

describe.each(databaseKinds)('hostile input on the %s database', (kind) => {
  let backend: TestBackend;
  let owner: SignedUp;
  let port: number;
  let projectId: string;

  beforeAll(async () => {
    // A short request timeout, so that a request whose body never fully arrives is answered soon.
    backend = await startBackend(kind, { REQUEST_TIMEOUT_MS: '2000' });
    owner = await signUp(backend.url, 'target@example.com');
    port = Number(new URL(backend.url).port);
    projectId = (await owner.api('POST', '/Projects', { body: { name: 'Target' } })).body.data.id;
  });
  afterAll(() => backend?.stop());

  it('has at least 100 cases', () => {
    expect(hostileCases('x').length).toBeGreaterThanOrEqual(100);
  });

  it.each(hostileCases('00000000-0000-0000-0000-000000000000').map((hostile) => [hostile.name, hostile] as const))(
    '%s: a 4xx with the envelope or a correct 2xx, never a 5xx',
    async (_name, template) => {
      const hostile = hostileCases(projectId).find((candidate) => candidate.name === template.name)!;
      let answer: RawAnswer;
      if (hostile.rawHead) {
        const { head, body } = oddHead(hostile.rawHead, port, owner.token, owner.organizationId);
        answer = await sendRaw(port, head, body);
      } else {
        const body = hostile.body === undefined ? undefined : Buffer.from(hostile.body);
        const headers: Record<string, string> = {
          Host: `127.0.0.1:${port}`,
          Connection: 'close',
          ...(hostile.anonymous ? {} : { Authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId }),
          ...(body ? { 'Content-Length': String(body.length) } : {}),
          ...hostile.headers,
        };
        const head = `${hostile.method ?? 'GET'} ${hostile.path ?? '/'} HTTP/1.1\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join('\r\n')}\r\n\r\n`;
        answer = await sendRaw(port, head, body);
      }

      expect(answer.status, answer.body).toBeGreaterThanOrEqual(hostile.ok ? 200 : 400);
      expect(answer.status, answer.body).toBeLessThan(hostile.ok ? 300 : 500);
      const envelope = JSON.parse(answer.body);
      if (answer.status >= 400) {
        expect(envelope).toEqual({ success: false, error: expect.objectContaining({ code: expect.stringMatching(/^[A-Z_]+$/), message: expect.any(String) }) });
        // Nothing of the database or the stack leaks into a message.
        expect(answer.body).not.toMatch(/\bat \w+ \(|node_modules|SELECT |INSERT |syntax error|relation "/);
      } else {
        expect(envelope.success).toBe(true);
      }
    },
  );

  it('stays healthy, and the only records are the ones that were correct to create', async () => {
    expect((await fetch(`${backend.url}/health`)).status).toBe(200);
    expect((await fetch(`${backend.url}/ready`)).status).toBe(200);
    const list = await owner.api('GET', '/Projects?limit=100&sort=name&order=asc');
    expect(list.status).toBe(200);
    expect(list.body.data.map((project: { name: string }) => project.name)).toEqual(['Chunked', 'Duplicate', 'Target', 'With BOM', 'Zipped']);
  });
});
