import { literal } from './sql-text.js';
import type { Column, Constraint, Index, Policy, Table } from './table-types.js';

/**
 * The system tables of enterprise identity (docs/enterprise-identity.md, 2.2): single sign-on
 * connections, verified domains, the organization's enforcement, SCIM directories, and suspended
 * memberships. They come with auth, like the outbox and the event log: the sign-in rule
 * (identity-sql.ts) reads them on every session made, so they must exist in every project, and an
 * organization turns single sign-on on at run time, not at deploy time. No generated routes,
 * OpenAPI or client: the engine's own routes reach them.
 *
 * Roles in the policies are the values of `authstrap.role()`: the callers' `owner`, `admin`,
 * `member`, and two only the engine sets: `directory` (a SCIM request) and `system` (the sign-in
 * engine and the workers acting in one organization).
 */

type Role = 'owner' | 'admin' | 'member' | 'directory' | 'system';

const id: Column = { name: 'id', type: 'uuid', nullable: false, default: 'gen_random_uuid()', primaryKey: true };
const uuid = (name: string, nullable = false): Column => ({ name, type: 'uuid', nullable });
const text = (name: string, nullable = false, defaultValue?: string): Column => ({ name, type: 'text', nullable, ...(defaultValue !== undefined ? { default: literal(defaultValue) } : {}) });
const boolean = (name: string, defaultValue: boolean): Column => ({ name, type: 'boolean', nullable: false, default: String(defaultValue) });
const jsonb = (name: string, nullable: boolean): Column => ({ name, type: 'jsonb', nullable, ...(nullable ? {} : { default: "'{}'::jsonb" }) });
const time = (name: string, nullable = true): Column => ({ name, type: 'timestamptz', nullable, ...(nullable ? {} : { default: 'now()' }) });
const timestamps = [time('createdAt', false), time('updatedAt', false)];

const check = (table: string, name: string, condition: string): Constraint => ({ name: `${table}_${name}_check`, definition: `CHECK (${condition})` });
const oneOf = (table: string, column: string, values: string[]) => check(table, column, `"${column}" IN (${values.map(literal).join(', ')})`);
const unique = (table: string, columns: string[]): Constraint => ({ name: `${table}_${columns.join('_')}_key`, definition: `UNIQUE (${columns.map((c) => `"${c}"`).join(', ')})` });
const references = (table: string, column: string, target: string): Constraint => ({
  name: `${table}_${column}_fkey`,
  definition: `FOREIGN KEY ("${column}") REFERENCES "${target}" ("id") ON DELETE CASCADE`,
});
/** A key that includes the organization: a row can never point into another organization's. */
const referencesInOrganization = (table: string, column: string, target: string): Constraint => ({
  name: `${table}_${column}_fkey`,
  definition: `FOREIGN KEY ("${column}", "organizationId") REFERENCES "${target}" ("id", "organizationId") ON DELETE CASCADE`,
});
const index = (table: string, columns: string[], extra: Partial<Index> = {}): Index => ({ name: `${table}_${columns.join('_')}_idx`, columns, ...extra });

const inOrganization = '"organizationId" = authstrap.organization_id()';
const roleIn = (roles: Role[]) => `authstrap.role() IN (${roles.map(literal).join(', ')})`;
const maintenance: Policy = { name: 'authstrap_maintenance', command: 'ALL', to: 'CURRENT_USER', using: 'authstrap.maintenance()', withCheck: 'authstrap.maintenance()' };

/**
 * Policies of a table of one organization: who, in it, may run each command. `'any'` is every
 * caller in the organization; `alsoSelect` is a further way to read a row (one's own). A command
 * left out is refused to every request (the maintenance policy stays the tables' owner's).
 */
function organizationPolicies(by: { select?: Role[] | 'any'; insert?: Role[]; update?: Role[]; delete?: Role[]; alsoSelect?: string; insertCheck?: string }): Policy[] {
  const who = (roles: Role[] | 'any') => (roles === 'any' ? inOrganization : `${inOrganization} AND ${roleIn(roles)}`);
  const policies: Policy[] = [];
  if (by.select) policies.push({ name: 'authstrap_select', command: 'SELECT', using: by.alsoSelect ? `(${who(by.select)}) OR (${by.alsoSelect})` : who(by.select) });
  if (by.insert) policies.push({ name: 'authstrap_insert', command: 'INSERT', withCheck: by.insertCheck ? `${who(by.insert)} AND (${by.insertCheck})` : who(by.insert) });
  if (by.update) policies.push({ name: 'authstrap_update', command: 'UPDATE', using: who(by.update), withCheck: who(by.update) });
  if (by.delete) policies.push({ name: 'authstrap_delete', command: 'DELETE', using: who(by.delete) });
  return [...policies, maintenance];
}

