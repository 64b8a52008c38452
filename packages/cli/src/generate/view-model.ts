import { camelCase, kebabCase, pascalCase } from '../schema/naming.js';
import type { Entity, Field, Schema } from '../schema/types.js';

/**
 * Everything the templates print, computed here so that the templates stay plain: each entity's
 * names, zod expressions, SQL fragments and routes.
 */

const singleQuoted = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const jsLiteral = (value: unknown): string => (typeof value === 'string' ? singleQuoted(value) : JSON.stringify(value));
const quoteSql = (identifier: string) => `"${identifier}"`;

/**
 * Any JSON value but null (which `nullable` adds), one level deep: zod's own z.json() is
 * recursive, and the OpenAPI generator recurses into it until the stack runs out at startup. A
 * body parsed from JSON holds nothing else anyway.
 */
const jsonZod = 'z.union([z.string(), z.number(), z.boolean(), z.array(z.unknown()), z.record(z.string(), z.unknown())])';

function zodInput(field: Field): string {
  let zod: string;
  switch (field.type) {
    case 'string':
    case 'text':
      zod = field.format === 'email' ? 'z.email()' : 'z.string()';
      if (field.minLength !== undefined) zod += `.min(${field.minLength})`;
      if (field.maxLength !== undefined) zod += `.max(${field.maxLength})`;
      if (field.lowercase) zod += '.toLowerCase()';
      break;
    case 'integer':
      // The column is a 32-bit integer; bigger values are refused here rather than by the database.
      zod = 'z.int32()';
      if (field.min !== undefined) zod += `.min(${field.min})`;
      if (field.max !== undefined) zod += `.max(${field.max})`;
      break;
    case 'number':
      zod = 'z.number()';
      if (field.min !== undefined) zod += `.min(${field.min})`;
      if (field.max !== undefined) zod += `.max(${field.max})`;
      break;
    case 'boolean':
      zod = 'z.boolean()';
      break;
    case 'datetime':
      // A date or a date and time with its offset, as the list filters read one (generated/date-time.ts).
      zod = 'DateTimeInput';
      break;
    case 'uuid':
      zod = 'z.uuid()';
      break;
    case 'enum':
      zod = `z.enum([${field.values!.map(singleQuoted).join(', ')}])`;
      break;
    case 'json':
      zod = jsonZod;
      break;
  }
  if (field.nullable) zod += '.nullable()';
  if (field.nullable || field.default !== undefined) zod += '.optional()';
  // `x-references` tells clients (and `authstrap verify`) that the value must be another record's id.
  const meta = [
    ...(field.description ? [`description: ${singleQuoted(field.description)}`] : []),
    ...(field.references ? [`'x-references': ${singleQuoted(field.references.entity)}`] : []),
  ];
  if (meta.length > 0) zod += `.meta({ ${meta.join(', ')} })`;
  return zod;
}

function zodOutput(field: Field): string {
  const base: Record<Field['type'], string> = {
    string: 'z.string()',
    text: 'z.string()',
    integer: 'z.int()',
    number: 'z.number()',
    boolean: 'z.boolean()',
    datetime: 'z.date()',
    uuid: 'z.uuid()',
    enum: field.values ? `z.enum([${field.values.map(singleQuoted).join(', ')}])` : 'z.string()',
    json: jsonZod,
  };
  return base[field.type] + (field.nullable ? '.nullable()' : '');
}

/** How a list reads and compares a field's query-string values: `{ column: 'dueAt', type: 'datetime', nullable: true }`. */
function listFieldSpec(field: Field): string {
  const types: Record<Exclude<Field['type'], 'json'>, string> = {
    string: 'string',
    text: 'string',
    enum: 'string',
    integer: 'integer',
    number: 'number',
    boolean: 'boolean',
    datetime: 'datetime',
    uuid: 'uuid',
  };
  const parts = [`column: ${singleQuoted(field.column)}`, `type: '${types[field.type as Exclude<Field['type'], 'json'>]}'`];
  if (field.nullable) parts.push('nullable: true');
  if (field.type === 'enum' && field.values) parts.push(`values: [${field.values.map(singleQuoted).join(', ')}]`);
  if (field.secret) parts.push('secret: true');
  return `{ ${parts.join(', ')} }`;
}

