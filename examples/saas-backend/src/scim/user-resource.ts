import { ScimError } from './errors.js';
import { coreUserSchema, enterpriseUserSchema } from './resource-schema.js';

/**
 * A SCIM User as this service keeps it (docs/enterprise-identity.md, 2.2 and 6.3): the attributes
 * the identity provider sent, normalised (RFC 7643's names, whatever case they came in; `active`
 * a boolean even when Entra ID sends "False"; no password, no read-only attribute, no unknown
 * extension), stored whole in `authstrap_scim_user.attributes` and answered as stored; and the
 * columns the service searches and acts on, derived from them.
 */

/** RFC 7643 4.1's writable User attributes, by their names lowercased (password and groups are not kept). */
const coreAttributes = new Map(
  ['userName', 'externalId', 'name', 'displayName', 'nickName', 'profileUrl', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone', 'active', 'emails', 'phoneNumbers', 'ims', 'photos', 'addresses', 'entitlements', 'roles', 'x509Certificates'].map(
    (name) => [name.toLowerCase(), name],
  ),
);
/** RFC 7643 4.3's enterprise extension. */
const enterpriseAttributes = new Map(['employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager'].map((name) => [name.toLowerCase(), name]));

export type UserAttributes = Record<string, unknown>;

/** What the columns of `authstrap_scim_user` hold of a user, and what the `User` row is given. */
export interface UserColumns {
  userName: string;
  externalId: string | null;
  /** The primary address, lowercased. */
  email: string;
  /** Every address, lowercased (the `emails.value` filters). */
  emails: string[];
  displayName: string | null;
  active: boolean;
  /** The person's name for the `User` row. */
  personName: string;
}