const presets = ['okta', 'entra', 'google', 'generic'];

/** One identity provider of one organization (OIDC or SAML). Secrets are sealed (src/events/webhook-secrets.ts, secretSeal). */
export const ssoConnectionTable: Table = {
  name: 'authstrap_sso_connection',
  columns: [
    id,
    uuid('organizationId'),
    text('name'),
    text('protocol'),
    text('preset', false, 'generic'),
    boolean('enabled', false),
    // Enabling needs a passing test since the last change of a field the sign-in reads.
    time('configChangedAt', false),
    time('testedAt'),
    jsonb('lastTest', true),
    text('defaultRole', false, 'member'),
    boolean('jitProvisioning', true),
    jsonb('attributeMapping', false),
    boolean('allowIdpInitiated', false),
    text('oidcIssuer', true),
    text('oidcClientId', true),
    text('oidcClientSecret', true),
    text('oidcScopes', false, 'openid email profile'),
    text('oidcTokenAuthMethod', false, 'client_secret_basic'),
    text('oidcTenant', true),
    jsonb('oidcMetadata', true),
    time('oidcMetadataFetchedAt'),
    text('samlIdpEntityId', true),
    text('samlIdpSsoUrl', true),
    text('samlIdpMetadataUrl', true),
    text('samlIdpMetadataXml', true),
    time('samlMetadataFetchedAt'),
    boolean('samlSignAuthnRequests', false),
    text('samlSpPrivateKey', true),
    text('samlSpCertificate', true),
    // The daily refresh (src/sso/metadata-refresh.ts): when it last ran and what failed (null: it
    // read the IdP), when it is due next (the worker's claim moves it on), and when the expiry and
    // failure events were last recorded (once a day at most, however often it runs).
    time('metadataRefreshedAt'),
    text('metadataRefreshError', true),
    time('metadataNextRefreshAt', false),
    time('certificateWarnedAt'),
    time('refreshFailureWarnedAt'),
    uuid('createdBy', true),
    ...timestamps,
  ],
  constraints: [
    check('authstrap_sso_connection', 'name', 'char_length("name") BETWEEN 1 AND 200'),
    oneOf('authstrap_sso_connection', 'protocol', ['oidc', 'saml']),
    oneOf('authstrap_sso_connection', 'preset', presets),
    // A just-in-time membership is never an owner's.
    oneOf('authstrap_sso_connection', 'defaultRole', ['member', 'admin']),
    oneOf('authstrap_sso_connection', 'oidcTokenAuthMethod', ['client_secret_basic', 'client_secret_post']),
    check('authstrap_sso_connection', 'allowIdpInitiated', `"protocol" = 'saml' OR NOT "allowIdpInitiated"`),
    check('authstrap_sso_connection', 'oidc', `"protocol" <> 'oidc' OR ("oidcIssuer" IS NOT NULL AND "oidcClientId" IS NOT NULL AND "oidcClientSecret" IS NOT NULL)`),
    check('authstrap_sso_connection', 'saml', `"protocol" <> 'saml' OR ("samlSpPrivateKey" IS NOT NULL AND "samlSpCertificate" IS NOT NULL)`),
    unique('authstrap_sso_connection', ['organizationId', 'name']),
    // The target of the composite keys of the tables below.
    unique('authstrap_sso_connection', ['id', 'organizationId']),
    references('authstrap_sso_connection', 'organizationId', 'Organization'),
  ],
  // The refresh worker's claim.
  indexes: [index('authstrap_sso_connection', ['metadataNextRefreshAt'])],
  dependsOn: ['Organization'],
  // Members never read connections: the sign-in page learns what it needs from the domain's route.
  rowSecurity: { policies: organizationPolicies({ select: ['owner', 'admin', 'system'], insert: ['owner', 'admin'], update: ['owner', 'admin', 'system'], delete: ['owner', 'admin'] }) },
};

