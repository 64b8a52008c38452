import { randomBytes } from 'node:crypto';
import bcrypt from 'bcrypt';
import type { Database, Queryable } from '../../db/database.js';
import { HttpError } from '../../http/errors.js';
import { hashToken, storedTokenCandidates } from '../../http/session-token.js';
import { byUser, currentRequestContext, listSecurityEvents, recordAuthEvent, setEventContext, type EventContext } from '../../events/events.js';
import type { ListQuery } from '../../http/list-query.js';
import type { MachineKeyLimit } from '../../http/machine-key-limit.js';
import type { Mailer } from '../../mail/mail.js';
import { messages } from '../mail/messages.js';
import { createAccountFlows } from '../../auth/account-flows.js';
import type { AuthService } from '../../auth/auth-service.js';
import { createInvitations } from '../../auth/invitations.js';
import { createMachineKeys } from '../../auth/machine-keys.js';
import { decideSignIn, recordBreakGlass, refuseSignIn, refusedVerdictOf, type SignInMethod } from '../../auth/sign-in-policy.js';
import { issueToken } from '../../auth/tokens.js';
import type { AuthInternals, AuthSettings, PublicSession, PublicUser, RequestMeta, ResolvedSession, Role, SignInInput, SignUpInput } from '../../auth/types.js';

/**
 * Password sign-up and sign-in with database sessions; the account flows around them are in
 * src/auth/account-flows.ts, invitations in src/auth/invitations.ts. This file is yours: the
 * generator created it once and never writes it again.
 *
 * - Passwords are bcrypt hashes in `account.password` (providerId 'credential'), never in `User`.
 * - A session secret is 32 random bytes the client keeps (cookie `session` or a Bearer token);
 *   the database stores only its SHA-256, so a database leak yields no usable session.
 * - Sessions that Better Auth created through the adapter are accepted too (see
 *   storedTokenCandidates in http/session-token.ts).
 */

const sessionLifetimeMs = 7 * 24 * 60 * 60 * 1000;
/** A session used with less than this left is extended to the full lifetime again. */
const renewWhenLeftMs = 6 * 24 * 60 * 60 * 1000;

const userFields = ['id', 'email', 'name', 'email_verified', 'image', 'createdAt', 'updatedAt'];
const userColumns = (alias: string) => userFields.map((field) => `${alias}."${field}"`).join(', ');
const sessionColumns = 's."id", s."userId", s."expiresAt", s."activeOrganizationId", s."ipAddress", s."userAgent", s."createdAt", s."updatedAt", s."impersonatedBy"';

const invalidCredentials = () => new HttpError(401, 'UNAUTHORIZED', 'Invalid email or password');

function slugify(text: string): string {
  const base = text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  return `${base || 'org'}-${randomBytes(3).toString('hex')}`;
}

// Code written against 0.2.0 imported these from this file; they live in src/auth/ now.
export type { AuthService } from '../../auth/auth-service.js';
export { RoleSchema, SignInInput, SignUpInput, type AuthSettings, type Caller, type PublicSession, type PublicUser, type RequestMeta, type Role } from '../../auth/types.js';

/**
 * The service the engine (src/auth/) runs on. A method of your own needs a line in the
 * AuthService interface (src/auth/auth-service.ts) too, for the routes to see it.
 */
