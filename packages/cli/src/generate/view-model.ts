import { eventPrefix, eventTypesOf, hasEvents } from './event-sql.js';
import { camelCase, kebabCase, pascalCase } from '../schema/naming.js';
import { ruleOperations, type Entity, type Field, type OperationRule, type Schema } from '../schema/types.js';
import { fieldReaders, fieldWriters, rowCondition, ruleCondition } from './rules-sql.js';
import { databaseModel } from './table-model.js';

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
  /**
   * One of your own tenant-scoped entities: its statements run under the caller's scope
   * (asCaller, src/db/scope.ts) and filter by `authstrap.organization_id()`, and row-level security
   * guards its table. (The built-in `member` takes the organization as a value: its rows are what
   * the scope is made from.)
   */
  callerScoped: boolean;
  /** The SQL condition of each operation on a callerScoped entity's rows (see accessOf). */
  access?: EntityAccess;
  plural: string;
  idType: Entity['idType'];
  /** Uuid ids may be chosen by the caller (the service key syncing users); numbered ids never. */
  callerChosenId: boolean;
  /** A built-in entity the trusted server (the service key) manages through service-api.ts. */
  serviceApi: boolean;
  /** Served to the trusted server only (verification): it has no router for users. */
  serviceOnly: boolean;
  /** Your own tenant-scoped entity: an organization's machine keys may reach it (tenant.guard.ts). */
  machineKeys: boolean;
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
  /** The built-in session: the trusted server's create records how it was made (the sign-in rule judges that). */
  isSession: boolean;
  /** A create route documented apart from the plain insert (POST /members and POST /Users invite), as code. */
  openApiCreate?: string;
  /** The routes a signed-in user may call, as code, when not all (the rest are the service key's). */
  userOperations?: string;
  /** The prefix of its event types (`project` of `project.created`), when its changes are events (event-sql.ts). */
  eventPrefix?: string;
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

/** The SQL each operation's statement adds, for a callerScoped entity. */
export interface EntityAccess {
  /** Who may do what, in words, a line each, for the generated comment. */
  summary: string[];
  list: string;
  read: string;
  update: string;
  delete: string;
  /**
   * What an INSERT must satisfy beyond the organization it is given, as code: a template literal,
   * or a function of the inserted values (`(value) => \`... ${value('authorId')} ...\``).
   */
  create?: string;
  /** Fields only some roles may write, as code: `{ budget: \`authstrap.role() IN ('owner')\` }`. */
  writers?: string;
  /** The entity's rules as code, for guards/rules.ts (only when it has rules). */
  rules?: string;
  /** Fields only some roles may read: the router leaves them out of what the others get. */
  hidesFields: boolean;
}

/** A role list in words: "owners and admins". */
const rolesInWords = (allowed: readonly string[]) => {
  const plurals = allowed.map((role) => `${role}s`);
  return plurals.length <= 1 ? (plurals[0] ?? 'nobody') : `${plurals.slice(0, -1).join(', ')} and ${plurals.at(-1)}`;
};

/** Who may, in words: "owners and admins, or the row's assigneeId". */
function ruleInWords(rule: OperationRule): string {
  const byRow = rule.callerFields.map((fields) => `the user its ${fields.join(' and ')} names`);
  if (rule.roles.length === 3 && byRow.length === 0) return 'every member';
  return [...(rule.roles.length > 0 ? [rolesInWords(rule.roles)] : []), ...byRow].join(', or ') || 'nobody';
}

const backticked = (sql: string) => `\`${sql}\``;

/** `list, read: every member`, a line per group of operations with the same rule. */
function summaryOf(rules: NonNullable<Entity['rules']>): string[] {
  const groups = new Map<string, string[]>();
  for (const operation of ruleOperations) {
    const words = ruleInWords(rules.operations[operation]);
    groups.set(words, [...(groups.get(words) ?? []), operation]);
  }
  const lines = [...groups].map(([words, operations]) => `${operations.join(', ')}: ${words}`);
  for (const rule of rules.fields) {
    if (rule.read.length < 3) lines.push(`${rule.field}: read by ${rolesInWords(rule.read)}${rule.write.length < 3 ? `, written by ${rolesInWords(rule.write)}` : ''}`);
    else if (rule.write.length < 3) lines.push(`${rule.field}: written by ${rolesInWords(rule.write)}`);
  }
  return lines;
}