/** The IdP's signing certificates of a SAML connection; several at once is a rollover. */
export const ssoCertificateTable: Table = {
  name: 'authstrap_sso_certificate',
  columns: [
    id,
    uuid('connectionId'),
    uuid('organizationId'),
    text('pem'),
    text('fingerprintSha256'),
    text('subject', true),
    time('notBefore', false),
    time('notAfter', false),
    text('source'),
    time('createdAt', false),
  ],
  constraints: [
    oneOf('authstrap_sso_certificate', 'source', ['metadata', 'upload']),
    unique('authstrap_sso_certificate', ['connectionId', 'fingerprintSha256']),
    referencesInOrganization('authstrap_sso_certificate', 'connectionId', 'authstrap_sso_connection'),
  ],
  // The expiry report.
  indexes: [index('authstrap_sso_certificate', ['notAfter'])],
  dependsOn: ['authstrap_sso_connection'],
  // As the connections', and the daily refresh (the `system` role) also keeps a rollover's new certificates and drops those gone from the metadata.
  rowSecurity: { policies: organizationPolicies({ select: ['owner', 'admin', 'system'], insert: ['owner', 'admin', 'system'], update: ['owner', 'admin', 'system'], delete: ['owner', 'admin', 'system'] }) },
};

/** An organization's enforcement; no row means none. */
export const ssoPolicyTable: Table = {
  name: 'authstrap_sso_policy',
  columns: [
    { name: 'organizationId', type: 'uuid', nullable: false, primaryKey: true },
    boolean('ssoRequired', false),
    text('breakGlass', false, 'owners'),
    time('requiredSince'),
    uuid('updatedBy', true),
    ...timestamps,
  ],
  constraints: [
    oneOf('authstrap_sso_policy', 'breakGlass', ['owners', 'none']),
    check('authstrap_sso_policy', 'requiredSince', `NOT "ssoRequired" OR "requiredSince" IS NOT NULL`),
    references('authstrap_sso_policy', 'organizationId', 'Organization'),
  ],
  indexes: [],
  dependsOn: ['Organization'],
  // Every member may see that SSO is required; only owners switch it.
  rowSecurity: { policies: organizationPolicies({ select: 'any', insert: ['owner'], update: ['owner'] }) },
};

/** A domain claimed by an organization; it routes, captures and enforces only while verified (or failing within its grace). */
export const domainTable: Table = {
  name: 'authstrap_domain',
  columns: [
    id,
    uuid('organizationId'),
    text('domain'),
    text('state', false, 'pending'),
    // Not a secret: shown to copy into the DNS record.
    text('txtToken'),
    time('verifiedAt'),
    time('lastCheckedAt'),
    time('failingSince'),
    text('lastCheckError', true),
    time('nextCheckAt', false),
    uuid('createdBy', true),
    ...timestamps,
  ],
  constraints: [
    // ASCII (IDNA already applied), lowercase, at least two labels: no IP literal, no single label.
    check('authstrap_domain', 'domain', `"domain" = lower("domain") AND "domain" ~ '^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$' AND char_length("domain") <= 253`),
    oneOf('authstrap_domain', 'state', ['pending', 'verified', 'failing', 'lapsed']),
    unique('authstrap_domain', ['organizationId', 'domain']),
    references('authstrap_domain', 'organizationId', 'Organization'),
  ],
  indexes: [
    // One domain belongs to at most one organization; several may claim it while pending, so a
    // squatted claim blocks nobody. The sign-in rule probes this index on every session made.
    index('authstrap_domain', ['domain'], { name: 'authstrap_domain_domain_verified_key', unique: true, where: `"state" IN ('verified', 'failing')` }),
    // The check worker's queue.
    index('authstrap_domain', ['nextCheckAt']),
  ],
  dependsOn: ['Organization'],
  rowSecurity: { policies: organizationPolicies({ select: 'any', insert: ['owner', 'admin'], update: ['owner', 'admin', 'system'], delete: ['owner', 'admin'] }) },
};

/** A user's identity at one connection (the OIDC `sub`, the SAML NameID). */
export const ssoIdentityTable: Table = {
  name: 'authstrap_sso_identity',
  columns: [id, uuid('organizationId'), uuid('connectionId'), uuid('userId'), text('subject'), text('email'), jsonb('profile', false), time('lastSignInAt'), ...timestamps],
  constraints: [
    unique('authstrap_sso_identity', ['connectionId', 'subject']),
    unique('authstrap_sso_identity', ['connectionId', 'userId']),
    referencesInOrganization('authstrap_sso_identity', 'connectionId', 'authstrap_sso_connection'),
    references('authstrap_sso_identity', 'userId', 'User'),
  ],
  indexes: [index('authstrap_sso_identity', ['userId'])],
  dependsOn: ['User', 'authstrap_sso_connection'],
  rowSecurity: {
    policies: organizationPolicies({ select: ['owner', 'admin', 'system'], alsoSelect: `${inOrganization} AND "userId" = authstrap.user_id()`, insert: ['system'], update: ['system'], delete: ['owner', 'admin', 'system'] }),
  },
};

