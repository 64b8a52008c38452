import type { EntityDefinition } from './types.js';

/**
 * The entities authstrap brings when `auth` is on: the four auth entities of the spec (their
 * names are exact: `User` is PascalCase, the other three lowercase) and the tenant model, and
 * the organizations' machine keys (`apikey`, Better Auth's api-key model).
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
      // Written by the backend, never taken from a client (docs/enterprise-identity.md, 2.1): the
      // audit log shows it, and the sign-in rule's trigger (identity-sql.ts) decides by it.
      authMethod: {
        type: 'string',
        nullable: true,
        maxLength: 64,
        description: "How the session was made: 'password', 'password:break-glass', 'sign-up', 'invitation', 'sso', 'impersonation', 'better-auth:<method>'; null before it was recorded",
      },
      // No foreign key: the sessions of a deleted connection are found (and ended) by it.
      ssoConnectionId: { type: 'uuid', nullable: true, description: "The SSO connection that proved the session (authMethod 'sso')" },
      // Written only by the operators' impersonation (operator-sql.ts), never taken from a client: the
      // sign-in rule's trigger admits authMethod 'impersonation' only with an operator here, and every
      // event the session makes carries it (docs/operator.md, "Impersonation"). An operator's account
      // deleted ends the sessions they opened as someone else.
      impersonatedBy: {
        type: 'uuid',
        nullable: true,
        references: 'User',
        onDelete: 'cascade',
        description: "The operator signed in as the user (authMethod 'impersonation'); null for the user's own sessions",
      },
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
  // Better Auth's api-key plugin's model, field for field (its `apikey` table), plus `role`.
  apikey: {
    tenantScoped: false,
    description:
      "A machine key of one organization (`referenceId`): what a cron job or another service sends as `x-api-key`. `key` is the base64url SHA-256 of the key, never the key.",
    fields: {
      // No foreign key: Better Auth's user-owned keys reference a user here, not an organization.
      referenceId: { type: 'uuid' },
      configId: { type: 'string', default: 'default' },
      name: { type: 'string', nullable: true, maxLength: 200 },
      start: { type: 'string', nullable: true },
      prefix: { type: 'string', nullable: true },
      key: { type: 'string', unique: true, secret: true, description: 'base64url SHA-256 of the key' },
      role: { type: 'enum', values: ['owner', 'admin', 'member'], default: 'member' },
      permissions: { type: 'text', nullable: true, description: 'JSON: entity -> operations, e.g. {"Project":["list","read"]}' },
      enabled: { type: 'boolean', default: true },
      expiresAt: { type: 'datetime', nullable: true },
      lastRequest: { type: 'datetime', nullable: true },
      requestCount: { type: 'integer', default: 0 },
      rateLimitEnabled: { type: 'boolean', default: true },
      rateLimitTimeWindow: { type: 'number', nullable: true, default: 60000 },
      rateLimitMax: { type: 'integer', nullable: true, default: 600 },
      remaining: { type: 'integer', nullable: true },
      refillInterval: { type: 'number', nullable: true },
      refillAmount: { type: 'integer', nullable: true },
      lastRefillAt: { type: 'datetime', nullable: true },
      metadata: { type: 'text', nullable: true },
      // A key stops while its creator's membership is suspended by a directory (docs/enterprise-identity.md, 3.6).
      createdBy: { type: 'uuid', nullable: true, references: 'User', onDelete: 'set null', description: 'The member who made the key' },
    },
    indexes: [['referenceId']],
  },
};

export const builtinEntityNames = Object.keys(builtinEntities);
