import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Database, Queryable } from '../../db/database.js';
import { HttpError } from '../../http/errors.js';
import { hashToken } from '../../http/session-token.js';
import { RoleSchema, type Role } from './roles.js';

/**
 * Joining an organization takes the consent of the person who joins. An owner or admin invites an
 * e-mail address; the person with that address accepts (or declines) while signed in, with the
 * secret of the invitation. Nobody is attached to an organization without that, so an owner never
 * sees another organization's user (their sessions, their accounts) by naming their address.
 *
 * An invitation is a `verification` row: `identifier` is `invitation:<email>`, `value` is
 * `<SHA-256 of the secret>:<organization id>:<role>:<inviter id>` (never the secret itself; plain
 * text, so no other kind of verification row can break a query over it); `expiresAt` bounds it.
 * Whether the address has an account does not change the answer: an address without one can
 * accept after signing up with it.
 *
 * The secret goes back to the inviter, who passes it on (a link in an e-mail of your own): being
 * signed in with the address alone is not enough, since nothing here proves that the person who
 * signed up with an address owns its mailbox.
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

export const InvitationAnswerInput = z
  .object({ token: z.string().min(1).max(200) })
  .meta({ id: 'InvitationAnswerInput' });

/** POST /members in the OpenAPI document: what it takes and answers. */
export const invitationCreateRoute = {
  summary: 'Invite an e-mail address to this organization (the same answer whether it has an account or not)',
  input: InvitationInput,
  output: z
    .object({
      id: z.uuid(),
      email: z.email(),
      organizationId: z.uuid(),
      role: RoleSchema,
      expiresAt: z.date(),
      token: z.string().meta({ description: 'The secret the invited person accepts with (POST /api/auth/invitations/accept); shown once' }),
    })
    .meta({ id: 'SentInvitation' }),
};

/** What the inviter gets back: the same for every address. */
export interface SentInvitation {
  id: string;
  email: string;
  organizationId: string;
  role: Role;
  expiresAt: Date;
  /** The secret the invited person accepts with; shown once, stored only hashed. */
  token: string;
}

/** What the invited person sees of their pending invitations. */
export interface PendingInvitation {
  id: string;
  organization: { id: string; name: string };
  role: Role;
  expiresAt: Date;
}

const storedValue = (tokenHash: string, organizationId: string, role: Role, invitedBy: string) =>
  [tokenHash, organizationId, role, invitedBy].join(':');
/** SQL for a part of the stored value: 1 the secret's hash, 2 the organization, 3 the role. */
const part = (n: 1 | 2 | 3, alias = '') => `split_part(${alias}"value", ':', ${n})`;

export function createInvitations(db: Database) {
  return {
    /** Stores an invitation (replacing an earlier one to the same address for the same organization). */
    async invite(tx: Queryable, organizationId: string, input: InvitationInput, invitedBy: string): Promise<SentInvitation> {
      const token = randomBytes(32).toString('base64url');
      const role = input.role ?? 'member';
      const identifier = identifierOf(input.email);
      await tx.query(`DELETE FROM "verification" WHERE "identifier" = $1 AND ${part(2)} = $2`, [identifier, organizationId]);
      const { rows } = await tx.query<{ id: string; expiresAt: Date }>(
        `INSERT INTO "verification" ("identifier", "value", "expiresAt") VALUES ($1, $2, $3) RETURNING "id", "expiresAt"`,
        [identifier, storedValue(hashToken(token), organizationId, role, invitedBy), new Date(Date.now() + invitationLifetimeMs)],
      );
      return { id: rows[0]!.id, email: input.email, organizationId, role, expiresAt: rows[0]!.expiresAt, token };
    },

    /** The unexpired invitations to the signed-in user's address. */
    async pendingFor(email: string): Promise<PendingInvitation[]> {
      const { rows } = await db.query<{ id: string; expiresAt: Date; role: Role; organizationId: string; name: string }>(
        `SELECT v."id", v."expiresAt", ${part(3, 'v.')} AS "role", o."id" AS "organizationId", o."name"
         FROM "verification" v JOIN "Organization" o ON o."id"::text = ${part(2, 'v.')}
         WHERE v."identifier" = $1 AND v."expiresAt" > now() ORDER BY v."createdAt"`,
        [identifierOf(email)],
      );
      return rows.map((row) => ({ id: row.id, organization: { id: row.organizationId, name: row.name }, role: row.role, expiresAt: row.expiresAt }));
    },

    /**
     * Accepts (joining with the invited role) or declines the invitation whose secret is `token`,
     * addressed to `user`. Either way it is used up. Already a member: the membership stays as it is.
     */
    async answer(user: { id: string; email: string }, token: string, accept: boolean) {
      return db.transaction(async (tx) => {
        const { rows } = await tx.query<{ organizationId: string; role: Role }>(
          `DELETE FROM "verification" WHERE "identifier" = $1 AND ${part(1)} = $2 AND "expiresAt" > now()
           RETURNING ${part(2)} AS "organizationId", ${part(3)} AS "role"`,
          [identifierOf(user.email), hashToken(token)],
        );
        const invitation = rows[0];
        if (!invitation) {
          throw new HttpError(404, 'NOT_FOUND', 'No pending invitation for your address with this token (it may have expired or been used)');
        }
        if (!accept) return { declined: true as const, organizationId: invitation.organizationId };
        await tx.query(
          `INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, $3) ON CONFLICT ("organizationId", "userId") DO NOTHING`,
          [invitation.organizationId, user.id, invitation.role],
        );
        const { rows: membership } = await tx.query<{ organizationId: string; role: Role; name: string; slug: string }>(
          `SELECT m."organizationId", m."role", o."name", o."slug" FROM "member" m JOIN "Organization" o ON o."id" = m."organizationId"
           WHERE m."organizationId" = $1::uuid AND m."userId" = $2`,
          [invitation.organizationId, user.id],
        );
        const joined = membership[0]!;
        return { organization: { id: joined.organizationId, name: joined.name, slug: joined.slug }, role: joined.role };
      });
    },
  };
}

export type Invitations = ReturnType<typeof createInvitations>;
