import { builtinEntities } from './builtin.js';
import { collectionPath, pluralOf } from './naming.js';
import { SchemaError, type Locate } from './read-literal.js';
import {
  fieldTypes,
  idTypes,
  onDeleteActions,
  roles,
  ruleOperations,
  type Entity,
  type EntityDefinition,
  type Field,
  type FieldDefinition,
  type OperationRule,
  type Role,
  type RuleOperation,
  type Rules,
  type Schema,
} from './types.js';

const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/;
const entityName = /^[A-Za-z][A-Za-z0-9]*$/;
const schemaKeys = ['auth', 'entities'];
const entityKeys = ['tenantScoped', 'serviceOnly', 'parent', 'table', 'plural', 'idType', 'createdAt', 'updatedAt', 'description', 'fields', 'uniqueTogether', 'indexes', 'renamedFrom', 'rules', 'events'];
const fieldKeys = [
  'type', 'nullable', 'unique', 'default', 'minLength', 'maxLength', 'min', 'max', 'format',
  'lowercase', 'values', 'searchable', 'references', 'onDelete', 'secret', 'column', 'description', 'renamedFrom',
];
/** Names that would shadow a global or an import of the generated code. */
export const reservedEntityNames = new Set(
  ['Array', 'Boolean', 'Date', 'Error', 'Function', 'JSON', 'Map', 'Math', 'Number', 'Object', 'Promise', 'Record',
    'RegExp', 'Set', 'String', 'Symbol', 'Router', 'Database', 'Queryable', 'Request', 'Response', 'Migration'].map((name) => name.toLowerCase()),
);
/** Field names the backend manages itself. */
const systemFieldNames = ['id', 'createdAt', 'updatedAt', 'organizationId'];

type Raw = Record<string, unknown>;
export const isObject = (value: unknown): value is Raw =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Reports a problem: where (`entity "Project", field "name"`), what, and the keys of the value at fault. */
type Problem = (where: string, message: string, path?: string[]) => void;

/**
 * Checks a schema file's data and resolves it into a `Schema`: built-in entities added, defaults
 * filled, system fields listed. Every problem is reported at once, naming the entity and field,
 * and, with `locate` (from readSchemaSource), the line and column to edit.
 */
export function validateSchema(raw: unknown, fileName = 'authstrap.schema.ts', locate?: Locate): Schema {
  const problems: string[] = [];
  const problem: Problem = (where, message, path) => {
    const location = path && locate && locateNearest(path, locate);
    problems.push(`${fileName}${location ? `:${location.line}:${location.column}` : ''}: ${where}: ${message}`);
  };

  if (!isObject(raw)) throw new SchemaError([`${fileName}: the default export must be an object like { entities: { ... } }`]);
  unknownKeys(raw, schemaKeys, 'schema', [], problem);
  if (raw.auth !== undefined && typeof raw.auth !== 'boolean') problem('schema', '"auth" must be true or false', ['auth']);
  const auth = raw.auth !== false;
  if (!isObject(raw.entities)) {
    problem('schema', '"entities" must be an object of entity definitions', ['entities']);
    throw new SchemaError(problems);
  }

  const definitions: [string, EntityDefinition, boolean][] = [];
  if (auth) {
    for (const [name, definition] of Object.entries(builtinEntities)) {
      const extension = raw.entities[name];
      definitions.push([name, extension === undefined ? definition : extendBuiltin(name, definition, extension, problem), true]);
    }
  }
  for (const [name, definition] of Object.entries(raw.entities)) {
    const where = `entity "${name}"`;
    const at = ['entities', name];
    if (auth && Object.hasOwn(builtinEntities, name)) continue; // an extension, merged above
    if (!entityName.test(name)) {
      problem(where, 'an entity name is letters and digits, starting with a letter (e.g. "Project", "UserSetting")', at);
      continue;
    }
    if (reservedEntityNames.has(name.toLowerCase())) {
      problem(where, 'is a name the generated TypeScript already uses (a JavaScript global or a runtime helper); choose another', at);
      continue;
    }
    const clash = definitions.find(([other]) => other.toLowerCase() === name.toLowerCase() || pluralOf(other).toLowerCase() === name.toLowerCase());
    if (clash) {
      const builtin = clash[2] ? `the built-in entity "${clash[0]}"` : `entity "${clash[0]}"`;
      problem(where, `clashes with ${builtin} (names and paths are matched case-insensitively); rename one of them`, at);
      continue;
    }
    if (!isObject(definition)) {
      problem(where, 'must be an object with "fields"', at);
      continue;
    }
    definitions.push([name, definition as unknown as EntityDefinition, false]);
  }

  const names = new Set(definitions.map(([name]) => name));
  const entities = definitions.map(([name, definition, builtin]) =>
    resolveEntity(name, definition, builtin, { auth, names, problem }),
  );

  const paths = new Map<string, string>();
  for (const entity of entities) {
    const key = entity.path.toLowerCase();
    const other = paths.get(key);
    if (other) problem(`entity "${entity.name}"`, `its path ${entity.path} is also the path of "${other}"; set "plural" on one of them`, ['entities', entity.name, 'plural']);
    paths.set(key, entity.name);
  }
  checkReferences(entities, problem);
  for (const entity of entities) {
    const parent = entity.parent && entities.find((other) => other.name === entity.parent!.entity);
    if (parent && parent.tenantScoped !== entity.tenantScoped) {
      problem(`entity "${entity.name}"`, `is nested under "${parent.name}", so both must be tenant-scoped or both not`, ['entities', entity.name, 'parent']);
    }
  }

  if (problems.length > 0) throw new SchemaError(problems);
  return { auth, entities };
}

