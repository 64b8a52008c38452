import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

/**
 * A `fetch` that connects to an address the caller has already checked, never to a second
 * lookup's answer. `fetch` (undici) resolves the name itself when it connects, so a check made
 * before it is only as good as the name's next answer: a name that answers a public address to
 * the check and a private one to the connection (DNS rebinding) would reach the private network.
 * This one sends the request with node:http(s) and a `lookup` that answers the checked address;
 * TLS still verifies the certificate against the URL's name.
 *
 * For the backend's requests to addresses an organization typed (an identity provider's
 * discovery, token and keys endpoints, its metadata): small answers, no redirects followed (a
 * 3xx is handed back as it came), at most `maxBytes` read.
 */

export interface PinnedAddress {
  address: string;
  family: 4 | 6;
}

export interface PinnedRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | URLSearchParams | Uint8Array | ArrayBuffer | null;
  signal?: AbortSignal | null;
  /** The most of an answer's body read; a longer one fails the request. 1 MiB unless set. */
  maxBytes?: number;
}

/** An answer larger than the request allowed. */
export class AnswerTooLarge extends Error {
  override name = 'AnswerTooLarge';
}

const defaultMaxBytes = 1024 * 1024;
/** Statuses whose answer has no body (the Response constructor refuses one). */
const bodiless = new Set([101, 103, 204, 205, 304]);

function bodyBytes(body: PinnedRequest['body']): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof URLSearchParams) return Buffer.from(body.toString());
  return Buffer.from(body instanceof ArrayBuffer ? new Uint8Array(body) : body);
}

/** node:http(s)'s `lookup` that answers the checked address whatever the name: the connection goes there. */
export function pinnedLookup(address: PinnedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) (callback as (error: null, addresses: PinnedAddress[]) => void)(null, [address]);
    else callback(null, address.address, address.family);
  };
}

export function pinnedFetch(url: URL, address: PinnedAddress, request: PinnedRequest = {}): Promise<Response> {
  const lookup = pinnedLookup(address);
  const body = bodyBytes(request.body);
  const headers: Record<string, string | number> = { ...request.headers };
  if (body !== undefined) headers['content-length'] = body.length;
  if (request.body instanceof URLSearchParams && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) {
    headers['content-type'] = 'application/x-www-form-urlencoded;charset=UTF-8';
  }
  const maxBytes = request.maxBytes ?? defaultMaxBytes;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const outgoing = client.request(url, { method: request.method ?? 'GET', headers, lookup, signal: request.signal ?? undefined }, (answer) => {
      const chunks: Buffer[] = [];
      let size = 0;
      answer.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) answer.destroy(new AnswerTooLarge(`${url.host} answered more than ${maxBytes} bytes`));
        else chunks.push(chunk);
      });
      answer.on('error', reject);
      answer.on('end', () => {
        const status = answer.statusCode ?? 502;
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(answer.headers)) {
          for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) answerHeaders.append(name, one);
        }
        resolve(new Response(bodiless.has(status) ? null : Buffer.concat(chunks), { status, statusText: answer.statusMessage, headers: answerHeaders }));
      });
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}
