import type { Queryable } from '../db/database.js';
import type { AuditEvent, EventContext } from '../events/events.js';
import type { ListPage, ListQuery } from '../http/list-query.js';
import type { AccountFlows } from './account-flows.js';
import type { Invitations } from './invitations.js';
import type { MachineKeys } from './machine-keys.js';
import type { PublicSession, PublicUser, RequestMeta, Role, SessionResolver, SignInInput, SignUpInput } from './types.js';

/**
 * What the rest of the backend (the /api/auth routes, the guards, the generated routes) asks of
 * the auth service. The service itself is yours, in src/extensions/auth/auth.service.ts;
 * everything here depends on this interface instead of on that file, so that your file can import
 * the engine without the engine importing it back.
 */
export interface AuthService extends SessionResolver, AccountFlows {
  hashPassword(password: string): Promise<string>;
  /** A new user's own organization, with them as its owner; its id. */
  createPersonalOrganization(tx: Queryable, user: { id: string; name: string }): Promise<string>;

  /** `token` and `session` are null when REQUIRE_EMAIL_VERIFICATION keeps the new user out until they follow the link. */
  signUp(input: SignUpInput, meta: RequestMeta): Promise<{ user: PublicUser; token: string | null; session: PublicSession | null; organizationId: string }>;
  signIn(input: SignInInput, meta: RequestMeta): Promise<{ user: PublicUser; token: string; session: PublicSession }>;
  signOut(token: string): Promise<void>;

  /** Makes `organizationId` the session's active organization (403 for a non-member); null clears it. */
  setActiveOrganization(sessionId: string, userId: string, organizationId: string | null): Promise<{ session: PublicSession; organization: UserOrganization | null }>;
  /** Extends a session that is due to the full lifetime again; the new expiry, or undefined when it was not due. */
  renewIfDue(session: { id: string; expiresAt: Date | string; impersonatedBy?: string | null }): Promise<Date | undefined>;
  organizationsOf(userId: string): Promise<UserOrganization[]>;
  sessionsOf(userId: string, currentSessionId: string): Promise<(PublicSession & { current: boolean })[]>;
  securityEvents(userId: string, query: ListQuery): Promise<ListPage<AuditEvent>>;
  revokeSession(userId: string, sessionId: string): Promise<boolean>;
  revokeOtherSessions(userId: string, keepSessionId: string): Promise<number>;
  /** `actingRole` 'self' when the user leaves; `context` for the member.deleted event. */
  removeMember(organizationId: string, userId: string, actingRole: Role | 'self', context: EventContext): Promise<void>;

  invitations: Invitations;
  machineKeys: MachineKeys;
}

/** An organization of a user, with their role in it. */
export interface UserOrganization {
  id: string;
  name: string;
  slug: string;
  role: Role;
}
