/**
 * The attributes a PATCH may write, per resource type: RFC 7643's User (section 4.1) with the
 * enterprise extension (section 4.3), and Group (section 4.2). Names are matched
 * case-insensitively and stored as written here, so that the stored representation always spells
 * `givenName` the same way whatever case an identity provider sent.
 */

export const coreUserSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const coreGroupSchema = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const enterpriseUserSchema = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

export type SimpleType = 'string' | 'boolean';

export type AttributeSpec =
  /** One string or boolean; `required` ones cannot be removed (`userName`, a group's `displayName`). */
  | { type: SimpleType; required?: boolean }
  /** One object of sub-attributes (`name`). `shorthand`: a bare string stands for that sub-attribute. */
  | { type: 'complex'; subAttributes: Map<string, SubAttribute>; shorthand?: string }
  /** A list of objects (`emails`), selected by value filters. */
  | { type: 'multiValued'; subAttributes: Map<string, SubAttribute> }
  /** A group's members: never kept in the representation, reported as changes instead. */
  | { type: 'members' }
  /** Set by the service (`id`, `meta`, `groups`): ignored in a map of attributes, refused by path. */
  | { type: 'readOnly' }
  /** Accepted and never stored: `password` (the backend's users sign in through it or SSO, never a directory's password). */
  | { type: 'writeOnly' };

export interface SubAttribute {
  name: string;
  type: SimpleType;
}

export interface Attribute {
  /** As stored. */
  name: string;
  spec: AttributeSpec;
}

/** The attributes of one schema, by their names lowercased. */
export interface SchemaAttributes {
  urn: string;
  attributes: Map<string, Attribute>;
}

export interface ResourceSchema {
  resource: 'User' | 'Group';
  core: SchemaAttributes;
  /** Extensions kept under their URN as a key; any other extension is accepted and ignored. */
  extensions: SchemaAttributes[];
}

/** The attribute or sub-attribute called `name` in any case. */
export function lookup<T>(named: Map<string, T>, name: string): T | undefined {
  return named.get(name.toLowerCase());
}

function byName<T extends { name: string }>(entries: T[]): Map<string, T> {
  return new Map(entries.map((entry) => [entry.name.toLowerCase(), entry]));
}

function subAttributes(strings: string[], booleans: string[] = []): Map<string, SubAttribute> {
  return byName([
    ...strings.map((name) => ({ name, type: 'string' as const })),
    ...booleans.map((name) => ({ name, type: 'boolean' as const })),
  ]);
}

function schema(urn: string, attributes: Record<string, AttributeSpec>): SchemaAttributes {
  return { urn, attributes: byName(Object.entries(attributes).map(([name, spec]) => ({ name, spec }))) };
}

const string: AttributeSpec = { type: 'string' };
const readOnly: AttributeSpec = { type: 'readOnly' };
/** `emails`, `phoneNumbers`, `ims`, `photos`, `entitlements`, `roles`, `x509Certificates`. */
const labelledValues: AttributeSpec = { type: 'multiValued', subAttributes: subAttributes(['value', 'display', 'type'], ['primary']) };

export const userSchema: ResourceSchema = {
  resource: 'User',
  core: schema(coreUserSchema, {
    id: readOnly,
    meta: readOnly,
    schemas: readOnly,
    groups: readOnly,
    userName: { type: 'string', required: true },
    externalId: string,
    name: {
      type: 'complex',
      subAttributes: subAttributes(['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix']),
    },
    displayName: string,
    nickName: string,
    profileUrl: string,
    title: string,
    userType: string,
    preferredLanguage: string,
    locale: string,
    timezone: string,
    active: { type: 'boolean' },
    password: { type: 'writeOnly' },
    emails: labelledValues,
    phoneNumbers: labelledValues,
    ims: labelledValues,
    photos: labelledValues,
    addresses: {
      type: 'multiValued',
      subAttributes: subAttributes(['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type'], ['primary']),
    },
    entitlements: labelledValues,
    roles: labelledValues,
    x509Certificates: labelledValues,
  }),
  extensions: [
    schema(enterpriseUserSchema, {
      employeeNumber: string,
      costCenter: string,
      organization: string,
      division: string,
      department: string,
      // Entra ID sends the manager as the bare id.
      manager: { type: 'complex', subAttributes: subAttributes(['value', '$ref', 'displayName']), shorthand: 'value' },
    }),
  ],
};

export const groupSchema: ResourceSchema = {
  resource: 'Group',
  core: schema(coreGroupSchema, {
    id: readOnly,
    meta: readOnly,
    schemas: readOnly,
    displayName: { type: 'string', required: true },
    externalId: string,
    members: { type: 'members' },
  }),
  extensions: [],
};
