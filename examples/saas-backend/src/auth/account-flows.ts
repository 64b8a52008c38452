import bcrypt from 'bcrypt';
import { z } from 'zod';
import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { byUser, recordAuthEvent } from '../events/events.js';
import type { Channel } from '../outbox/outbox.js';
import { messages } from '../extensions/mail/messages.js';
import type { AuthInternals, PublicUser } from './types.js';
import { passwordSchema } from './password.js';
import { decideSignIn, refusal } from './sign-in-policy.js';
import { refuseIfDirectoryManaged } from '../scim/memberships.js';
import { consumeToken, issueToken, revokeTokens } from './tokens.js';

/**
 * The flows around an account, each proven by mail where it must be: confirming the address,
 * forgetting and resetting the password, changing the password and the address, deleting the
 * account.
 *
 * - Whether an address has an account never shows: "forgot password", "send the link again" and
 *   "change my address" answer the same for every address, after the same work (the mail that
 *   depends on the address is decided after the answer: requestMail).
 * - Every secret that comes by mail is single-use and expires (tokens.ts).
 * - A reset or a password change ends the other sessions; a deletion never leaves an organization
 *   without an owner.
 */

export const EmailInput = z.object({ email: z.email().max(320).toLowerCase() }).meta({ id: 'EmailInput' });
export const TokenInput = z.object({ token: z.string().min(1).max(200) }).meta({ id: 'TokenInput' });
export const ResetPasswordInput = z.object({ token: z.string().min(1).max(200), newPassword: passwordSchema }).meta({ id: 'ResetPasswordInput' });
export const ChangePasswordInput = z.object({ currentPassword: z.string().max(1024), newPassword: passwordSchema }).meta({ id: 'ChangePasswordInput' });
export const ChangeEmailInput = z.object({ newEmail: z.email().max(320).toLowerCase() }).meta({ id: 'ChangeEmailInput' });
export const DeleteAccountInput = z
  .object({ password: z.string().max(1024).optional().meta({ description: 'Required when the account has a password' }) })
  .meta({ id: 'DeleteAccountInput' });

/**
 * Mail a trusted server (Better Auth in the frontend, with the service key) asks the backend to
 * send: its own link, in the backend's wording, through the backend's one outbox and SMTP settings.
 */
export const TrustedMailInput = z
  .object({
    kind: z.enum(['verify-email', 'reset-password']),
    to: z.email().max(320),
    name: z.string().max(200).optional(),
    link: z.url({ protocol: /^https?$/ }).max(2048),
  })
  .meta({ id: 'TrustedMailInput' });
export type TrustedMailInput = z.infer<typeof TrustedMailInput>;

const invalidLink = () => new HttpError(400, 'INVALID_TOKEN', 'This link is not valid: it was used already or has expired. Ask for a new one.');

/** What "forgot password" and "send the link again" answer, whatever the address. */
export const linkOnItsWay = { message: 'If an account has this address, a message with a link is on its way to it.' };

/**
 * Mail whose sending depends on whether an address has an account: asked for by a request, sent
 * (or not) by the outbox's worker after the answer (the account-mail channel below).
 */
export type AccountMailRequest =
  | { kind: 'reset-password'; email: string }
  | { kind: 'verify-email'; email: string }
  | { kind: 'change-email'; userId: string; newEmail: string };

export const accountMailChannelName = 'account-mail';