export function createAuthService({ db, config, mailer, machineKeyLimit }: { db: Database; config: AuthSettings; mailer: Mailer; machineKeyLimit: MachineKeyLimit }): AuthService {
  // Hashed once, lazily: sign-in for an unknown e-mail compares against it, so that an unknown
  // e-mail and a wrong password take the same time.
  let dummyHash: Promise<string> | undefined;
  const timingDummy = () => (dummyHash ??= bcrypt.hash(randomBytes(16).toString('hex'), config.bcryptCost));

  // bcrypt's async functions run on libuv's thread pool, off the event loop.
  const hashPassword = (password: string) => bcrypt.hash(password, config.bcryptCost);

  /**
   * The session row says how it was made (`method`); the sign-in rule's trigger decides on it
   * (SQLSTATE AS403 when refused) and marks an owner's break-glass sign-in.
   */
  async function createSession(tx: Queryable, userId: string, activeOrganizationId: string | null, meta: RequestMeta, method: SignInMethod) {
    const token = randomBytes(32).toString('base64url');
    const { rows } = await tx.query<PublicSession & { authMethod: string | null }>(
      `INSERT INTO "session" ("userId", "token", "expiresAt", "activeOrganizationId", "ipAddress", "userAgent", "authMethod")
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING "id", "userId", "expiresAt", "activeOrganizationId", "ipAddress", "userAgent", "createdAt", "updatedAt", "impersonatedBy", "authMethod"`,
      [userId, hashToken(token), new Date(Date.now() + sessionLifetimeMs), activeOrganizationId, meta.ipAddress ?? null, meta.userAgent?.slice(0, 512) ?? null, method],
    );
    const { authMethod, ...session } = rows[0]!;
    return { token, session, breakGlass: authMethod?.endsWith(':break-glass') ?? false };
  }

  /** User + credential account in one transaction; the caller adds memberships. */
  async function insertUserWithPassword(tx: Queryable, input: { email: string; name: string; image?: string | null; emailVerified?: boolean }, passwordHash: string) {
    const { rows } = await tx.query<PublicUser>(
      `INSERT INTO "User" ("email", "name", "image", "email_verified") VALUES ($1, $2, $3, $4)
       RETURNING "id", "email", "name", "email_verified", "image", "createdAt", "updatedAt"`,
      [input.email, input.name, input.image ?? null, input.emailVerified ?? false],
    );
    const user = rows[0]!;
    // providerId must be exactly 'credential': sign-in looks the account up by it.
    await tx.query(
      `INSERT INTO "account" ("userId", "accountId", "providerId", "password") VALUES ($1, $2, 'credential', $3)`,
      [user.id, user.id, passwordHash],
    );
    return user;
  }

  /** A new user's own organization, with them as its owner: every user can act in one from the start. */
  async function createPersonalOrganization(tx: Queryable, user: { id: string; name: string }): Promise<string> {
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO "Organization" ("name", "slug") VALUES ($1, $2) RETURNING "id"`,
      [`${user.name}'s organization`, slugify(user.name)],
    );
    const organizationId = rows[0]!.id;
    await tx.query(`INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, 'owner')`, [organizationId, user.id]);
    return organizationId;
  }

  /**
   * Puts a link that confirms the user's address in the outbox (in `tx`), unless they already
   * have three unexpired ones: asking again and again sends no more mail.
   */
  async function sendVerificationLink(tx: Queryable, user: { id: string; email: string; name: string }): Promise<void> {
    const token = await issueToken(tx, 'verify-email', user.id, [user.email]);
    if (!token) return;
    const link = mailer.link('verify-email', { token });
    await mailer.send(tx, { kind: 'verify-email', to: user.email, message: messages.verifyEmail({ name: user.name, link }), link });
  }

  /**
   * Extends a session with less than `renewWhenLeftMs` left to the full lifetime again (one
   * UPDATE, at most once a day per session). Returns the new expiry, or undefined when it was
   * not due. An impersonation is never renewed: it ends at the operator's bound (and the
   * session's update trigger keeps that end whoever tries).
   */
  async function renewIfDue(session: { id: string; expiresAt: Date | string; impersonatedBy?: string | null }): Promise<Date | undefined> {
    if (session.impersonatedBy) return undefined;
    if (new Date(session.expiresAt).getTime() - Date.now() >= renewWhenLeftMs) return undefined;
    const expiresAt = new Date(Date.now() + sessionLifetimeMs);
    await db.query(`UPDATE "session" SET "expiresAt" = $2, "updatedAt" = GREATEST(now(), "updatedAt") WHERE "id" = $1`, [session.id, expiresAt]);
    return expiresAt;
  }

  const shared: AuthInternals = { db, config, mailer, hashPassword, createSession, insertUserWithPassword, createPersonalOrganization, sendVerificationLink };

  return {
    hashPassword,
    createPersonalOrganization,

    /**
     * User + credential account + personal organization (owner) + a link that confirms the
     * address, all or nothing; and a session, unless REQUIRE_EMAIL_VERIFICATION keeps the user
     * out until they follow the link (`token` is then null).
     */
    async signUp(input: SignUpInput, meta: RequestMeta) {
      // An address that must use SSO is told at once, before the hashing (the account trigger holds anyway).
      const attempt = { email: input.email, userId: null, method: 'sign-up' } as const;
      const refused = await refuseSignIn(db, await decideSignIn(db, attempt), attempt, config.mail.appUrl);
      if (refused) throw refused;
      const passwordHash = await hashPassword(input.password);
      const signedUp = await db.transaction(async (tx) => {
        const user = await insertUserWithPassword(tx, input, passwordHash);
        await recordAuthEvent(tx, { type: 'user.signed_up', userId: user.id, entity: 'User', entityId: user.id }, byUser(user.id));
        const organizationId = await createPersonalOrganization(tx, user);
        await sendVerificationLink(tx, user);
        const started = config.requireEmailVerification ? undefined : await createSession(tx, user.id, organizationId, meta, 'sign-up');
        return { user, token: started?.token ?? null, session: started?.session ?? null, organizationId };
      });
      mailer.sendCommitted();
      return signedUp;
    },

    async signIn(input: SignInInput, meta: RequestMeta) {
      // Whether the address's domain requires SSO: the domain alone decides, so asking before the
      // password is checked tells nothing about accounts. It is answered after the comparison, so
      // that a wrong password costs the same everywhere and an owner's break-glass (decided by the
      // session's trigger once the password matched) shows no one who the owners are.
      const byDomain = await decideSignIn(db, { email: input.email, userId: null, method: 'password' });
      const { rows } = await db.query<PublicUser & { passwordHash: string | null }>(
        `SELECT ${userColumns('u')}, a."password" AS "passwordHash"
         FROM "User" u LEFT JOIN "account" a ON a."userId" = u."id" AND a."providerId" = 'credential'
         WHERE lower(u."email") = lower($1)`,
        [input.email],
      );
      const found = rows[0];
      // No stored password is longer than 72 bytes, and bcrypt would compare only the first 72:
      // a longer one is wrong by definition, not a match on its prefix.
      const tooLong = Buffer.byteLength(input.password, 'utf8') > 72;
      // An unknown address compares against a dummy hash of the same cost, so that the answer
      // takes as long whether the address has an account or not.
      const matches = await bcrypt.compare(input.password, found?.passwordHash && !tooLong ? found.passwordHash : await timingDummy());
      if (!found?.passwordHash || tooLong || !matches) {
        // Every failed attempt is recorded the same way, known address or not (the address as
        // typed; the user when there is one, whose security events then show it): the same
        // statements on both paths, so neither the time nor the work tells them apart.
        await db.transaction((tx) =>
          recordAuthEvent(tx, { type: 'session.sign_in_failed', userId: found?.id ?? null, entity: 'User', entityId: found?.id, data: { email: input.email } }, { actorType: 'system' }),
        );
        throw (await refuseSignIn(db, byDomain, { email: input.email, userId: null, method: 'password' }, config.mail.appUrl)) ?? invalidCredentials();
      }
      const { passwordHash: _hash, ...user } = found;
      if (config.requireEmailVerification && !user.email_verified) {
        // Only someone who knows the password learns this, and gets a fresh link.
        await db.transaction((tx) => sendVerificationLink(tx, user));
        mailer.sendCommitted();
        throw new HttpError(403, 'EMAIL_NOT_VERIFIED', 'Confirm your e-mail address first: a link to do so is on its way to it');
      }
      const { rows: memberships } = await db.query<{ organizationId: string }>(
        `SELECT "organizationId" FROM "member" WHERE "userId" = $1 ORDER BY "createdAt" LIMIT 1`,
        [user.id],
      );
      const started = await db
        .transaction(async (tx) => {
          const created = await createSession(tx, user.id, memberships[0]?.organizationId ?? null, meta, 'password');
          const method = created.breakGlass ? 'password:break-glass' : 'password';
          await recordAuthEvent(tx, { type: 'session.signed_in', userId: user.id, entity: 'session', entityId: created.session.id, data: { method } }, byUser(user.id));
          await recordBreakGlass(tx, { id: created.session.id, userId: user.id, authMethod: method }, user.email);
          return created;
        })
        .catch(async (error) => {
          // The session's trigger refused: SSO required (not an owner's break-glass), or deprovisioned.
          const verdict = refusedVerdictOf(error);
          throw (verdict && (await refuseSignIn(db, verdict, { email: user.email, userId: user.id, method: 'password' }, config.mail.appUrl))) ?? error;
        });
      return { user, token: started.token, session: started.session };
    },

    async signOut(token: string): Promise<void> {
      await db.transaction(async (tx) => {
        const { rows } = await tx.query<{ id: string; userId: string }>(`DELETE FROM "session" WHERE "token" = ANY($1::text[]) AND "impersonatedBy" IS NULL RETURNING "id", "userId"`, [storedTokenCandidates(token)]);
        for (const ended of rows) await recordAuthEvent(tx, { type: 'session.signed_out', userId: ended.userId, entity: 'session', entityId: ended.id }, byUser(ended.userId));
        // An operator signing out of an impersonation ends it on the record (operator.impersonation_ended), as ending it from the operator's page does.
        await tx.query(
          `SELECT authstrap.sign_out_impersonation(s."id", $2::jsonb) FROM "session" s WHERE s."token" = ANY($1::text[]) AND s."impersonatedBy" IS NOT NULL`,
          [storedTokenCandidates(token), JSON.stringify(currentRequestContext())],
        );
      });
    },

    /**
     * The session, its user and their role in the organization `organizationId` names, or else in
     * the session's active organization, in one round trip. Expired sessions resolve to null. A
     * session with less than 6 days left is extended to 7; `renewed` tells the caller to send the
     * cookie again.
     */
    async resolveSession(token: string, organizationId?: string) {
      const { rows } = await db.query<PublicSession & { user: PublicUser; role: Role | null; "~organizationId": string | null; '~impersonator': ResolvedSession['impersonator'] }>(
        `SELECT ${sessionColumns}, row_to_json(u) AS "user", m."role", m."organizationId" AS "~organizationId",
                (SELECT json_build_object('id', o."id", 'email', o."email", 'name', o."name") FROM "User" o WHERE o."id" = s."impersonatedBy") AS "~impersonator"
         FROM "session" s
         JOIN (SELECT ${userColumns('"User"')} FROM "User") u ON u."id" = s."userId"
         LEFT JOIN "member" m ON m."userId" = s."userId" AND m."organizationId" = COALESCE($2::uuid, s."activeOrganizationId")
         WHERE s."token" = ANY($1::text[]) AND s."expiresAt" > now()`,
        [storedTokenCandidates(token), organizationId ?? null],
      );
      const row = rows[0];
      if (!row) return null;
      const { user, role, '~organizationId': memberOf, '~impersonator': impersonator, ...session } = row;
      const resolved = {
        session,
        user: { ...user, createdAt: new Date(user.createdAt), updatedAt: new Date(user.updatedAt) },
        membership: role && memberOf ? { organizationId: memberOf, role } : undefined,
        impersonator,
        renewed: false,
      };
      const renewedUntil = await renewIfDue(session);
      if (renewedUntil) {
        resolved.session = { ...session, expiresAt: renewedUntil };
        resolved.renewed = true;
      }
      return resolved;
    },

    /**
     * Makes `organizationId` the session's active organization: the one its requests act in when
     * they send no x-organization-id. The user must be a member (403 otherwise); null clears it.
     */
    async setActiveOrganization(sessionId: string, userId: string, organizationId: string | null) {
      const { rows } = await db.query<PublicSession & { organization: { id: string; name: string; slug: string; role: Role } | null }>(
        `WITH target AS (
           SELECT o."id", o."name", o."slug", m."role" FROM "member" m JOIN "Organization" o ON o."id" = m."organizationId"
           WHERE m."userId" = $2 AND m."organizationId" = $3
         ), updated AS (
           UPDATE "session" s SET "activeOrganizationId" = $3, "updatedAt" = GREATEST(now(), s."updatedAt")
           WHERE s."id" = $1 AND ($3::uuid IS NULL OR EXISTS (SELECT FROM target))
           RETURNING ${sessionColumns}
         )
         SELECT updated.*, (SELECT row_to_json(target) FROM target) AS "organization" FROM updated`,
        [sessionId, userId, organizationId],
      );
      const row = rows[0];
      if (!row) throw new HttpError(403, 'FORBIDDEN', 'You are not a member of this organization');
      const { organization, ...session } = row;
      return { session, organization };
    },
    /** See renewIfDue above: the tenant guard renews a session its statement read. */
    renewIfDue,

    /** The organizations a user belongs to, with the role in each. */
    async organizationsOf(userId: string) {
      const { rows } = await db.query<{ id: string; name: string; slug: string; role: Role }>(
        `SELECT o."id", o."name", o."slug", m."role" FROM "member" m JOIN "Organization" o ON o."id" = m."organizationId"
         WHERE m."userId" = $1 ORDER BY m."createdAt"`,
        [userId],
      );
      return rows;
    },

    /**
     * The user's unexpired sessions, newest first; `current` marks the one of this request.
     * `updatedAt` is when it was last renewed (sessions in use are renewed about once a day).
     */
    async sessionsOf(userId: string, currentSessionId: string) {
      const { rows } = await db.query<PublicSession>(
        `SELECT ${sessionColumns} FROM "session" s WHERE s."userId" = $1 AND s."expiresAt" > now() ORDER BY s."createdAt" DESC`,
        [userId],
      );
      return rows.map((session) => ({ ...session, current: session.id === currentSessionId }));
    },

    /** The events about the user (GET /api/auth/security-events), newest first. */
    securityEvents: (userId: string, query: ListQuery) => listSecurityEvents(db, userId, query),

    /** Ends one of the user's sessions; false when they have none with that id. */
    async revokeSession(userId: string, sessionId: string): Promise<boolean> {
      return db.transaction(async (tx) => {
        const { rowCount } = await tx.query(`DELETE FROM "session" WHERE "id" = $1 AND "userId" = $2`, [sessionId, userId]);
        if (rowCount > 0) await recordAuthEvent(tx, { type: 'session.revoked', userId, entity: 'session', entityId: sessionId, data: { revoked: 1 } }, byUser(userId));
        return rowCount > 0;
      });
    },

    /** Ends every session of the user but `keepSessionId`; how many ended. */
    async revokeOtherSessions(userId: string, keepSessionId: string): Promise<number> {
      return db.transaction(async (tx) => {
        const { rowCount } = await tx.query(`DELETE FROM "session" WHERE "userId" = $1 AND "id" <> $2`, [userId, keepSessionId]);
        if (rowCount > 0) await recordAuthEvent(tx, { type: 'session.revoked', userId, data: { revoked: rowCount } }, byUser(userId));
        return rowCount;
      });
    },

    /**
     * Removes a user from an organization (their account stays). Never its last owner, an admin
     * never removes an owner, and nobody but the member removes one its directory manages. The owner rows are locked so that two concurrent removals
     * cannot both pass the check.
     */
    /** `context`: the request and who made it, for the member.deleted event the removal records. */
    async removeMember(organizationId: string, userId: string, actingRole: Role | 'self', context: EventContext): Promise<void> {
      await db.transaction(async (tx) => {
        await setEventContext(tx, context);
        const { rows: owners } = await tx.query<{ userId: string }>(
          `SELECT "userId" FROM "member" WHERE "organizationId" = $1 AND "role" = 'owner' FOR UPDATE`,
          [organizationId],
        );
        const { rows } = await tx.query<{ role: Role }>('SELECT "role" FROM "member" WHERE "organizationId" = $1 AND "userId" = $2', [organizationId, userId]);
        const target = rows[0];
        if (!target) throw new HttpError(404, 'NOT_FOUND', `User with id '${userId}' not found`);
        if (target.role === 'owner' && actingRole !== 'owner' && actingRole !== 'self') {
          throw new HttpError(403, 'FORBIDDEN', 'Only an owner can remove an owner');
        }
        if (target.role === 'owner' && owners.length === 1) {
          throw new HttpError(409, 'CONFLICT', 'An organization keeps at least one owner; make someone else owner first');
        }
        // A member the organization's directory provisioned and gives a role is the directory's to
        // remove: removed here, the identity provider would still count them in. They may leave.
        if (actingRole !== 'self') {
          const { rows: managed } = await tx.query<{ managed: boolean }>(`SELECT authstrap.directory_manages_role($1, $2) AS "managed"`, [userId, organizationId]);
          if (managed[0]?.managed) {
            throw new HttpError(409, 'DIRECTORY_MANAGED', "This member comes from the organization's directory: unassign them in the identity provider (which suspends them here), then remove the suspended member");
          }
        }
        await tx.query('DELETE FROM "member" WHERE "organizationId" = $1 AND "userId" = $2', [organizationId, userId]);
      });
    },

    /** Verifying the address, resetting and changing the password and the address, deleting the account. */
    ...createAccountFlows(shared),

    /** Invitations to join an organization (see src/auth/invitations.ts). */
    invitations: createInvitations(shared),

    /** The organizations' machine keys (see src/auth/machine-keys.ts). */
    machineKeys: createMachineKeys(db, machineKeyLimit),
  };
}