function accessOf(entity: Entity): EntityAccess {
  const rules = entity.rules;
  const access: EntityAccess = {
    summary: rules ? summaryOf(rules) : ['list, read, create, update, delete: every member'],
    list: rowCondition(entity, 'list'),
    read: rowCondition(entity, 'read'),
    update: rowCondition(entity, 'update'),
    delete: rowCondition(entity, 'delete'),
    hidesFields: Object.keys(fieldReaders(entity)).length > 0,
  };
  if (!rules) return access;
  const create = rules.operations.create;
  const byRole = ruleCondition({ roles: create.roles, callerFields: [] }, () => '');
  if (create.callerFields.length > 0) {
    // The new row's values decide: written into the INSERT by sql.ts (insertStatement's onlyIf).
    const sql = ruleCondition(create, (field) => `\${value('${field}')}`);
    if (sql !== undefined) access.create = `(value: (field: string) => string) => ${backticked(sql)}`;
  } else if (byRole !== undefined) {
    access.create = backticked(byRole);
  }
  const writers = Object.entries(fieldWriters(entity));
  if (writers.length > 0) access.writers = `{ ${writers.map(([field, sql]) => `${field}: ${backticked(sql)}`).join(', ')} }`;
  const roleList = (list: readonly string[]) => `[${list.map(singleQuoted).join(', ')}]`;
  const operation = (rule: OperationRule) =>
    `{ roles: ${roleList(rule.roles)}, callerFields: [${rule.callerFields.map((fields) => roleList(fields)).join(', ')}] }`;
  access.rules = [
    '{',
    `  entity: ${singleQuoted(entity.name)},`,
    `  plural: ${singleQuoted(entity.plural)},`,
    `  table: ${singleQuoted(entity.table)},`,
    '  operations: {',
    ...ruleOperations.map((name) => `    ${name}: ${operation(rules.operations[name])},`),
    '  },',
    `  fields: { ${rules.fields.map((rule) => `${rule.field}: { read: ${roleList(rule.read)}, write: ${roleList(rule.write)} }`).join(', ')} },`,
    `  readable: ${backticked(rowCondition(entity, 'read'))},`,
    '}',
  ].join('\n');
  return access;
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
const userOperationsOf: Record<string, string> = { verification: '[]', apikey: '[]', account: "['list', 'read']", session: "['list', 'read', 'delete']" };

/** Built-in entities whose POST by a user is an invitation, with its OpenAPI description (invitations.ts). */
const invitationCreateRoutes: Record<string, string> = { member: 'invitationCreateRoute', User: 'userInvitationRoute' };

/** Built-in entities whose routes only the trusted server (the service key) may use. */
// Machine keys are made and revoked through /api/auth/api-keys (src/auth/machine-keys.ts).
const serviceOnlyEntities = new Set(['verification', 'apikey']);

function entityView(entity: Entity, byName: Map<string, Entity>, auth: boolean): EntityView {
  const visible = entity.fields.filter((field) => !field.secret);
  const writable = entity.fields.filter((field) => !field.system);
  const columnPair = (field: Field) => ({ field: field.name, column: field.column });
  const columnOf = (name: string) => entity.fields.find((field) => field.name === name)?.column;
  const callerChosenId = entity.idType === 'uuid';
  const callerScoped = auth && entity.tenantScoped && !entity.builtin;
  const selectListOf = (fields: Field[]) =>
    fields.map((field) => (field.column === field.name ? quoteSql(field.name) : `${quoteSql(field.column)} AS ${quoteSql(field.name)}`)).join(', ');
  // A field only some roles may read is null for the others in every statement (the router then leaves it out).
  const readers = callerScoped ? fieldReaders(entity) : {};
  const visibleSelectList = visible
    .map((field) => {
      const plain = field.column === field.name ? quoteSql(field.name) : `${quoteSql(field.column)} AS ${quoteSql(field.name)}`;
      return Object.hasOwn(readers, field.name) ? `CASE WHEN ${readers[field.name]} THEN ${quoteSql(field.column)} END AS ${quoteSql(field.name)}` : plain;
    })
    .join(', ');
  const insertColumns = [
    // A callerScoped row's organization is the caller's, set by the statement itself.
    ...entity.fields.filter((field) => (field.name === 'id' && callerChosenId) || (field.name === 'organizationId' && field.system && !callerScoped)).map(columnPair),
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
    callerScoped,
    ...(callerScoped ? { access: accessOf(entity) } : {}),
    plural: entity.plural,
    idType: entity.idType,
    callerChosenId,
    serviceApi: auth && (entity.builtin || entity.serviceOnly),
    serviceOnly: auth && (entity.serviceOnly || (entity.builtin && serviceOnlyEntities.has(entity.name))),
    machineKeys: auth && entity.tenantScoped && !entity.builtin && !entity.serviceOnly,
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
    // A field only some roles may write keeps its value when a PUT leaves it out (for every role).
    replaceDefaults: writable
      .filter((field) => field.nullable || (field.default !== undefined && field.default !== 'now'))
      .filter((field) => !(callerScoped && Object.hasOwn(fieldWriters(entity), field.name)))
      .map((field) => ({ name: field.name, value: jsLiteral(field.default ?? null) })),
    selectList: visibleSelectList,
    // PostgreSQL's JSON would keep a hidden field as null; the router leaves it out of objects instead.
    jsonSelectList: jsonExact(entity, visible) && Object.keys(readers).length === 0 ? jsonSelectListOf(visible) : undefined,
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
    isSession: entity.builtin && entity.name === 'session',
    eventPrefix: hasEvents(entity, auth) ? eventPrefix(entity) : undefined,
    parent,
  };
}

export interface ProjectView {
  auth: boolean;
  entities: EntityView[];
  /** The entities the trusted server manages through service-api.ts. */
  serviceApis: EntityView[];
  /** Your own tenant-scoped entities first, then global ones, then the built-in scoped ones; nested mounts before their collections. */
  mounts: { path: string; handlers: string; comment: string }[];
  /** The entities an organization's machine keys may reach, as code: `['Project', 'Task']`. */
  keyEntities: string;
  /** Each unique and foreign key's columns but the organization, as code, by constraint name (generated/constraints.ts). */
  keyConstraints: { name: string; columns: string }[];
  /** Every event type the backend records, with what it means as code (a string literal): generated/events.ts. */
  events: { type: string; description: string }[];
}

/**
 * The columns of the unique keys and foreign keys of every table, by constraint name: PostgreSQL
 * names the columns of a broken key in its error's detail, except under row-level security,
 * where it names only the constraint.
 */
function keyConstraintsOf(schema: Schema): ProjectView['keyConstraints'] {
  const keys: ProjectView['keyConstraints'] = [];
  const add = (name: string, columns: string[]) => {
    const named = columns.filter((column) => column !== 'organizationId');
    keys.push({ name: singleQuoted(name), columns: `[${named.map(singleQuoted).join(', ')}]` });
  };
  for (const table of databaseModel(schema).tables) {
    for (const constraint of table.constraints) {
      const match = /^(?:UNIQUE|FOREIGN KEY) \(([^)]*)\)/.exec(constraint.definition);
      if (match) add(constraint.name, match[1]!.split(', ').map((column) => column.replace(/^"|"$/g, '')));
    }
    // A unique index is named in the error as a constraint is (User's lower(email)).
    for (const index of table.indexes) if (index.unique) add(index.name, index.columns);
  }
  return keys;
}