export function createAccountFlows(auth: AuthInternals) {
  const { db, mailer } = auth;
  const { appUrl } = auth.config.mail;

  /** The user with this address and their password hash (null without a password account). */
  async function userByEmail(tx: Queryable, email: string) {
    const { rows } = await tx.query<PublicUser & { passwordHash: string | null }>(
      `SELECT u."id", u."email", u."name", u."email_verified", u."image", u."createdAt", u."updatedAt", a."password" AS "passwordHash"
       FROM "User" u LEFT JOIN "account" a ON a."userId" = u."id" AND a."providerId" = 'credential'
       WHERE lower(u."email") = lower($1)`,
      [email],
    );
    return rows[0];
  }

  /** Checks a signed-in user's password (bcrypt, off the event loop); 400 when it is wrong. */
  async function assertPassword(userId: string, password: string | undefined) {
    const { rows } = await db.query<{ password: string | null }>(`SELECT "password" FROM "account" WHERE "userId" = $1 AND "providerId" = 'credential'`, [userId]);
    const hash = rows[0]?.password;
    if (!hash) return;
    if (password === undefined || !(await bcrypt.compare(password, hash))) {
      throw new HttpError(400, 'INVALID_PASSWORD', 'The current password is not right');
    }
  }

  /** Sets the user's password (creating their password account if they signed up another way). */
  async function setPassword(tx: Queryable, userId: string, passwordHash: string) {
    const { rowCount } = await tx.query(`UPDATE "account" SET "password" = $2, "updatedAt" = now() WHERE "userId" = $1 AND "providerId" = 'credential'`, [userId, passwordHash]);
    if (rowCount === 0) {
      await tx.query(`INSERT INTO "account" ("userId", "accountId", "providerId", "password") VALUES ($1, $1, 'credential', $2)`, [userId, passwordHash]);
    }
  }

  /** Runs `work` in a transaction and wakes the mail worker once it committed. */
  async function withMail<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    const result = await db.transaction(work);
    mailer.sendCommitted();
    return result;
  }

  /**
   * Asks for mail that goes only to an address with an account (a reset link, a confirmation
   * link, a change of address to one that is free). The request writes the same one outbox row
   * for every address and answers; the worker decides after the answer what to send
   * (sendAccountMail). So neither the answer's time nor its work tells a known address from an
   * unknown one, and the mail is as safe as any: it is in the outbox from the request's commit.
   */
  const requestMail = (request: AccountMailRequest) => withMail((tx) => mailer.enqueue(tx, accountMailChannelName, request));

  /** What a mail request sends, once the worker takes it (at least once: a repeat adds at most one more live link). */
  async function sendAccountMail(request: AccountMailRequest): Promise<void> {
    await withMail(async (tx) => {
      switch (request.kind) {
        case 'verify-email': {
          // A link for an unverified address, nothing otherwise.
          const user = await userByEmail(tx, request.email);
          if (user && !user.email_verified) await auth.sendVerificationLink(tx, user);
          return;
        }
        case 'reset-password': {
          const user = await userByEmail(tx, request.email);
          if (!user) return;
          // An address that must use SSO gets no link; its organization's owners do (break-glass).
          if (!(await decideSignIn(tx, { email: user.email, userId: user.id, method: 'password-reset' })).allowed) return;
          const token = await issueToken(tx, 'reset-password', user.id);
          if (!token) return;
          const link = mailer.link('reset-password', { token });
          await mailer.send(tx, { kind: 'reset-password', to: user.email, message: messages.resetPassword({ name: user.name, link }), link });
          return;
        }
        case 'change-email': {
          const { rows } = await tx.query<{ email: string; name: string }>(`SELECT "email", "name" FROM "User" WHERE "id" = $1`, [request.userId]);
          const user = rows[0];
          if (!user) return;
          // An address that has an account gets no link (confirming would fail); the old address is told either way.
          if (!(await userByEmail(tx, request.newEmail))) {
            const token = await issueToken(tx, 'change-email', request.userId, [user.email, request.newEmail]);
            if (token) {
              const link = mailer.link('confirm-email-change', { token });
              await mailer.send(tx, { kind: 'confirm-email-change', to: request.newEmail, message: messages.confirmEmailChange({ name: user.name, newEmail: request.newEmail, link }), link });
            }
          }
          await mailer.send(tx, { kind: 'email-change-requested', to: user.email, message: messages.emailChangeRequested({ name: user.name, newEmail: request.newEmail }) });
          return;
        }
      }
    });
  }

  /** The outbox channel that carries the mail requests (app.ts registers it). */
  const accountMailChannel: Channel<AccountMailRequest> = {
    name: accountMailChannelName,
    // A few statements in one transaction, each bounded by the database's timeouts.
    timeoutMs: 10_000,
    deliver: sendAccountMail,
  };

  /**
   * Deletes users, never leaving an organization without an owner: 409 naming the organizations
   * where one of them is the only owner and others are members. An organization left with no
   * member at all (a personal one) goes with them. Every path that deletes a user comes here: the
   * user's own request, and the service key's DELETE /Users (Better Auth's deleteUser).
   */
  async function deleteUsers(tx: Queryable, userIds: string[]): Promise<number> {
    if (userIds.length === 0) return 0;
    // The owner rows of their organizations, locked in one order: of two owners leaving at once,
    // the second waits, then sees that the first is gone.
    await tx.query(
      `SELECT 1 FROM "member" WHERE "role" = 'owner' AND "organizationId" IN (SELECT "organizationId" FROM "member" WHERE "userId" = ANY($1::uuid[]))
       ORDER BY "id" FOR UPDATE`,
      [userIds],
    );
    const { rows: stranded } = await tx.query<{ id: string; name: string }>(
      `SELECT DISTINCT o."id", o."name" FROM "member" m JOIN "Organization" o ON o."id" = m."organizationId"
       WHERE m."userId" = ANY($1::uuid[]) AND m."role" = 'owner'
         AND NOT EXISTS (SELECT 1 FROM "member" other WHERE other."organizationId" = m."organizationId" AND other."role" = 'owner' AND other."userId" <> ALL($1::uuid[]))
         AND EXISTS (SELECT 1 FROM "member" other WHERE other."organizationId" = m."organizationId" AND other."userId" <> ALL($1::uuid[]))
       ORDER BY o."name"`,
      [userIds],
    );
    if (stranded.length > 0) {
      const names = stranded.map((organization) => `"${organization.name}" (${organization.id})`).join(', ');
      throw new HttpError(409, 'CONFLICT', `The only owner of ${names} cannot be deleted while others are members there: make one of them owner first, or remove them`);
    }
    await tx.query(
      `DELETE FROM "Organization" o WHERE o."id" IN (SELECT "organizationId" FROM "member" WHERE "userId" = ANY($1::uuid[]))
         AND NOT EXISTS (SELECT 1 FROM "member" other WHERE other."organizationId" = o."id" AND other."userId" <> ALL($1::uuid[]))`,
      [userIds],
    );
    const { rowCount } = await tx.query(`DELETE FROM "User" WHERE "id" = ANY($1::uuid[])`, [userIds]);
    return rowCount;
  }

  return {
    deleteUsers,

    /** See TrustedMailInput: the caller is the service key (checked by the route). */
    async sendTrustedMail({ kind, to, name, link }: TrustedMailInput): Promise<void> {
      // Better Auth's reset link for an address that must use SSO is refused as forgot-password is
      // (an owner's, under break-glass, goes); the session or password it would lead to is refused anyway.
      if (kind === 'reset-password') {
        const user = await userByEmail(db, to);
        const refused = refusal(await decideSignIn(db, { email: to, userId: user?.id ?? null, method: 'password-reset' }), appUrl);
        if (refused) throw refused;
      }
      const message = kind === 'verify-email' ? messages.verifyEmail({ name, link }) : messages.resetPassword({ name, link });
      await withMail((tx) => mailer.send(tx, { kind, to, message, link }));
    },

    /** Follows a verify-email link: the address is proven. The user, or 400 for a used or expired link. */
    async verifyEmail(token: string): Promise<PublicUser> {
      return db.transaction(async (tx) => {
        const [userId, email] = (await consumeToken(tx, 'verify-email', token)) ?? [];
        // The link proves the address it was sent to: not one the user has changed to since.
        const { rows } = await tx.query<PublicUser>(
          `UPDATE "User" SET "email_verified" = true, "updatedAt" = now() WHERE "id" = $1 AND "email" = $2
           RETURNING "id", "email", "name", "email_verified", "image", "createdAt", "updatedAt"`,
          [userId ?? null, email ?? null],
        );
        if (!rows[0]) throw invalidLink();
        await recordAuthEvent(tx, { type: 'user.email_verified', userId: rows[0].id, entity: 'User', entityId: rows[0].id }, byUser(rows[0].id));
        return rows[0];
      });
    },

    accountMailChannel,

    /** "Send the link again": for an unverified address, a new link; the same answer, and the same work, for any address. */
    resendVerification: (email: string) => requestMail({ kind: 'verify-email', email }).then(() => undefined),

    /**
     * "Forgot password": a link to reset it, when the address has an account; the same answer, and
     * the same work, when it has none. For an address whose domain requires SSO the answer is the
     * 403 that says where to sign in, for every address of the domain (it depends on the domain
     * only); the request is still made, so that an owner's break-glass link goes (sendAccountMail).
     */
    async forgotPassword(email: string): Promise<void> {
      const byDomain = await decideSignIn(db, { email, userId: null, method: 'password-reset' });
      await requestMail({ kind: 'reset-password', email });
      const refused = refusal(byDomain, appUrl);
      if (refused) throw refused;
    },

    /**
     * Follows a reset link: the new password, every session ended (whoever had one is out), the
     * other reset links of the user dead, and the address proven (the link came to it).
     */
    async resetPassword(token: string, newPassword: string): Promise<void> {
      // Hashed first, so that a valid and an invalid link take the same time.
      const passwordHash = await auth.hashPassword(newPassword);
      const refused = await withMail(async (tx) => {
        const [userId] = (await consumeToken(tx, 'reset-password', token)) ?? [];
        const { rows } = await tx.query<{ email: string; name: string }>(
          `UPDATE "User" SET "email_verified" = true, "updatedAt" = now() WHERE "id" = $1 RETURNING "email", "name"`,
          [userId ?? null],
        );
        const user = rows[0];
        if (!user) throw invalidLink();
        // A link mailed before the organization required SSO is used up, and sets nothing.
        const verdict = await decideSignIn(tx, { email: user.email, userId: userId!, method: 'password-reset' });
        if (!verdict.allowed) {
          await revokeTokens(tx, 'reset-password', userId!);
          return refusal(verdict, appUrl);
        }
        await setPassword(tx, userId!, passwordHash);
        await tx.query(`DELETE FROM "session" WHERE "userId" = $1`, [userId]);
        await revokeTokens(tx, 'reset-password', userId!);
        await recordAuthEvent(tx, { type: 'user.password_reset', userId, entity: 'User', entityId: userId }, byUser(userId!));
        await mailer.send(tx, { kind: 'password-changed', to: user.email, message: messages.passwordChanged({ name: user.name }) });
        return undefined;
      });
      if (refused) throw refused;
    },

    /** A signed-in user's new password, with the current one; their other sessions end. */
    async changePassword(user: PublicUser, currentSessionId: string, currentPassword: string, newPassword: string): Promise<void> {
      // A password nobody may sign in with is not kept (an owner's, under break-glass, is).
      const refused = refusal(await decideSignIn(db, { email: user.email, userId: user.id, method: 'password-change' }), appUrl);
      if (refused) throw refused;
      await assertPassword(user.id, currentPassword);
      const passwordHash = await auth.hashPassword(newPassword);
      await withMail(async (tx) => {
        await setPassword(tx, user.id, passwordHash);
        await tx.query(`DELETE FROM "session" WHERE "userId" = $1 AND "id" <> $2`, [user.id, currentSessionId]);
        await recordAuthEvent(tx, { type: 'user.password_changed', userId: user.id, entity: 'User', entityId: user.id }, byUser(user.id));
        await mailer.send(tx, { kind: 'password-changed', to: user.email, message: messages.passwordChanged({ name: user.name }) });
      });
    },

    /**
     * Asks to change a signed-in user's address: a link to the new address confirms it, and the
     * old address is told. The answer, and its work, are the same when the new address has an
     * account already (no link is sent then: confirming would fail).
     */
    async requestEmailChange(user: PublicUser, newEmail: string): Promise<void> {
      if (newEmail === user.email) throw new HttpError(400, 'BAD_REQUEST', 'That is your address already');
      await refuseIfDirectoryManaged(db, user.id, 'address');
      await requestMail({ kind: 'change-email', userId: user.id, newEmail });
    },

    /** Follows the link sent to the new address: the address changes (and is proven). */
    async confirmEmailChange(token: string): Promise<PublicUser> {
      return db
        .transaction(async (tx) => {
          const [userId, oldEmail, newEmail] = (await consumeToken(tx, 'change-email', token)) ?? [];
          // Moving an account into a domain that requires SSO is refused: the link is used up, nothing changes.
          if (userId && newEmail) {
            const refused = refusal(await decideSignIn(tx, { email: newEmail, userId, method: 'email-change' }), appUrl);
            if (refused) return refused;
          }
          const { rows } = await tx.query<PublicUser>(
            `UPDATE "User" SET "email" = $3, "email_verified" = true, "updatedAt" = now() WHERE "id" = $1 AND "email" = $2
             RETURNING "id", "email", "name", "email_verified", "image", "createdAt", "updatedAt"`,
            [userId ?? null, oldEmail ?? null, newEmail ?? null],
          );
          if (!rows[0]) throw invalidLink();
          await recordAuthEvent(tx, { type: 'user.email_changed', userId: rows[0].id, entity: 'User', entityId: rows[0].id }, byUser(rows[0].id));
          return rows[0];
        })
        .then((changed) => {
          if (changed instanceof HttpError) throw changed;
          return changed;
        })
        .catch((error) => {
          // Someone signed up with the new address after the link was sent.
          if (error?.code === '23505') throw new HttpError(409, 'CONFLICT', 'Another account has this address now');
          throw error;
        });
    },

    /** Deletes the signed-in user's account (with its password, when it has one); see deleteUsers. */
    async deleteAccount(user: PublicUser, password: string | undefined): Promise<void> {
      await assertPassword(user.id, password);
      await db.transaction(async (tx) => {
        await recordAuthEvent(tx, { type: 'user.deleted', userId: user.id, entity: 'User', entityId: user.id }, byUser(user.id));
        await deleteUsers(tx, [user.id]);
      });
    },
  };
}

/** What createAccountFlows adds to the auth service. */
export type AccountFlows = ReturnType<typeof createAccountFlows>;