/**
 * A sign-in on its way through the IdP, start to callback. Engine machinery without row-level
 * security, like the outbox: no request's statement reads it, and it holds only hashes and
 * short-lived values. Used up by the callback's DELETE ... RETURNING: of two callbacks, one wins.
 */
export const ssoFlowTable: Table = {
  name: 'authstrap_sso_flow',
  columns: [
    id,
    uuid('connectionId'),
    uuid('organizationId'),
    text('purpose'),
    text('stateHash'),
    text('browserBindingHash', true),
    text('oidcNonce', true),
    text('oidcCodeVerifier', true),
    text('samlRequestId', true),
    text('returnTo', true),
    text('client', false, 'browser'),
    text('appCodeChallenge', true),
    uuid('testerId', true),
    time('expiresAt', false),
    time('createdAt', false),
  ],
  constraints: [
    oneOf('authstrap_sso_flow', 'purpose', ['sign-in', 'test']),
    oneOf('authstrap_sso_flow', 'client', ['browser', 'app']),
    check('authstrap_sso_flow', 'appCodeChallenge', `"client" <> 'app' OR "appCodeChallenge" IS NOT NULL`),
    unique('authstrap_sso_flow', ['stateHash']),
    // node-saml's InResponseTo cache, shared by every instance.
    unique('authstrap_sso_flow', ['connectionId', 'samlRequestId']),
    referencesInOrganization('authstrap_sso_flow', 'connectionId', 'authstrap_sso_connection'),
  ],
  indexes: [index('authstrap_sso_flow', ['expiresAt'])],
  dependsOn: ['authstrap_sso_connection'],
};

/** The one-time code an app without cookies exchanges for a bearer token; no row-level security, as the flow. */
export const ssoCodeTable: Table = {
  name: 'authstrap_sso_code',
  columns: [
    { name: 'codeHash', type: 'text', nullable: false, primaryKey: true },
    uuid('userId'),
    uuid('organizationId'),
    uuid('connectionId'),
    text('codeChallenge'),
    time('expiresAt', false),
    time('createdAt', false),
  ],
  constraints: [references('authstrap_sso_code', 'userId', 'User'), references('authstrap_sso_code', 'organizationId', 'Organization')],
  indexes: [index('authstrap_sso_code', ['expiresAt'])],
  dependsOn: ['Organization', 'User'],
};

/** Assertion IDs already used, shared by every instance: a second use is a replay. */
export const samlAssertionTable: Table = {
  name: 'authstrap_saml_assertion',
  columns: [uuid('connectionId'), text('assertionId'), time('expiresAt', false), time('createdAt', false)],
  constraints: [{ name: 'authstrap_saml_assertion_pkey', definition: 'PRIMARY KEY ("connectionId", "assertionId")' }],
  indexes: [index('authstrap_saml_assertion', ['expiresAt'])],
  dependsOn: [],
};

/** A SCIM client (Okta, Entra ID, ...) of one organization. */
export const scimDirectoryTable: Table = {
  name: 'authstrap_scim_directory',
  columns: [id, uuid('organizationId'), text('name'), text('preset', false, 'generic'), text('defaultRole', false, 'member'), boolean('enabled', true), time('lastRequestAt'), uuid('createdBy', true), ...timestamps],
  constraints: [
    oneOf('authstrap_scim_directory', 'preset', presets),
    oneOf('authstrap_scim_directory', 'defaultRole', ['member', 'admin']),
    unique('authstrap_scim_directory', ['organizationId', 'name']),
    unique('authstrap_scim_directory', ['id', 'organizationId']),
    references('authstrap_scim_directory', 'organizationId', 'Organization'),
  ],
  indexes: [],
  dependsOn: ['Organization'],
  rowSecurity: { policies: organizationPolicies({ select: ['owner', 'admin', 'directory'], insert: ['owner', 'admin'], update: ['owner', 'admin', 'system'], delete: ['owner', 'admin'] }) },
};