/** What a schema may add to a built-in entity: fields of its own, and indexes. */
const extensionKeys = ['fields', 'indexes'];

/**
 * A built-in entity named in `entities` is extended, not replaced: its fields gain the new ones
 * (e.g. the additional fields a Better Auth configuration gives the user). The built-in fields
 * stay as they are, and a new field must be nullable or have a default, because the backend's own
 * sign-up and invitations create these rows without knowing it.
 */
function extendBuiltin(name: string, builtin: EntityDefinition, extension: unknown, problem: Problem): EntityDefinition {
  const where = `entity "${name}" (built in; only fields and indexes can be added to it)`;
  const at = ['entities', name];
  if (!isObject(extension)) {
    problem(where, 'must be an object like { fields: { ... } }', at);
    return builtin;
  }
  // A plugin's table that authstrap has built in since (Better Auth's `apikey`), as an older
  // better-auth.schema.json describes it: one problem that says what to do, not one per field.
  if (extension.serviceOnly === true) {
    problem(where, 'is built in now, so it is no serviceOnly entity: write better-auth.schema.json again (npx authstrap-better-auth-schema), or remove this definition', at);
    return builtin;
  }
  unknownKeys(extension, extensionKeys, where, at, problem);
  const fields = extension.fields ?? {};
  if (!isObject(fields)) {
    problem(where, '"fields" must be an object of field definitions', [...at, 'fields']);
    return builtin;
  }
  const added: Record<string, FieldDefinition> = {};
  for (const [fieldName, definition] of Object.entries(fields)) {
    const fieldAt = [...at, 'fields', fieldName];
    if (Object.hasOwn(builtin.fields, fieldName) || systemFieldNames.includes(fieldName)) {
      problem(`${where}, field "${fieldName}"`, 'is a built-in field; choose another name for yours', fieldAt);
      continue;
    }
    if (isObject(definition) && definition.nullable !== true && definition.default === undefined) {
      problem(`${where}, field "${fieldName}"`, 'must be nullable or have a default: the backend creates these rows without it', fieldAt);
      continue;
    }
    added[fieldName] = definition as unknown as FieldDefinition;
  }
  const indexes = extension.indexes === undefined ? [] : (extension.indexes as string[][]);
  return {
    ...builtin,
    fields: { ...builtin.fields, ...added },
    indexes: [...(builtin.indexes ?? []), ...(Array.isArray(indexes) ? indexes : [indexes])],
  };
}

interface Context {
  auth: boolean;
  names: Set<string>;
  problem: Problem;
}

