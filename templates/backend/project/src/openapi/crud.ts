import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { defaultPageSize, maxPageSize, typeHint, type ListField, type ListSpec } from '../http/list-fields.js';
import { listParameters, operatorsFor } from '../http/list-query.js';
import { maxWhereClauses, whereOperators } from '../http/service-query.js';
import { completeAnswers } from './answers.js';

/** How one entity's routes look, for the OpenAPI document. */
export interface CrudRoutes {
  entity: string;
  /** `/Projects` */
  path: string;
  tenantScoped: boolean;
  /** A uuid, or a number the database assigns (a table authstrap add-auth found). */
  idType: 'uuid' | 'integer';
  output: z.ZodType;
  createInput: z.ZodType;
  replaceInput: z.ZodType;
  updateInput: z.ZodType;
  /** Sorting, filters and search: the same description the list query reads. */
  list: ListSpec;
  /**
   * A create that is not a plain insert (a user's POST /members and POST /Users send an
   * invitation): its own body and answer. With the service API, the service key's plain insert
   * (201) is documented beside it.
   */
  create?: { summary: string; input: z.ZodType; output: z.ZodType; status: number };
  /** An organization's machine keys (`x-api-key`) reach these routes, as their permissions say. */
  machineKeys?: boolean;
  /** A signed-in user's writes take an Idempotency-Key (idempotency/held-transaction.ts), without machine keys. */
  keyedWrites?: boolean;
  /** Also reachable as `/<parents>/{parentId}/<children>`. */
  nested?: { path: string; parentParam: string; parentEntity: string; createInput: z.ZodType };
  /** On the entities the trusted server (the service key) manages: the body of its update-many. */
  serviceApi?: { updateInput: z.ZodType };
  /**
   * The routes a signed-in user may call (default: all); the others are the service key's, and
   * documented as such (`verification`: none; `account`: list and read; `session`: and delete).
   */
  userOperations?: CrudOperation[];
}

export type CrudOperation = 'list' | 'create' | 'read' | 'replace' | 'update' | 'delete';

const ErrorEnvelope = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.string().meta({ example: 'VALIDATION_ERROR' }),
      message: z.string(),
      details: z.record(z.string(), z.string()).optional(),
    }),
  })
  // components/schemas/ErrorEnvelope: every entity's 404 uses it, and openapi/answers.ts refers to it.
  .meta({ id: 'ErrorEnvelope' });

const ListMeta = z
  .object({ page: z.int(), limit: z.int(), total: z.int(), totalPages: z.int() })
  .meta({ id: 'ListMeta' });

const errorResponse = (description: string): ResponseConfig => ({
  description,
  content: { 'application/json': { schema: ErrorEnvelope } },
});
const jsonBody = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
const dataEnvelope = (description: string, data: z.ZodType) => ({
  description,
  content: { 'application/json': { schema: z.object({ success: z.literal(true), data }) } },
});