/** A directory's bearer tokens, kept as machine keys are: the hash, and the start to recognise one. */
export const scimTokenTable: Table = {
  name: 'authstrap_scim_token',
  columns: [id, uuid('directoryId'), uuid('organizationId'), text('tokenHash'), text('start'), time('expiresAt'), time('lastUsedAt'), uuid('createdBy', true), time('createdAt', false)],
  constraints: [unique('authstrap_scim_token', ['tokenHash']), referencesInOrganization('authstrap_scim_token', 'directoryId', 'authstrap_scim_directory')],
  indexes: [index('authstrap_scim_token', ['directoryId'])],
  dependsOn: ['authstrap_scim_directory'],
  rowSecurity: { policies: organizationPolicies({ select: ['owner', 'admin'], insert: ['owner', 'admin'], update: ['owner', 'admin', 'system'], delete: ['owner', 'admin'] }) },
};

/** Every command in the organization for the directory; owners and admins read (the console). */
const scimResourcePolicies = organizationPolicies({ select: ['owner', 'admin', 'directory'], insert: ['directory'], update: ['directory'], delete: ['directory'] });

/** A SCIM User resource: one directory's view of one `User`, with its own id (never the user's). */
export const scimUserTable: Table = {
  name: 'authstrap_scim_user',
  columns: [
    id,
    uuid('directoryId'),
    uuid('organizationId'),
    uuid('userId'),
    text('userName'),
    text('externalId', true),
    text('email'),
    { name: 'emails', type: 'text[]', nullable: false, default: "'{}'" },
    text('displayName', true),
    { name: 'active', type: 'boolean', nullable: false },
    text('membership'),
    time('deletedAt'),
    jsonb('attributes', false),
    { name: 'version', type: 'integer', nullable: false, default: '1' },
    ...timestamps,
  ],
  constraints: [
    oneOf('authstrap_scim_user', 'membership', ['member', 'suspended', 'invited']),
    unique('authstrap_scim_user', ['id', 'organizationId']),
    referencesInOrganization('authstrap_scim_user', 'directoryId', 'authstrap_scim_directory'),
    references('authstrap_scim_user', 'userId', 'User'),
  ],
  indexes: [
    // userName is case-insensitive (RFC 7643): the column holds it lowercased (the resource keeps
    // it as sent, in attributes), and is compared bare, so that this index serves a filter under
    // row-level security (a lower() of the column would not). A deleted resource frees its names.
    index('authstrap_scim_user', ['directoryId', 'userName'], { name: 'authstrap_scim_user_directoryId_userName_key', unique: true, where: '"deletedAt" IS NULL' }),
    index('authstrap_scim_user', ['directoryId', 'externalId'], { name: 'authstrap_scim_user_directoryId_externalId_key', unique: true, where: '"externalId" IS NOT NULL AND "deletedAt" IS NULL' }),
    index('authstrap_scim_user', ['directoryId', 'userId'], { name: 'authstrap_scim_user_directoryId_userId_key', unique: true, where: '"deletedAt" IS NULL' }),
    index('authstrap_scim_user', ['directoryId', 'email']),
    // `emails.value eq ...` filters.
    index('authstrap_scim_user', ['emails'], { method: 'gin' }),
    index('authstrap_scim_user', ['userId']),
  ],
  dependsOn: ['User', 'authstrap_scim_directory'],
  rowSecurity: { policies: scimResourcePolicies },
};

export const scimGroupTable: Table = {
  name: 'authstrap_scim_group',
  columns: [id, uuid('directoryId'), uuid('organizationId'), text('displayName'), text('externalId', true), jsonb('attributes', false), { name: 'version', type: 'integer', nullable: false, default: '1' }, ...timestamps],
  constraints: [unique('authstrap_scim_group', ['id', 'organizationId']), referencesInOrganization('authstrap_scim_group', 'directoryId', 'authstrap_scim_directory')],
  indexes: [
    index('authstrap_scim_group', ['directoryId', 'externalId'], { name: 'authstrap_scim_group_directoryId_externalId_key', unique: true, where: '"externalId" IS NOT NULL' }),
    index('authstrap_scim_group', ['directoryId', 'displayName'], { lowercase: ['displayName'] }),
  ],
  dependsOn: ['authstrap_scim_directory'],
  rowSecurity: { policies: scimResourcePolicies },
};