function resolveEntity(name: string, definition: EntityDefinition, builtin: boolean, context: Context): Entity {
  const { problem } = context;
  const where = `entity "${name}"`;
  const at = (key?: string) => (key === undefined ? ['entities', name] : ['entities', name, key]);
  unknownKeys(definition as unknown as Raw, entityKeys, where, at(), problem);

  // A table only the trusted server uses (a Better Auth plugin's) belongs to no organization.
  const tenantScoped = definition.tenantScoped ?? (context.auth && definition.serviceOnly !== true);
  if (typeof tenantScoped !== 'boolean') problem(where, '"tenantScoped" must be true or false', at('tenantScoped'));
  if (tenantScoped && !context.auth) {
    problem(where, 'is tenant-scoped but the schema has `auth: false`; tenants (organizations) come with auth', at('tenantScoped'));
  }
  const serviceOnly = definition.serviceOnly ?? false;
  if (typeof serviceOnly !== 'boolean') problem(where, '"serviceOnly" must be true or false', at('serviceOnly'));
  else if (serviceOnly && !context.auth) problem(where, '"serviceOnly" needs auth (the service key comes with it)', at('serviceOnly'));
  else if (serviceOnly && definition.tenantScoped === true) {
    problem(where, 'is serviceOnly, so it cannot be tenant-scoped: the service key acts in no organization; set "tenantScoped": false', at('tenantScoped'));
  }
  for (const key of ['table', 'plural', 'description'] as const) {
    if (definition[key] !== undefined && typeof definition[key] !== 'string') problem(where, `"${key}" must be a string`, at(key));
  }
  if (definition.table !== undefined && !identifier.test(definition.table)) {
    problem(where, `"table" must be a plain SQL identifier (got "${definition.table}")`, at('table'));
  }
  if (definition.renamedFrom !== undefined && (typeof definition.renamedFrom !== 'string' || !identifier.test(definition.renamedFrom))) {
    problem(where, '"renamedFrom" must be the old name of the table, a plain SQL identifier', at('renamedFrom'));
  }
  const plural = definition.plural ?? pluralOf(name);
  const idType = definition.idType ?? 'uuid';
  if (!idTypes.includes(idType)) problem(where, `"idType" must be one of ${idTypes.join(', ')} (got ${JSON.stringify(idType)})`, at('idType'));
  const timestamps: Field[] = [];
  for (const key of ['createdAt', 'updatedAt'] as const) {
    const column = definition[key] ?? key;
    if (column === false) continue;
    if (typeof column !== 'string' || !identifier.test(column)) {
      problem(where, `"${key}" must be the name of its column or false (got ${JSON.stringify(column)})`, at(key));
      continue;
    }
    timestamps.push({ ...systemField(key, 'datetime'), column });
  }

  const fields: Field[] = [systemField('id', idType)];
  if (tenantScoped) {
    fields.push({ ...systemField('organizationId', 'uuid'), references: { entity: 'Organization', onDelete: 'cascade' } });
  }
  if (!isObject(definition.fields)) {
    problem(where, '"fields" must be an object of field definitions', at('fields'));
  } else {
    for (const [fieldName, fieldDefinition] of Object.entries(definition.fields)) {
      const field = resolveField(name, fieldName, fieldDefinition, { ...context, tenantScoped: tenantScoped === true });
      if (field) fields.push(field);
    }
  }
  fields.push(...timestamps);

  // The spec's `search` matches `name`; a schema may mark other fields searchable instead.
  if (!fields.some((field) => field.searchable)) {
    const nameField = fields.find((field) => field.name === 'name' && (field.type === 'string' || field.type === 'text'));
    if (nameField) nameField.searchable = true;
  }

  let parent: Entity['parent'];
  if (definition.parent !== undefined) {
    const parentField = fields.find((field) => field.name === definition.parent);
    if (!parentField?.references) {
      problem(where, `"parent" must name one of its own fields that references another entity (got "${definition.parent}")`, at('parent'));
    } else {
      parent = { field: parentField.name, entity: parentField.references.entity };
    }
  }

  const fieldNames = new Set(fields.map((field) => field.name));
  const fieldLists = (key: 'uniqueTogether' | 'indexes'): string[][] => {
    const lists = definition[key] ?? [];
    if (!Array.isArray(lists) || lists.some((list) => !Array.isArray(list) || list.length === 0)) {
      problem(where, `"${key}" must be a list of non-empty field lists, e.g. [["a", "b"]]`, at(key));
      return [];
    }
    for (const field of lists.flat()) {
      if (!fieldNames.has(field)) problem(where, `"${key}" names "${field}", which is not a field of "${name}"`, at(key));
    }
    return lists;
  };

  if (definition.events !== undefined && typeof definition.events !== 'boolean') problem(where, '"events" must be true or false', at('events'));
  else if (definition.events === false && (tenantScoped !== true || builtin)) {
    problem(where, '"events": false is for tenant-scoped entities of your own, the only ones whose changes are events; remove it', at('events'));
  }

  const rules = definition.rules === undefined ? undefined : resolveRules(name, definition.rules, fields, { tenantScoped: tenantScoped === true, builtin, auth: context.auth }, problem);

  return {
    name,
    table: definition.table ?? name,
    plural,
    path: collectionPath(name, plural),
    tenantScoped: tenantScoped === true,
    serviceOnly: serviceOnly === true,
    idType,
    builtin,
    parent,
    description: definition.description,
    fields,
    uniqueTogether: fieldLists('uniqueTogether'),
    indexes: fieldLists('indexes'),
    ...(definition.renamedFrom !== undefined ? { renamedFrom: definition.renamedFrom } : {}),
    ...(definition.table !== undefined ? { existingTable: true as const } : {}),
    ...(rules ? { rules } : {}),
    ...(definition.events === false ? { events: false as const } : {}),
  };
}

