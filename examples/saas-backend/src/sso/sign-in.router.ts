import { createHash, randomBytes } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import { withScope } from '../db/scope.js';
import { sendData } from '../http/envelope.js';
import { HttpError, validationFailed } from '../http/errors.js';
import { isUuid, parseBody, parseQuery } from '../http/validate.js';
import { byUser, recordAuthEvent, recordEvent } from '../events/events.js';
import { cookieValue, hashToken, setSessionCookie } from '../http/session-token.js';
import { refusedVerdictOf, refuseSignIn } from '../auth/sign-in-policy.js';
import { connectionColumns, connectionSeal, oidcSettingsOf, redirectUriOf, type ConnectionRow } from './connections.js';
import { bindingCookieName, bindingCookieOptions, setBindingCookie, sha256, startFlow, takeFlow, type FlowRow } from './flows.js';
import { redeemCode } from './oidc.js';
import { asHttpError, hashCode, issueAppCode, profileOf, signInBySso, SsoRefusal } from './sign-in.js';

/**
 * Single sign-on, public (docs/sso.md; docs/enterprise-identity.md 4.1 to 4.4):
 *
 *   GET|POST /api/auth/sso/start                        by email (its verified domain), organization (slug) or connectionId
 *   GET      /api/auth/sso/:connectionId/oidc/callback  the identity provider sends the browser back here
 *   POST     /api/auth/sso/token                        an app's one-time code and PKCE verifier -> a bearer session
 *
 * SAML's ACS and SP metadata are saml.router.ts's, mounted before the CSRF guard; both protocols
 * land through ssoLanding (below).
 */

export const SsoStartInput = z
  .object({
    email: z.email().max(320).toLowerCase().optional(),
    organization: z.string().min(1).max(200).optional(),
    connectionId: z.uuid().optional(),
    returnTo: z.string().max(2048).optional(),
    client: z.enum(['browser', 'app']).default('browser'),
    codeChallenge: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'a PKCE S256 challenge (43 base64url characters)').optional(),
  })
  .refine((input) => [input.email, input.organization, input.connectionId].filter((given) => given !== undefined).length === 1, {
    message: 'Send one of email, organization or connectionId',
    path: ['email'],
  })
  .refine((input) => input.client !== 'app' || input.codeChallenge !== undefined, { message: 'An app sends its PKCE codeChallenge', path: ['codeChallenge'] })
  .meta({ id: 'SsoStartInput' });

export const SsoTokenInput = z
  .strictObject({ code: z.string().min(1).max(200), codeVerifier: z.string().min(43).max(128) })
  .meta({ id: 'SsoTokenInput' });

const CallbackQuery = z.object({ state: z.string().max(1000).optional(), code: z.string().max(4000).optional(), error: z.string().max(200).optional() }).loose();

interface Route {
  organizationId: string;
  slug: string;
  ssoRequired: boolean;
  connections: { id: string; name: string; protocol: string }[];
}

const notConfigured = () => new HttpError(404, 'SSO_NOT_CONFIGURED', 'Single sign-on is not set up for this address or organization');

