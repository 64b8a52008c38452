import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { auditEventListSpec } from '../events/events.js';
import { sendData, sendList } from '../http/envelope.js';
import { parseListQuery } from '../http/list-query.js';
import { withIdempotencyKeyOnWrites } from '../openapi/crud.js';
import { forbidden, HttpError } from '../http/errors.js';
import { machineKeysReachOnlyEntities } from '../generated/guards/auth.guard.js';
import { keyedWrites } from '../idempotency/held-transaction.js';
import { anonymousOwner, serviceOwner, userOwner } from '../idempotency/keys.js';
import { clearSessionCookie, isServiceKeyRequest, presentedMachineKey, presentedSession, setSessionCookie } from '../http/session-token.js';
import { parseBody, parseId, parseQuery } from '../http/validate.js';
import {
  ChangeEmailInput,
  ChangePasswordInput,
  DeleteAccountInput,
  EmailInput,
  linkOnItsWay,
  ResetPasswordInput,
  TokenInput,
  TrustedMailInput,
} from './account-flows.js';
import type { AuthService } from './auth-service.js';
import { refuseWhileImpersonating } from './impersonation.js';
import { InvitationAnswerInput, InvitationPageQuery, InvitationSignUpInput, OrganizationInvitation } from './invitations.js';
import { machineKeysRouter, registerMachineKeyRoutes } from './machine-keys.js';
import { organizationManager } from './organization-manager.js';
import { RoleSchema, SignInInput, SignUpInput } from './types.js';

/** The body of POST /api/auth/organization/set-active: an organization of the user's, or null for none. */
export const SetActiveOrganizationInput = z
  .object({ organizationId: z.uuid().nullable() })
  .meta({ id: 'SetActiveOrganizationInput' });

/**
 * /api/auth: sign-up, sign-in, sign-out and the current session; the account flows (confirming
 * the address, resetting and changing the password and the address, one's sessions, deleting the
 * account); and invitations. Yours to change: the generator created this file once and never
 * writes it again.
 *
 * Every write here takes an `Idempotency-Key` (idempotency/held-transaction.ts): sent again with
 * its key, a sign-up makes one account, a sign-in one session (the same token and cookie again),
 * an accepted invitation one membership. The key is the signed-in user's, or, without a session,
 * an anonymous caller's.
 */