const ruleKeys = [...ruleOperations, 'fields'];
const fieldRuleKeys = ['read', 'write'];
const roleList = roles.map((role) => `'${role}'`).join(', ');

/**
 * Checks an entity's `rules` and fills in what it leaves out: an operation not named is open to
 * every member, and `list` follows `read`. A row condition names fields that hold a user's id
 * (`{ authorId: 'caller' }`); a field rule names fields the entity has and callers may send.
 */
function resolveRules(
  entity: string,
  raw: unknown,
  fields: Field[],
  kind: { tenantScoped: boolean; builtin: boolean; auth: boolean },
  problem: Problem,
): Rules | undefined {
  const where = `entity "${entity}", rules`;
  const at = (...path: string[]) => ['entities', entity, 'rules', ...path];
  if (!kind.auth || !kind.tenantScoped || kind.builtin) {
    problem(where, 'rules are for your own tenant-scoped entities: who may do what is decided by a role in an organization', at());
    return undefined;
  }
  if (!isObject(raw)) {
    problem(where, `must be an object like { create: ['owner', 'admin'], update: ['admin', { authorId: 'caller' }] }`, at());
    return undefined;
  }
  unknownKeys(raw, ruleKeys, where, at(), problem);
  const everyone = (): OperationRule => ({ roles: [...roles], callerFields: [] });
  const operations = Object.fromEntries(ruleOperations.map((operation) => [operation, everyone()])) as Record<RuleOperation, OperationRule>;
  for (const operation of ruleOperations) {
    const entries = raw[operation];
    if (entries === undefined) continue;
    const rule: OperationRule = { roles: [], callerFields: [] };
    operations[operation] = rule;
    if (!Array.isArray(entries)) {
      problem(`${where}, ${operation}`, `must be a list of who may ${operation}: roles (${roleList}) and row conditions like { authorId: 'caller' }`, at(operation));
      continue;
    }
    entries.forEach((entry: unknown, index) => {
      const entryAt = at(operation, String(index));
      if (typeof entry === 'string') {
        if (!(roles as readonly string[]).includes(entry)) problem(`${where}, ${operation}`, `"${entry}" is not a role; the roles are ${roleList}`, entryAt);
        else if (rule.roles.includes(entry as Role)) problem(`${where}, ${operation}`, `names "${entry}" twice`, entryAt);
        else rule.roles.push(entry as Role);
        return;
      }
      if (!isObject(entry) || Object.keys(entry).length === 0) {
        problem(`${where}, ${operation}`, `an entry is a role (${roleList}) or a row condition like { authorId: 'caller' }`, entryAt);
        return;
      }
      const callerFields: string[] = [];
      for (const [fieldName, value] of Object.entries(entry)) {
        const field = fields.find((candidate) => candidate.name === fieldName);
        const fieldAt = [...entryAt, fieldName];
        if (!field) problem(`${where}, ${operation}`, `"${fieldName}" is not a field of "${entity}"`, fieldAt);
        else if (field.type !== 'uuid' || field.references?.entity !== 'User') {
          problem(`${where}, ${operation}`, `"${fieldName}" must hold a user's id (a uuid field with references: 'User') to be compared with the caller`, fieldAt);
        } else if (value !== 'caller') problem(`${where}, ${operation}`, `a row condition compares a field with 'caller' (got ${JSON.stringify(value)})`, fieldAt);
        else callerFields.push(fieldName);
      }
      if (callerFields.length === Object.keys(entry).length) rule.callerFields.push(callerFields);
    });
  }
  // Who may read one may find it in a list, unless the schema says otherwise.
  if (raw.list === undefined && raw.read !== undefined) operations.list = { roles: [...operations.read.roles], callerFields: operations.read.callerFields.map((group) => [...group]) };

  const fieldRules: Rules['fields'] = [];
  if (raw.fields !== undefined) {
    if (!isObject(raw.fields)) problem(`${where}, fields`, `must be an object like { budget: { read: ['owner', 'admin'], write: ['owner'] } }`, at('fields'));
    else {
      for (const [fieldName, definition] of Object.entries(raw.fields)) {
        const fieldAt = at('fields', fieldName);
        const field = fields.find((candidate) => candidate.name === fieldName);
        if (!field || field.system || field.secret) {
          problem(`${where}, fields`, `"${fieldName}" is not a field of "${entity}" that callers read and write${field?.system ? ' (authstrap manages it)' : ''}`, fieldAt);
          continue;
        }
        if (!isObject(definition)) {
          problem(`${where}, fields, "${fieldName}"`, `must be an object like { read: ['owner', 'admin'], write: ['owner'] }`, fieldAt);
          continue;
        }
        unknownKeys(definition, fieldRuleKeys, `${where}, fields, "${fieldName}"`, fieldAt, problem);
        const roleListOf = (key: 'read' | 'write'): Role[] => {
          const value = definition[key];
          if (value === undefined) return [...roles];
          if (!Array.isArray(value) || value.some((role) => !(roles as readonly unknown[]).includes(role))) {
            problem(`${where}, fields, "${fieldName}"`, `"${key}" must be a list of roles (${roleList})`, [...fieldAt, key]);
            return [...roles];
          }
          return roles.filter((role) => value.includes(role));
        };
        const read = roleListOf('read');
        const write = roleListOf('write');
        // A search that a role could run on a field it may not read would tell it what the field holds.
        if (field.searchable && read.length < roles.length) problem(`${where}, fields, "${fieldName}"`, `is searchable, so every role could find out what it holds: limit who reads it, or make it not searchable (searchable: false on another field)`, fieldAt);
        const unreadable = write.filter((role) => !read.includes(role));
        if (unreadable.length > 0) problem(`${where}, fields, "${fieldName}"`, `${unreadable.join(', ')} may write it but not read it; let them read it too, or not write it`, fieldAt);
        // A record cannot be made without a required field: whoever may create one must be able to write it.
        const creators = operations.create.callerFields.length > 0 ? [...roles] : operations.create.roles;
        const cannot = creators.filter((role) => !write.includes(role));
        if (!field.nullable && field.default === undefined && cannot.length > 0) {
          problem(`${where}, fields, "${fieldName}"`, `is required, and ${cannot.join(', ')} may create a "${entity}" but not write it: give the field a "default", make it "nullable", or let them write it`, fieldAt);
        }
        fieldRules.push({ field: fieldName, read, write });
      }
    }
  }
  return { operations, fields: fieldRules };
}

