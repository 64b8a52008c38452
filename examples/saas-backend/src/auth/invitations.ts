import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Queryable } from '../db/database.js';
import { lockUntilCommit } from '../db/locks.js';
import { forbidden, HttpError, tooManyRequests } from '../http/errors.js';
import { hashToken } from '../http/session-token.js';
import { byUser, recordAuthEvent, recordEvent } from '../events/events.js';
import { messages } from '../extensions/mail/messages.js';
import { acceptDirectoryInvitation } from '../scim/accepted-invitations.js';
import { passwordSchema } from './password.js';
import { decideSignIn, refuseSignIn } from './sign-in-policy.js';
import { RoleSchema, type AuthInternals, type PublicUser, type RequestMeta, type Role } from './types.js';

/**
 * Joining an organization takes the consent of the person who joins, proven by mail. An owner or
 * admin invites an e-mail address (POST /members, or POST /Users); the invitation is mailed to it
 * with a link, and the person accepts (or declines) with the link's secret: signed in with that
 * address, or, without an account, by choosing a name and password, which creates the account
 * with its address proven. Nobody is attached to an organization, and no account is made for an
 * address, without the mailbox's owner. The answer to the inviter is the same whether the address
 * has an account or not, and never carries the secret.
 *
 * An invitation is a `verification` row: `identifier` is `invitation:<email>`, `value` is
 * `<SHA-256 of the secret>:<organization id>:<role>:<inviter id>`; `expiresAt` bounds it.
 * It works only while its inviter may still invite with that role (an owner for an owner; an
 * owner or admin otherwise), and while the organization exists. A directory invites too (a
 * person it provisions who has an account outside the organization's domains: docs/scim.md);
 * then the inviter is the directory's id, and the invitation stands while the directory is
 * enabled and its resource for the person is live, active and still `invited`.
 *
 * Limits (INVITATIONS_PENDING_MAX per organization, INVITATIONS_PER_HOUR per inviter) keep an
 * organization from being a way to mail anyone in bulk; organization names in the mail are text,
 * never links (messages.ts).
 */

const invitationLifetimeMs = 7 * 24 * 60 * 60 * 1000;
const identifierOf = (email: string) => `invitation:${email.toLowerCase()}`;

export const InvitationInput = z
  .strictObject({
    email: z.email().max(320).toLowerCase(),
    role: RoleSchema.optional(),
  })
  .meta({ id: 'InvitationInput' });
export type InvitationInput = z.infer<typeof InvitationInput>;

/** POST /Users by an owner or admin: an invitation too; `name` only greets them in the mail. */
export const NewMemberInput = InvitationInput.extend({ name: z.string().min(2).max(200).optional() }).meta({ id: 'NewMemberInput' });
export type NewMemberInput = z.infer<typeof NewMemberInput>;

export const InvitationAnswerInput = z
  .object({ token: z.string().min(1).max(200) })
  .meta({ id: 'InvitationAnswerInput' });

/** Accepting from the link without an account: the account is made, its address proven by the link. */
export const InvitationSignUpInput = z
  .object({
    token: z.string().min(1).max(200),
    email: z.email().max(320).toLowerCase(),
    name: z.string().min(2).max(200),
    password: passwordSchema,
  })
  .meta({ id: 'InvitationSignUpInput' });
export type InvitationSignUpInput = z.infer<typeof InvitationSignUpInput>;