export const scimGroupMemberTable: Table = {
  name: 'authstrap_scim_group_member',
  columns: [uuid('groupId'), uuid('scimUserId'), uuid('organizationId')],
  constraints: [
    { name: 'authstrap_scim_group_member_pkey', definition: 'PRIMARY KEY ("groupId", "scimUserId")' },
    referencesInOrganization('authstrap_scim_group_member', 'groupId', 'authstrap_scim_group'),
    referencesInOrganization('authstrap_scim_group_member', 'scimUserId', 'authstrap_scim_user'),
  ],
  indexes: [index('authstrap_scim_group_member', ['scimUserId'])],
  dependsOn: ['authstrap_scim_group', 'authstrap_scim_user'],
  rowSecurity: { policies: scimResourcePolicies },
};

/** Which role a group's members get; only an owner maps a group to `owner`. */
export const scimRoleMappingTable: Table = {
  name: 'authstrap_scim_role_mapping',
  columns: [id, uuid('organizationId'), uuid('directoryId'), uuid('groupId'), text('role'), uuid('createdBy', true), ...timestamps],
  constraints: [
    oneOf('authstrap_scim_role_mapping', 'role', ['owner', 'admin', 'member']),
    unique('authstrap_scim_role_mapping', ['groupId']),
    referencesInOrganization('authstrap_scim_role_mapping', 'groupId', 'authstrap_scim_group'),
  ],
  indexes: [],
  dependsOn: ['authstrap_scim_group'],
  rowSecurity: {
    policies: organizationPolicies({ select: ['owner', 'admin', 'directory'], insert: ['owner', 'admin'], insertCheck: `"role" <> 'owner' OR authstrap.role() = 'owner'`, update: ['owner', 'admin'], delete: ['owner', 'admin'] }),
  },
};

/** The last requests of a directory and their outcome, for the console: a diagnostic log, kept 7 days. */
export const scimRequestTable: Table = {
  name: 'authstrap_scim_request',
  columns: [
    id,
    uuid('directoryId'),
    uuid('organizationId'),
    text('method'),
    // No query values: filters hold addresses.
    text('path'),
    { name: 'status', type: 'integer', nullable: false },
    text('scimType', true),
    text('detail', true),
    { name: 'durationMs', type: 'integer', nullable: false },
    time('createdAt', false),
  ],
  constraints: [referencesInOrganization('authstrap_scim_request', 'directoryId', 'authstrap_scim_directory')],
  indexes: [index('authstrap_scim_request', ['directoryId', 'createdAt'])],
  dependsOn: ['authstrap_scim_directory'],
  rowSecurity: { policies: organizationPolicies({ select: ['owner', 'admin'], insert: ['system'] }) },
};

/**
 * A deprovisioned membership, kept whole: the `member` row moves here (same id, role and creation
 * time) and back on reactivation. Absent from `member`, the user fails every "is a member"
 * question (guards, row-level security, streams, Better Auth) without any of them changing.
 */
export const memberSuspensionTable: Table = {
  name: 'authstrap_member_suspension',
  columns: [
    { name: 'id', type: 'uuid', nullable: false, primaryKey: true },
    uuid('organizationId'),
    uuid('userId'),
    text('role'),
    time('memberCreatedAt', false),
    text('reason'),
    uuid('directoryId', true),
    { name: 'suspendedAt', type: 'timestamptz', nullable: false, default: 'now()' },
  ],
  constraints: [
    oneOf('authstrap_member_suspension', 'role', ['owner', 'admin', 'member']),
    oneOf('authstrap_member_suspension', 'reason', ['directory-inactive', 'directory-deleted']),
    unique('authstrap_member_suspension', ['organizationId', 'userId']),
    references('authstrap_member_suspension', 'organizationId', 'Organization'),
    references('authstrap_member_suspension', 'userId', 'User'),
  ],
  // The sign-in rule looks a user's suspensions up by user.
  indexes: [index('authstrap_member_suspension', ['userId'])],
  dependsOn: ['Organization', 'User'],
  // Reactivation deletes (the directory), and so does removing a suspended member for good (an owner or admin).
  rowSecurity: { policies: organizationPolicies({ select: ['owner', 'admin', 'directory', 'system'], insert: ['directory', 'system'], update: ['directory', 'system'], delete: ['owner', 'admin', 'directory', 'system'] }) },
};

export const identityTables: Table[] = [
  ssoConnectionTable,
  ssoCertificateTable,
  ssoPolicyTable,
  domainTable,
  ssoIdentityTable,
  ssoFlowTable,
  ssoCodeTable,
  samlAssertionTable,
  scimDirectoryTable,
  scimTokenTable,
  scimUserTable,
  scimGroupTable,
  scimGroupMemberTable,
  scimRoleMappingTable,
  scimRequestTable,
  memberSuspensionTable,
];