export interface EntityView {
  name: string;
  builtin: boolean;
  pascal: string;
  camel: string;
  folder: string;
  fileBase: string;
  table: string;
  path: string;
  tenantScoped: boolean;
  idType: Entity['idType'];
  /** Uuid ids may be chosen by the caller (the service key syncing users); numbered ids never. */
  callerChosenId: boolean;
  /** A built-in entity the trusted server (the service key) manages through service-api.ts. */
  serviceApi: boolean;
  /** Served to the trusted server only (verification): it has no router for users. */
  serviceOnly: boolean;
  /** The list order when the request gives none: newest first, or by id for a table without createdAt. */
  defaultSort: string;
  /** `'createdAt'` or `null`, as code: the column `createdAfter` filters on. */
  createdAtColumn: string;
  /** `'updatedAt'` or `null`, as code: the column every UPDATE sets to now(). */
  updatedAtColumn: string;
  description?: string;
  outputFields: { name: string; zod: string }[];
  /** The secret fields, which only the trusted server reads. */
  secretOutputFields: { name: string; zod: string }[];
  /** Lowercased fields, as the trusted server writes them: kept as sent. */
  serviceAsSentFields: { name: string; zod: string }[];
  inputFields: { name: string; zod: string }[];
  /** A body takes a date-time field: the schema file imports DateTimeInput. */
  takesDateTime: boolean;
  replaceDefaults: { name: string; value: string }[];
  selectList: string;
  insertColumns: { field: string; column: string }[];
  updateColumns: { field: string; column: string }[];
  /** What the trusted server reads (every column, secrets included) and may also write (timestamps). */
  serviceSelectList: string;
  serviceInsertColumns: { field: string; column: string }[];
  serviceUpdateColumns: { field: string; column: string }[];
  /**
   * selectList with each value as its JSON, as a template literal's body (timestamps through
   * isoTimestamp), when PostgreSQL's JSON of every visible column is exactly what the API sends
   * (see jsonExact); reads then send PostgreSQL's JSON as it is.
   */
  jsonSelectList?: string;
  /** The fields a list sorts and filters by (secret ones marked), with the code of their `ListField` description. */
  listFields: { field: string; spec: string }[];
  searchColumns: string[];
  /** The built-in User: the trusted server may create it with a personal organization. */
  isUser: boolean;
  /** A create route documented apart from the plain insert (POST /members and POST /Users invite), as code. */
  openApiCreate?: string;
  /** The routes a signed-in user may call, as code, when not all (the rest are the service key's). */
  userOperations?: string;
  parent?: {
    field: string;
    entity: string;
    camel: string;
    folder: string;
    fileBase: string;
    /** The parent's table, where a nested route checks that it is there. */
    table: string;
    idType: Entity['idType'];
    /** `/Projects/:projectId/Tasks` */
    routePath: string;
    /** `/Projects/{projectId}/Tasks` */
    openApiPath: string;
  };
}

/**
 * Field types whose PostgreSQL JSON is byte for byte what `pg` and JSON.stringify make of them,
 * in the columns authstrap creates (table-model.ts). Not `number` (float8 prints 1e+21 where
 * JavaScript prints 1e21) and not `json` (jsonb's own spacing).
 */
const jsonExactTypes = new Set<Field['type']>(['string', 'text', 'enum', 'integer', 'boolean', 'uuid', 'datetime']);

/** PostgreSQL may write this entity's JSON: a table authstrap created, holding only json-exact types. */
function jsonExact(entity: Entity, visible: Field[]): boolean {
  return (
    !entity.builtin &&
    !entity.serviceOnly &&
    !entity.existingTable &&
    visible.every((field) => jsonExactTypes.has(field.type) && /^\w+$/.test(field.column))
  );
}