export function authRouter({ auth, config, db }: { auth: AuthService; config: Config; db: Database }): Router {
  const router = Router();
  // A machine key is no user: it reaches its organization's entities only, never /api/auth.
  router.use((req, _res, next) => {
    if (presentedMachineKey(req) !== undefined) throw machineKeysReachOnlyEntities();
    next();
  });
  router.use(
    keyedWrites({ db, config }, async (req) => {
      if (isServiceKeyRequest(req, config.serviceApiKey)) return serviceOwner;
      const presented = presentedSession(req, config);
      const resolved = presented ? await auth.resolveSession(presented.token) : null;
      return resolved ? userOwner(resolved.user.id) : anonymousOwner;
    }),
  );
  const meta = (req: { ip?: string; header(name: string): string | undefined }) => ({ ipAddress: req.ip, userAgent: req.header('user-agent') });

  router.post('/sign-up/email', async (req, res) => {
    const input = parseBody('sign-up', SignUpInput, req);
    const { user, token } = await auth.signUp(input, meta(req)).catch((error) => {
      // The unique e-mail is the only constraint a valid sign-up can break.
      if (error?.code === '23505') throw new HttpError(409, 'CONFLICT', 'An account with this email already exists');
      throw error;
    });
    // With REQUIRE_EMAIL_VERIFICATION there is no session until the address is confirmed.
    if (token) setSessionCookie(res, token, config);
    sendData(res, { user, token }, 201);
  });

  router.post('/sign-in/email', async (req, res) => {
    const { user, token } = await auth.signIn(parseBody('sign-in', SignInInput, req), meta(req));
    setSessionCookie(res, token, config);
    sendData(res, { user, token });
  });

  router.post('/sign-out', async (req, res) => {
    const presented = presentedSession(req, config);
    if (presented) await auth.signOut(presented.token);
    clearSessionCookie(res, config);
    sendData(res, { signedOut: true });
  });

  /** The signed-in user and session behind this request, or 401. */
  const signedIn = async (req: Request) => {
    const presented = presentedSession(req, config);
    const resolved = presented ? await auth.resolveSession(presented.token) : null;
    if (!resolved) throw new HttpError(401, 'UNAUTHORIZED', 'Sign in first: send the session cookie or an Authorization: Bearer token');
    return resolved;
  };

  router.get('/get-session', async (req, res) => {
    const presented = presentedSession(req, config);
    const resolved = presented ? await auth.resolveSession(presented.token) : null;
    if (!resolved) throw new HttpError(401, 'UNAUTHORIZED', 'No valid session');
    if (resolved.renewed && presented!.via === 'cookie') setSessionCookie(res, presented!.token, config);
    // impersonatedBy: an operator signed in as the user; the app shows a banner naming them until session.expiresAt.
    sendData(res, { session: resolved.session, user: resolved.user, organizations: await auth.organizationsOf(resolved.user.id), impersonatedBy: resolved.impersonator });
  });

  // The organization requests act in when they send no x-organization-id (Better Auth's organization
  // plugin calls it the active organization, and its setActive writes the same session column).
  router.post('/organization/set-active', async (req, res) => {
    const { user, session } = await signedIn(req);
    const { organizationId } = parseBody('set-active', SetActiveOrganizationInput, req);
    sendData(res, await auth.setActiveOrganization(session.id, user.id, organizationId));
  });

  // Confirming the address: the link in the sign-up mail (GET, as a browser follows it) or a
  // frontend page posting its token.
  router.get('/verify-email', async (req, res) => {
    const { token } = parseQuery('verify-email', TokenInput, req.query);
    sendData(res, { user: await auth.verifyEmail(token) });
  });
  router.post('/verify-email', async (req, res) => {
    sendData(res, { user: await auth.verifyEmail(parseBody('verify-email', TokenInput, req).token) });
  });
  router.post('/send-verification-email', async (req, res) => {
    await auth.resendVerification(parseBody('send-verification-email', EmailInput, req).email);
    sendData(res, linkOnItsWay);
  });

  router.post('/forgot-password', async (req, res) => {
    await auth.forgotPassword(parseBody('forgot-password', EmailInput, req).email);
    sendData(res, linkOnItsWay);
  });
  router.post('/reset-password', async (req, res) => {
    const { token, newPassword } = parseBody('reset-password', ResetPasswordInput, req);
    await auth.resetPassword(token, newPassword);
    sendData(res, { passwordReset: true });
  });

  router.post('/change-password', async (req, res) => {
    const { user, session } = await signedIn(req);
    refuseWhileImpersonating(session, 'change the password');
    const { currentPassword, newPassword } = parseBody('change-password', ChangePasswordInput, req);
    await auth.changePassword(user, session.id, currentPassword, newPassword);
    sendData(res, { passwordChanged: true });
  });

  router.post('/change-email', async (req, res) => {
    const { user, session } = await signedIn(req);
    refuseWhileImpersonating(session, 'change the address');
    await auth.requestEmailChange(user, parseBody('change-email', ChangeEmailInput, req).newEmail);
    sendData(res, { message: 'A link to confirm the new address is on its way to it; your current address was told.' });
  });
  router.post('/change-email/confirm', async (req, res) => {
    sendData(res, { user: await auth.confirmEmailChange(parseBody('change-email', TokenInput, req).token) });
  });

  // One's own security events: sign-ins (and failed ones), password and address changes, sessions ended.
  router.get('/security-events', async (req, res) => {
    const { user } = await signedIn(req);
    sendList(res, await auth.securityEvents(user.id, parseListQuery(req.query, auditEventListSpec)));
  });

  // One's own sessions: which devices are signed in, and signing them out.
  router.get('/sessions', async (req, res) => {
    const { user, session } = await signedIn(req);
    sendData(res, await auth.sessionsOf(user.id, session.id));
  });
  router.post('/sessions/revoke-others', async (req, res) => {
    const { user, session } = await signedIn(req);
    refuseWhileImpersonating(session, "sign the user's sessions out");
    sendData(res, { revoked: await auth.revokeOtherSessions(user.id, session.id) });
  });
  router.delete('/sessions/:id', async (req, res) => {
    const { user, session } = await signedIn(req);
    refuseWhileImpersonating(session, "sign the user's sessions out (sign out instead)");
    const id = parseId('session', req.params.id);
    if (!(await auth.revokeSession(user.id, id))) throw new HttpError(404, 'NOT_FOUND', `session with id '${id}' not found`);
    res.status(204).end();
  });

  router.post('/delete-account', async (req, res) => {
    const { user, session } = await signedIn(req);
    refuseWhileImpersonating(session, 'delete the account');
    await auth.deleteAccount(user, parseBody('delete-account', DeleteAccountInput, req).password);
    clearSessionCookie(res, config);
    sendData(res, { deleted: true });
  });

  // Better Auth in the frontend sends its verification and reset mail through here (the service
  // key), so that there is one mail configuration and one outbox.
  router.post('/send-mail', async (req, res) => {
    if (!isServiceKeyRequest(req, config.serviceApiKey)) throw forbidden('Only a trusted server (the service key) may send mail');
    await auth.sendTrustedMail(parseBody('send-mail', TrustedMailInput, req));
    sendData(res, { queued: true }, 202);
  });

  // Invitations to the signed-in user's address: listed, then accepted or declined with the
  // secret from the mail. Joining an organization takes this consent; nothing else attaches a user.
  router.get('/invitations', async (req, res) => {
    const { user } = await signedIn(req);
    sendList(res, await auth.invitations.pendingFor(user.email, parseQuery('invitations', InvitationPageQuery, req.query)));
  });
  router.post('/invitations/accept', async (req, res) => {
    // Without a session, the link's secret, the address, a name and a new password make the account.
    if (!presentedSession(req, config) && req.body?.password !== undefined) {
      const joined = await auth.invitations.acceptAsNewUser(parseBody('invitation', InvitationSignUpInput, req), meta(req));
      setSessionCookie(res, joined.token, config);
      sendData(res, joined, 201);
      return;
    }
    const { user } = await signedIn(req);
    sendData(res, await auth.invitations.answer(user, parseBody('invitation', InvitationAnswerInput, req).token, true));
  });
  router.post('/invitations/decline', async (req, res) => {
    const { user } = await signedIn(req);
    sendData(res, await auth.invitations.answer(user, parseBody('invitation', InvitationAnswerInput, req).token, false));
  });

  // The organization's invitations still waiting for an answer, for its owners and admins: who has
  // not answered, and the ids to withdraw.
  router.get('/organization/invitations', async (req, res) => {
    const { organizationId } = await organizationManager(req, { auth, config }, 'Pending invitations are listed for the owners and admins of the organization');
    sendList(res, await auth.invitations.pendingOf(organizationId, parseQuery('invitations', InvitationPageQuery, req.query)));
  });

  // An owner or admin of the organization withdraws an invitation it sent (its id: POST /members
  // answered it) before it is answered.
  router.delete('/organization/invitations/:id', async (req, res) => {
    const { organizationId, role, userId } = await organizationManager(req, { auth, config }, 'Invitations are withdrawn by the owners and admins of the organization');
    await auth.invitations.revoke(organizationId, role, parseId('invitation', req.params.id), userId);
    res.status(204).end();
  });

  // An organization's machine keys, made, listed and revoked by its owners and admins.
  router.use('/api-keys', machineKeysRouter({ auth, config, keys: auth.machineKeys }));

  return router;
}