const organizationHeader = z.object({
  'x-organization-id': z
    .uuid()
    .optional()
    .meta({ description: "The organization (tenant) the request acts in; without it, the session's active organization (POST /api/auth/organization/set-active)" }),
});
/** On the writes of the routes behind tenantScoped (src/idempotency/). */
export const idempotencyKeyHeader = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({
      description:
        'A key of your choosing (a UUID) that makes the write safe to send again: a repeat with the same key, method, path and body gets the first answer ' +
        '(header Idempotent-Replayed: true) and changes nothing; the same key with another request is a 422 (IDEMPOTENCY_KEY_REUSED); a repeat while the first ' +
        'is still running waits for it, or gets a 409 with Retry-After. Kept per caller and organization for IDEMPOTENCY_KEY_HOURS (24). Answers of 400 or more are not kept.',
    }),
});
/** The Idempotency-Key header as `idempotencyKeyHeader` has it, described for other callers. */
const keyHeaderSaying = (description: string) => z.object({ 'Idempotency-Key': idempotencyKeyHeader.shape['Idempotency-Key'].meta({ description }) });
/** On the trusted server's writes (the service API): the same, under the service key's own keys. */
const serviceIdempotencyKeyHeader = keyHeaderSaying(
  'Service key: a key of your choosing (a UUID) that makes the write safe to send again, as on the tenant routes (a repeat gets the first answer, ' +
  'Idempotent-Replayed: true; another request with the key is a 422; a repeat while the first runs waits, or gets a 409 with Retry-After). ' +
  "The service key's keys are its own, kept for IDEMPOTENCY_KEY_HOURS (24). Refused (400) inside a transaction (x-authstrap-transaction).",
);
/** On the built-in entities' writes, which a signed-in user and the service key both make. */
const builtInIdempotencyKeyHeader = keyHeaderSaying(
  'A key of your choosing (a UUID) that makes the write safe to send again: a repeat gets the first answer (Idempotent-Replayed: true) and changes nothing; ' +
  'another request with the key is a 422; a repeat while the first runs waits, or gets a 409 with Retry-After. Kept for IDEMPOTENCY_KEY_HOURS (24): ' +
  "a signed-in user's keys are their own (on /members, theirs in the organization), the service key's its own. Answers of 400 or more are not kept. " +
  'Service key: refused (400) inside a transaction (x-authstrap-transaction).',
);

/** On the writes of /api/auth, made signed in or not (sign-up, sign-in). */
const authIdempotencyKeyHeader = keyHeaderSaying(
  'A key of your choosing (a UUID) that makes the write safe to send again: a repeat gets the first answer, its cookies included (Idempotent-Replayed: true), ' +
  'and changes nothing (one account, one session, one membership); another request with the key is a 422; a repeat while the first runs waits, or gets a 409 ' +
  "with Retry-After. Kept for IDEMPOTENCY_KEY_HOURS (24): a signed-in user's keys are their own; without a session, keys are every anonymous caller's, " +
  'so choose one nobody else would. An answer of 400 or more is not kept: the key is free again.',
);

/**
 * `registry` for the routes of /api/auth, whose every write takes an Idempotency-Key
 * (idempotency/held-transaction.ts): each POST, PUT, PATCH and DELETE registered through it
 * declares the header.
 */
export function withIdempotencyKeyOnWrites(registry: OpenAPIRegistry): OpenAPIRegistry {
  const keyed = Object.create(registry) as OpenAPIRegistry;
  keyed.registerPath = (route) => {
    if (route.method === 'get' || route.method === 'head') return registry.registerPath(route);
    const headers = route.request?.headers;
    const extended = headers instanceof z.ZodObject ? headers.extend(authIdempotencyKeyHeader.shape) : authIdempotencyKeyHeader;
    return registry.registerPath({ ...route, request: { ...route.request, headers: extended } });
  };
  return keyed;
}

const idParam = (entity: string, idType: CrudRoutes['idType']) =>
  z.object({ id: (idType === 'uuid' ? z.uuid() : z.int().min(1)).meta({ description: `The ${entity}'s id` }) });

const operatorMeaning = { eq: 'equal to', ne: 'not equal to', in: 'one of (comma-separated)', gt: 'greater than', gte: 'at least', lt: 'less than', lte: 'at most' };

/** `?name=`, `?name[ne]=`, `?name[in]=` and, on numbers and dates, the ranges: one parameter each. */
function filterParameters(fields: Readonly<Record<string, ListField>>): Record<string, z.ZodType> {
  const parameters: Record<string, z.ZodType> = {};
  for (const [name, field] of Object.entries(fields)) {
    for (const operator of operatorsFor(field)) {
      const parameter = operator === 'eq' && !(listParameters as readonly string[]).includes(name) ? name : `${name}[${operator}]`;
      const values = field.values ? `one of ${field.values.join(', ')}` : typeHint[field.type];
      const orNull = field.nullable && (operator === 'eq' || operator === 'ne') ? ', or null' : '';
      parameters[parameter] = z.string().optional().meta({ description: `Only records whose ${name} is ${operatorMeaning[operator]} this value (${values}${orNull})` });
    }
  }
  return parameters;
}

