import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { DatabaseUnavailableError, hasSqlState } from '../db/database.js';
import { keyColumnsByConstraint } from '../generated/constraints.js';
import { ReplayedAnswer } from '../idempotency/keyed-write.js';
import { sendError } from './envelope.js';

/**
 * An error that becomes a response: its status, machine-readable code and message. A 429 or 503
 * says when to come back (`Retry-After`): `retryAfterSeconds`, or the default below;
 * 'database-wait' is the time a request waits for a database connection (errorHandler's setting).
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, string>,
    readonly retryAfterSeconds?: number | 'database-wait',
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const badRequest = (message: string, details?: Record<string, string>) =>
  new HttpError(400, 'BAD_REQUEST', message, details);
export const forbidden = (message: string) => new HttpError(403, 'FORBIDDEN', message);
export const notFound = (entity: string, id: string) =>
  new HttpError(404, 'NOT_FOUND', `${entity} with id '${id}' not found`);
export const validationFailed = (message: string, details: Record<string, string>) =>
  new HttpError(422, 'VALIDATION_ERROR', message, details);
/** A 429: `retryAfterSeconds` is when the limit that refused it lets the caller in again. */
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new HttpError(429, 'RATE_LIMITED', message, undefined, retryAfterSeconds);

/** What a PostgreSQL error (from `pg` or PGlite) looks like. */
interface DatabaseError {
  code: string;
  detail?: string;
  constraint?: string;
}

/** `Key ("organizationId", name)=(...)` -> the user-facing column names, without the tenant column. */
function keyColumns(detail = ''): string[] {
  const match = /^Key \((.*?)\)=/.exec(detail);
  if (!match) return [];
  return match[1]!
    .split(',')
    // A unique index of lower(column) names its expression: `lower(email::text)`.
    .map((column) => column.trim().replace(/^lower\((.*?)(::\w+)?\)$/, '$1').replace(/^"|"$/g, ''))
    .filter((column) => column !== 'organizationId');
}

/**
 * Turns a constraint the database enforced into the client's error. Everything else from the
 * database is an internal error: its text (SQL, values, driver messages) never reaches a client.
 */
function fromDatabaseError(error: DatabaseError): HttpError | undefined {
  const detailed = keyColumns(error.detail);
  const columns = detailed.length > 0 || error.constraint === undefined ? detailed : [...(keyColumnsByConstraint[error.constraint] ?? [])];
  switch (error.code) {
    case '23505':
      return new HttpError(409, 'CONFLICT', `A record with the same ${columns.join(', ') || 'key'} already exists`);
    case '23503':
      if (error.detail?.includes('is still referenced')) {
        return new HttpError(409, 'CONFLICT', 'This record is still referenced by other records; delete or update those first');
      }
      return validationFailed(
        'A referenced record does not exist',
        Object.fromEntries((columns.length ? columns : ['reference']).slice(0, 1).map((column) => [column, 'No such record in this organization'])),
      );
    case '23502':
    case '23514':
      return validationFailed('A value breaks a rule of this table', {});
    // A failover's window: the node this connection reached is stopping, starting, crashed, or
    // is (or has become) a standby that takes no writes. The next attempt gets a new connection,
    // which the proxy in front (HAProxy on Patroni's /primary) sends to the new primary.
    case '57P01': // the server is shutting down
    case '57P02': // ... or crashed, and ends every connection
    case '57P03': // ... or is not yet accepting connections
    case '25006': // a standby: "cannot execute INSERT in a read-only transaction"
      return databaseUnavailable(failoverRetrySeconds);
    // Transient conflicts PostgreSQL asks the client to retry.
    case '40001': // serialization failure
    case '40P01': // deadlock detected
    case '55P03': // a lock not available within lock_timeout
      return databaseUnavailable(failoverRetrySeconds);
    // Waits that ran out: a new attempt would wait as long again.
    case '53300': // too many connections
    case '57014': // a statement ran past DATABASE_QUERY_TIMEOUT_MS
    case '25P03': // a transaction sat idle past its timeout
      return databaseUnavailable(waitRetry);
  }
  // Class 08: the connection failed.
  if (error.code.startsWith('08')) return databaseUnavailable(failoverRetrySeconds);
  if (error.code.startsWith('22')) {
    return badRequest('A value could not be stored: check its type and range');
  }
  return undefined;
}

/** body-parser's errors carry a `type`; each becomes a 4xx with a plain message. */
function fromBodyParserError(error: { type?: string; status?: number; limit?: number }): HttpError | undefined {
  switch (error.type) {
    case 'entity.verify.failed':
      return badRequest('The request body is not valid UTF-8');
    case 'entity.parse.failed':
      return badRequest('Malformed JSON in request body');
    case 'entity.too.large':
      return new HttpError(413, 'PAYLOAD_TOO_LARGE', `Request body is larger than the limit of ${error.limit} bytes`);
    case 'encoding.unsupported':
      return new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Encoding; send the body as is, or gzip, deflate or br compressed');
    case 'charset.unsupported':
      return new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported charset; send UTF-8 JSON');
    case 'request.aborted':
    case 'request.size.invalid':
      return badRequest('The request body was incomplete');
  }
  return undefined;
}

/**
 * `Retry-After` of a 503 from the database. A connection that broke or reached a node that takes
 * no writes is retried soon: a failover moves the primary in seconds (docs/deploy.md, "High
 * availability"), and each attempt is cheap. A wait that ran out (no connection free in
 * DATABASE_CONNECT_TIMEOUT_MS, a statement past its timeout) is retried after about that wait
 * (`waitRetry`, the error handler's setting), when the pool can next be expected to have room.
 */
const failoverRetrySeconds = 1;
const waitRetry = 'database-wait';