/** Describes /api/auth in the OpenAPI document: every write takes an Idempotency-Key. */
export function registerAuthRoutes(documented: OpenAPIRegistry): void {
  const registry = withIdempotencyKeyOnWrites(documented);
  const User = z.object({ id: z.uuid(), email: z.string(), name: z.string(), email_verified: z.boolean(), image: z.string().nullable(), createdAt: z.date(), updatedAt: z.date() }).meta({ id: 'AuthUser' });
  const Session = z
    .object({
      id: z.uuid(),
      userId: z.uuid(),
      expiresAt: z.date(),
      activeOrganizationId: z.uuid().nullable(),
      ipAddress: z.string().nullable(),
      userAgent: z.string().nullable(),
      createdAt: z.date(),
      updatedAt: z.date(),
      impersonatedBy: z.uuid().nullable().meta({ description: "The operator signed in as the user with this session (docs/operator.md, \"Impersonation\"); null for the user's own" }),
    })
    .meta({ id: 'AuthSession' });
  const Impersonator = z
    .object({ id: z.uuid(), email: z.string(), name: z.string() })
    .nullable()
    .meta({ description: "The operator signed in as the user: the app shows a banner naming them until session.expiresAt. Null for the user's own session." });
  const envelope = (data: z.ZodType) => ({ content: { 'application/json': { schema: z.object({ success: z.literal(true), data }) } } });
  const listEnvelope = (item: z.ZodType) => ({
    content: { 'application/json': { schema: z.object({ success: z.literal(true), data: z.array(item), meta: z.object({ page: z.int(), limit: z.int(), total: z.int(), totalPages: z.int() }) }) } },
  });
  const sessionToken = z.string().meta({ description: 'The session secret; also set as the session cookie' });
  const signedInBody = envelope(z.object({ user: User, token: sessionToken }));
  const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
  const tags = ['auth'];
  const bearerOrCookie: Record<string, string[]>[] = [{ sessionCookie: [] }, { bearer: [] }];
  // Sign-up and sign-in take no credential: no lock in the docs page.
  const open: Record<string, string[]>[] = [];
  // Sign-out and accepting an invitation work with a session and without one (`{}`).
  const sessionOrNone: Record<string, string[]>[] = [...bearerOrCookie, {}];
  const tooMany = { 429: { description: 'Too many requests to /api/auth from this address (RATE_LIMIT_AUTH_MAX per RATE_LIMIT_AUTH_WINDOW_MS)' } };
  const invalidLink = { 400: { description: 'The link is not valid: used already, or expired (code INVALID_TOKEN)' } };
  // The organization's sign-in policy (src/auth/sign-in-policy.ts).
  const policyRefusal = 'SSO_REQUIRED: the address is in a verified domain of an organization that requires single sign-on (`details.signInWith`: where to sign in)';
  const refusedByPolicy = { 403: { description: policyRefusal } };
  const notSignedIn = { 401: { description: 'Not signed in' } };
  // An operator signed in as the user (docs/operator.md, "Impersonation") leaves the account itself alone.
  const notWhileImpersonating = { 403: { description: 'FORBIDDEN: an operator signed in as the user (an impersonation session) cannot do this' } };
  const onItsWay = { description: 'The same answer for every address, known or not', ...envelope(z.object({ message: z.string() })) };
  const Membership = z.object({ organization: z.object({ id: z.uuid(), name: z.string(), slug: z.string() }), role: RoleSchema });

  registry.registerPath({ method: 'post', path: '/api/auth/sign-up/email', operationId: 'signUp', tags, security: open, summary: 'Sign up: a user, their password account, a personal organization, a link to confirm the address, and a session', description: 'With REQUIRE_EMAIL_VERIFICATION (the default in production) `token` is null and no cookie is set: the user signs in once the address is confirmed.', request: { body: json(SignUpInput) }, responses: { 201: { description: 'Signed up (and signed in unless the address must be confirmed first)', ...envelope(z.object({ user: User, token: sessionToken.nullable() })) }, ...refusedByPolicy, 409: { description: 'The e-mail address is taken' }, 422: { description: 'Invalid input' }, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/sign-in/email', operationId: 'signIn', tags, security: open, summary: 'Sign in with e-mail and password', request: { body: json(SignInInput) }, responses: { 200: { description: 'Signed in', ...signedInBody }, 401: { description: 'Invalid email or password' }, 403: { description: `EMAIL_NOT_VERIFIED: the address is not confirmed yet (REQUIRE_EMAIL_VERIFICATION); a new link was sent to it. ${policyRefusal}, whatever the password (an owner with the right one signs in: break-glass). DEPROVISIONED (once the password matched): the organization's directory turned the user's access off` }, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/sign-out', operationId: 'signOut', tags, security: sessionOrNone, summary: 'End the current session', responses: { 200: { description: 'Signed out', ...envelope(z.object({ signedOut: z.literal(true) })) } } });
  registry.registerPath({ method: 'get', path: '/api/auth/get-session', operationId: 'getCurrentSession', tags, security: bearerOrCookie, summary: 'The current session, its user and their organizations', responses: { 200: { description: 'The session', ...envelope(z.object({ session: Session, user: User, organizations: z.array(z.object({ id: z.uuid(), name: z.string(), slug: z.string(), role: RoleSchema })), impersonatedBy: Impersonator })) }, 401: { description: 'No valid session' } } });

  registry.registerPath({ method: 'post', path: '/api/auth/organization/set-active', operationId: 'setActiveOrganization', tags, security: bearerOrCookie, summary: 'Choose the active organization: the one your requests act in when they send no x-organization-id', description: 'Set at sign-up (your personal organization) and sign-in (your first). The header wins when a request sends it. null clears it.', request: { body: json(SetActiveOrganizationInput) }, responses: { 200: { description: 'The session, and the organization with your role there', ...envelope(z.object({ session: Session, organization: z.object({ id: z.uuid(), name: z.string(), slug: z.string(), role: RoleSchema }).nullable() })) }, ...notSignedIn, 403: { description: 'You are not a member of this organization' }, 422: { description: 'Not an organization id' } } });

  registry.registerPath({ method: 'get', path: '/api/auth/verify-email', operationId: 'verifyEmailFromLink', tags, security: open, summary: 'Confirm an address with the link from the mail', request: { query: TokenInput }, responses: { 200: { description: 'Confirmed', ...envelope(z.object({ user: User })) }, ...invalidLink, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/verify-email', operationId: 'verifyEmail', tags, security: open, summary: "Confirm an address with the link's token", request: { body: json(TokenInput) }, responses: { 200: { description: 'Confirmed', ...envelope(z.object({ user: User })) }, ...invalidLink, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/send-verification-email', operationId: 'sendVerificationEmail', tags, security: open, summary: 'Send the link that confirms an address again', request: { body: json(EmailInput) }, responses: { 200: onItsWay, ...refusedByPolicy, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/forgot-password', operationId: 'forgotPassword', tags, security: open, summary: 'Mail a link to reset the password of the account with this address', request: { body: json(EmailInput) }, responses: { 200: onItsWay, ...refusedByPolicy, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/reset-password', operationId: 'resetPassword', tags, security: open, summary: "Set a new password with the reset link's token; every session of the user ends", request: { body: json(ResetPasswordInput) }, responses: { 200: { description: 'Reset: sign in with the new password', ...envelope(z.object({ passwordReset: z.literal(true) })) }, ...invalidLink, ...refusedByPolicy, 422: { description: 'The new password is not acceptable' }, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/change-password', operationId: 'changePassword', tags, security: bearerOrCookie, summary: "Change the signed-in user's password; their other sessions end", request: { body: json(ChangePasswordInput) }, responses: { ...notWhileImpersonating, 200: { description: 'Changed', ...envelope(z.object({ passwordChanged: z.literal(true) })) }, 400: { description: 'INVALID_PASSWORD: the current password is not right' }, ...notSignedIn, ...refusedByPolicy, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/change-email', operationId: 'changeEmail', tags, security: bearerOrCookie, summary: 'Change the address: a link to the new address confirms it, and the old one is told', request: { body: json(ChangeEmailInput) }, responses: { ...notWhileImpersonating, 200: { description: 'The same answer whether or not the new address has an account', ...envelope(z.object({ message: z.string() })) }, ...notSignedIn, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/change-email/confirm', operationId: 'confirmEmailChange', tags, security: open, summary: "Confirm a new address with the link's token", request: { body: json(TokenInput) }, responses: { 200: { description: 'The address is changed (and confirmed)', ...envelope(z.object({ user: User })) }, ...invalidLink, ...refusedByPolicy, 409: { description: 'Another account has this address now' }, ...tooMany } });
  registry.registerPath({ method: 'get', path: '/api/auth/sessions', operationId: 'listOwnSessions', tags, security: bearerOrCookie, summary: "The signed-in user's sessions: created, last renewed (updatedAt), IP, user agent, and which is this one", responses: { 200: { description: 'Sessions, newest first', ...envelope(z.array(Session.extend({ current: z.boolean() }))) }, ...notSignedIn } });
  registry.registerPath({ method: 'delete', path: '/api/auth/sessions/{id}', operationId: 'revokeSession', tags, security: bearerOrCookie, summary: 'Sign one of your sessions out', request: { params: z.object({ id: z.uuid() }) }, responses: { ...notWhileImpersonating, 204: { description: 'Signed out' }, ...notSignedIn, 404: { description: 'You have no session with this id' }, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/sessions/revoke-others', operationId: 'revokeOtherSessions', tags, security: bearerOrCookie, summary: 'Sign out every session of yours but this one', responses: { ...notWhileImpersonating, 200: { description: 'How many were signed out', ...envelope(z.object({ revoked: z.int() })) }, ...notSignedIn, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/delete-account', operationId: 'deleteOwnAccount', tags, security: bearerOrCookie, summary: 'Delete your account (with your password); your organizations with no other member go with it', request: { body: json(DeleteAccountInput) }, responses: { ...notWhileImpersonating, 200: { description: 'Deleted', ...envelope(z.object({ deleted: z.literal(true) })) }, 400: { description: 'INVALID_PASSWORD' }, ...notSignedIn, 409: { description: 'You are the only owner of an organization that has other members: the message names it' }, ...tooMany } });

  registry.registerPath({ method: 'post', path: '/api/auth/send-mail', operationId: 'sendTrustedMail', tags, security: [{ bearer: [] }], summary: "A trusted server's mail (Better Auth's verification and reset links), sent in the backend's wording through its outbox", description: 'Service key only.', request: { body: json(TrustedMailInput) }, responses: { 202: { description: 'In the outbox', ...envelope(z.object({ queued: z.literal(true) })) }, 403: { description: `Not the service key; or, for a reset link, ${policyRefusal}` } } });

  const Invitation = z.object({ id: z.uuid(), organization: z.object({ id: z.uuid(), name: z.string() }), role: RoleSchema, expiresAt: z.date() }).meta({ id: 'PendingInvitation' });
  const noInvitation = { 404: { description: 'No such invitation to your address (expired, used, or withdrawn: its organization was deleted, or its inviter may no longer invite)' } };
  registry.registerPath({ method: 'get', path: '/api/auth/invitations', operationId: 'listOwnInvitations', tags, security: bearerOrCookie, summary: "The signed-in user's pending invitations to organizations", request: { query: z.object({ page: z.int().min(1).optional(), limit: z.int().min(1).max(100).optional() }) }, responses: { 200: { description: 'Pending invitations, oldest first', ...listEnvelope(Invitation) }, ...notSignedIn } });
  registry.registerPath({ method: 'post', path: '/api/auth/invitations/accept', operationId: 'acceptInvitation', tags, security: sessionOrNone, summary: "Join an organization with the invitation's token: signed in with the invited address, or, without an account, with a name and a password (the account is made, its address confirmed)", request: { body: json(z.union([InvitationAnswerInput, InvitationSignUpInput])) }, responses: { 200: { description: 'Joined', ...envelope(Membership) }, 201: { description: 'Account made and joined; signed in', ...envelope(Membership.extend({ user: User, token: sessionToken })) }, ...notSignedIn, ...noInvitation, ...refusedByPolicy, 409: { description: 'Not signed in, and the address has an account: sign in, then accept' }, ...tooMany } });
  registry.registerPath({ method: 'post', path: '/api/auth/invitations/decline', operationId: 'declineInvitation', tags, security: bearerOrCookie, summary: "Decline an invitation to your address, with its token", request: { body: json(InvitationAnswerInput) }, responses: { 200: { description: 'Declined', ...envelope(z.object({ declined: z.literal(true), organizationId: z.uuid() })) }, ...notSignedIn, ...noInvitation, ...tooMany } });
  registry.registerPath({ method: 'get', path: '/api/auth/organization/invitations', operationId: 'listOrganizationInvitations', tags, security: bearerOrCookie, summary: "The pending invitations of the organization you act in (owners, admins), oldest first", description: 'The organization is x-organization-id, or else your active one. Invitations answered, expired or withdrawn are not listed, nor those whose inviter may no longer send them. Never the secret of the link.', request: { query: z.object({ page: z.int().min(1).optional(), limit: z.int().min(1).max(100).optional() }) }, responses: { 200: { description: 'Pending invitations of the organization', ...listEnvelope(OrganizationInvitation) }, ...notSignedIn, 403: { description: 'Not an owner or admin of the organization' } } });
  registry.registerPath({ method: 'delete', path: '/api/auth/organization/invitations/{id}', operationId: 'revokeInvitation', tags, security: bearerOrCookie, summary: 'Withdraw a pending invitation of the organization you act in (owners, admins): its link stops working', description: 'The organization is x-organization-id, or else your active one. The id is the one POST /members answered. An admin cannot withdraw an invitation to become an owner. Recorded as invitation.revoked.', request: { params: z.object({ id: z.uuid() }) }, responses: { 204: { description: 'Withdrawn' }, ...notSignedIn, 403: { description: 'Not an owner or admin of the organization, or an admin withdrawing an invitation with the owner role' }, 404: { description: 'No pending invitation with this id in the organization (answered, expired, withdrawn, or of another organization)' }, ...tooMany } });

  registerMachineKeyRoutes(registry);
}
