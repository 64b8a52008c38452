import type { BetterAuthDBSchema, DBFieldAttribute } from 'better-auth/db';
import { entityNameOf, toBackendField } from './models.js';

/**
 * Better Auth's tables, as the entities of an authstrap schema: what `createSchema` writes to
 * `better-auth.schema.json` beside the backend's `authstrap.schema.ts`, which `authstrap generate`
 * reads with it. Pure: tables in, schema data out.
 *
 * - A model the backend has built in (user, session, account, verification, organization,
 *   member, and the api-key plugin's apikey) keeps its built-in fields; only the fields Better Auth's options add to it become an
 *   extension of it (`User: { fields: { plan: ... } }`).
 * - Any other model (a plugin's: twoFactor, passkey, invitation...) becomes an entity of its own
 *   that only the service key reads and writes (`serviceOnly`), in no organization.
 */

/** One field of an authstrap schema, as `authstrap.schema.ts` writes it. */
export interface AuthstrapField {
  type: 'string' | 'text' | 'integer' | 'number' | 'boolean' | 'datetime' | 'uuid' | 'enum' | 'json';
  nullable?: boolean;
  unique?: boolean;
  default?: string | number | boolean;
  values?: string[];
  references?: string;
  onDelete?: 'cascade' | 'restrict' | 'set null';
}

export interface AuthstrapEntity {
  serviceOnly?: boolean;
  fields: Record<string, AuthstrapField>;
  indexes?: string[][];
}

export interface AuthstrapSchemaPart {
  /** Which tool wrote the file and how to write it again. */
  $comment: string;
  entities: Record<string, AuthstrapEntity>;
}

/** The fields each built-in entity of the backend has (authstrap's schema/builtin.ts), in Better Auth's names. */
const builtinFields: Record<string, ReadonlySet<string>> = {
  user: new Set(['id', 'name', 'email', 'emailVerified', 'image', 'createdAt', 'updatedAt']),
  // authMethod and ssoConnectionId: how the session was made (the sign-in rule's); impersonatedBy: the
  // operator acting as the user (the admin plugin's field of that name is the backend's column).
  session: new Set(['id', 'userId', 'token', 'expiresAt', 'ipAddress', 'userAgent', 'activeOrganizationId', 'authMethod', 'ssoConnectionId', 'impersonatedBy', 'createdAt', 'updatedAt']),
  account: new Set([
    'id', 'userId', 'accountId', 'providerId', 'password', 'accessToken', 'refreshToken', 'idToken',
    'accessTokenExpiresAt', 'refreshTokenExpiresAt', 'scope', 'createdAt', 'updatedAt',
  ]),
  verification: new Set(['id', 'identifier', 'value', 'expiresAt', 'createdAt', 'updatedAt']),
  organization: new Set(['id', 'name', 'slug', 'createdAt', 'updatedAt']),
  member: new Set(['id', 'organizationId', 'userId', 'role', 'createdAt', 'updatedAt']),
  // The api-key plugin's model: the backend's machine keys are kept in the same table.
  apikey: new Set([
    'id', 'configId', 'name', 'start', 'referenceId', 'prefix', 'key', 'refillInterval', 'refillAmount', 'lastRefillAt',
    'enabled', 'rateLimitEnabled', 'rateLimitTimeWindow', 'rateLimitMax', 'requestCount', 'remaining', 'lastRequest',
    'expiresAt', 'createdAt', 'updatedAt', 'permissions', 'metadata',
  ]),
};

/** The authstrap entity a Better Auth model (by key or by table name) is kept in. */
function entityOf(model: string, tables: BetterAuthDBSchema): string {
  const key = Object.hasOwn(tables, model) ? model : Object.keys(tables).find((candidate) => tables[candidate]!.modelName === model);
  if (key === undefined) return entityNameOf(model);
  // Named by Better Auth's own key, whatever its options call the table: the adapter maps a
  // customised modelName back to it.
  return entityNameOf(key);
}

