import { randomBytes } from 'node:crypto';
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import { refusedVerdictOf } from '../auth/sign-in-policy.js';
import type { Database } from '../db/database.js';
import { actedAsOperator, eventSentence, subjectUserId, type Person, type SentenceEvent, type SentenceNames } from '../events/sentences.js';
import { resolveCaller, type CallerDeps } from '../generated/guards/auth.guard.js';
import { streamCsv, type CsvCursor, type CsvRow } from '../events/csv.js';
import { sendData, sendJsonData, sendJsonList } from '../http/envelope.js';
import { forbidden, notFound } from '../http/errors.js';
import { hashToken } from '../http/session-token.js';
import { parseBody, parseId, parseQuery } from '../http/validate.js';
import { actOn, listOf, operatorAction, operatorQuery, pageMeta, recentSignInNote, refusedToNonOperators, SearchQuery, searchParameters, type OperatorDeps } from './operator-query.js';
import { organizationRoutes, registerOrganizationRoutes } from './organizations.js';
import { operatorsRoutes, registerOperatorsRoutes } from './operators.js';
import { overviewRoutes, registerOverviewRoutes } from './overview.js';
import { registerUserActionRoutes, userActionRoutes } from './user-actions.js';

/**
 * The platform's operators: the people who run the product built on this backend, above every
 * organization (issue 50; docs/operator.md). Who is one is kept in `authstrap_operator`, granted
 * from the command line (`authstrap operator grant <email>`), never by a request of its own.
 *
 * Every route under /api/operator stands behind `operatorsOnly`: a signed-in user (a session;
 * never a machine key, whose routes are its organization's entities, nor the service key, a
 * server that is no person) who is an operator now. Everyone else gets a 403, after the 401 of a
 * caller without a session. What operators may see and do is built on this, route by route.
 */

export interface Operator {
  userId: string;
  email: string;
  grantedAt: Date;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by operatorsOnly: the operator making the request. */
      operator?: Operator;
    }
  }
}

/**
 * Whether the signed-in user is an operator: their own row of `authstrap_operator`, which
 * row-level security lets a transaction that names the user read, and no one else's.
 */
async function operatorOf(db: Database, userId: string): Promise<{ grantedAt: Date } | undefined> {
  const outcome = await db.pipeline([
    { text: `SELECT set_config('authstrap.user_id', $1, true)`, params: [userId] },
    { text: `SELECT "grantedAt" FROM "authstrap_operator" WHERE "userId" = authstrap.user_id()`, params: [] },
  ]);
  if (outcome.error !== undefined) throw outcome.error;
  return outcome.results[1]?.rows[0] as { grantedAt: Date } | undefined;
}

export function operatorsOnly(deps: CallerDeps & { db: Database }): RequestHandler {
  return async (req, res, next) => {
    await resolveCaller(deps, req, res);
    const caller = req.caller;
    if (caller?.kind !== 'user') throw forbidden('Operator routes take a signed-in operator, not the service key');
    const operator = await operatorOf(deps.db, caller.user.id);
    if (!operator) throw forbidden('Operators only: `authstrap operator grant <email>` makes one');
    req.operator = { userId: caller.user.id, email: caller.user.email, grantedAt: operator.grantedAt };
    next();
  };
}



