import fs from 'node:fs';
import path from 'node:path';
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { authRouter, registerAuthRoutes } from './auth/auth.router.js';
import { refusalOfDatabaseError } from './auth/sign-in-policy.js';
import { createAuthService } from './extensions/auth/auth.service.js';
import { checkScheduleOf } from './domains/domain-states.js';
import { domainsRouter } from './domains/domains.router.js';
import { registerDomainRoutes } from './domains/openapi.js';
import { txtLookup } from './domains/txt-lookup.js';
import { eventContext } from './events/events.js';
import { auditEventsRouter } from './events/events.router.js';
import { registerEventRoutes } from './events/openapi.js';
import { webhooksRouter } from './events/webhooks.router.js';
import { extensionRouter } from './extensions/index.js';
import { withHeldTransactions } from './idempotency/held-transaction.js';
import { generatedRouter } from './generated/index.js';
import { buildOpenApiDocument } from './generated/openapi.js';
import { corsPolicy, csrfGuard } from './http/cors.js';
import { sendData, sendError } from './http/envelope.js';
import { errorHandler, unknownRoute } from './http/errors.js';
import { jsonBody } from './http/json-body.js';
import type { RateLimits } from './http/rate-limit.js';
import { routeTemplates } from './http/route-template.js';
import { registerTransactionRoutes, type ServiceTransactions } from './http/service-transactions.js';
import { requestLogger } from './logger.js';
import type { Metrics } from './observability/metrics.js';
import type { Tracing } from './observability/tracing.js';
import { createMailer } from './mail/mail.js';
import { operatorRouter, registerOperatorRoutes } from './operator/operator.router.js';
import type { Outbox } from './outbox/outbox.js';
import { registerRealtimeRoutes } from './realtime/openapi.js';
import { realtimeRouter } from './realtime/realtime.router.js';
import type { Streams } from './realtime/streams.js';
import type { SamlVerifier } from './sso/saml-verifier.js';
import { securityHeaders } from './http/security-headers.js';
import { waitingCallers } from './http/waiting-callers.js';
import { scimDirectoriesRouter } from './scim/directories.router.js';
import { registerScimRoutes } from './scim/openapi.js';
import { scimRouter } from './scim/scim.router.js';
import { ssoConnectionsRouter } from './sso/connections.router.js';
import { registerSsoRoutes } from './sso/openapi.js';
import { ssoPolicyRouter } from './sso/policy.router.js';
import { samlRouter } from './sso/saml.router.js';
import { ssoSignInRouter } from './sso/sign-in.router.js';
import { docsRouter, registerProbeAndDocsRoutes } from './openapi/docs.js';

export interface AppDependencies {
  config: Config;
  db: Database;
  logger: Logger;
  rateLimits: RateLimits;
  /** Where mail waits to be sent (outbox/outbox.ts); server.ts runs its worker. */
  outbox: Outbox;
  /** The trusted server's transactions over HTTP; server.ts rolls back what is open when it stops. */
  transactions: ServiceTransactions;
  /** The live streams this instance holds (realtime/streams.ts); server.ts ends them when it stops. */
  streams: Streams;
  /** The worker threads that check SAML responses at the ACS (sso/saml-verifier.ts); server.ts ends them when it stops. */
  samlVerifier: SamlVerifier;
  /** Prometheus metrics, when METRICS_TOKEN is set (observability/metrics.ts). */
  metrics?: Metrics;
  /** OpenTelemetry traces, when the OTEL_* variables ask for them (observability/tracing.ts); `db` then makes spans too. */
  tracing?: Tracing;
}

/**
 * The whole HTTP pipeline, in the order a request meets it:
 * request id + log (and metrics) -> the request's span (traces on) -> security headers -> CORS ->
 * health -> metrics -> SCIM (src/scim: its own token, limits and errors) -> the count of callers waiting (http/waiting-callers.ts) -> rate limits -> docs -> CSRF -> JSON body -> /api/auth -> /api/operator (the
 * platform's operators: src/operator) -> the audit log and
 * the webhook endpoints (src/events) -> verified domains (src/domains) -> single sign-on's connections and policy (src/sso) -> the SCIM directories (src/scim) -> live streams (src/realtime) -> your routes (src/extensions) -> generated routes, each
 * behind the auth guard (who is calling) and, when tenant-scoped, the scope guard (which
 * organization, which role) -> 404 -> error envelope.
 */
