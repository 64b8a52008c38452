import { AsyncResource } from 'node:async_hooks';
import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { badRequest, HttpError } from './errors.js';

/**
 * The request body as JSON (`req.body`), read by express.json (body-parser) with our limits: a
 * body that is not valid UTF-8 is refused, and only JSON objects and arrays are bodies.
 *
 * What almost every write sends, a JSON body of announced length, plain, no larger than the
 * limit, is read here instead, with the same outcome: body-parser's general path (a charset
 * looked up in iconv and decoded through it, the body handed through raw-body's stream checks,
 * http-errors made for its errors) is a twentieth of a write's work (bench/README.md, issue 32).
 * Everything else (compressed bodies, other charsets, chunked uploads, a length past the limit,
 * other media types) goes through express.json as before, and a request whose headers announce
 * no body goes straight on.
 */
export function jsonBody(limit: string): RequestHandler {
  const parser = express.json({ limit, verify: refuseInvalidUtf8 });
  const limitBytes = byteSize(limit);
  return (req, res, next) => {
    const { headers } = req;
    if (headers['transfer-encoding'] === undefined && headers['content-length'] === undefined) return next();
    const length = plainJsonLength(headers, limitBytes);
    if (length === undefined) return parser(req, res, next);
    readPlainJson(req, length, next);
  };
}

/**
 * Given to express.json as `verify`: a body that is not valid UTF-8 is refused, instead of its
 * bad bytes being stored as U+FFFD replacement characters (the data would be silently changed).
 */
export function refuseInvalidUtf8(_req: unknown, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) throw invalidUtf8();
}

const invalidUtf8 = () => new HttpError(400, 'BAD_REQUEST', 'The request body is not valid UTF-8');
const malformed = () => badRequest('Malformed JSON in request body');

/** `100kb` -> 102400, as body-parser reads BODY_LIMIT (config.ts allows digits and b, kb or mb). */
export function byteSize(size: string): number {
  const match = /^(\d+)(b|kb|mb)?$/i.exec(size);
  if (!match) throw new Error(`not a size like 100kb: ${size}`);
  const unit = (match[2] ?? 'b').toLowerCase();
  return Number(match[1]) * (unit === 'mb' ? 1024 * 1024 : unit === 'kb' ? 1024 : 1);
}

const plainJsonTypes = new Set(['application/json', 'application/json; charset=utf-8', 'application/json;charset=utf-8']);

/** The announced length of a plain JSON body within the limit; undefined for anything express.json must look at. */
export function plainJsonLength(headers: import('node:http').IncomingHttpHeaders, limitBytes: number): number | undefined {
  const type = headers['content-type'];
  const declared = headers['content-length'];
  if (type === undefined || declared === undefined || headers['transfer-encoding'] !== undefined) return undefined;
  if (headers['content-encoding'] !== undefined && headers['content-encoding'].toLowerCase() !== 'identity') return undefined;
  if (!plainJsonTypes.has(type.toLowerCase())) return undefined;
  // Node has checked Content-Length is digits; its value decides only whether this path may read it.
  const length = Number(declared);
  return length <= limitBytes ? length : undefined;
}

/** Reads `length` bytes of UTF-8 JSON from `req` into req.body, as express.json would with our options. */
function readPlainJson(req: import('express').Request, length: number, next: (error?: unknown) => void): void {
  // Usually the whole request came in one packet, and by the time an earlier middleware has
  // awaited once Node's parser has put all of the body in the stream's buffer (it never puts more
  // than Content-Length there): take it from there, without the stream's events and their turns
  // of the event loop.
  if (req.readableLength === length) {
    const buffered = length === 0 ? Buffer.alloc(0) : (req.read() as Buffer);
    return next(bodyError(buffered, length) ?? parsedInto(req, buffered));
  }
  const chunks: Buffer[] = [];
  let done = false;
  // The request's stream calls back in its own async context: the rest of the pipeline must run
  // in the middleware's (the request's trace span, as raw-body keeps it for express.json).
  const proceed = AsyncResource.bind(next);
  const finish = (error?: unknown) => {
    if (done) return;
    done = true;
    proceed(error);
  };
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  // A client that closes before the announced length was sent.
  const incomplete = () => finish(badRequest('The request body was incomplete'));
  req.on('error', incomplete);
  req.on('close', () => {
    if (!req.complete) incomplete();
  });
  req.on('end', () => {
    if (done) return;
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
    finish(bodyError(body, length) ?? parsedInto(req, body));
  });
}

/** What is wrong with a body read whole, or undefined: cut short, or not UTF-8. */
function bodyError(body: Buffer, length: number): HttpError | undefined {
  if (body.length !== length) return badRequest('The request body was incomplete');
  if (!isUtf8(body)) return invalidUtf8();
  return undefined;
}

/** Parses the body into req.body: undefined when it is JSON, the 400 to answer when it is not. */
function parsedInto(req: import('express').Request, body: Buffer): HttpError | undefined {
  try {
    req.body = parseStrictJson(body.toString('utf8'));
    return undefined;
  } catch {
    return malformed();
  }
}

/**
 * body-parser's strict JSON: an empty body is `{}`, anything but an object or an array is
 * refused, and a byte order mark before it is dropped (as iconv's UTF-8 decoder does).
 */
export function parseStrictJson(text: string): unknown {
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (json.length === 0) return {};
  const first = /^[\x20\x09\x0a\x0d]*([^\x20\x09\x0a\x0d]|$)/.exec(json)?.[1];
  if (first !== '{' && first !== '[') throw new SyntaxError('JSON bodies are objects or arrays');
  return JSON.parse(json);
}