export function operatorRouter(deps: OperatorDeps): Router {
  const router = Router();
  router.use(operatorsOnly(deps));

  // Who the operator is: what the app asks before it shows the operator's pages.
  router.get('/me', (req: Request, res) => {
    const { userId, email, grantedAt } = req.operator!;
    sendData(res, { userId, email, grantedAt });
  });

  // Every user, or those whose address or name contains ?search= (or whose id it is), newest first.
  router.get('/users', async (req, res) => {
    const { search, page, limit } = parseQuery('operator users', SearchQuery, req.query);
    const found = await operatorQuery<{ total: number; rows: unknown[] }>(deps.db, 'SELECT authstrap.operator_users($1, $2, $3, $4) AS "answer"', [req.operator!.userId, search, limit, (page - 1) * limit]);
    sendJsonList(res, { json: JSON.stringify(found.rows), meta: pageMeta(page, limit, found.total) });
  });

  // One user: organizations and roles, sessions, sign-ins, failed and refused ones.
  router.get('/users/:id', async (req, res) => {
    const id = parseId('User', req.params.id);
    const user = await operatorQuery<unknown>(deps.db, 'SELECT authstrap.operator_user($1, $2) AS "answer"', [req.operator!.userId, id]);
    if (user === null) throw notFound('User', id);
    sendJsonData(res, JSON.stringify(user));
  });

  // Signs the user out everywhere: their sessions end, and with them their live streams at their next check.
  router.post('/users/:id/revoke-sessions', async (req, res) => {
    const { reason } = parseBody('session revocation', RevokeSessionsInput, req);
    sendData(res, { sessions: await actOn(deps, req, 'User', 'operator_revoke_sessions', [], reason) });
  });

  // Bans a user: no path signs them in, their sessions and streams end, the keys they made stop; until expiresAt or an unban.
  router.post('/users/:id/ban', async (req, res) => {
    const { reason, expiresAt } = parseBody('ban', BanInput, req);
    sendJsonData(res, JSON.stringify(await actOn(deps, req, 'User', 'operator_ban_user', [expiresAt ?? null], reason)));
  });

  // Lifts a user's ban: they may sign in again and their keys work again (their sessions stay ended).
  router.post('/users/:id/unban', async (req, res) => {
    const { reason } = parseBody('unban', UnbanInput, req);
    sendJsonData(res, JSON.stringify(await actOn(deps, req, 'User', 'operator_unban_user', [], reason)));
  });

  // Signs the operator in as a user for a bounded time: a session of the user, marked as the operator's (docs/operator.md, "Impersonation").
  const impersonateInput = ImpersonateInput(deps.config.operators.impersonationMaxMinutes);
  router.post('/users/:id/impersonate', async (req, res) => {
    const { reason, minutes } = parseBody('impersonation', impersonateInput, req);
    // The secret goes to the operator only, in this answer; the database keeps its hash, as for every session.
    const token = randomBytes(32).toString('base64url');
    const endsAt = new Date(Date.now() + minutes * 60_000);
    const started = await actOn<{ sessionId: string; expiresAt: string }>(deps, req, 'User', 'operator_impersonate', [hashToken(token), endsAt], reason).catch(refusedImpersonation);
    // actOn has checked the id by now: it is the user's.
    sendData(res, { token, sessionId: started.sessionId, userId: req.params.id, expiresAt: started.expiresAt });
  });

  // Ends an impersonation before its bound (any operator's): the session is deleted, its token stops at once.
  router.post('/impersonations/:sessionId/end', async (req, res) => {
    const sessionId = parseId('Impersonation', req.params.sessionId);
    const ended = await operatorAction<{ sessionId: string; userId: string } | null>(deps.db, req, 'operator_end_impersonation', [sessionId]);
    if (ended === null) throw notFound('Impersonation', sessionId);
    sendData(res, { ended: true, ...ended });
  });

  // The platform's log: what operators did, newest first (?type= one of them).
  router.get('/events', async (req, res) => {
    const { type, page, limit } = parseQuery('operator events', EventsQuery, req.query);
    const found = await operatorQuery<{ total: number; rows: PlatformEventRow[] }>(deps.db, 'SELECT authstrap.operator_events($1, $2, $3, $4) AS "answer"', [req.operator!.userId, type, limit, (page - 1) * limit]);
    sendJsonList(res, { json: JSON.stringify(found.rows.map(withSummary)), meta: pageMeta(page, limit, found.total) });
  });

  // The platform's log as CSV, with the page's filter (?type=): every event, newest first, streamed a batch at a time.
  router.get('/events/export.csv', async (req, res) => {
    const { type } = parseQuery('operator events export', EventsExportQuery, req.query);
    const batchAfter = async (after: CsvCursor | undefined) => {
      const rows = await operatorQuery<(PlatformEventRow & CsvRow)[]>(deps.db, 'SELECT authstrap.operator_events_batch($1, $2, $3, $4, $5) AS "answer"', [
        req.operator!.userId,
        type,
        after?.at ?? null,
        after?.id ?? null,
        platformCsvBatch,
      ]);
      return rows.map(withSummary);
    };
    await streamCsv(res, { filename: `platform-log-${new Date().toISOString().slice(0, 10)}.csv`, columns: platformCsvColumns, batch: platformCsvBatch, next: batchAfter });
  });

  router.use('/organizations', organizationRoutes(deps));
  router.use('/overview', overviewRoutes(deps));
  router.use('/operators', operatorsRoutes(deps));
  router.use('/users', userActionRoutes(deps));

  return router;
}