function systemField(name: string, type: 'uuid' | 'integer' | 'datetime'): Field {
  return { name, column: name, type, nullable: false, unique: false, lowercase: false, searchable: false, secret: false, system: true };
}

function resolveField(entity: string, name: string, raw: unknown, context: Context & { tenantScoped: boolean }): Field | undefined {
  const { problem } = context;
  const where = `entity "${entity}", field "${name}"`;
  const at = (key?: string) => ['entities', entity, 'fields', name, ...(key === undefined ? [] : [key])];
  if (!identifier.test(name)) {
    problem(where, 'a field name is letters, digits and underscores, not starting with a digit', at());
    return undefined;
  }
  // A global entity may have an organizationId of its own (a reference, e.g. a Better Auth
  // plugin's invitation); only a tenant-scoped one gets it from authstrap.
  if (systemFieldNames.includes(name) && !(name === 'organizationId' && !context.tenantScoped)) {
    problem(where, `"${name}" is added by authstrap to every entity${name === 'organizationId' ? ' that is tenant-scoped' : ''}; remove it from "fields"`, at());
    return undefined;
  }
  if (!isObject(raw)) {
    problem(where, 'must be an object like { type: "string" }', at());
    return undefined;
  }
  unknownKeys(raw, fieldKeys, where, at(), problem);
  const definition = raw as unknown as FieldDefinition;
  if (!fieldTypes.includes(definition.type)) {
    problem(where, `"type" must be one of ${fieldTypes.join(', ')} (got ${JSON.stringify(definition.type)})`, at('type'));
    return undefined;
  }

  for (const key of ['nullable', 'unique', 'lowercase', 'searchable', 'secret'] as const) {
    if (definition[key] !== undefined && typeof definition[key] !== 'boolean') problem(where, `"${key}" must be true or false`, at(key));
  }
  const textual = definition.type === 'string' || definition.type === 'text';
  const numeric = definition.type === 'integer' || definition.type === 'number';
  for (const key of ['minLength', 'maxLength'] as const) {
    const value = definition[key];
    if (value === undefined) continue;
    if (!textual) problem(where, `"${key}" applies to string and text fields only`, at(key));
    else if (!Number.isInteger(value) || value < 0) problem(where, `"${key}" must be a whole number >= 0`, at(key));
  }
  if ((definition.minLength ?? 0) > (definition.maxLength ?? Infinity)) problem(where, '"minLength" is larger than "maxLength"', at('minLength'));
  for (const key of ['min', 'max'] as const) {
    if (definition[key] === undefined) continue;
    if (!numeric) problem(where, `"${key}" applies to integer and number fields only`, at(key));
    else if (typeof definition[key] !== 'number') problem(where, `"${key}" must be a number`, at(key));
  }
  if ((definition.min ?? -Infinity) > (definition.max ?? Infinity)) problem(where, '"min" is larger than "max"', at('min'));
  if (definition.format !== undefined && (definition.format !== 'email' || !textual)) {
    problem(where, '"format" can only be "email", on a string field', at('format'));
  }
  if (definition.lowercase && !textual) problem(where, '"lowercase" applies to string and text fields only', at('lowercase'));
  if (definition.searchable && !textual) problem(where, '"searchable" applies to string and text fields only', at('searchable'));

  if (definition.type === 'enum') {
    const values = definition.values;
    if (!Array.isArray(values) || values.length === 0 || values.some((value) => typeof value !== 'string' || value === '')) {
      problem(where, 'an enum needs "values", a non-empty list of non-empty strings', at('values'));
    } else if (new Set(values).size !== values.length) {
      problem(where, '"values" lists a value twice', at('values'));
    }
  } else if (definition.values !== undefined) {
    problem(where, '"values" applies to enum fields only', at('values'));
  }

  if (definition.default !== undefined && !defaultFits(definition)) {
    problem(where, `the default ${JSON.stringify(definition.default)} is not a valid ${definition.type}${definition.type === 'datetime' ? ' (use "now" or an ISO date string)' : ''}`, at('default'));
  }

  let references: Field['references'];
  if (definition.references !== undefined) {
    if (!context.names.has(definition.references)) {
      problem(where, `references "${definition.references}", which is not an entity of this schema`, at('references'));
    }
    const onDelete = definition.onDelete ?? (definition.nullable ? 'set null' : 'cascade');
    if (!onDeleteActions.includes(onDelete)) problem(where, `"onDelete" must be one of ${onDeleteActions.join(', ')}`, at('onDelete'));
    if (onDelete === 'set null' && !definition.nullable) problem(where, '"onDelete": "set null" needs "nullable": true', at('onDelete'));
    references = { entity: definition.references, onDelete };
  } else if (definition.onDelete !== undefined) {
    problem(where, '"onDelete" applies to fields with "references" only', at('onDelete'));
  }
  if (definition.column !== undefined && (typeof definition.column !== 'string' || !identifier.test(definition.column))) {
    problem(where, '"column" must be a plain SQL identifier', at('column'));
  }
  if (definition.renamedFrom !== undefined) {
    if (typeof definition.renamedFrom !== 'string' || !identifier.test(definition.renamedFrom)) {
      problem(where, '"renamedFrom" must be the old name of the column, a plain SQL identifier', at('renamedFrom'));
    } else if (systemFieldNames.includes(definition.renamedFrom)) {
      problem(where, `"renamedFrom" cannot take over "${definition.renamedFrom}", a column authstrap manages itself`, at('renamedFrom'));
    }
  }

  return {
    name,
    column: definition.column ?? name,
    type: definition.type,
    nullable: definition.nullable ?? false,
    unique: definition.unique ?? false,
    default: definition.default,
    minLength: definition.minLength,
    maxLength: definition.maxLength,
    min: definition.min,
    max: definition.max,
    format: definition.format,
    lowercase: definition.lowercase ?? false,
    values: definition.values,
    searchable: definition.searchable ?? false,
    references,
    secret: definition.secret ?? false,
    system: false,
    description: definition.description,
    ...(definition.renamedFrom !== undefined ? { renamedFrom: definition.renamedFrom } : {}),
  };
}