const whereDescription =
  'Trusted server (service key) only. URL-encoded JSON: an array of up to ' +
  `${maxWhereClauses} clauses { field, operator?, value, connector?, mode? }. operator: ${whereOperators.join(', ')} ` +
  '(default eq); value typed as the field, an array for in / not_in, null with eq / ne for IS (NOT) NULL; ' +
  "connector AND (default) or OR: every AND clause must hold and, if there are OR clauses, one of them; mode 'insensitive' " +
  'compares text case-insensitively. Dates compare at millisecond precision.';

const whereParameter = () => z.string().optional().meta({ description: whereDescription, example: '[{"field":"email","value":"ada@example.com"}]' });

/** A write by filter: a where with at least one clause, or all=true (and no where) for every record. */
const writeFilterQuery = () =>
  z.object({
    where: whereParameter().meta({ description: `Required unless all=true. ${whereDescription}` }),
    all: z.enum(['true']).optional().meta({ description: 'Every record, on purpose: send all=true and no where' }),
  });

function listQuery({ list, serviceApi }: CrudRoutes) {
  const visible = Object.fromEntries(Object.entries(list.fields).filter(([, field]) => !field.secret));
  return z.object({
    page: z.int().min(1).optional().meta({ description: '1-based page number', example: 1 }),
    limit: z.int().min(1).max(maxPageSize).optional().meta({ description: `Page size, ${defaultPageSize} by default; clamped to 1-${maxPageSize}` }),
    sort: z.enum(Object.keys(visible) as [string, ...string[]]).optional().meta({ description: `Field to order by (default ${list.defaultSort})` }),
    order: z.enum(['asc', 'desc']).optional().meta({ description: 'Direction (default desc)' }),
    ...(list.createdAtColumn !== null ? { createdAfter: z.string().optional().meta({ description: 'Only records created at or after this date/time' }) } : {}),
    ...(list.searchColumns.length > 0 ? { search: z.string().optional().meta({ description: 'Case-insensitive substring match' }) } : {}),
    ...(serviceApi
      ? {
          offset: z.int().min(0).optional().meta({ description: 'Trusted server (service key) only: rows to skip, instead of page' }),
          where: whereParameter(),
          join: z
            .string()
            .optional()
            .meta({
              description:
                'Trusted server (service key) only: related records to embed in each row, as URL-encoded JSON: {"user": {"entity": "User", "from": "userId", "to": "id", "relation": "one-to-one"}}; one-to-many (the default) embeds up to `limit` (100) records',
            }),
        }
      : {}),
    ...filterParameters(visible),
  });
}

/** A session, the service key, or a machine key of the organization: who may call a route of your own entities. */
const withMachineKey: Record<string, string[]>[] = [{ bearer: [] }, { sessionCookie: [] }, { machineKey: [] }];

/** `/user-settings` -> `UserSettings`, `account` -> `Account`: the words of a name or path, each capitalised. */
const pascalCase = (name: string) =>
  name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('');