const RevokeSessionsInput = z.object({ reason: z.string().trim().min(1).max(500).meta({ description: 'Why: kept in the event, which the user sees among their security events' }) }).strict();

const BanInput = z
  .object({
    reason: z.string().trim().min(1).max(500).meta({ description: "Why: kept in the platform's log and the user's own security events (not in their organizations' audit logs)" }),
    expiresAt: z.iso
      .datetime({ offset: true })
      .refine((at) => Date.parse(at) > Date.now(), 'must be in the future (leave it out for a ban until lifted)')
      .optional()
      .meta({ description: 'When the ban ends by itself (ISO 8601); left out, it lasts until an operator lifts it' }),
  })
  .strict();

/** `minutes` from 1 to OPERATOR_IMPERSONATION_MAX_MINUTES (60 by default); 30, or the most allowed if less, when left out. */
const ImpersonateInput = (maxMinutes: number) =>
  z
    .object({
      reason: z.string().trim().min(1).max(500).meta({ description: "Why (the customer's ticket): kept in the platform's log and the user's own security events" }),
      minutes: z
        .int()
        .min(1)
        .max(maxMinutes)
        .default(Math.min(30, maxMinutes))
        .meta({ description: 'How long the session lasts, in minutes: 1 to OPERATOR_IMPERSONATION_MAX_MINUTES (60 unless set), 30 by default. It is never renewed.' }),
    })
    .strict();

/**
 * A user the sign-in rule refuses is refused to an operator too (the session trigger's verdict):
 * said as what the operator can do about it. Anything else goes on as it came.
 */
function refusedImpersonation(error: unknown): never {
  const verdict = refusedVerdictOf(error);
  if (verdict?.allowed === false && verdict.code === 'BANNED') throw forbidden('This user is banned: nobody signs in as them, an operator included, until the ban is lifted');
  if (verdict?.allowed === false && verdict.code === 'DEPROVISIONED') throw forbidden("This user's access was turned off by their organization's directory: nobody signs in as them");
  throw error;
}

const UnbanInput = z.object({ reason: z.string().trim().min(1).max(500).optional().meta({ description: "Why, if you say: kept in the platform's log and the user's own security events" }) }).strict();

const EventsQuery = z
  .object({
    type: z.string().regex(/^operator\.[a-z_]+$/, 'must be an operator event type, like operator.revoked_sessions').default(''),
    page: SearchQuery.shape.page,
    limit: SearchQuery.shape.limit,
  })
  .strict();

/** The page's filter, without its paging: what the CSV export takes. */
const EventsExportQuery = EventsQuery.pick({ type: true }).strict();

/** The export's columns, in order: the event as the page answers it, its data as JSON, and its sentence. */
const platformCsvColumns = ['id', 'createdAt', 'type', 'actorType', 'actorId', 'actorEmail', 'actorName', 'userId', 'userEmail', 'userName', 'entity', 'entityId', 'ipAddress', 'data', 'summary'] as const;

/** Events per statement of the export: the backend holds one batch of the file at a time. */
const platformCsvBatch = 1000;

/** A row of the platform's log as authstrap.operator_events answers it: the event, and the names of its user and its actor (read in the same statement). */
interface PlatformEventRow extends SentenceEvent {
  id: string;
  createdAt: string;
  ipAddress: string | null;
  userEmail: string | null;
  userName: string | null;
  actorEmail: string | null;
  actorName: string | null;
}

/** The row with its sentence ("Support (operator) revoked 3 sessions of jane@acme.com"), from the names the statement read. */
function withSummary<Row extends PlatformEventRow>(row: Row): Row & { summary: string } {
  const person = (email: string | null, name: string | null): Person | null => (email === null ? null : { email, name });
  const names: SentenceNames = { actorIsOperator: actedAsOperator(row) };
  if (row.actorType === 'user') names.actor = person(row.actorEmail, row.actorName);
  if (subjectUserId(row)) names.subject = row.userId ? person(row.userEmail, row.userName) : null;
  return { ...row, summary: eventSentence(row, names).sentence };
}



