import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router, type Request } from 'express';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { sendData } from '../../http/envelope.js';
import { HttpError } from '../../http/errors.js';
import { clearSessionCookie, presentedSession, setSessionCookie } from '../../http/session-token.js';
import { parseBody } from '../../http/validate.js';
import { SignInInput, SignUpInput, type AuthService } from './auth.service.js';
import { InvitationAnswerInput } from './invitations.js';
import { RoleSchema } from './roles.js';

/**
 * /api/auth: sign-up, sign-in, sign-out and the current session. Yours to change: the generator
 * created this file once and never writes it again.
 */
export function authRouter({ auth, config }: { auth: AuthService; config: Config }): Router {
  const router = Router();
  const meta = (req: { ip?: string; header(name: string): string | undefined }) => ({ ipAddress: req.ip, userAgent: req.header('user-agent') });

  router.post('/sign-up/email', async (req, res) => {
    const input = parseBody('sign-up', SignUpInput, req);
    const { user, token } = await auth.signUp(input, meta(req)).catch((error) => {
      // The unique e-mail is the only constraint a valid sign-up can break.
      if (error?.code === '23505') throw new HttpError(409, 'CONFLICT', 'An account with this email already exists');
      throw error;
    });
    setSessionCookie(res, token, config);
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

  /** The signed-in user behind this request, or 401. */
  const signedInUser = async (req: Request) => {
    const presented = presentedSession(req, config);
    const resolved = presented ? await auth.resolveSession(presented.token) : null;
    if (!resolved) throw new HttpError(401, 'UNAUTHORIZED', 'Sign in first: send the session cookie or an Authorization: Bearer token');
    return resolved.user;
  };

  // Invitations to the signed-in user's address: listed, then accepted or declined with the
  // invitation's secret. Joining an organization takes this consent; nothing else attaches a user.
  router.get('/invitations', async (req, res) => {
    sendData(res, await auth.invitations.pendingFor((await signedInUser(req)).email));
  });
  for (const [path, accept] of [['/invitations/accept', true], ['/invitations/decline', false]] as const) {
    router.post(path, async (req, res) => {
      const user = await signedInUser(req);
      const { token } = parseBody('invitation', InvitationAnswerInput, req);
      sendData(res, await auth.invitations.answer(user, token, accept));
    });
  }

  router.get('/get-session', async (req, res) => {
    const presented = presentedSession(req, config);
    const resolved = presented ? await auth.resolveSession(presented.token) : null;
    if (!resolved) throw new HttpError(401, 'UNAUTHORIZED', 'No valid session');
    if (resolved.renewed && presented!.via === 'cookie') setSessionCookie(res, presented!.token, config);
    sendData(res, { session: resolved.session, user: resolved.user, organizations: await auth.organizationsOf(resolved.user.id) });
  });

  return router;
}

/** Describes /api/auth in the OpenAPI document. */
export function registerAuthRoutes(registry: OpenAPIRegistry): void {
  const User = z.object({ id: z.uuid(), email: z.string(), name: z.string(), email_verified: z.boolean(), image: z.string().nullable(), createdAt: z.date(), updatedAt: z.date() }).meta({ id: 'AuthUser' });
  const Session = z.object({ id: z.uuid(), userId: z.uuid(), expiresAt: z.date(), activeOrganizationId: z.uuid().nullable(), ipAddress: z.string().nullable(), userAgent: z.string().nullable(), createdAt: z.date(), updatedAt: z.date() }).meta({ id: 'AuthSession' });
  const envelope = (data: z.ZodType) => ({ content: { 'application/json': { schema: z.object({ success: z.literal(true), data }) } } });
  const signedIn = envelope(z.object({ user: User, token: z.string().meta({ description: 'The session secret; also set as the session cookie' }) }));
  const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
  const tags = ['auth'];

  registry.registerPath({ method: 'post', path: '/api/auth/sign-up/email', tags, summary: 'Create a user, their password account, a personal organization and a session', request: { body: json(SignUpInput) }, responses: { 201: { description: 'Signed up and signed in', ...signedIn }, 409: { description: 'The e-mail address is taken' }, 422: { description: 'Invalid input' }, 429: { description: 'Too many login attempts' } } });
  registry.registerPath({ method: 'post', path: '/api/auth/sign-in/email', tags, summary: 'Sign in with e-mail and password', request: { body: json(SignInInput) }, responses: { 200: { description: 'Signed in', ...signedIn }, 401: { description: 'Invalid email or password' }, 429: { description: 'Too many login attempts' } } });
  registry.registerPath({ method: 'post', path: '/api/auth/sign-out', tags, summary: 'End the current session', responses: { 200: { description: 'Signed out', ...envelope(z.object({ signedOut: z.literal(true) })) } } });
  const bearerOrCookie: Record<string, string[]>[] = [{ sessionCookie: [] }, { bearer: [] }];
  const Invitation = z.object({ id: z.uuid(), organization: z.object({ id: z.uuid(), name: z.string() }), role: RoleSchema, expiresAt: z.date() }).meta({ id: 'PendingInvitation' });
  registry.registerPath({ method: 'get', path: '/api/auth/invitations', tags, summary: "The signed-in user's pending invitations to organizations", security: bearerOrCookie, responses: { 200: { description: 'Pending invitations', ...envelope(z.array(Invitation)) }, 401: { description: 'Not signed in' } } });
  registry.registerPath({ method: 'post', path: '/api/auth/invitations/accept', tags, summary: 'Join an organization by accepting an invitation to your address, with its token', security: bearerOrCookie, request: { body: json(InvitationAnswerInput) }, responses: { 200: { description: 'Joined', ...envelope(z.object({ organization: z.object({ id: z.uuid(), name: z.string(), slug: z.string() }), role: RoleSchema })) }, 401: { description: 'Not signed in' }, 404: { description: 'No such invitation to your address (or it expired)' } } });
  registry.registerPath({ method: 'post', path: '/api/auth/invitations/decline', tags, summary: 'Decline an invitation to your address, with its token', security: bearerOrCookie, request: { body: json(InvitationAnswerInput) }, responses: { 200: { description: 'Declined', ...envelope(z.object({ declined: z.literal(true), organizationId: z.uuid() })) }, 401: { description: 'Not signed in' }, 404: { description: 'No such invitation to your address (or it expired)' } } });
  registry.registerPath({ method: 'get', path: '/api/auth/get-session', tags, summary: 'The current session, its user and their organizations', responses: { 200: { description: 'The session', ...envelope(z.object({ session: Session, user: User, organizations: z.array(z.object({ id: z.uuid(), name: z.string(), slug: z.string(), role: RoleSchema })) })) }, 401: { description: 'No valid session' } } });
}