const systemFields = new Set(['id', 'createdAt', 'updatedAt']);

/**
 * References whose row outlives the one they point at, whatever Better Auth declares (it
 * cascades): the `sso` plugin's provider names the user who registered it, and an organization's
 * provider keeps signing its people in after that admin's account is deleted (the plugin reads
 * `userId` only to tell who may manage a provider of no organization).
 */
const keptWhenReferenceDeleted: Readonly<Record<string, ReadonlySet<string>>> = { ssoProvider: new Set(['userId']) };

const onDeleteOf = (action: string | undefined): AuthstrapField['onDelete'] =>
  action === 'set null' ? 'set null' : action === 'restrict' || action === 'no action' ? 'restrict' : 'cascade';

/** One Better Auth field as an authstrap field; `extendsBuiltin` makes it optional (see below). */
function fieldOf(attribute: DBFieldAttribute, tables: BetterAuthDBSchema, extendsBuiltin: boolean): AuthstrapField {
  const { type } = attribute;
  let field: AuthstrapField;
  // authstrap references point at ids; a reference to another field is kept as a plain value.
  if (attribute.references?.field === 'id') {
    field = { type: 'uuid', references: entityOf(attribute.references.model, tables), onDelete: onDeleteOf(attribute.references.onDelete) };
  } else if (Array.isArray(type)) {
    field = { type: 'enum', values: [...type] };
  } else if (type === 'date') {
    field = { type: 'datetime' };
  } else if (type === 'number') {
    field = { type: 'number' };
  } else if (type === 'boolean') {
    field = { type: 'boolean' };
  } else if (type === 'json') {
    field = { type: 'json' };
  } else {
    // Strings, and the arrays the adapter passes as JSON text (Better Auth stringifies them).
    field = { type: 'text' };
  }
  const literal = attribute.defaultValue;
  const hasLiteralDefault = typeof literal === 'string' || typeof literal === 'number' || typeof literal === 'boolean';
  if (hasLiteralDefault && field.type !== 'uuid' && field.type !== 'datetime') field.default = literal as string | number | boolean;
  if (attribute.unique) field.unique = true;
  // A field Better Auth may leave out is nullable. So is every field added to a built-in entity
  // without a default: the backend's own sign-up creates those rows without it (Better Auth still
  // requires it on its own path).
  if (attribute.required === false || (extendsBuiltin && field.default === undefined)) field.nullable = true;
  return field;
}

export function betterAuthSchema(tables: BetterAuthDBSchema): AuthstrapSchemaPart {
  const entities: Record<string, AuthstrapEntity> = {};
  for (const [modelKey, table] of Object.entries(tables)) {
    const builtin = builtinFields[modelKey];
    const fields: Record<string, AuthstrapField> = {};
    const indexes: string[][] = [];
    for (const [fieldKey, attribute] of Object.entries(table.fields)) {
      // authstrap gives every entity its id and timestamps.
      if (builtin?.has(fieldKey) || systemFields.has(fieldKey)) continue;
      // Better Auth's own key: the adapter maps a customised fieldName to it.
      const name = toBackendField(modelKey, fieldKey);
      const field = fieldOf(attribute, tables, builtin !== undefined);
      fields[name] = field.references && keptWhenReferenceDeleted[modelKey]?.has(fieldKey) ? { ...field, onDelete: 'set null', nullable: true } : field;
      if (attribute.index && !attribute.unique) indexes.push([name]);
    }
    if (builtin && Object.keys(fields).length === 0) continue;
    entities[entityOf(modelKey, tables)] = {
      ...(builtin ? {} : { serviceOnly: true }),
      fields,
      ...(indexes.length > 0 ? { indexes } : {}),
    };
  }
  return {
    $comment: 'Written by @authstrap/better-auth-adapter (npx authstrap-better-auth-schema) from your Better Auth options; authstrap generate reads it with authstrap.schema.ts. Do not edit: change the options and generate again.',
    entities,
  };
}