const databaseUnavailable = (retryAfterSeconds: number | 'database-wait') =>
  new HttpError(503, 'SERVICE_UNAVAILABLE', 'The database is not available right now; try again shortly', undefined, retryAfterSeconds);

/** When a refusal without a value of its own says to come back: a 429's window is unknown here, a 503's is short. */
const defaultRetryAfterSeconds: Record<number, number> = { 429: 60, 503: 1 };

/**
 * Every 429 and 503 says when to come back, as RFC 9110 lets it: a client can then tell a failover
 * from a fault. So does any other refusal that knows (a 409 of a keyed write still running).
 */
function setRetryAfter(res: Response, error: HttpError, waitSeconds: number): void {
  const fallback = defaultRetryAfterSeconds[error.status];
  if ((fallback === undefined && error.retryAfterSeconds === undefined) || res.headersSent || res.getHeader('Retry-After') !== undefined) return;
  const seconds = error.retryAfterSeconds === waitRetry ? waitSeconds : (error.retryAfterSeconds ?? fallback);
  res.setHeader('Retry-After', String(seconds));
}

/**
 * Any other error a parser or middleware raised with a 4xx status (http-errors style: a broken
 * gzip body, a bad percent-escape in the path, a static file path that escapes its folder) keeps
 * its status and gets the envelope, with a message of ours: theirs may echo the input.
 */
const clientStatuses: Record<number, [code: string, message: string]> = {
  400: ['BAD_REQUEST', 'The request could not be read: check its path, headers and body'],
  401: ['UNAUTHORIZED', 'The request could not be handled'],
  403: ['FORBIDDEN', 'Forbidden'],
  404: ['NOT_FOUND', 'Not found'],
  405: ['METHOD_NOT_ALLOWED', 'The request could not be handled'],
  409: ['CONFLICT', 'The request could not be handled'],
  413: ['PAYLOAD_TOO_LARGE', 'The request body is too large'],
  414: ['URI_TOO_LONG', 'The request could not be handled'],
  415: ['UNSUPPORTED_MEDIA_TYPE', 'Unsupported body encoding; send JSON, optionally gzip, deflate or br compressed'],
  431: ['REQUEST_HEADER_FIELDS_TOO_LARGE', 'The request could not be handled'],
};

function fromClientStatusError(error: { status?: unknown; statusCode?: unknown }): HttpError | undefined {
  const status = Number(error?.status ?? error?.statusCode);
  if (!Number.isInteger(status) || status < 400 || status > 499) return undefined;
  const [code, message] = clientStatuses[status] ?? ['BAD_REQUEST', 'The request could not be handled'];
  return new HttpError(status, code, message);
}

/** A connection that could not be had in time waits again; one that broke or was refused is retried soon. */
const unavailableRetrySeconds = (error: DatabaseUnavailableError) =>
  /timeout|timed out/i.test(String((error.cause as Error)?.message)) ? waitRetry : failoverRetrySeconds;

export interface ErrorHandlerSettings {
  /** How long a request waits for the database before its 503 (DATABASE_CONNECT_TIMEOUT_MS): such a 503's Retry-After. */
  databaseWaitMs?: number;
  /**
   * The 403 of a sign-in the database refused (SQLSTATE AS403, the sign-in rule's triggers: on
   * Better Auth's path through the service API too), from the error's DETAIL: the verdict
   * (src/auth/sign-in-policy.ts, refusalOfDatabaseError). Without it, a plain 403.
   */
  signInRefusal?: (detail: string | undefined) => HttpError;
}

/** SQLSTATE of a refused sign-in (class AS: authstrap's own). */
const signInRefused = 'AS403';

/** The last handler: every error becomes the envelope. */
export const errorHandler = ({ databaseWaitMs = 5000, signInRefusal = () => forbidden('Sign-in refused') }: ErrorHandlerSettings = {}): ErrorRequestHandler => {
  const waitSeconds = Math.max(1, Math.ceil(databaseWaitMs / 1000));
  return (error, req, res, _next) => answerError(error, req, res, waitSeconds, signInRefusal);
};

function answerError(error: Parameters<ErrorRequestHandler>[0], req: Request, res: Response, waitSeconds: number, signInRefusal: NonNullable<ErrorHandlerSettings['signInRefusal']>): void {
  if (error instanceof ReplayedAnswer) return replay(res, error);
  const known =
    error instanceof HttpError
      ? error
      : (fromBodyParserError(error) ??
        (error instanceof DatabaseUnavailableError ? databaseUnavailable(unavailableRetrySeconds(error)) : undefined) ??
        (hasSqlState(error) ? (error.code === signInRefused ? signInRefusal(error.detail) : fromDatabaseError(error)) : undefined) ??
        fromClientStatusError(error));

  if (known) setRetryAfter(res, known, waitSeconds);
  if (known && known.status < 500) {
    sendError(res, known.status, known.code, known.message, known.details);
    return;
  }
  req.log.error({ err: error }, 'request failed');
  if (res.headersSent) return;
  if (known) {
    sendError(res, known.status, known.code, known.message);
    return;
  }
  sendError(res, 500, 'INTERNAL_ERROR', `Internal server error (request id ${String(req.id)})`);
}

/** A repeat of a keyed write gets the first answer again, byte for byte, marked as such (Stripe's header). */
function replay(res: Response, answer: ReplayedAnswer): void {
  res.statusCode = answer.status;
  res.setHeader('Idempotent-Replayed', 'true');
  if (answer.setCookie) res.setHeader('Set-Cookie', answer.setCookie);
  if (answer.body === '') {
    res.end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(answer.body)));
  res.end(answer.body);
}

export const unknownRoute: RequestHandler = (req, res) => {
  sendError(res, 404, 'NOT_FOUND', `No route for ${req.method} ${req.path}`);
};