const OperatorMe = z.object({ userId: z.uuid(), email: z.string(), grantedAt: z.date() }).meta({ id: 'Operator' });

const OperatorUserRow = z
  .object({ id: z.uuid(), email: z.string(), name: z.string(), email_verified: z.boolean(), createdAt: z.iso.datetime(), organizations: z.int(), lastSeenAt: z.iso.datetime().nullable(), banned: z.boolean() })
  .meta({ id: 'OperatorUserRow' });
const UserBan = z
  .object({
    reason: z.string(),
    expiresAt: z.iso.datetime().nullable().meta({ description: 'When it ends by itself; null: until an operator lifts it' }),
    bannedAt: z.iso.datetime(),
    bannedBy: z.object({ id: z.uuid(), email: z.string() }).nullable().meta({ description: 'The operator who banned (null once their account is gone)' }),
  })
  .meta({ id: 'UserBan' });
const OperatorUser = z
  .object({
    id: z.uuid(),
    email: z.string(),
    name: z.string(),
    email_verified: z.boolean(),
    createdAt: z.iso.datetime(),
    operator: z.boolean(),
    ban: UserBan.nullable().meta({ description: 'The ban in force; null when the user is not banned (never, lifted, or ended)' }),
    suspensions: z
      .array(z.object({ organizationId: z.uuid(), name: z.string(), slug: z.string(), reason: z.string(), since: z.iso.datetime() }))
      .meta({ description: "Memberships the organization's directory (SCIM) suspended: the user is deprovisioned there" }),
    ssoRequiredBy: z
      .object({ organizationId: z.uuid(), name: z.string(), slug: z.string() })
      .nullable()
      .meta({ description: 'The organization whose verified domain holds their address and requires single sign-on: they sign in only through its identity provider' }),
    organizations: z.array(z.object({ id: z.uuid(), name: z.string(), slug: z.string(), role: z.enum(['owner', 'admin', 'member']), joinedAt: z.iso.datetime() })),
    sessions: z.array(
      z.object({
        id: z.uuid(),
        ipAddress: z.string().nullable(),
        userAgent: z.string().nullable(),
        createdAt: z.iso.datetime(),
        lastSeenAt: z.iso.datetime(),
        expiresAt: z.iso.datetime(),
        impersonatedBy: z.uuid().nullable().meta({ description: 'The operator signed in as the user with this session (POST /api/operator/impersonations/{sessionId}/end ends it); null for their own' }),
      }),
    ),
    signIns: z.array(
      z.object({
        type: z.enum(['session.signed_in', 'session.sign_in_failed']),
        method: z.string().nullable().meta({ description: "How they signed in ('password', 'password:break-glass', 'sso'); null for a failure" }),
        createdAt: z.iso.datetime(),
        ipAddress: z.string().nullable(),
        userAgent: z.string().nullable(),
      }),
    ),
    refusedSignIns: z
      .array(
        z.object({
          createdAt: z.iso.datetime(),
          method: z.string().meta({ description: "How they tried ('password', 'sso', 'better-auth:password', ...)" }),
          code: z.string().meta({ description: 'Why the sign-in rule refused: SSO_REQUIRED, DEPROVISIONED, BANNED, ...' }),
          organization: z
            .object({ id: z.uuid(), name: z.string().nullable(), slug: z.string().nullable() })
            .nullable()
            .meta({ description: "The organization whose policy refused, in whose audit log it is (name and slug null once it is deleted); null: the platform's (a ban)" }),
          ipAddress: z.string().nullable(),
        }),
      )
      .meta({ description: "Their last 20 sign-ins the sign-in rule refused, on either sign-in path, newest first; a deprovisioned user's attempt once for each organization that turned them off" }),
  })
  .meta({ id: 'OperatorUser' });
