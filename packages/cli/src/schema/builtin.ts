import type { EntityDefinition } from './types.js';

/**
 * The entities authstrap brings when `auth` is on: the four auth entities of the spec (their
 * names are exact: `User` is PascalCase, the other three lowercase) and the tenant model.
 * Column names follow DECISIONS.md §2 "Data model"; the JSON field names are the column names.
 */
export const builtinEntities: Record<string, EntityDefinition> = {
  User: {
    tenantScoped: false,
    description: 'A person who can sign in. Holds no password: that lives in `account`.',
    fields: {
      email: { type: 'string', format: 'email', lowercase: true, unique: true, maxLength: 320, searchable: true },
      name: { type: 'string', minLength: 2, maxLength: 200, searchable: true },
      email_verified: { type: 'boolean', default: false },
      image: { type: 'string', nullable: true, maxLength: 2048 },
    },
  },
  account: {
    tenantScoped: false,
    description: "A way to sign in as a user: a password ('credential') or an OAuth provider.",
    fields: {
      userId: { type: 'uuid', references: 'User', onDelete: 'cascade' },
      accountId: { type: 'string' },
      providerId: { type: 'string' },
      password: { type: 'string', nullable: true, secret: true, description: 'bcrypt hash' },
      accessToken: { type: 'text', nullable: true, secret: true },
      refreshToken: { type: 'text', nullable: true, secret: true },
      idToken: { type: 'text', nullable: true, secret: true },
      accessTokenExpiresAt: { type: 'datetime', nullable: true },
      refreshTokenExpiresAt: { type: 'datetime', nullable: true },
      scope: { type: 'string', nullable: true },
    },
    uniqueTogether: [['providerId', 'accountId']],
  },
  session: {
    tenantScoped: false,
    description: 'A signed-in session. `token` is the SHA-256 of the secret the client holds.',
    fields: {
      userId: { type: 'uuid', references: 'User', onDelete: 'cascade' },
      token: { type: 'string', unique: true, secret: true },
      expiresAt: { type: 'datetime' },
      ipAddress: { type: 'string', nullable: true },
      userAgent: { type: 'text', nullable: true },
      activeOrganizationId: { type: 'uuid', nullable: true, references: 'Organization', onDelete: 'set null' },
    },
  },
  verification: {
    tenantScoped: false,
    description: 'A short-lived token, e.g. for e-mail verification.',
    fields: {
      identifier: { type: 'string' },
      value: { type: 'text', secret: true },
      expiresAt: { type: 'datetime' },
    },
    indexes: [['identifier']],
  },
  Organization: {
    tenantScoped: false,
    description: 'A tenant. Every business record belongs to exactly one.',
    fields: {
      name: { type: 'string', minLength: 2, maxLength: 200, searchable: true },
      slug: { type: 'string', unique: true, minLength: 2, maxLength: 100 },
    },
  },
  member: {
    // Scoped by its own organizationId: a member row belongs to the organization it grants.
    tenantScoped: true,
    description: "A user's membership of an organization, with a role.",
    fields: {
      userId: { type: 'uuid', references: 'User', onDelete: 'cascade' },
      role: { type: 'enum', values: ['owner', 'admin', 'member'], default: 'member' },
    },
    uniqueTogether: [['organizationId', 'userId']],
  },
};

export const builtinEntityNames = Object.keys(builtinEntities);
