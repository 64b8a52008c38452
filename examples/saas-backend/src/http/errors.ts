import type { ErrorRequestHandler, RequestHandler } from 'express';
import { sendError } from './envelope.js';

/** An error that becomes a response: its status, machine-readable code and message. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, string>,
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

/** What a PostgreSQL error (from `pg` or PGlite) looks like. */
interface DatabaseError {
  code: string;
  detail?: string;
}

const isDatabaseError = (error: unknown): error is DatabaseError =>
  typeof error === 'object' && error !== null && typeof (error as DatabaseError).code === 'string' && /^[0-9A-Z]{5}$/.test((error as DatabaseError).code);

/** `Key ("organizationId", name)=(...)` -> the user-facing column names, without the tenant column. */
function keyColumns(detail = ''): string[] {
  const match = /^Key \(([^)]*)\)/.exec(detail);
  if (!match) return [];
  return match[1]!
    .split(',')
    .map((column) => column.trim().replace(/^"|"$/g, ''))
    .filter((column) => column !== 'organizationId');
}

/**
 * Turns a constraint the database enforced into the client's error. Everything else from the
 * database is an internal error: its text (SQL, values, driver messages) never reaches a client.
 */
function fromDatabaseError(error: DatabaseError): HttpError | undefined {
  const columns = keyColumns(error.detail);
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
    case '57P01':
    case '57P03':
    case '53300':
      return new HttpError(503, 'SERVICE_UNAVAILABLE', 'The database is not available right now; try again shortly');
  }
  if (error.code.startsWith('22')) {
    return badRequest('A value could not be stored: check its type and range');
  }
  return undefined;
}

/** body-parser's errors carry a `type`; each becomes a 4xx with a plain message. */
function fromBodyParserError(error: { type?: string; status?: number; limit?: number }): HttpError | undefined {
  switch (error.type) {
    case 'entity.parse.failed':
      return badRequest('Malformed JSON in request body');
    case 'entity.too.large':
      return new HttpError(413, 'PAYLOAD_TOO_LARGE', `Request body is larger than the limit of ${error.limit} bytes`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return badRequest('Unsupported body encoding; send UTF-8 JSON');
    case 'request.aborted':
    case 'request.size.invalid':
      return badRequest('The request body was incomplete');
  }
  return undefined;
}

const connectionErrors = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND'];

export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const known =
    error instanceof HttpError
      ? error
      : (fromBodyParserError(error) ??
        (isDatabaseError(error) ? fromDatabaseError(error) : undefined) ??
        (connectionErrors.includes(error?.code)
          ? new HttpError(503, 'SERVICE_UNAVAILABLE', 'The database is not available right now; try again shortly')
          : undefined));

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
};

export const unknownRoute: RequestHandler = (req, res) => {
  sendError(res, 404, 'NOT_FOUND', `No route for ${req.method} ${req.path}`);
};