/** Describes the generic routes of one entity: list, create, read, replace, update, delete. */
export function registerCrudRoutes(registry: OpenAPIRegistry, routes: CrudRoutes): void {
  const tags = [routes.entity];
  const scoped = routes.tenantScoped ? { headers: organizationHeader } : {};
  // Every write keeps a keyed write's answer: the routes behind tenantScoped (the ones machine keys
  // reach), and the others for a signed-in user (idempotency/held-transaction.ts) and the service key.
  const writeHeaders = routes.machineKeys
    ? { headers: organizationHeader.extend(idempotencyKeyHeader.shape) }
    : routes.serviceApi
      ? { headers: (routes.tenantScoped ? organizationHeader : z.object({})).extend(builtInIdempotencyKeyHeader.shape) }
      : routes.keyedWrites
        ? { headers: (routes.tenantScoped ? organizationHeader : z.object({})).extend(idempotencyKeyHeader.shape) }
        : scoped;
  const serviceWriteHeaders = { headers: serviceIdempotencyKeyHeader };
  // The pipeline's answers (400, 401, 413, 422, 429, 500...) are added by openapi/answers.ts.
  const scopedErrors: Record<number, ResponseConfig> = routes.tenantScoped
    ? { 400: errorResponse('Bad request (malformed JSON, parameters or x-organization-id)'), 403: errorResponse('Not allowed in this organization') }
    : {};
  if (routes.machineKeys) {
    scopedErrors[403] = errorResponse('Not allowed in this organization; for a machine key, another organization or an operation beyond its permissions');
    scopedErrors[429] = errorResponse("A machine key's own rate limit (Retry-After says when) or its quota is used up (code RATE_LIMITED)");
  }
  const itemPath = `${routes.path}/{id}`;
  const listResponse = {
    description: `A page of ${routes.entity} records`,
    content: {
      'application/json': {
        schema: z.object({ success: z.literal(true), data: z.array(routes.output), meta: ListMeta }),
      },
    },
  };
  const notFound = { 404: errorResponse(`No ${routes.entity} with that id`) };
  const secretFields = Object.keys(routes.list.fields).filter((name) => routes.list.fields[name]!.secret);
  // The schemas describe a user's view; the service key's answers carry the secret fields too.
  const serviceNote = routes.serviceApi && secretFields.length > 0 ? `The service key also gets ${secretFields.join(', ')}.` : '';
  // A unique key taken, or (on delete) a record that others still reference; with an
  // Idempotency-Key, also its first request still running, or the key used for another request.
  const conflict: Record<number, ResponseConfig> = routes.machineKeys
    ? {
        409: errorResponse('Conflicts with an existing record, or is still referenced by others; or a request with the same Idempotency-Key is still running (Retry-After)'),
        422: errorResponse('VALIDATION_ERROR: the body fails the schema (details names each field); or IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was sent with another request'),
      }
    : { 409: errorResponse('Conflicts with an existing record, or is still referenced by others') };
  // Stable names for client generators, as the typed client calls them: projects.list -> listProjects.
  const one = pascalCase(routes.entity);
  const many = pascalCase(routes.path);
  // A route only the service key may call says so, in its summary, its security and its 403.
  const forWhom = (operation: CrudOperation, summary: string) =>
    !routes.userOperations || routes.userOperations.includes(operation)
      ? { summary, ...(routes.machineKeys ? { security: withMachineKey } : {}) }
      : { summary: `${summary} (service key only)`, security: [{ bearer: [] }], serviceKeyOnly: { 403: errorResponse('Not the service key: a signed-in user may not do this') } };
  const list = forWhom('list', `List ${routes.entity} records`);
  const read = forWhom('read', `Read a ${routes.entity}`);
  const replace = forWhom('replace', `Replace a ${routes.entity}`);
  const update = forWhom('update', `Update some fields of a ${routes.entity}`);
  const remove = forWhom('delete', `Delete a ${routes.entity}`);

  registry.registerPath({
    method: 'get', path: routes.path, operationId: `list${many}`, tags, summary: list.summary, security: list.security, description: serviceNote || undefined,
    request: { query: listQuery(routes), ...scoped },
    responses: { 200: listResponse, ...scopedErrors, ...list.serviceKeyOnly },
  });
  const plainCreate = { summary: `Create ${/^[aeiou]/i.test(routes.entity) ? 'an' : 'a'} ${routes.entity}`, input: routes.createInput, output: routes.output, status: 201 };
  const create = routes.create ?? plainCreate;
  const serviceCreate = routes.create && routes.serviceApi ? plainCreate : undefined;
  const creating = forWhom('create', create.summary);
  registry.registerPath({
    method: 'post', path: routes.path, operationId: `create${one}`, tags, summary: creating.summary, security: creating.security,
    description: serviceCreate ? `With the service key: ${serviceCreate.summary.toLowerCase()} directly (201), from the second body shape.` : undefined,
    request: { body: jsonBody(serviceCreate ? z.union([create.input, serviceCreate.input]) : create.input), ...writeHeaders },
    responses: {
      [create.status]: dataEnvelope(create.summary, create.output),
      ...(serviceCreate ? { 201: dataEnvelope(`Created (service key)`, serviceCreate.output) } : {}),
      ...scopedErrors,
      ...creating.serviceKeyOnly,
      ...conflict,
    },
  });
  registry.registerPath({
    method: 'get', path: itemPath, operationId: `get${one}`, tags, summary: read.summary, security: read.security, description: serviceNote || undefined,
    request: { params: idParam(routes.entity, routes.idType), ...scoped },
    responses: { 200: dataEnvelope(`The ${routes.entity}`, routes.output), ...scopedErrors, ...read.serviceKeyOnly, ...notFound },
  });
  registry.registerPath({
    method: 'put', path: itemPath, operationId: `replace${one}`, tags, summary: replace.summary, security: replace.security,
    request: { params: idParam(routes.entity, routes.idType), body: jsonBody(routes.replaceInput), ...writeHeaders },
    responses: { 200: dataEnvelope(`The replaced ${routes.entity}`, routes.output), ...scopedErrors, ...replace.serviceKeyOnly, ...notFound, ...conflict },
  });
  registry.registerPath({
    method: 'patch', path: itemPath, operationId: `update${one}`, tags, summary: update.summary, security: update.security,
    request: { params: idParam(routes.entity, routes.idType), body: jsonBody(routes.updateInput), ...writeHeaders },
    responses: { 200: dataEnvelope(`The updated ${routes.entity}`, routes.output), ...scopedErrors, ...update.serviceKeyOnly, ...notFound, ...conflict },
  });
  registry.registerPath({
    method: 'delete', path: itemPath, operationId: `delete${one}`, tags, summary: remove.summary, security: remove.security,
    request: { params: idParam(routes.entity, routes.idType), ...writeHeaders },
    responses: { 204: { description: 'Deleted' }, ...scopedErrors, ...remove.serviceKeyOnly, ...notFound, ...conflict },
  });

  if (routes.serviceApi) {
    const count = dataEnvelope('How many records matched', z.object({ count: z.int() }));
    const serviceOnly = { 400: errorResponse('No where, or a malformed one'), 403: errorResponse('Not the service key') };
    // A user's routers have no /consume-one or /increment-one: where a user reaches the entity at all, they answer 404.
    const reachedByUsers = !routes.userOperations || routes.userOperations.length > 0;
    const oneByFilterOnly = { ...serviceOnly, ...(reachedByUsers ? { 404: errorResponse('Not the service key: for anyone else there is no such route') } : {}) };
    registry.registerPath({
      method: 'patch', path: routes.path, operationId: `updateMany${many}`, tags, summary: `Update every ${routes.entity} a filter matches (service key only)`,
      request: { query: writeFilterQuery(), body: jsonBody(routes.serviceApi.updateInput), ...serviceWriteHeaders },
      responses: { 200: count, ...serviceOnly, ...conflict },
    });
    registry.registerPath({
      method: 'delete', path: routes.path, operationId: `deleteMany${many}`, tags, summary: `Delete every ${routes.entity} a filter matches (service key only)`,
      request: { query: writeFilterQuery(), ...serviceWriteHeaders },
      responses: { 200: count, ...serviceOnly, ...conflict },
    });
    const oneOrNull = dataEnvelope(`The ${routes.entity}, or null when none matched`, routes.output.nullable());
    registry.registerPath({
      method: 'post', path: `${routes.path}/consume-one`, operationId: `consumeOne${one}`, tags, summary: `Delete one ${routes.entity} a filter matches and return it, in one statement (service key only)`,
      description: 'Of concurrent requests for the same record, exactly one gets it; the others get null. For single-use values (Better Auth\'s consumeOne).',
      request: { query: writeFilterQuery(), ...serviceWriteHeaders },
      responses: { 200: oneOrNull, ...oneByFilterOnly },
    });
    registry.registerPath({
      method: 'post', path: `${routes.path}/increment-one`, operationId: `incrementOne${one}`, tags, summary: `Add to the number fields of one ${routes.entity} while a filter holds, in one statement (service key only)`,
      description: 'increment: { field: delta } (a null value counts as 0; a negative delta subtracts); set: values written in the same statement. The where selects and guards: null when no record matched (Better Auth\'s incrementOne).',
      request: {
        query: writeFilterQuery(),
        body: jsonBody(z.object({ increment: z.record(z.string(), z.number()).optional(), set: routes.serviceApi.updateInput.optional() })),
        ...serviceWriteHeaders,
      },
      responses: { 200: oneOrNull, ...oneByFilterOnly, ...conflict },
    });
  }

  if (routes.nested) {
    const { path, parentParam, parentEntity, createInput } = routes.nested;
    const params = z.object({ [parentParam]: z.uuid().meta({ description: `The parent ${parentEntity}'s id` }) });
    const parentMissing = { 404: errorResponse(`No ${parentEntity} with that id`) };
    registry.registerPath({
      method: 'get', path, operationId: `list${pascalCase(parentEntity)}${many}`, tags, summary: `List the ${routes.entity} records of a ${parentEntity}`, ...(routes.machineKeys ? { security: withMachineKey } : {}),
      request: { params, query: listQuery(routes), ...scoped },
      responses: { 200: listResponse, ...scopedErrors, ...parentMissing },
    });
    registry.registerPath({
      method: 'post', path, operationId: `create${pascalCase(parentEntity)}${one}`, tags, summary: `Create a ${routes.entity} under a ${parentEntity}`, ...(routes.machineKeys ? { security: withMachineKey } : {}),
      request: { params, body: jsonBody(createInput), ...writeHeaders },
      responses: { 201: dataEnvelope(`The created ${routes.entity}`, routes.output), ...scopedErrors, ...parentMissing, ...conflict },
    });
  }
}