function defaultFits(definition: FieldDefinition): boolean {
  const value = definition.default;
  if (value === null) return definition.nullable === true;
  switch (definition.type) {
    case 'string':
    case 'text':
      return typeof value === 'string';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'datetime':
      return value === 'now' || (typeof value === 'string' && !Number.isNaN(Date.parse(value)));
    case 'uuid':
      return typeof value === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
    case 'enum':
      return typeof value === 'string' && (definition.values ?? []).includes(value);
    case 'json':
      return true;
  }
}

/** Tenant-scoped rows may only point at rows of the same organization or at global ones. */
function checkReferences(entities: Entity[], problem: Context['problem']) {
  const byName = new Map(entities.map((entity) => [entity.name, entity]));
  for (const entity of entities) {
    for (const field of entity.fields) {
      const target = field.references && byName.get(field.references.entity);
      if (!target || field.system) continue;
      if (field.type !== target.idType) {
        problem(`entity "${entity.name}", field "${field.name}"`, `references "${target.name}", whose id is ${target.idType === 'uuid' ? 'a uuid' : 'an integer'}, so its type must be "${target.idType}"`, ['entities', entity.name, 'fields', field.name, 'type']);
      }
      if (!entity.tenantScoped && target.tenantScoped) {
        problem(`entity "${entity.name}", field "${field.name}"`, `"${entity.name}" is not tenant-scoped, so it cannot reference the tenant-scoped "${target.name}"`, ['entities', entity.name, 'fields', field.name, 'references']);
      }
    }
  }
}

function unknownKeys(object: Raw, allowed: string[], where: string, path: string[], problem: Problem) {
  for (const key of Object.keys(object)) {
    if (!allowed.includes(key)) problem(where, `unknown key "${key}" (allowed: ${allowed.join(', ')})`, [...path, key]);
  }
}

/**
 * The value at `path`, or else the nearest enclosing property down to the entity (a missing key
 * is reported at its field or entity; a built-in entity, not in the file, has no place).
 */
function locateNearest(path: string[], locate: Locate) {
  for (let length = path.length; length >= Math.min(path.length, 2); length -= 1) {
    const location = locate(path.slice(0, length));
    if (location) return location;
  }
  return undefined;
}
