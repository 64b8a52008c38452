import { limitCounting, type LimitName } from '../http/rate-limit.js';

/**
 * Every answer an operation can give, in the document: what each route says for itself (its 200,
 * its 404 "no such project", its 409) and, added here in one place, the errors that come from
 * the pipeline around it rather than from the route. Each is read from what the operation is:
 *
 * - 400 where it reads a body, query parameters or headers (malformed JSON, a bad value);
 * - 401 where it needs a caller (its security has no anonymous `{}` entry);
 * - 403 on every write (the CSRF guard: a cookie from another origin) and, outside /api/auth,
 *   wherever it needs a caller (the organization, a role, a machine key's permissions);
 * - 404 where its path has an id;
 * - 413, 415 and 422 where it reads a body (too large; an encoding or charset it cannot read;
 *   a field fails the schema);
 * - 429 where a rate limit counts it (http/rate-limit.ts says which: every path but the probes);
 * - 500 everywhere, and 503 where it waits on the database.
 *
 * An answer the route already lists keeps its own description; one without a body gets the error
 * envelope. The added ones are `components/responses`, so the document says each once. A route of
 * your own registered without an `operationId` gets one from its method and path.
 */

interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string }[];
  requestBody?: unknown;
  responses: Record<string, Answer>;
}
type Answer = { $ref: string } | { description: string; content?: Record<string, unknown>; headers?: Record<string, unknown> };
interface Document {
  security?: Record<string, string[]>[];
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown>; responses?: Record<string, Answer> };
}

const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const writes = new Set(['post', 'put', 'patch', 'delete']);
/** Answered before anything waits on the database (app.ts, openapi/docs.ts). */
const databaseFree = (path: string) => path === '/health' || path === '/api/docs' || path.startsWith('/api/docs/');

const errorEnvelope = { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } };
const retryAfter = {
  'Retry-After': { description: 'Seconds until the window ends', schema: { type: 'integer' } },
};

/** The shared answers, by name in components/responses. */
const sharedAnswers = {
  BadRequest: { description: 'BAD_REQUEST: malformed JSON, or a query parameter or header that is not valid (details names it)', content: errorEnvelope },
  Unauthorized: { description: 'UNAUTHORIZED: no valid session, key or token', content: errorEnvelope },
  Forbidden: { description: 'FORBIDDEN: not allowed to the caller (its organization, role or key), or a cross-site request with the session cookie', content: errorEnvelope },
  NotFound: { description: 'NOT_FOUND: no such record, or one the caller may not see', content: errorEnvelope },
  PayloadTooLarge: { description: 'PAYLOAD_TOO_LARGE: the body is larger than BODY_LIMIT (100kb by default)', content: errorEnvelope },
  UnsupportedMediaType: { description: 'UNSUPPORTED_MEDIA_TYPE: a Content-Encoding or charset the backend cannot read', content: errorEnvelope },
  ValidationError: { description: 'VALIDATION_ERROR: the body fails the schema; details names each field', content: errorEnvelope },
  TooManyLoginAttempts: { description: 'RATE_LIMITED: too many requests to /api/auth from this address (RATE_LIMIT_AUTH_MAX per RATE_LIMIT_AUTH_WINDOW_MS); RateLimit headers say more', headers: retryAfter, content: errorEnvelope },
  TooManySsoRequests: { description: 'RATE_LIMITED: too many single sign-on requests from this address (RATE_LIMIT_SSO_MAX per RATE_LIMIT_SSO_WINDOW_MS); RateLimit headers say more', headers: retryAfter, content: errorEnvelope },
  TooManyApiRequests: { description: 'RATE_LIMITED: too many requests to /api from this address (RATE_LIMIT_API_MAX per RATE_LIMIT_API_WINDOW_MS); RateLimit headers say more', headers: retryAfter, content: errorEnvelope },
  TooManyDataRequests: { description: 'RATE_LIMITED: too many requests from this session, or this address without one (RATE_LIMIT_DATA_MAX per RATE_LIMIT_DATA_WINDOW_MS); RateLimit headers say more', headers: retryAfter, content: errorEnvelope },
  InternalError: { description: 'INTERNAL_ERROR: an unexpected failure, logged with the request id (never its details here)', content: errorEnvelope },
  ServiceUnavailable: {
    description: 'SERVICE_UNAVAILABLE: the database did not answer in time, or is failing over (a standby took no write); send the request again after Retry-After, a write with the same Idempotency-Key',
    headers: { 'Retry-After': { description: 'Seconds to wait before sending the request again', schema: { type: 'integer' } } },
    content: errorEnvelope,
  },
} satisfies Record<string, Answer>;
type SharedAnswer = keyof typeof sharedAnswers;

