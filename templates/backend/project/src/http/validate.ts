import type { Request } from 'express';
import type { z } from 'zod';
import { badRequest, notFound, validationFailed } from './errors.js';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Numbered ids: 1 and up, within what a JavaScript number holds exactly. */
const positiveIntegerPattern = /^[1-9][0-9]{0,15}$/;

/**
 * A path id that is not of the entity's id type (a uuid, or a number for a table authstrap
 * add-auth found) cannot name a record: answer as for any unknown id.
 */
export function parseId(entity: string, id: string | string[] | undefined, idType: 'uuid' | 'integer' = 'uuid'): string {
  const valid =
    typeof id === 'string' &&
    (idType === 'uuid' ? uuidPattern.test(id) : positiveIntegerPattern.test(id) && Number.isSafeInteger(Number(id)));
  if (!valid) throw notFound(entity, String(id));
  return id.toLowerCase();
}

export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}

const hasBody = (req: Request) =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/**
 * Validates a JSON body against a schema: a body that is not JSON is a 400; one that does not fit
 * the schema is a 422 whose `details` names each failing field.
 */
export function parseBody<Schema extends z.ZodType>(entity: string, schema: Schema, req: Request): z.output<Schema> {
  if (req.body === undefined && hasBody(req)) {
    throw badRequest('Send the request body as JSON, with Content-Type: application/json');
  }
  const result = schema.safeParse(req.body ?? {});
  if (result.success) return result.data;

  throw validationFailed(`Invalid ${entity}`, detailsOf(result.error.issues, 'Unknown field', 'body'));
}

/** Validates a query string against a schema: one that does not fit is a 400 naming each parameter. */
export function parseQuery<Schema extends z.ZodType>(what: string, schema: Schema, query: unknown): z.output<Schema> {
  const result = schema.safeParse(query ?? {});
  if (result.success) return result.data;
  const details = detailsOf(result.error.issues, 'Unknown query parameter', 'query');
  throw badRequest(`Invalid query parameters for ${what}: ${Object.entries(details).map(([name, message]) => `${name}: ${message}`).join('; ')}`, details);
}

/** The `details` of an answer: each failing field (or unknown key) and its first message. */
function detailsOf(issues: z.core.$ZodIssue[], unknownKey: string, whole: string): Record<string, string> {
  const details: Record<string, string> = {};
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) details[[...issue.path, key].join('.')] = unknownKey;
    } else {
      details[issue.path.join('.') || whole] ??= issue.message;
    }
  }
  return details;
}