/** `true`, `"True"`, `"false"`: what identity providers send for a boolean. */
export function scimBoolean(value: unknown, attribute: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw new ScimError(400, 'invalidValue', `${attribute} must be true or false`);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A POST's or PUT's body as the attributes kept: names as RFC 7643 spells them, the enterprise
 * extension under its URN, everything else left out (a password is never kept: the product's
 * users sign in with their password or single sign-on, never a directory's). 400 for a body
 * that is no User.
 */
export function userAttributesOf(body: unknown): UserAttributes {
  if (!isObject(body)) throw new ScimError(400, 'invalidSyntax', 'The body must be a SCIM User (a JSON object)');
  const attributes: UserAttributes = {};
  for (const [key, value] of Object.entries(body)) {
    const core = coreAttributes.get(key.toLowerCase());
    if (core) attributes[core] = value;
    else if (key.toLowerCase() === enterpriseUserSchema.toLowerCase() && isObject(value)) {
      const extension: Record<string, unknown> = {};
      for (const [name, part] of Object.entries(value)) {
        const known = enterpriseAttributes.get(name.toLowerCase());
        if (known) extension[known] = part;
      }
      attributes[enterpriseUserSchema] = extension;
    }
    // id, meta, schemas, groups, password, other extensions: not the client's to set, or not kept.
  }
  if (attributes.active !== undefined) attributes.active = scimBoolean(attributes.active, 'active');
  return attributes;
}

/**
 * The columns of a user, checked: `userName` is required; the primary address is
 * `emails[primary eq true]`, else the `work` one, else the first, else `userName` when it is an
 * address (6.3); without one, 400 `invalidValue`.
 */
export function userColumnsOf(attributes: UserAttributes): UserColumns {
  const userName = attributes.userName;
  if (typeof userName !== 'string' || userName.trim() === '') throw new ScimError(400, 'invalidValue', 'userName is required');
  if (userName.length > 256) throw new ScimError(400, 'invalidValue', 'userName is longer than 256 characters');
  const externalId = attributes.externalId;
  if (externalId !== undefined && externalId !== null && typeof externalId !== 'string') throw new ScimError(400, 'invalidValue', 'externalId must be a string');
  const emails = attributes.emails === undefined || attributes.emails === null ? [] : attributes.emails;
  if (!Array.isArray(emails) || !emails.every((entry) => isObject(entry) && typeof entry.value === 'string')) {
    throw new ScimError(400, 'invalidValue', 'emails must be a list of { value, type, primary }');
  }
  const addresses = emails as { value: string; type?: unknown; primary?: unknown }[];
  const primary =
    addresses.find((entry) => entry.primary === true || entry.primary === 'true' || entry.primary === 'True') ??
    addresses.find((entry) => typeof entry.type === 'string' && entry.type.toLowerCase() === 'work') ??
    addresses[0];
  const email = (primary?.value ?? (userName.includes('@') ? userName : '')).trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 320) {
    throw new ScimError(400, 'invalidValue', 'The user needs an e-mail address: give emails (primary or work), or a userName that is one');
  }
  const displayName = typeof attributes.displayName === 'string' ? attributes.displayName.trim() || null : null;
  const name = isObject(attributes.name) ? attributes.name : {};
  const given = [name.givenName, name.familyName].filter((part): part is string => typeof part === 'string' && part.trim() !== '').join(' ');
  const personName = displayName ?? (typeof name.formatted === 'string' && name.formatted.trim() ? name.formatted.trim() : given || userName);
  return {
    userName,
    externalId: typeof externalId === 'string' ? externalId : null,
    email,
    emails: [...new Set([email, ...addresses.map((entry) => entry.value.trim().toLowerCase())])],
    displayName,
    active: attributes.active === undefined ? true : (attributes.active as boolean),
    personName: personName.slice(0, 200),
  };
}

/** A stored user, as `authstrap_scim_user` holds it. */
export interface ScimUserRow {
  id: string;
  userId: string;
  attributes: UserAttributes;
  active: boolean;
  membership: 'member' | 'suspended' | 'invited';
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

/** `W/"3"`: a weak ETag of the resource's version. */
export const etagOf = (version: number) => `W/"${version}"`;

/**
 * A PUT or PATCH whose `If-Match` names other versions than the stored one: 412 (RFC 7644 3.14).
 * No header, or `*`, matches any version. Users and groups both.
 */
export function checkIfMatch(ifMatch: string | undefined, storedVersion: number, resource: 'user' | 'group'): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return;
  const versions = ifMatch.split(',').map((tag) => tag.trim());
  const stored = etagOf(storedVersion);
  if (!versions.includes(stored)) throw new ScimError(412, undefined, `The ${resource} has changed since ${ifMatch}: it is at ${stored} now`);
}

/**
 * The resource as answered: the stored attributes with `id`, `schemas` and `meta`, and `active` as
 * stored (what the identity provider said). `attributes`/`excludedAttributes` (RFC 7644 3.4.2.5)
 * narrow it; `id`, `schemas` and `meta` are always returned.
 */
export function userResource(row: ScimUserRow, location: string, projection?: Projection): Record<string, unknown> {
  const stored: Record<string, unknown> = { ...row.attributes, active: row.active };
  const schemas = [coreUserSchema, ...(isObject(stored[enterpriseUserSchema]) ? [enterpriseUserSchema] : [])];
  const resource: Record<string, unknown> = {
    schemas,
    id: row.id,
    ...project(stored, projection),
    meta: { resourceType: 'User', created: row.createdAt, lastModified: row.updatedAt, location, version: etagOf(row.version) },
  };
  return resource;
}

/** RFC 7644 3.4.2.5: the attributes to return, or to leave out (top-level names, any case). */
export interface Projection {
  attributes?: string[];
  excludedAttributes?: string[];
}

/** `"userName,emails"` -> the top-level names asked for (a sub-attribute keeps its parent whole). */
export function projectionOf(query: { attributes?: unknown; excludedAttributes?: unknown }): Projection | undefined {
  const names = (value: unknown) =>
    typeof value === 'string' && value.trim() !== ''
      ? value.split(',').map((name) => name.trim().replace(/^urn:ietf:params:scim:schemas:core:2\.0:(User|Group):/i, '').split('.')[0]!.toLowerCase())
      : undefined;
  const attributes = names(query.attributes);
  const excludedAttributes = names(query.excludedAttributes);
  return attributes || excludedAttributes ? { attributes, excludedAttributes } : undefined;
}

function project(stored: Record<string, unknown>, projection?: Projection): Record<string, unknown> {
  if (!projection) return stored;
  const { attributes, excludedAttributes } = projection;
  return Object.fromEntries(
    Object.entries(stored).filter(([name]) => {
      const key = name.toLowerCase();
      if (attributes) return attributes.includes(key);
      return !excludedAttributes!.includes(key);
    }),
  );
}