/**
 * The whole document: what `registry` holds, the security schemes, and every operation's answers
 * completed (openapi/answers.ts). `license` is the project's (package.json), UNLICENSED without one.
 */
export function createDocument(registry: OpenAPIRegistry, options: { title: string; version: string; serverUrl: string; license?: string }) {
  registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer', description: 'A session token, or SERVICE_API_KEY for a trusted server' });
  registry.registerComponent('securitySchemes', 'sessionCookie', { type: 'apiKey', in: 'cookie', name: 'session' });
  registry.registerComponent('securitySchemes', 'machineKey', {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: "A machine key of one organization (POST /api/auth/api-keys): its tenant-scoped routes only, as the key's permissions say",
  });
  const license = options.license ?? 'UNLICENSED';
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    // An SPDX expression names the license; UNLICENSED (npm's word for "no license granted") is none.
    info: {
      title: options.title,
      version: options.version,
      description: 'Every answer carries `x-request-id` (the one a client sent, when it is 1-128 characters of `[A-Za-z0-9_.:-]`): quote it when reporting a problem. Errors answer `{ success: false, error: { code, message, details? } }` (components/schemas/ErrorEnvelope).',
      license: license === 'UNLICENSED' ? { name: license } : { name: license, identifier: license },
    },
    servers: [{ url: options.serverUrl }],
    security: [{ bearer: [] }, { sessionCookie: [] }],
  });
  return completeAnswers(document);
}