/**
 * What handles a path, as code, in order: who may call, in which organization, then the router.
 * The trusted server's API comes right after the auth guard and passes every other caller on.
 */
function handlersOf(entity: EntityView, router: string, auth: boolean): string {
  if (!auth) return `${router}(deps)`;
  const serviceApi = entity.serviceApi ? `serviceApi.${entity.camel}, ` : '';
  if (entity.serviceOnly) return `signedIn, requires.serviceKey, serviceApi.${entity.camel}`;
  // Your own tenant-scoped entities: a read checks its caller in its own statement (tenant.guard.ts),
  // and the entity's name is what a machine key's permissions name.
  if (entity.machineKeys) return `...tenantScoped(deps, ${router}(deps), '${entity.name}')`;
  // A signed-in user's writes take an Idempotency-Key (idempotency/held-transaction.ts).
  return `signedIn, ${serviceApi}${entity.tenantScoped ? 'scopeGuard, ' : ''}keyed, ${router}(deps)`;
}

export function projectView(schema: Schema): ProjectView {
  const byName = new Map(schema.entities.map((entity) => [entity.name, entity]));
  const entities = schema.entities.map((entity) => entityView(entity, byName, schema.auth));
  const mounts: ProjectView['mounts'] = [];
  // Your own tenant-scoped entities first: they take most of the traffic, and Express tries every
  // mount above the one a request matches (each a few handlers, each a path test; bench/README.md,
  // issue 32). Then the global entities, then the built-in scoped ones (members). Each mount has a
  // path of its own, so the order changes nothing else, as long as every nested path (which starts
  // with its parent's path) comes before all the collections, to read top-down.
  const ordered = [
    ...entities.filter((view) => view.machineKeys),
    ...entities.filter((view) => !view.machineKeys && !view.tenantScoped),
    ...entities.filter((view) => !view.machineKeys && view.tenantScoped),
  ];
  for (const entity of ordered.filter((view) => view.parent)) {
    mounts.push({ path: entity.parent!.routePath, handlers: handlersOf(entity, `${entity.camel}NestedRouter`, schema.auth), comment: `${entity.name} of one ${entity.parent!.entity}` });
  }
  for (const entity of ordered) {
    mounts.push({ path: entity.path, handlers: handlersOf(entity, `${entity.camel}Router`, schema.auth), comment: entity.name });
  }
  return { auth: schema.auth, entities, serviceApis: entities.filter((entity) => entity.serviceApi), mounts,
    keyEntities: `[${entities.filter((entity) => entity.machineKeys).map((entity) => singleQuoted(entity.name)).join(', ')}]`,
    keyConstraints: keyConstraintsOf(schema),
    events: eventTypesOf(schema),
  };
}