export function ssoSignInRouter({ db, config }: { db: Database; config: Config }): Router {
  const router = Router();
  const appUrl = config.mail.appUrl;

  /** Where a browser lands: a path or an allowed origin's URL (APP_URL, ALLOWED_ORIGINS); anything else APP_URL. */
  const browserReturnTo = (raw: string | undefined): string | null => {
    if (!raw) return null;
    if (raw.startsWith('/') && !raw.startsWith('//')) return `${appUrl}${raw}`;
    try {
      const url = new URL(raw);
      return [new URL(appUrl).origin, ...config.allowedOrigins].includes(url.origin) ? url.href : null;
    } catch {
      return null;
    }
  };

  const { connectionOf, landing, refused, signInErrorUrl, takeBrowsersFlow } = ssoLanding({ db, config });

  const start = async (req: Request, res: Response, input: z.output<typeof SsoStartInput>) => {
    let organizationId: string;
    let connectionId: string;
    if (input.connectionId) {
      const { rows } = await db.query<{ owner: string | null }>(`SELECT authstrap.sso_connection_owner($1) AS "owner"`, [input.connectionId]);
      if (!rows[0]?.owner) throw notConfigured();
      organizationId = rows[0].owner;
      connectionId = input.connectionId;
    } else {
      const domain = input.email ? input.email.slice(input.email.lastIndexOf('@') + 1) : null;
      const { rows } = await db.query<{ route: Route | null }>(`SELECT authstrap.sso_route($1, $2) AS "route"`, [domain, domain ? null : input.organization]);
      const route = rows[0]?.route;
      if (!route || route.connections.length === 0) throw notConfigured();
      if (route.connections.length > 1) {
        // Each enabled connection's id and name, for a page to offer the choice by name (the names
        // are what the organization's people see on that page, not a secret of the organization).
        throw new HttpError(
          409,
          'CHOOSE_CONNECTION',
          'Several connections sign this organization in: send connectionId',
          Object.fromEntries(route.connections.map((connection) => [connection.id, connection.name])),
        );
      }
      organizationId = route.organizationId;
      connectionId = route.connections[0]!.id;
    }
    const connection = await connectionOf(organizationId, connectionId);
    if (!connection || !connection.enabled) throw notConfigured();
    let returnTo: string | null;
    if (input.client === 'app') {
      if (!input.returnTo || !config.sso.appRedirects.some((allowed) => input.returnTo!.startsWith(allowed))) {
        throw validationFailed('Invalid sso start', { returnTo: 'an app returns to one of SSO_APP_REDIRECTS' });
      }
      returnTo = input.returnTo;
    } else {
      returnTo = browserReturnTo(input.returnTo);
    }
    const flow = await startFlow(db, config, { connection, purpose: 'sign-in', client: input.client, returnTo, appCodeChallenge: input.codeChallenge ?? null, testerId: null });
    if (flow.binding) setBindingCookie(res, flow.binding, config);
    return flow.url;
  };

  router.get('/start', async (req, res) => {
    res.redirect(303, await start(req, res, parseQuery('sso start', SsoStartInput, req.query)));
  });
  router.post('/start', async (req, res) => {
    sendData(res, { url: await start(req, res, parseBody('sso start', SsoStartInput, req)) });
  });

  router.get('/:connectionId/oidc/callback', async (req, res) => {
    const connectionId = String(req.params.connectionId);
    const query = CallbackQuery.safeParse(req.query);
    const fail = (code: string) => res.redirect(303, signInErrorUrl(code));
    if (!query.success) return fail('SSO_INVALID_STATE');
    const flow = await takeBrowsersFlow(req, res, connectionId, query.data.state);
    if (typeof flow === 'string') return fail(flow);

    const connection = await connectionOf(flow.organizationId, connectionId);
    if (!connection || connection.protocol !== 'oidc') return fail('SSO_NOT_CONFIGURED');
    const state = query.data.state!;
    if (flow.purpose === 'sign-in' && !connection.enabled) return fail('SSO_NOT_CONFIGURED');

    let claims: Record<string, unknown>;
    try {
      const callbackUrl = new URL(redirectUriOf(config.authUrl, connectionId));
      callbackUrl.search = new URL(req.originalUrl, 'http://callback').search;
      claims = await redeemCode(
        { ...oidcSettingsOf(connection, connectionSeal(config.authSecret)), redirectUri: redirectUriOf(config.authUrl, connectionId) },
        callbackUrl,
        { state, nonce: flow.oidcNonce, codeVerifier: flow.oidcCodeVerifier },
        config.sso.clockSkewSeconds,
        config.sso.allowPrivateAddresses,
      );
    } catch (error) {
      return refused(req, res, connection, flow, error);
    }
    return landing(req, res, connection, flow, claims);
  });

  router.post('/token', async (req, res) => {
    const { code, codeVerifier } = parseBody('sso token', SsoTokenInput, req);
    // Used up whatever follows: a wrong verifier uses the code up too.
    const { rows } = await db.query<{ userId: string; organizationId: string; connectionId: string; codeChallenge: string }>(
      `DELETE FROM "authstrap_sso_code" WHERE "codeHash" = $1 AND "expiresAt" > now() RETURNING "userId", "organizationId", "connectionId", "codeChallenge"`,
      [hashCode(code)],
    );
    const issued = rows[0];
    const challenge = createHash('sha256').update(codeVerifier).digest('base64url');
    if (!issued || challenge !== issued.codeChallenge) throw asHttpError(new SsoRefusal('INVALID_CODE', 'The code is not valid: used already, expired, or not for this verifier'));
    const connection = await connectionOf(issued.organizationId, issued.connectionId);
    if (!connection?.enabled) throw asHttpError(new SsoRefusal('SSO_NOT_CONFIGURED', 'The connection is turned off'));
    const token = randomBytes(32).toString('base64url');
    const made = await withScope(db, { organizationId: issued.organizationId, userId: '', role: 'system' })
      .transaction(async (tx) => {
        const { rows: sessions } = await tx.query<{ id: string; userId: string; expiresAt: Date; activeOrganizationId: string; createdAt: Date; updatedAt: Date }>(
          `INSERT INTO "session" ("userId", "token", "expiresAt", "activeOrganizationId", "ipAddress", "userAgent", "authMethod", "ssoConnectionId")
           VALUES ($1, $2, now() + interval '7 days', $3, $4, $5, 'sso', $6) RETURNING "id", "userId", "expiresAt", "activeOrganizationId", "createdAt", "updatedAt"`,
          [issued.userId, hashToken(token), issued.organizationId, req.ip ?? null, req.header('user-agent')?.slice(0, 512) ?? null, issued.connectionId],
        );
        const session = sessions[0]!;
        await recordAuthEvent(
          tx,
          { type: 'session.signed_in', organizationId: issued.organizationId, userId: issued.userId, entity: 'session', entityId: session.id, data: { method: 'sso', protocol: connection.protocol, connectionId: issued.connectionId, connectionName: connection.name, client: 'app' } },
          byUser(issued.userId),
        );
        const { rows: users } = await tx.query(`SELECT "id", "email", "name", "email_verified", "image", "createdAt", "updatedAt" FROM "User" WHERE "id" = $1`, [issued.userId]);
        return { user: users[0], session };
      })
      .catch((error) => {
        const verdict = refusedVerdictOf(error);
        if (verdict && !verdict.allowed) throw asHttpError(new SsoRefusal(verdict.code, "Sign-in refused by the organization's policy"));
        throw error;
      });
    sendData(res, { user: made.user, token, session: made.session });
  });

  return router;
}