export const InvitationPageQuery = z.strictObject({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

/** What the inviter gets back: the same for every address, and never the secret. */
export const SentInvitation = z
  .object({ id: z.uuid(), email: z.email(), organizationId: z.uuid(), role: RoleSchema, expiresAt: z.date() })
  .meta({ id: 'SentInvitation' });
export type SentInvitation = z.infer<typeof SentInvitation>;

/** POST /members in the OpenAPI document: what it takes and answers. */
export const invitationCreateRoute = {
  summary: 'Invite an e-mail address to this organization (owners, admins): mailed; the same 202 whether it has an account or not',
  status: 202,
  input: InvitationInput,
  output: SentInvitation,
};

/** POST /Users by an owner or admin in the OpenAPI document: an invitation too. */
export const userInvitationRoute = { ...invitationCreateRoute, input: NewMemberInput };

/** What the invited person sees of their pending invitations. */
export interface PendingInvitation {
  id: string;
  organization: { id: string; name: string };
  role: Role;
  expiresAt: Date;
}

/** What the organization's owners and admins see of the invitations it has pending (never the secret). */
export const OrganizationInvitation = z
  .object({
    id: z.uuid(),
    email: z.email(),
    role: RoleSchema,
    invitedBy: z.object({ id: z.uuid(), name: z.string().nullable() }),
    createdAt: z.date(),
    expiresAt: z.date(),
  })
  .meta({ id: 'OrganizationInvitation' });
export type OrganizationInvitation = z.infer<typeof OrganizationInvitation>;

const storedValue = (tokenHash: string, organizationId: string, role: Role, invitedBy: string) =>
  [tokenHash, organizationId, role, invitedBy].join(':');
/** SQL for a part of the stored value: 1 the secret's hash, 2 the organization, 3 the role, 4 the inviter. */
const part = (n: 1 | 2 | 3 | 4, alias = '') => `split_part(${alias}"value", ':', ${n})`;

/**
 * SQL: the invitation row `v` still stands: its organization exists and its inviter is a member
 * there with a role that may invite with its role.
 */
const standsByPerson = `EXISTS (
  SELECT 1 FROM "member" inviter
  WHERE inviter."organizationId"::text = ${part(2, 'v.')} AND inviter."userId"::text = ${part(4, 'v.')}
    AND (inviter."role" = 'owner' OR (inviter."role" = 'admin' AND ${part(3, 'v.')} <> 'owner')))`;
/** The same, or: a directory's invitation that still stands (the directory's to withdraw, by unassigning the person). */
const stillValid = `(${standsByPerson}
  OR authstrap.directory_invitation_stands(${part(4, 'v.')}, ${part(2, 'v.')}, substr(v."identifier", length('invitation:') + 1)))`;

const noLongerValid = () =>
  new HttpError(404, 'NOT_FOUND', 'No pending invitation for your address with this token (it may have expired, been used or withdrawn)');

/**
 * A page of a list whose rows carry `total` (count(*) OVER ()), with its meta; a page past the end
 * has no row to carry it, so `countAll` is asked then.
 */
async function paged<Row extends { total: number }, Item>(
  rows: Row[],
  { page, limit }: { page: number; limit: number },
  countAll: () => Promise<number>,
  toItem: (row: Row) => Item,
) {
  const total = rows[0]?.total ?? (await countAll());
  return { rows: rows.map(toItem), meta: { page, limit, total, totalPages: Math.ceil(total / limit) } };
}

export function createInvitations(auth: AuthInternals) {
  const { db, config, mailer } = auth;

  /**
   * Uses up the invitation to `email` whose secret is `token`, and tells whether it still stands.
   * A withdrawn one (its organization deleted, its inviter removed or demoted) is removed too.
   */
  async function consume(tx: Queryable, email: string, token: string) {
    const { rows } = await tx.query<{ organizationId: string; role: Role; valid: boolean }>(
      `DELETE FROM "verification" v WHERE v."identifier" = $1 AND ${part(1, 'v.')} = $2 AND v."expiresAt" > now()
       RETURNING ${part(2, 'v.')} AS "organizationId", ${part(3, 'v.')} AS "role", ${stillValid} AS "valid"`,
      [identifierOf(email), hashToken(token)],
    );
    return rows[0];
  }

  async function join(tx: Queryable, userId: string, invitation: { organizationId: string; role: Role }) {
    await tx.query(
      `INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, $3) ON CONFLICT ("organizationId", "userId") DO NOTHING`,
      [invitation.organizationId, userId, invitation.role],
    );
    const { rows } = await tx.query<{ organizationId: string; role: Role; name: string; slug: string }>(
      `SELECT m."organizationId", m."role", o."name", o."slug" FROM "member" m JOIN "Organization" o ON o."id" = m."organizationId"
       WHERE m."organizationId" = $1::uuid AND m."userId" = $2`,
      [invitation.organizationId, userId],
    );
    const joined = rows[0]!;
    return { organization: { id: joined.organizationId, name: joined.name, slug: joined.slug }, role: joined.role };
  }

  /**
   * Runs `work` in a transaction whose refusal still commits what it removed: a withdrawn
   * invitation is gone even though the request fails.
   */
  async function answering<T>(work: (tx: Queryable) => Promise<T | HttpError>): Promise<T> {
    const outcome = await db.transaction(work);
    if (outcome instanceof HttpError) throw outcome;
    return outcome;
  }

  return {
    /**
     * Invites `email` (replacing an earlier invitation to it from the same organization) and
     * mails it the link. 409 past the organization's pending limit, 429 past the inviter's hourly one.
     */
    async invite(organizationId: string, input: InvitationInput & { name?: string }, inviter: { id: string; name: string }): Promise<SentInvitation> {
      const token = randomBytes(32).toString('base64url');
      const role = input.role ?? 'member';
      const identifier = identifierOf(input.email);
      const sent = await db.transaction(async (tx) => {
        // The organization's pending count and the inviter's hourly count are read and then
        // added to: concurrent invitations of one organization, or of one inviter, wait for each
        // other here (on every instance), so neither limit lets one more through.
        await lockUntilCommit(tx, `invitations:organization:${organizationId}`, `invitations:inviter:${inviter.id}`);
        await tx.query(`DELETE FROM "verification" WHERE "identifier" = $1 AND ${part(2)} = $2`, [identifier, organizationId]);
        const { rows: limits } = await tx.query<{ pending: number; sentLastHour: number; freeInSeconds: number | null; organizationName: string }>(
          `SELECT
             (SELECT count(*)::int FROM "verification" WHERE "identifier" LIKE 'invitation:%' AND ${part(2)} = $1 AND "expiresAt" > now()) AS "pending",
             (SELECT count(*)::int FROM "authstrap_outbox" WHERE "channel" = 'mail' AND "payload"->>'kind' = 'invitation'
                AND "payload"->>'sentBy' = $2 AND "createdAt" > now() - interval '1 hour') AS "sentLastHour",
             -- When the oldest of them leaves the hour: the 429's Retry-After.
             (SELECT ceil(extract(epoch FROM min("createdAt") + interval '1 hour' - now()))::int FROM "authstrap_outbox" WHERE "channel" = 'mail'
                AND "payload"->>'kind' = 'invitation' AND "payload"->>'sentBy' = $2 AND "createdAt" > now() - interval '1 hour') AS "freeInSeconds",
             (SELECT "name" FROM "Organization" WHERE "id" = $1::uuid) AS "organizationName"`,
          [organizationId, inviter.id],
        );
        const { pending, sentLastHour, freeInSeconds, organizationName } = limits[0]!;
        if (pending >= config.invitations.pendingMax) {
          throw new HttpError(409, 'CONFLICT', `This organization has ${pending} pending invitations, the most it may have (INVITATIONS_PENDING_MAX); wait for answers or withdraw some`);
        }
        if (sentLastHour >= config.invitations.perInviterPerHour) {
          throw tooManyRequests(`You sent ${sentLastHour} invitations in the last hour, the most allowed (INVITATIONS_PER_HOUR); try again later`, Math.max(1, freeInSeconds ?? 3600));
        }
        const { rows } = await tx.query<{ id: string; expiresAt: Date }>(
          `INSERT INTO "verification" ("identifier", "value", "expiresAt") VALUES ($1, $2, $3) RETURNING "id", "expiresAt"`,
          [identifier, storedValue(hashToken(token), organizationId, role, inviter.id), new Date(Date.now() + invitationLifetimeMs)],
        );
        const link = mailer.link('accept-invitation', { token, email: input.email });
        await mailer.send(tx, {
          kind: 'invitation',
          to: input.email,
          message: messages.invitation({ name: input.name, organizationName: organizationName ?? 'an organization', inviterName: inviter.name, role, link }),
          link,
          sentBy: inviter.id,
        });
        await recordAuthEvent(tx, { type: 'invitation.sent', organizationId, entity: 'invitation', entityId: rows[0]!.id, data: { email: input.email, role } }, byUser(inviter.id));
        return { id: rows[0]!.id, email: input.email, organizationId, role, expiresAt: rows[0]!.expiresAt };
      });
      mailer.sendCommitted();
      return sent;
    },

    /**
     * Invites the person a directory provisioned who has an account outside the organization's
     * domains (their membership `invited`: nobody joins without consent), in the SCIM request's
     * transaction, with the directory's default role; the mail says the directory invited them.
     * Once only: while an invitation of this directory to the address stands, nothing is sent
     * again (a repeated create, a reactivation). A directory's invitations count in no inviter's
     * hourly limit: they go only to addresses that already have an account here. Call
     * `mailCommitted` once the transaction has committed. Whether a mail was sent.
     */
    async inviteFromDirectory(tx: Queryable, invitation: { organizationId: string; directoryId: string; email: string; name: string; role: Role }): Promise<boolean> {
      const email = invitation.email.toLowerCase();
      const identifier = identifierOf(email);
      await lockUntilCommit(tx, `invitations:organization:${invitation.organizationId}`);
      const { rows: facts } = await tx.query<{ standing: boolean; directoryName: string | null; organizationName: string | null }>(
        `SELECT EXISTS (SELECT 1 FROM "verification" v WHERE v."identifier" = $1 AND ${part(2, 'v.')} = $2 AND ${part(4, 'v.')} = $3 AND v."expiresAt" > now()) AS "standing",
                (SELECT "name" FROM "authstrap_scim_directory" WHERE "id" = $3::uuid) AS "directoryName",
                (SELECT "name" FROM "Organization" WHERE "id" = $2::uuid) AS "organizationName"`,
        [identifier, invitation.organizationId, invitation.directoryId],
      );
      const { standing, directoryName, organizationName } = facts[0]!;
      if (standing) return false;
      const token = randomBytes(32).toString('base64url');
      // An earlier invitation of the organization to the address (from a person) is replaced, as a new one from a person would.
      await tx.query(`DELETE FROM "verification" WHERE "identifier" = $1 AND ${part(2)} = $2`, [identifier, invitation.organizationId]);
      const { rows } = await tx.query<{ id: string }>(`INSERT INTO "verification" ("identifier", "value", "expiresAt") VALUES ($1, $2, $3) RETURNING "id"`, [
        identifier,
        storedValue(hashToken(token), invitation.organizationId, invitation.role, invitation.directoryId),
        new Date(Date.now() + invitationLifetimeMs),
      ]);
      const link = mailer.link('accept-invitation', { token, email });
      const organization = organizationName ?? 'an organization';
      await mailer.send(tx, {
        kind: 'invitation',
        to: email,
        message: messages.invitation({ name: invitation.name, organizationName: organization, inviterName: `The directory "${directoryName ?? 'directory'}"`, role: invitation.role, link }),
        link,
        sentBy: invitation.directoryId,
      });
      // The transaction's context names the directory as the actor.
      await recordEvent(tx, { type: 'invitation.sent', organizationId: invitation.organizationId, entity: 'invitation', entityId: rows[0]!.id, data: { email, role: invitation.role } });
      return true;
    },

    /** After a transaction that mailed (inviteFromDirectory) committed: the mail leaves now, not at the outbox's next look. */
    mailCommitted: () => mailer.sendCommitted(),

    /**
     * Withdraws a pending invitation of the organization before it is answered: its link stops
     * working. An admin cannot withdraw an invitation to become an owner (nor send one). 404 for
     * an id that is not a pending invitation of this organization, and nothing changes.
     */
    async revoke(organizationId: string, revokerRole: Role, id: string, revokerId: string): Promise<void> {
      await db.transaction(async (tx) => {
        const { rows } = await tx.query<{ email: string; role: Role; revoked: boolean }>(
          `WITH target AS (
             SELECT v."id", substr(v."identifier", length('invitation:') + 1) AS "email", ${part(3, 'v.')} AS "role" FROM "verification" v
              WHERE v."id" = $1 AND v."identifier" LIKE 'invitation:%' AND ${part(2, 'v.')} = $2 AND v."expiresAt" > now()),
           revoked AS (DELETE FROM "verification" WHERE "id" IN (SELECT "id" FROM target WHERE "role" <> 'owner' OR $3 = 'owner') RETURNING "id")
           SELECT t."email", t."role", EXISTS (SELECT FROM revoked) AS "revoked" FROM target t`,
          [id, organizationId, revokerRole],
        );
        const target = rows[0];
        if (!target) throw new HttpError(404, 'NOT_FOUND', `invitation with id '${id}' not found`);
        if (!target.revoked) throw forbidden(`A ${revokerRole} cannot withdraw an invitation with the ${target.role} role`);
        await recordAuthEvent(tx, { type: 'invitation.revoked', organizationId, entity: 'invitation', entityId: id, data: { email: target.email, role: target.role } }, byUser(revokerId));
      });
    },

    /** The signed-in user's standing invitations, a page at a time, oldest first. */
    async pendingFor(email: string, { page, limit }: z.output<typeof InvitationPageQuery>) {
      const { rows } = await db.query<{ id: string; expiresAt: Date; role: Role; organizationId: string; name: string; total: number }>(
        `SELECT v."id", v."expiresAt", ${part(3, 'v.')} AS "role", o."id" AS "organizationId", o."name", count(*) OVER ()::int AS "total"
         FROM "verification" v JOIN "Organization" o ON o."id"::text = ${part(2, 'v.')}
         WHERE v."identifier" = $1 AND v."expiresAt" > now() AND ${stillValid}
         ORDER BY v."createdAt", v."id" LIMIT $2 OFFSET $3`,
        [identifierOf(email), limit, (page - 1) * limit],
      );
      const countAll = async () => {
        const { rows: counted } = await db.query<{ total: number }>(
          `SELECT count(*)::int AS "total" FROM "verification" v WHERE v."identifier" = $1 AND v."expiresAt" > now() AND ${stillValid}
             AND EXISTS (SELECT 1 FROM "Organization" o WHERE o."id"::text = ${part(2, 'v.')})`,
          [identifierOf(email)],
        );
        return counted[0]!.total;
      };
      return paged(rows, { page, limit }, countAll, (row): PendingInvitation => ({ id: row.id, organization: { id: row.organizationId, name: row.name }, role: row.role, expiresAt: row.expiresAt }));
    },

    /**
     * The invitations the organization has standing (not answered, expired or withdrawn, and
     * their inviters still allowed to send them), for its owners and admins: a page at a time,
     * oldest first, with the id DELETE /api/auth/organization/invitations/:id takes.
     */
    async pendingOf(organizationId: string, { page, limit }: z.output<typeof InvitationPageQuery>) {
      // A directory's invitations are not listed: Settings > Directory shows those people as invited.
      const standing = `v."identifier" LIKE 'invitation:%' AND ${part(2, 'v.')} = $1 AND v."expiresAt" > now() AND ${standsByPerson}`;
      const { rows } = await db.query<{ id: string; email: string; role: Role; inviterId: string; inviterName: string | null; createdAt: Date; expiresAt: Date; total: number }>(
        `SELECT v."id", substr(v."identifier", length('invitation:') + 1) AS "email", ${part(3, 'v.')} AS "role",
                ${part(4, 'v.')} AS "inviterId", u."name" AS "inviterName", v."createdAt", v."expiresAt", count(*) OVER ()::int AS "total"
         FROM "verification" v LEFT JOIN "User" u ON u."id"::text = ${part(4, 'v.')}
         WHERE ${standing}
         ORDER BY v."createdAt", v."id" LIMIT $2 OFFSET $3`,
        [organizationId, limit, (page - 1) * limit],
      );
      const countAll = async () => (await db.query<{ total: number }>(`SELECT count(*)::int AS "total" FROM "verification" v WHERE ${standing}`, [organizationId])).rows[0]!.total;
      return paged(rows, { page, limit }, countAll, (row): OrganizationInvitation => ({
        id: row.id,
        email: row.email,
        role: row.role,
        invitedBy: { id: row.inviterId, name: row.inviterName },
        createdAt: row.createdAt,
        expiresAt: row.expiresAt,
      }));
    },

    /**
     * Accepts (joining with the invited role) or declines the invitation whose secret is `token`,
     * addressed to `user`. Either way it is used up. Accepting proves the address, as the secret
     * came to it. Already a member: the membership stays as it is.
     */
    async answer(user: { id: string; email: string }, token: string, accept: boolean) {
      return answering(async (tx) => {
        const invitation = await consume(tx, user.email, token);
        if (!invitation || (accept && !invitation.valid)) return noLongerValid();
        const answered = { organizationId: invitation.organizationId, userId: user.id, entity: 'invitation', data: { role: invitation.role } };
        await recordAuthEvent(tx, { type: accept ? 'invitation.accepted' : 'invitation.declined', ...answered }, byUser(user.id));
        if (!accept) return { declined: true as const, organizationId: invitation.organizationId };
        await tx.query(`UPDATE "User" SET "email_verified" = true, "updatedAt" = now() WHERE "id" = $1 AND NOT "email_verified"`, [user.id]);
        const joined = await join(tx, user.id, invitation);
        // Invited by the organization's directory: its resource for them is a member now, with the role its groups give.
        await acceptDirectoryInvitation(tx, user.id, invitation.organizationId);
        return joined;
      });
    },

    /**
     * Accepts from the link without an account: the account (its address proven), a personal
     * organization as at sign-up, the membership and a session, all or nothing. An address that
     * has an account must sign in and accept (409).
     */
    async acceptAsNewUser(input: InvitationSignUpInput, meta: RequestMeta) {
      // An address that must use SSO joins through its organization's SSO, not with a new password.
      const attempt = { email: input.email, userId: null, method: 'invitation' } as const;
      const refused = await refuseSignIn(auth.db, await decideSignIn(auth.db, attempt), attempt, auth.config.mail.appUrl);
      if (refused) throw refused;
      const passwordHash = await auth.hashPassword(input.password);
      return answering(async (tx) => {
        const { rows: existing } = await tx.query('SELECT 1 FROM "User" WHERE lower("email") = lower($1)', [input.email]);
        if (existing.length > 0) {
          // Kept for the signed-in accept; said only to whoever holds the mailed secret.
          const { rows: held } = await tx.query(`SELECT 1 FROM "verification" v WHERE v."identifier" = $1 AND ${part(1, 'v.')} = $2 AND v."expiresAt" > now()`, [
            identifierOf(input.email),
            hashToken(input.token),
          ]);
          return held.length > 0 ? new HttpError(409, 'CONFLICT', 'This address has an account: sign in with it, then accept the invitation') : noLongerValid();
        }
        const invitation = await consume(tx, input.email, input.token);
        if (!invitation || !invitation.valid) return noLongerValid();
        const user: PublicUser = await auth.insertUserWithPassword(tx, { email: input.email, name: input.name, emailVerified: true }, passwordHash);
        await recordAuthEvent(tx, { type: 'user.signed_up', userId: user.id, entity: 'User', entityId: user.id }, byUser(user.id));
        await recordAuthEvent(tx, { type: 'invitation.accepted', organizationId: invitation.organizationId, userId: user.id, entity: 'invitation', data: { role: invitation.role } }, byUser(user.id));
        await auth.createPersonalOrganization(tx, user);
        const joined = await join(tx, user.id, invitation);
        const { token } = await auth.createSession(tx, user.id, joined.organization.id, meta, 'invitation');
        return { user, token, ...joined };
      });
    },
  };
}

export type Invitations = ReturnType<typeof createInvitations>;