const tooMany: Record<LimitName, SharedAnswer> = { auth: 'TooManyLoginAttempts', sso: 'TooManySsoRequests', api: 'TooManyApiRequests', data: 'TooManyDataRequests' };

/** The pipeline's answers to one operation, by status. */
function pipelineAnswers(document: Document, path: string, method: string, operation: Operation): [string, SharedAnswer][] {
  const security = operation.security ?? document.security ?? [];
  const needsCaller = security.length > 0 && !security.some((requirement) => Object.keys(requirement).length === 0);
  const readsInput = Boolean(operation.requestBody) || (operation.parameters ?? []).some((parameter) => parameter.in !== 'path');
  const limit = limitCounting(method.toUpperCase(), path);
  const answers: [string, SharedAnswer | false][] = [
    ['400', readsInput && 'BadRequest'],
    ['401', needsCaller && 'Unauthorized'],
    ['403', (writes.has(method) || (needsCaller && !path.startsWith('/api/auth/'))) && 'Forbidden'],
    ['404', path.includes('{') && 'NotFound'],
    ['413', Boolean(operation.requestBody) && 'PayloadTooLarge'],
    ['415', Boolean(operation.requestBody) && 'UnsupportedMediaType'],
    ['422', Boolean(operation.requestBody) && 'ValidationError'],
    ['429', limit !== undefined && tooMany[limit]],
    ['500', 'InternalError'],
    ['503', !databaseFree(path) && 'ServiceUnavailable'],
  ];
  return answers.filter((answer): answer is [string, SharedAnswer] => answer[1] !== false);
}

/** `get /reports/{id}/lines` -> getReportsByIdLines: stable while the route is, if not pretty. */
function operationIdOf(method: string, path: string): string {
  const words = path.split('/').flatMap((segment) => (segment.startsWith('{') ? ['by', segment.slice(1, -1)] : segment.split(/[^A-Za-z0-9]+/)));
  return method + words.filter(Boolean).map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
}

/** Completes the answers of every operation in `document` (in place) and returns it. */
export function completeAnswers<D extends object>(document: D): D {
  const doc = document as Document;
  const used = new Set<SharedAnswer>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (!methods.includes(method)) continue;
      operation.operationId ??= operationIdOf(method, path);
      for (const [status, answer] of Object.entries(operation.responses)) {
        // A route's own error, described by it: the envelope is its body.
        if (Number(status) >= 400 && !('$ref' in answer) && !answer.content) answer.content = errorEnvelope;
      }
      for (const [status, name] of pipelineAnswers(doc, path, method, operation)) {
        if (operation.responses[status]) continue;
        operation.responses[status] = { $ref: `#/components/responses/${name}` };
        used.add(name);
      }
      // Statuses in order, as a reader scans them.
      operation.responses = Object.fromEntries(Object.entries(operation.responses).sort(([a], [b]) => a.localeCompare(b)));
    }
  }
  const components = (doc.components ??= {});
  components.responses = { ...components.responses, ...Object.fromEntries([...used].sort().map((name) => [name, sharedAnswers[name]])) };
  return document;
}