/**
 * What the OIDC callback and the SAML ACS share once the provider has answered: the connection
 * (read as the sign-in engine, `system`), a refusal's landing, and a verified answer's landing.
 */
export function ssoLanding({ db, config }: { db: Database; config: Config }) {
  const appUrl = config.mail.appUrl;

  /** A connection by its id alone (the SAML routes, whose URL is all the IdP sends): its organization first. */
  const connectionById = async (connectionId: string) => {
    const { rows } = await db.query<{ owner: string | null }>(`SELECT authstrap.sso_connection_owner($1) AS "owner"`, [connectionId]);
    return rows[0]?.owner ? connectionOf(rows[0].owner, connectionId) : undefined;
  };

  const connectionOf = async (organizationId: string, connectionId: string) => {
    const { rows } = await withScope(db, { organizationId, userId: '', role: 'system' }).query<ConnectionRow>(
      `SELECT ${connectionColumns} FROM "authstrap_sso_connection" WHERE "id" = $1 AND "organizationId" = $2`,
      [connectionId, organizationId],
    );
    return rows[0];
  };

  /** The provider's answer was refused: a test records why; a sign-in lands on the sign-in page with SSO_FAILED (the reason is in the log). */
  const refused = async (req: Request, res: Response, connection: ConnectionRow, flow: Pick<FlowRow, 'purpose' | 'testerId'> | null, error: unknown) => {
    req.log.warn({ err: error, connectionId: connection.id }, 'SSO answer refused');
    if (flow?.purpose === 'test') {
      await finishTest(db, connection, flow, false, { error: (error as Error).message });
      return res.redirect(303, testDoneUrl(connection.id));
    }
    return res.redirect(303, signInErrorUrl('SSO_FAILED'));
  };

  const signInErrorUrl = (code: string) => `${appUrl}/sign-in?${new URLSearchParams({ error: code })}`;
  const testDoneUrl = (connectionId: string) => `${appUrl}/settings/sso/${connectionId}?test=done`;

  /**
   * Where a verified answer lands, for both protocols: a test's result in lastTest (no user, no
   * session); or the sign-in of 4.3 and its end of 4.4, a session cookie or an app's one-time code.
   * `inSignIn` runs in the sign-in's transaction first (SAML's replay table: a replay makes nothing).
   * `flow` is null for an IdP-initiated SAML sign-in: a browser landing on APP_URL.
   */
  const landing = async (
    req: Request,
    res: Response,
    connection: ConnectionRow,
    flow: Pick<FlowRow, 'purpose' | 'testerId' | 'client' | 'returnTo' | 'appCodeChallenge'> | null,
    claims: Record<string, unknown>,
    inSignIn?: (tx: Queryable) => Promise<void>,
  ) => {
    if (flow?.purpose === 'test') {
      let detail: { error?: string; profile?: Record<string, unknown> };
      try {
        detail = { profile: { ...profileOf(connection, claims) } };
      } catch (error) {
        detail = { error: (error as Error).message };
      }
      await finishTest(db, connection, flow, detail.error === undefined, detail);
      return res.redirect(303, testDoneUrl(connection.id));
    }

    const meta = { ipAddress: req.ip, userAgent: req.header('user-agent') };
    try {
      const outcome: { code: string } | { token: string } = await withScope(db, { organizationId: connection.organizationId, userId: '', role: 'system' }).transaction(async (tx) => {
        await inSignIn?.(tx);
        const signedIn = await signInBySso(tx, connection, profileOf(connection, claims), meta);
        return flow?.client === 'app' ? { code: await issueAppCode(tx, signedIn, connection, flow.appCodeChallenge!) } : { token: signedIn.token };
      });
      if ('code' in outcome) {
        const target = new URL(flow!.returnTo!);
        target.searchParams.set('code', outcome.code);
        return res.redirect(303, target.href);
      }
      setSessionCookie(res, (outcome as { token: string }).token, config);
      return res.redirect(303, flow?.returnTo ?? appUrl);
    } catch (error) {
      if (!(error instanceof SsoRefusal)) throw error;
      if (error.code === 'SSO_FAILED') req.log.warn({ err: error, connectionId: connection.id }, 'SSO answer refused');
      // The rule's refusals are on the record, as a password sign-in's are (session.sign_in_refused).
      if (error.verdict) await refuseSignIn(db, error.verdict, { email: error.email ?? '', userId: error.userId ?? null, method: 'sso', organizationId: connection.organizationId, connectionId: connection.id }, appUrl);
      return res.redirect(303, signInErrorUrl(error.code));
    }
  };

  /** Uses the flow of `state` up; only the browser that started it may finish (another one, a login CSRF, has no binding cookie). A string: the refusal's code. */
  const takeBrowsersFlow = async (req: Request, res: Response, connectionId: string, state: string | undefined): Promise<FlowRow | string> => {
    if (!isUuid(connectionId) || !state) return 'SSO_INVALID_STATE';
    const flow = await takeFlow(db, connectionId, state);
    if (!flow) return 'SSO_INVALID_STATE';
    const binding = cookieValue(req, bindingCookieName);
    res.clearCookie(bindingCookieName, bindingCookieOptions(config));
    if (flow.client === 'browser' && (!binding || !flow.browserBindingHash || sha256(binding) !== flow.browserBindingHash)) return 'SSO_BROWSER_MISMATCH';
    return flow;
  };

  return { connectionOf, connectionById, landing, refused, signInErrorUrl, takeBrowsersFlow };
}

/** A test's result in the connection's `lastTest` (and `testedAt` when it passed); no user, no session. */
async function finishTest(db: Database, connection: ConnectionRow, flow: Pick<FlowRow, 'testerId'>, ok: boolean, detail: { error?: string; profile?: Record<string, unknown> }) {
  await withScope(db, { organizationId: connection.organizationId, userId: '', role: 'system' }).transaction(async (tx) => {
    const at = new Date();
    await tx.query(`UPDATE "authstrap_sso_connection" SET "lastTest" = $2::jsonb, "testedAt" = CASE WHEN $3 THEN $4::timestamptz ELSE "testedAt" END, "updatedAt" = now() WHERE "id" = $1`, [
      connection.id,
      JSON.stringify({ at: at.toISOString(), ok, ...detail }),
      ok,
      at,
    ]);
    await recordEvent(
      tx,
      { type: 'sso_connection.tested', organizationId: connection.organizationId, entity: 'sso_connection', entityId: connection.id, data: { ok, name: connection.name, ...(detail.error ? { error: detail.error } : {}) } },
      flow.testerId ? { actorType: 'user', actorId: flow.testerId } : { actorType: 'system' },
    );
  });
}
