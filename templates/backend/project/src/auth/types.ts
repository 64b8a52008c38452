import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import type { Mailer } from '../mail/mail.js';
import { passwordSchema } from './password.js';
import type { SignInMethod } from './sign-in-policy.js';
import type { Role } from './roles.js';

/**
 * The shapes the auth engine (this folder) and the service you own
 * (src/extensions/auth/auth.service.ts) both speak: kept here, below both, so that neither
 * imports the other's types back.
 */

export { RoleSchema, type Role } from './roles.js';

// Auth bodies ignore unknown fields (clients such as Better Auth send extras like callbackURL).
export const SignUpInput = z
  .object({
    email: z.email().max(320).toLowerCase(),
    name: z.string().min(2).max(200),
    password: passwordSchema,
    image: z.string().max(2048).nullable().optional(),
  })
  .meta({ id: 'SignUpInput' });
export type SignUpInput = z.infer<typeof SignUpInput>;

export const SignInInput = z
  .object({ email: z.string().max(320).toLowerCase(), password: z.string().max(1024) })
  .meta({ id: 'SignInInput' });
export type SignInInput = z.infer<typeof SignInInput>;

export interface PublicUser {
  id: string;
  email: string;
  name: string;
  email_verified: boolean;
  image: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface PublicSession {
  id: string;
  userId: string;
  expiresAt: Date;
  activeOrganizationId: string | null;
  ipAddress: string | null;
  userAgent: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** The operator signed in as the user (docs/operator.md, "Impersonation"); null for the user's own session. */
  impersonatedBy: string | null;
}

/** Who is calling, as resolved by the auth guard. */
export type Caller =
  | { kind: 'service' }
  | {
      kind: 'user';
      user: PublicUser;
      session: PublicSession;
      /** The caller's membership of the organization they act in (x-organization-id, or else the session's active one), if any. */
      membership?: { organizationId: string; role: Role };
    }
  /** A machine key of one organization (x-api-key), on that organization's tenant-scoped routes only. */
  | { kind: 'key'; keyId: string; organizationId: string; role: Role };

export interface RequestMeta {
  ipAddress?: string;
  userAgent?: string;
}

/** A live session as resolveSession finds it; `renewed` tells the caller to send the cookie again. */
export interface ResolvedSession {
  session: PublicSession;
  user: PublicUser;
  /** The user's membership of the organization asked for (or else the session's active one), if any. */
  membership?: { organizationId: string; role: Role };
  /** The operator signed in as the user, for an impersonation session (what the app's banner shows); null otherwise. */
  impersonator: { id: string; email: string; name: string } | null;
  renewed: boolean;
}

/** What the routes that check a session themselves (organization-manager.ts) need of the service. */
export interface SessionResolver {
  resolveSession(token: string, organizationId?: string): Promise<ResolvedSession | null>;
}

export type AuthSettings = Pick<Config, 'bcryptCost' | 'requireEmailVerification' | 'invitations'> & { mail: Pick<Config['mail'], 'appUrl'> };

/** What account-flows.ts and invitations.ts use of the service: its building blocks, made by createAuthService. */
export type AuthInternals = {
  db: Database;
  config: AuthSettings;
  mailer: Mailer;
  hashPassword(password: string): Promise<string>;
  /**
   * A new session, made by `method` (stored as `session.authMethod`; the sign-in rule's trigger
   * decides on it, and refuses with SQLSTATE AS403). `breakGlass`: an owner signed in by password
   * while the organization requires SSO.
   */
  createSession(tx: Queryable, userId: string, activeOrganizationId: string | null, meta: RequestMeta, method: SignInMethod): Promise<{ token: string; session: PublicSession; breakGlass: boolean }>;
  insertUserWithPassword(tx: Queryable, input: { email: string; name: string; image?: string | null; emailVerified?: boolean }, passwordHash: string): Promise<PublicUser>;
  createPersonalOrganization(tx: Queryable, user: { id: string; name: string }): Promise<string>;
  sendVerificationLink(tx: Queryable, user: { id: string; email: string; name: string }): Promise<void>;
};