/** The SELECT list as JSON values: `"id", ${isoTimestamp('"createdAt"')} AS "createdAt"`. */
function jsonSelectListOf(fields: Field[]): string {
  return fields
    .map((field) => {
      if (field.type === 'datetime') return `\${isoTimestamp('${quoteSql(field.column)}')} AS ${quoteSql(field.name)}`;
      return field.column === field.name ? quoteSql(field.name) : `${quoteSql(field.column)} AS ${quoteSql(field.name)}`;
    })
    .join(', ');
}

/** Built-in entities of which a signed-in user may call only some routes (their routers refuse the rest). */
const userOperationsOf: Record<string, string> = { verification: '[]', account: "['list', 'read']", session: "['list', 'read', 'delete']" };

/** Built-in entities whose POST by a user is an invitation, with its OpenAPI description (invitations.ts). */
const invitationCreateRoutes: Record<string, string> = { member: 'invitationCreateRoute', User: 'userInvitationRoute' };

/** Built-in entities whose routes only the trusted server (the service key) may use. */
const serviceOnlyEntities = new Set(['verification']);

function entityView(entity: Entity, byName: Map<string, Entity>, auth: boolean): EntityView {
  const visible = entity.fields.filter((field) => !field.secret);
  const writable = entity.fields.filter((field) => !field.system);
  const columnPair = (field: Field) => ({ field: field.name, column: field.column });
  const columnOf = (name: string) => entity.fields.find((field) => field.name === name)?.column;
  const callerChosenId = entity.idType === 'uuid';
  const selectListOf = (fields: Field[]) =>
    fields.map((field) => (field.column === field.name ? quoteSql(field.name) : `${quoteSql(field.column)} AS ${quoteSql(field.name)}`)).join(', ');
  const insertColumns = [
    ...entity.fields.filter((field) => (field.name === 'id' && callerChosenId) || (field.name === 'organizationId' && field.system)).map(columnPair),
    ...writable.map(columnPair),
  ];
  // A database adapter copies records as they are, timestamps included.
  const timestamps = entity.fields.filter((field) => field.name === 'createdAt' || field.name === 'updatedAt').map(columnPair);

  let parent: EntityView['parent'];
  if (entity.parent) {
    const parentEntity = byName.get(entity.parent.entity)!;
    parent = {
      field: entity.parent.field,
      entity: parentEntity.name,
      camel: camelCase(parentEntity.name),
      folder: parentEntity.name,
      fileBase: kebabCase(parentEntity.name),
      table: parentEntity.table,
      idType: parentEntity.idType,
      routePath: `${parentEntity.path}/:${entity.parent.field}${entity.path}`,
      openApiPath: `${parentEntity.path}/{${entity.parent.field}}${entity.path}`,
    };
  }

  return {
    name: entity.name,
    builtin: entity.builtin,
    pascal: pascalCase(entity.name),
    camel: camelCase(entity.name),
    folder: entity.name,
    fileBase: kebabCase(entity.name),
    table: entity.table,
    path: entity.path,
    tenantScoped: entity.tenantScoped,
    idType: entity.idType,
    callerChosenId,
    serviceApi: auth && (entity.builtin || entity.serviceOnly),
    serviceOnly: auth && (entity.serviceOnly || (entity.builtin && serviceOnlyEntities.has(entity.name))),
    defaultSort: columnOf('createdAt') ? 'createdAt' : 'id',
    createdAtColumn: jsLiteral(columnOf('createdAt') ?? null),
    updatedAtColumn: jsLiteral(columnOf('updatedAt') ?? null),
    description: entity.description,
    outputFields: visible.map((field) => ({ name: field.name, zod: zodOutput(field) })),
    secretOutputFields: entity.fields.filter((field) => field.secret).map((field) => ({ name: field.name, zod: zodOutput(field) })),
    // The trusted server writes a lowercased field (an e-mail address) as it sends it; it stays unique case-insensitively.
    serviceAsSentFields: writable.filter((field) => field.lowercase).map((field) => ({ name: field.name, zod: zodInput({ ...field, lowercase: false }) })),
    takesDateTime: writable.some((field) => field.type === 'datetime'),
    inputFields: [
      ...(callerChosenId ? [{ name: 'id', zod: 'z.uuid().optional()' }] : []),
      ...writable.map((field) => ({ name: field.name, zod: zodInput(field) })),
    ],
    replaceDefaults: writable
      .filter((field) => field.nullable || (field.default !== undefined && field.default !== 'now'))
      .map((field) => ({ name: field.name, value: jsLiteral(field.default ?? null) })),
    selectList: selectListOf(visible),
    jsonSelectList: jsonExact(entity, visible) ? jsonSelectListOf(visible) : undefined,
    insertColumns,
    updateColumns: writable.map(columnPair),
    serviceSelectList: selectListOf(entity.fields),
    serviceInsertColumns: [...insertColumns, ...timestamps],
    serviceUpdateColumns: [...writable.map(columnPair), ...timestamps],
    listFields: entity.fields.filter((field) => field.type !== 'json').map((field) => ({ field: field.name, spec: listFieldSpec(field) })),
    searchColumns: entity.fields.filter((field) => field.searchable).map((field) => field.column),
    openApiCreate: entity.builtin ? invitationCreateRoutes[entity.name] : undefined,
    userOperations: entity.builtin && auth ? userOperationsOf[entity.name] : entity.serviceOnly ? '[]' : undefined,
    isUser: entity.builtin && entity.name === 'User',
    parent,
  };
}