export function createApp({ config, db: database, logger, rateLimits, outbox, transactions, streams, samlVerifier, metrics, tracing }: AppDependencies): Express {
  // A write sent with an Idempotency-Key to a route whose handler calls the database through
  // services runs in the transaction its key holds (idempotency/held-transaction.ts).
  const db = withHeldTransactions(database);
  const auth = createAuthService({ db, config, mailer: createMailer({ outbox, settings: config.mail }), machineKeyLimit: rateLimits.machineKeys });
  // The account flows' mail requests are sent by the outbox's worker (auth/account-flows.ts).
  outbox.register(auth.accountMailChannel);
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);

  // No ETag: hashing every response body costs more than the rare conditional request saves.
  app.set('etag', false);

  app.use(requestLogger(logger, metrics));
  if (tracing) app.use(tracing.requests);
  app.use(
    securityHeaders({
      contentSecurityPolicy: {
        // Everything the docs page needs is served from here; nothing is loaded from elsewhere.
        directives: { 'upgrade-insecure-requests': config.nodeEnv === 'production' ? [] : null },
      },
      // Telling browsers to insist on HTTPS only makes sense where HTTPS is served.
      strictTransportSecurity: config.nodeEnv === 'production',
    }),
  );

  app.use(corsPolicy(config));

  app.get('/health', (_req, res) => sendData(res, { status: 'ok' }));
  // Ready means writable: a node in recovery (a standby, or a primary being demoted) answers
  // reads but refuses every write, so an instance behind a stale address is not ready either.
  app.get('/ready', async (_req, res) => {
    let standby: boolean;
    try {
      const { rows } = await db.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS "standby"');
      standby = rows[0]?.standby === true;
    } catch {
      res.setHeader('Retry-After', '1');
      return sendError(res, 503, 'SERVICE_UNAVAILABLE', 'The database is not reachable');
    }
    if (standby) {
      res.setHeader('Retry-After', '1');
      return sendError(res, 503, 'SERVICE_UNAVAILABLE', 'The database is a standby (in recovery): it takes no writes');
    }
    sendData(res, { status: 'ready', database: db.kind });
  });
  // For Prometheus, with its own token; not rate limited, like the probes.
  if (metrics) app.get('/metrics', metrics.endpoint);
  // SCIM (src/scim): an identity provider with its directory's token, counted per directory, with
  // its own body limit and SCIM's media type and errors; before the per-IP limits, which a sync
  // from one address would exhaust for everyone behind it.
  // A sync yields while anyone else waits for an answer (http/waiting-callers.ts): every request
  // that gets past the SCIM router is counted until the head of its answer is written.
  const waiting = waitingCallers();
  app.use('/scim/v2', scimRouter({ db, config, logger, invitations: auth.invitations, othersWaiting: () => waiting.anyone() }));
  app.use(waiting.count);
  // Three budgets: sign-up/sign-in (strict), the rest of /api, and the data routes with the docs
  // page (generous, per session). The service key's requests are counted by none of them.
  app.use('/api/auth/sso', rateLimits.sso);
  app.use('/api/auth', rateLimits.auth);
  app.use('/api', rateLimits.api);
  app.use(rateLimits.data);

  const { name, version, license } = JSON.parse(fs.readFileSync(path.join(config.projectDir, 'package.json'), 'utf8'));
  const document = buildOpenApiDocument({ title: `${name} API`, version, serverUrl: config.authUrl, license }, (registry) => {
    registerProbeAndDocsRoutes(registry);
    registerAuthRoutes(registry);
    registerTransactionRoutes(registry);
    registerEventRoutes(registry);
    registerRealtimeRoutes(registry);
    registerOperatorRoutes(registry);
    registerScimRoutes(registry);
    registerDomainRoutes(registry);
    registerSsoRoutes(registry);
  });
  app.use('/api/docs', docsRouter(document));

  // SAML's ACS is posted by the IdP's page (another origin): before the CSRF guard, with its own
  // urlencoded body limit; the RelayState and the binding cookie tie it to the browser that started.
  app.use('/api/auth/sso', eventContext(), samlRouter({ db, config, samlVerifier }));
  app.use(csrfGuard(config));
  app.use(jsonBody(config.bodyLimit));
  // Single sign-on's public routes (src/sso): before /api/auth's, which refuses machine keys the same way.
  app.use('/api/auth/sso', eventContext(), ssoSignInRouter({ db, config }));
  app.use('/api/auth', eventContext(), authRouter({ auth, config, db }));
  app.use('/api/operator', operatorRouter({ config, db, auth }));
  app.use('/api/service/transactions', transactions.router());
  app.use('/audit-events', ...auditEventsRouter({ config, db, auth }));
  app.use('/webhook-endpoints', ...webhooksRouter({ config, db, auth, outbox, settings: config.webhooks }));
  app.use('/scim-directories', ...scimDirectoriesRouter({ config, db, auth }));
  app.use('/domains', ...domainsRouter({ config, db, auth, lookup: txtLookup(config.domains), schedule: checkScheduleOf(config.domains) }));
  app.use('/sso-connections', ...ssoConnectionsRouter({ config, db, auth }));
  app.use('/sso-policy', ...ssoPolicyRouter({ config, db, auth }));
  app.use('/realtime', realtimeRouter({ config, db, auth, streams }));
  app.use(extensionRouter({ config, db, auth }));
  app.use(generatedRouter({ db, auth, config, transactions }));

  app.use(unknownRoute);
  app.use(errorHandler({ databaseWaitMs: config.databaseTimeouts.connectMs, signInRefusal: (detail) => refusalOfDatabaseError(detail, config.mail.appUrl) }));
  if (metrics || tracing) {
    const routeOf = routeTemplates(app);
    if (metrics) metrics.routeOf = routeOf;
    if (tracing) tracing.routeOf = routeOf;
  }
  return app;
}