const OperatorEvent = z
  .object({
    id: z.uuid(),
    type: z.string(),
    userId: z.uuid().nullable(),
    userEmail: z.string().nullable(),
    userName: z.string().nullable(),
    actorType: z.string(),
    actorId: z.string().nullable(),
    actorEmail: z.string().nullable(),
    actorName: z.string().nullable(),
    entity: z.string().nullable(),
    entityId: z.string().nullable(),
    data: z.record(z.string(), z.unknown()),
    summary: z.string().meta({ description: 'What happened, in a sentence a person reads ("Support (operator) revoked 3 sessions of jane@acme.com"): plain text, never HTML' }),
    ipAddress: z.string().nullable(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'OperatorEvent' });

export function registerOperatorRoutes(registry: OpenAPIRegistry): void {
  const tags = ['operator'];
  const refused = refusedToNonOperators;
  registry.registerPath({
    method: 'get', path: '/api/operator/users', operationId: 'listOperatorUsers', tags,
    summary: "Every user of the platform, or those whose address or name contains ?search= (or whose id it is), newest first (operators only)",
    request: { query: searchParameters },
    responses: { 200: { description: 'A page of users', ...listOf(OperatorUserRow) }, ...refused },
  });
  registry.registerPath({
    method: 'get', path: '/api/operator/users/{id}', operationId: 'getOperatorUser', tags,
    summary: 'One user: their organizations and roles, sessions, last 50 sign-ins and failed ones, last 20 refused sign-ins, and their ban (operators only)',
    request: { params: z.object({ id: z.uuid() }) },
    responses: { 200: { description: 'The user', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: OperatorUser }) } } }, ...refused, 404: { description: 'NOT_FOUND: no such user' } },
  });
  registry.registerPath({
    method: 'post', path: '/api/operator/users/{id}/revoke-sessions', operationId: 'revokeUserSessions', tags,
    summary: "Sign a user out everywhere: their sessions end, their live streams within seconds (operators only; recorded as operator.revoked_sessions, with the reason)",
    description: 'With OPERATOR_RECENT_SIGN_IN_MINUTES set, the operator must have signed in within that many minutes (403 otherwise).',
    request: { params: z.object({ id: z.uuid() }), body: { content: { 'application/json': { schema: RevokeSessionsInput } } } },
    responses: {
      200: { description: 'How many sessions ended', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: z.object({ sessions: z.int() }) }) } } },
      ...refused,
      404: { description: 'NOT_FOUND: no such user' },
    },
  });
  registry.registerPath({
    method: 'post', path: '/api/operator/users/{id}/ban', operationId: 'banUser', tags,
    summary: 'Ban a user: every sign-in refused (BANNED, on both sign-in paths), their sessions and live streams ended, the machine keys they made stopped, until expiresAt or an unban (operators only; recorded as operator.banned_user)',
    description: `An operator cannot be banned (409). Banning a banned user sets the ban's new terms. ${recentSignInNote}`,
    request: { params: z.object({ id: z.uuid() }), body: { content: { 'application/json': { schema: BanInput } } } },
    responses: {
      200: { description: 'The ban, and how many sessions ended', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: z.object({ ban: UserBan, sessions: z.int() }) }) } } },
      ...refused,
      404: { description: 'NOT_FOUND: no such user' },
      409: { description: 'CONFLICT: the user is an operator' },
      422: { description: 'VALIDATION_ERROR: no reason, or an end that is not in the future' },
    },
  });
  registry.registerPath({
    method: 'post', path: '/api/operator/users/{id}/unban', operationId: 'unbanUser', tags,
    summary: "Lift a user's ban: they may sign in again and the machine keys they made work again; their sessions stay ended (operators only; recorded as operator.unbanned_user)",
    description: recentSignInNote,
    request: { params: z.object({ id: z.uuid() }), body: { required: false, content: { 'application/json': { schema: UnbanInput } } } },
    responses: {
      200: { description: 'The ban lifted', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: z.object({ lifted: UserBan }) }) } } },
      ...refused,
      404: { description: 'NOT_FOUND: no such user' },
      409: { description: 'CONFLICT: the user is not banned' },
    },
  });
  registry.registerPath({
    method: 'post', path: '/api/operator/users/{id}/impersonate', operationId: 'impersonateUser', tags,
    summary: "Sign in as a user for a bounded time (operators only; recorded as operator.impersonation_started): a session of the user, marked as the operator's, whose token the answer gives",
    description:
      `The token is a Bearer token of the user (no cookie is set: the operator's own session stays theirs). The session ends at expiresAt (never renewed), at sign-out, or when an operator ends it; every event it makes carries data.impersonatedBy, and GET /api/auth/get-session says impersonatedBy. An operator (oneself included) cannot be impersonated (409); a banned or deprovisioned user cannot (403). ${recentSignInNote}`,
    request: { params: z.object({ id: z.uuid() }), body: { content: { 'application/json': { schema: ImpersonateInput(60) } } } },
    responses: {
      200: {
        description: 'The impersonation session',
        content: {
          'application/json': {
            schema: z.object({
              success: z.literal(true),
              data: z.object({ token: z.string().meta({ description: "The session's secret: send it as Authorization: Bearer <token>" }), sessionId: z.uuid(), userId: z.uuid(), expiresAt: z.iso.datetime() }),
            }),
          },
        },
      },
      ...refused,
      404: { description: 'NOT_FOUND: no such user' },
      409: { description: 'CONFLICT: the user is an operator, or the operator themselves' },
      422: { description: 'VALIDATION_ERROR: no reason, or minutes outside 1 to OPERATOR_IMPERSONATION_MAX_MINUTES' },
    },
  });
  registry.registerPath({
    method: 'post', path: '/api/operator/impersonations/{sessionId}/end', operationId: 'endImpersonation', tags,
    summary: "End an impersonation before its bound: its token stops at once (operators only, any operator's impersonation; recorded as operator.impersonation_ended)",
    request: { params: z.object({ sessionId: z.uuid() }) },
    responses: {
      200: { description: 'Ended', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: z.object({ ended: z.literal(true), sessionId: z.uuid(), userId: z.uuid() }) }) } } },
      ...refused,
      404: { description: 'NOT_FOUND: no such impersonation (ended, expired, or a session of the user\'s own)' },
    },
  });
  registry.registerPath({
    method: 'get', path: '/api/operator/events', operationId: 'listOperatorEvents', tags,
    summary: "The platform's log: what operators did (operator.* events), newest first, each with its sentence (summary) (operators only)",
    request: { query: z.object({ type: z.string().optional().meta({ description: 'One type, like operator.revoked_sessions' }), page: z.int().min(1).optional(), limit: z.int().optional() }) },
    responses: { 200: { description: 'A page of events', ...listOf(OperatorEvent) }, ...refused },
  });
  registry.registerPath({
    method: 'get', path: '/api/operator/events/export.csv', operationId: 'exportOperatorEvents', tags,
    summary: "The platform's log as CSV: every event of the filter, newest first, streamed (operators only)",
    description:
      "All pages at once, read a batch at a time. Fields are quoted as RFC 4180 says; one that starts with =, +, -, @, a tab or a carriage return gets a leading apostrophe, so that a spreadsheet does not run it as a formula (names and addresses are what users typed). `data` is the event's JSON.",
    request: { query: z.object({ type: z.string().optional().meta({ description: 'One type, like operator.revoked_sessions' }) }) },
    responses: {
      200: { description: `The events: ${platformCsvColumns.join(', ')} (summary: the sentence the page shows)`, content: { 'text/csv': { schema: z.string() } } },
      400: { description: 'A filter the platform log does not have, or a type that is no operator event' },
      ...refused,
    },
  });
  registerOrganizationRoutes(registry);
  registerOverviewRoutes(registry);
  registerOperatorsRoutes(registry);
  registerUserActionRoutes(registry);
  registry.registerPath({
    method: 'get',
    path: '/api/operator/me',
    operationId: 'getOperator',
    tags: ['operator'],
    summary: 'The signed-in operator (403 for anyone who is not one)',
    description: "Operators run the platform, above every organization: granted with `authstrap operator grant <email>`. A session only; machine keys and the service key get 403.",
    responses: {
      200: { description: 'The operator', content: { 'application/json': { schema: z.object({ success: z.literal(true), data: OperatorMe }) } } },
      403: { description: 'FORBIDDEN: not an operator (or a machine key, or the service key)' },
    },
  });
}