export interface ProjectView {
  auth: boolean;
  entities: EntityView[];
  /** The entities the trusted server manages through service-api.ts. */
  serviceApis: EntityView[];
  /** Global entities first, then tenant-scoped ones; nested mounts before their collections. */
  mounts: { path: string; handlers: string; comment: string }[];
}

/**
 * What handles a path, as code, in order: who may call, in which organization, then the router.
 * The trusted server's API comes right after the auth guard and passes every other caller on.
 */
function handlersOf(entity: EntityView, router: string, auth: boolean): string {
  if (!auth) return `${router}(deps)`;
  const serviceApi = entity.serviceApi ? `serviceApi.${entity.camel}, ` : '';
  if (entity.serviceOnly) return `signedIn, requires.serviceKey, serviceApi.${entity.camel}`;
  // Your own tenant-scoped entities: a read checks its caller in its own statement (tenant.guard.ts).
  if (entity.tenantScoped && !entity.builtin && !entity.serviceApi) return `...tenantScoped(deps, ${router}(deps))`;
  return `signedIn, ${serviceApi}${entity.tenantScoped ? 'scopeGuard, ' : ''}${router}(deps)`;
}

export function projectView(schema: Schema): ProjectView {
  const byName = new Map(schema.entities.map((entity) => [entity.name, entity]));
  const entities = schema.entities.map((entity) => entityView(entity, byName, schema.auth));
  const mounts: ProjectView['mounts'] = [];
  for (const scoped of [false, true]) {
    const group = entities.filter((view) => view.tenantScoped === scoped);
    // A nested path starts with its parent's path, so it is mounted first to read top-down.
    for (const entity of group.filter((view) => view.parent)) {
      mounts.push({ path: entity.parent!.routePath, handlers: handlersOf(entity, `${entity.camel}NestedRouter`, schema.auth), comment: `${entity.name} of one ${entity.parent!.entity}` });
    }
    for (const entity of group) {
      mounts.push({ path: entity.path, handlers: handlersOf(entity, `${entity.camel}Router`, schema.auth), comment: entity.name });
    }
  }
  return { auth: schema.auth, entities, serviceApis: entities.filter((entity) => entity.serviceApi), mounts };
}
