import fs from 'node:fs';
import http, { type Server } from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import type { Logger } from 'pino';
import { createApp } from './app.js';
import { appPrototypes } from './http/app-prototypes.js';
import { loadConfig, maskUrlPassword, type Config } from './config.js';
import { DatabaseUnavailableError, openDatabase, type Database } from './db/database.js';
import { EmbeddedDatabaseLockedError } from './db/embedded-lock.js';
import { startHourlyPrune } from './db/hourly.js';
import { migrate } from './db/migrate.js';
import { actAsAppRole } from './db/scope.js';
import { createRateLimits, type RateLimits } from './http/rate-limit.js';
import { serviceTransactions, type ServiceTransactions } from './http/service-transactions.js';
import { createLogger } from './logger.js';
import type { Tracing } from './observability/tracing.js';
import { mailChannel } from './mail/mail.js';
import { createOutbox, type Outbox } from './outbox/outbox.js';
import { createStreams, type Streams } from './realtime/streams.js';
import { listenForOutboxWakeUps, listenInProcess, type OutboxWakeUps } from './outbox/wake-ups.js';
import { startEventRetention } from './events/events.js';
import { sealStoredWebhookSecrets, webhookSecretSeal } from './events/webhook-secrets.js';
import { webhookChannel } from './events/webhooks.js';
import { startIdempotencyKeyPrune } from './idempotency/keys.js';
import { startIdentityPrune } from './sso/prune.js';
import { createDomainChecks, type DomainChecks } from './domains/domain-checks.js';
import { createMetadataRefresh, type MetadataRefresh } from './sso/metadata-refresh.js';
import { createSamlVerifier, type SamlVerifier } from './sso/saml-verifier.js';
import { checkScheduleOf } from './domains/domain-states.js';
import { txtLookup } from './domains/txt-lookup.js';
import { warnWithoutSearchIndexes } from './operator/search-indexes.js';

export interface RunningServer {
  url: string;
  config: Config;
  db: Database;
  server: Server;
  /** Mail waiting to be sent, and the worker that sends it. */
  outbox: Outbox;
  /** The live streams this instance holds (realtime/streams.ts). */
  streams: Streams;
  /** Drains (SHUTDOWN_DRAIN_MS: /ready 503), refuses new connections, serves what arrives on open ones with `Connection: close`, then closes the database. */
  stop(): Promise<void>;
}

/** A startup problem the user can fix: printed as one message, without a stack trace. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/**
 * Starts the backend, in the order that makes a failed start cheap and clear: configuration; the
 * port (one in use ends the start before anything else runs); the database (the embedded one is
 * locked to this process first); migrations; rate limits; then the app, and only then does it
 * listen: until it is ready, connections are refused, which a proxy answers by trying another
 * instance (a 503 from a starting instance would reach the client of a POST). `env` defaults to the
 * process environment plus the project's `.env` (variables already set win over the file).
 */
export async function startServer(options: { projectDir: string; env?: NodeJS.ProcessEnv }): Promise<RunningServer> {
  const config = loadConfig(options.env ?? loadEnvFile(options.projectDir), options.projectDir);
  const logger = createLogger(config);
  warnAboutProductionSettings(config, logger);

  await portIsFree(config);
  const { server, prototypes } = createHttpServer(config);
  const start = startSteps(server);
  const db = await openAndMigrate(config, logger, start);
  const rateLimits = await connectRateLimits(config, logger, db, start);
  // Every instance runs a worker: whichever claims a message first sends it (outbox/outbox.ts),
  // mail and webhooks alike. It starts once the server listens (startWorkers).
  const outbox = createOutbox({ db, logger, settings: config.outbox, channels: [mailChannel(config.mail, { ...config, logger }), webhookChannel(config.webhooks, { db, logger })] });
  const { metrics, tracing } = await startObservability(config, db, rateLimits, outbox, start);
  const appDb = tracing ? tracing.traced(db) : db;
  const transactions = serviceTransactions(appDb, config);
  const streams = createStreams({ db: appDb, logger, settings: config.realtime });
  // SAML responses are checked on worker threads, started at the first one (src/sso/saml-verifier.ts).
  const samlVerifier = createSamlVerifier({ threads: config.sso.samlThreads });
  const app = createApp({ config, db: appDb, logger, rateLimits, outbox, transactions, streams, samlVerifier, metrics, tracing });
  prototypes.adopt(app);
  const gate = requestGate(server, app);
  try {
    await listen(server, config);
  } catch (error) {
    // Taken since the check at the start (another process was quicker).
    return start.abort(error);
  }
  const { wakeUps, hourlyJobs, domainChecks, ssoRefresh } = await startWorkers(config, logger, db, outbox);
  const url = addressOf(server, config);
  logger.info({ url, database: db.kind }, `listening on ${url}`);

  const stop = createStop({ config, logger, server, gate, streams, samlVerifier, hourlyJobs, domainChecks, ssoRefresh, wakeUps, outbox, transactions, rateLimits, db, tracing });
  return { url, config, db, server, outbox, streams, stop };
}

/** Settings production runs with but should not: said once, at the start. */
function warnAboutProductionSettings(config: Config, logger: Logger): void {
  if (config.nodeEnv === 'production' && !config.databaseUrl) {
    logger.warn(
      `production is running on the embedded database in ${config.embeddedDbDir}: one process, no replicas, no backups. ` +
        'Set DATABASE_URL to a PostgreSQL server.',
    );
  }
  if (config.nodeEnv === 'production' && !config.mail.smtpUrl) {
    logger.warn(
      `production has no SMTP_URL: mail (address confirmations, password resets, invitations) is written to ${config.mail.folder} and never sent. ` +
        'Set SMTP_URL to your mail provider.',
    );
  }
}

/** The HTTP server, not listening yet: its timeouts, and its answer to a request Node cannot parse. */
function createHttpServer(config: Config) {
  // Requests and responses made as the app's, so Express need not change them (http/app-prototypes.ts).
  const prototypes = appPrototypes();
  const server = http.createServer({
    IncomingMessage: prototypes.IncomingMessage,
    ServerResponse: prototypes.ServerResponse,
    requestTimeout: config.requestTimeoutMs,
    headersTimeout: Math.min(config.requestTimeoutMs, 20_000),
    // How often Node looks for requests past those timeouts.
    connectionsCheckingInterval: Math.min(1000, config.requestTimeoutMs / 2),
  });
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  server.on('clientError', answerUnparsableRequest);
  return { server, prototypes };
}

/** What a start has opened so far, so that a step that fails closes it all before the start fails. */
interface StartSteps {
  /** Keeps something the start opened (returned as it is), to be closed by abort(). */
  opened<Step extends { close(): Promise<void> }>(step: Step): Step;
  /** Closes what was opened, the last first, and the server; then fails the start with `error`. */
  abort(error: unknown): Promise<never>;
}

function startSteps(server: Server): StartSteps {
  const steps: { close(): Promise<void> }[] = [];
  return {
    opened(step) {
      steps.push(step);
      return step;
    },
    async abort(error) {
      for (const step of steps.reverse()) await step.close().catch(() => {});
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw error;
    },
  };
}

/**
 * The database, ready for requests: open and answering, migrated, and acting as the role
 * row-level security applies to; its stored webhook secrets sealed.
 */
async function openAndMigrate(config: Config, logger: Logger, start: StartSteps): Promise<Database> {
  const db = await openReachableDatabase(config, logger, start);
  await migrateAndActAsApp(db, config, logger, start);
  // Webhook secrets stored in plain text by an earlier version are sealed (events/webhook-secrets.ts).
  await sealStoredWebhookSecrets(db, webhookSecretSeal(config.webhooks.authSecret), logger).catch((error) => {
    logger.warn({ err: (error as Error).message }, 'webhook secrets: could not seal the stored ones now; each is sealed at its next delivery');
  });
  await warnWithoutSearchIndexes(db, logger).catch((error) => {
    logger.warn({ err: (error as Error).message }, "operators' searches: could not check their indexes");
  });
  // Through the pool, so once requests' role is set: what their statements would see.
  if (config.databaseDirectUrl) await warnWithoutStatementTimeout(db, logger).catch((error) => start.abort(error));
  return db;
}

/** Opens the database and asks it one question; one that cannot be reached ends the start, saying which setting to check. */
async function openReachableDatabase(config: Config, logger: Logger, start: StartSteps): Promise<Database> {
  try {
    const db = start.opened(
      await openDatabase(config, {
        onOlderTimeline: (seen, newest) =>
          logger.error({ timeline: seen, newestTimeline: newest }, 'the database is a primary on an older timeline than this instance has written on (a rewound or returning old primary): its connection was ended and the request answered 503'),
        onUnconfirmedCommit: () =>
          logger.error('a commit was not confirmed by the synchronous standby within DATABASE_QUERY_TIMEOUT_MS: it is on the primary, maybe not on the standby; the request was answered 503 (check the standby: patronictl list, pg_stat_replication)'),
      }),
    );
    // On a connection of its own: the pool is first used once the migrations are applied (actAsAppRole).
    await db.withConnection((connection) => connection.query('SELECT 1'));
    return db;
  } catch (error) {
    if (error instanceof EmbeddedDatabaseLockedError) return start.abort(new StartupError(error.message));
    const [where, setting] = config.databaseUrl
      ? [maskUrlPassword(config.databaseUrl), 'DATABASE_URL']
      : [`the embedded database in ${config.embeddedDbDir}`, 'EMBEDDED_DB_DIR'];
    const reason = error instanceof DatabaseUnavailableError ? ((error.cause as Error)?.message ?? error.message) : (error as Error).message;
    // PgBouncer refuses the session settings the pool sends when it connects directly.
    const pooler = /unsupported startup parameter/.test(reason) && !config.databaseDirectUrl
      ? ' DATABASE_URL looks like a pooler (PgBouncer): set DATABASE_DIRECT_URL to PostgreSQL itself as well (docs/deploy.md).'
      : '';
    return start.abort(new StartupError(`Cannot connect to ${where}: ${reason}. Check ${setting} in .env.${pooler}`));
  }
}

/** Applies the migrations, then acts as the app's role; a failure of either ends the start. */
async function migrateAndActAsApp(db: Database, config: Config, logger: Logger, start: StartSteps): Promise<void> {
  try {
    const report = await migrate(db, path.join(config.projectDir, 'migrations'));
    if (report.applied.length > 0) logger.info({ applied: report.applied }, 'migrations applied');
    // From here on, requests act as the role row-level security applies to (db/scope.ts).
    await actAsAppRole(db);
  } catch (error) {
    if (error instanceof DatabaseUnavailableError && config.databaseDirectUrl) {
      const reason = (error.cause as Error)?.message ?? error.message;
      return start.abort(new StartupError(`Cannot connect to ${maskUrlPassword(config.databaseDirectUrl)} (the migrations' connection): ${reason}. Check DATABASE_DIRECT_URL in .env.`));
    }
    return start.abort(new StartupError((error as Error).message));
  }
}

/** The rate limits, in Redis when REDIS_URL is set; a Redis that cannot be reached ends the start. */
async function connectRateLimits(config: Config, logger: Logger, db: Database, start: StartSteps): Promise<RateLimits> {
  try {
    return start.opened(await createRateLimits(config, logger, db));
  } catch (error) {
    return start.abort(new StartupError(`Cannot connect to Redis at ${maskUrlPassword(config.redisUrl ?? '')}: ${(error as Error).message}. Check REDIS_URL in .env.`));
  }
}

/** Metrics and traces, when the settings ask for them (observability/). */
async function startObservability(config: Config, db: Database, rateLimits: RateLimits, outbox: Outbox, start: StartSteps) {
  // Loaded only when asked for: without METRICS_TOKEN, prom-client is never imported, and without
  // the OTEL_* variables, nothing of OpenTelemetry.
  const metrics = config.metricsToken
    ? (await import('./observability/metrics.js')).createMetrics({ token: config.metricsToken, db, rateLimits, outbox })
    : undefined;
  const tracing = config.tracing
    ? await (await import('./observability/tracing.js')).startTracing(config.tracing, { projectDir: config.projectDir, databaseUrl: config.databaseUrl })
    : undefined;
  if (tracing) start.opened({ close: () => tracing.shutdown() });
  return { metrics, tracing };
}

/** Once the server listens: the outbox's worker, what wakes it, the hourly jobs (events past their retention, idempotency keys and single sign-on's expired rows deleted; the operators' past days counted), the domains' checks and the single sign-on connections' daily refresh. */
async function startWorkers(config: Config, logger: Logger, db: Database, outbox: Outbox) {
  outbox.start();
  // Deliveries written by SQL (the events' webhooks) wake the worker at their commit, on every
  // instance; the embedded database's in this process, which is its only one.
  const wakeUps = config.databaseUrl
    ? listenForOutboxWakeUps({ url: config.databaseDirectUrl ?? config.databaseUrl, logger, wake: () => outbox.wake() })
    : await listenInProcess(db, () => outbox.wake());
  const hourlyJobs = [
    startEventRetention({ db, logger, retentionDays: config.events.retentionDays }),
    startIdempotencyKeyPrune({ db, logger }),
    startIdentityPrune({ db, logger }),
    // The operators' overview reads a year of days: each past day counted once, ahead of the first overview (src/operator/overview.ts).
    startHourlyPrune({ db, logger, statement: 'SELECT authstrap.count_activity_days(366) AS "pruned"', what: "the platform's past days (the operators' overview)", done: 'counted', verb: 'count' }),
  ];
  // Verified domains are checked again on a schedule (src/domains/), by whichever instance claims each first.
  const domainChecks = createDomainChecks({ db, logger, lookup: txtLookup(config.domains), schedule: checkScheduleOf(config.domains), pollMs: config.domains.checkPollMs });
  domainChecks.start();
  // Each SSO connection's IdP metadata and certificates are read again daily (src/sso/metadata-refresh.ts), by whichever instance claims it first.
  const ssoRefresh = createMetadataRefresh({
    db,
    logger,
    settings: { intervalHours: config.sso.refreshIntervalHours, pollMs: config.sso.refreshPollMs, allowPrivateAddresses: config.sso.allowPrivateAddresses },
  });
  ssoRefresh.start();
  return { wakeUps, hourlyJobs, domainChecks, ssoRefresh };
}

/** The URL the server answers on: localhost when it listens on every address. */
function addressOf(server: Server, config: Config): string {
  const { port } = server.address() as AddressInfo;
  return `http://${config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host}:${port}`;
}

/** What stop() acts on. */
interface RunningParts {
  config: Config;
  logger: Logger;
  server: Server;
  gate: RequestGate;
  streams: Streams;
  samlVerifier: SamlVerifier;
  hourlyJobs: { stop(): void }[];
  domainChecks: DomainChecks;
  ssoRefresh: MetadataRefresh;
  wakeUps: OutboxWakeUps | undefined;
  outbox: Outbox;
  transactions: ServiceTransactions;
  rateLimits: RateLimits;
  db: Database;
  tracing: Tracing | undefined;
}

/** RunningServer.stop: its steps run once, however often it is called. */
function createStop({ config, logger, server, gate, streams, samlVerifier, hourlyJobs, domainChecks, ssoRefresh, wakeUps, outbox, transactions, rateLimits, db, tracing }: RunningParts): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () =>
    (stopping ??= (async () => {
      if (config.shutdownDrainMs > 0) {
        // First not ready, still serving: a proxy or load balancer polling /ready sends its
        // requests elsewhere before this instance stops taking them.
        gate.drain();
        logger.info({ drainMs: config.shutdownDrainMs }, 'draining: /ready answers 503, requests are still served');
        await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
      }
      // New connections are refused from now on (a proxy tries another instance, even for a POST).
      const closed = stopListening(server);
      // What arrives on a connection already open is served, with `Connection: close`, as are the
      // answers in flight: refusing it with a 503 would fail a proxy's POST, which it cannot retry.
      gate.close();
      logger.info('shutting down: finishing the requests in flight, refusing new connections');
      // Live streams never finish on their own: each ends with `retry:`, and its client resumes
      // on another instance with its Last-Event-ID.
      await streams.close();
      // Closing an idle kept-alive connection races with a proxy sending its next request on it
      // (nginx answers that request 502). After a drain, a proxy that reuses one gets it served
      // and closed, and a proxy that tried a new one was refused and has stopped sending here; so
      // the idle ones left after a moment are closed then. Without a drain, at once.
      const idleGrace = setTimeout(() => server.closeIdleConnections(), config.shutdownDrainMs > 0 ? idleGraceMs : 0);
      const deadline = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      deadline.unref();
      await closed;
      clearTimeout(idleGrace);
      clearTimeout(deadline);
      // No request is left to need them.
      await samlVerifier.close();
      // Deliveries in hand finish (each is bounded); what is left waits in the table for the next instance.
      for (const job of hourlyJobs) job.stop();
      await domainChecks.stop();
      await ssoRefresh.stop();
      await wakeUps?.close();
      await outbox.stop();
      await transactions.close();
      await rateLimits.close();
      await db.close();
      await tracing?.shutdown();
    })());
}

/**
 * Through a pooler the backend cannot ask for a statement timeout per connection: PostgreSQL's own
 * setting for the role or database applies. Without one a runaway statement holds a server
 * connection until it ends (the read deadline frees the backend, not the server).
 */
async function warnWithoutStatementTimeout(db: Database, logger: Logger): Promise<void> {
  const { rows } = await db.query<{ statement_timeout: string }>('SHOW statement_timeout');
  if (rows[0]?.statement_timeout === '0') {
    logger.warn(
      'DATABASE_URL goes through a pooler, and PostgreSQL has no statement_timeout for this role or database: ' +
        "set one there (ALTER ROLE <user> SET statement_timeout = '5s'; docs/deploy.md).",
    );
  }
}

/** After a drain, how long idle kept-alive connections stay open once new ones are refused (see stop()). */
const idleGraceMs = 1000;

/**
 * Stops accepting connections and resolves once every open one has closed. Node's own
 * `server.close()` also closes idle kept-alive connections at once, which is what stop() must
 * not do yet; `net.Server`'s close leaves them, and so does not stop Node's timer for request
 * timeouts, which is cleared once the connections are gone.
 */
function stopListening(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    net.Server.prototype.close.call(server, () => {
      // The listener is closed already: this only clears that timer (and reports "not running").
      server.close(() => resolve());
    });
  });
}

/** Fails the start at once, naming the port, when another process listens on it (checked before the database is opened). */
async function portIsFree(config: Config): Promise<void> {
  if (config.port === 0) return;
  const probe = net.createServer();
  await listen(probe, config);
  await new Promise((resolve) => probe.close(resolve));
}

/** Binds the port, or explains in one line why it cannot. */
function listen(server: net.Server, config: Config): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const where = `${config.host}:${config.port}`;
      if (error.code === 'EADDRINUSE') reject(new StartupError(`Port ${config.port} is already in use (${where}). Stop the other process or set PORT in .env.`));
      else if (error.code === 'EACCES') reject(new StartupError(`Port ${config.port} needs privileges this user does not have. Set PORT in .env to 1024 or above.`));
      else if (error.code === 'EADDRNOTAVAIL') reject(new StartupError(`Cannot listen on ${config.host}: no such address on this machine. Check HOST in .env.`));
      else reject(error);
    });
    server.listen(config.port, config.host, () => resolve());
  });
}

/**
 * A request Node's HTTP parser refused (a malformed request line or header, both Content-Length
 * and Transfer-Encoding, headers over the size limit) or that did not arrive in REQUEST_TIMEOUT_MS
 * never reaches the app, or never completes; it still gets the error envelope, and the connection
 * is closed.
 */
function answerUnparsableRequest(error: NodeJS.ErrnoException, socket: Duplex): void {
  // As Node itself does: answer unless part of an answer is already on this connection.
  const inFlight = (socket as Connection)._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'REQUEST_HEADER_FIELDS_TOO_LARGE', 'The request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'REQUEST_TIMEOUT', 'The request took too long to arrive']
        : [400, 'BAD_REQUEST', 'The request is not valid HTTP'];
  const body = JSON.stringify({ success: false, error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** A connection, with the answer Node is writing on it (Node's own field; none between requests). */
type Connection = Duplex & { _httpMessage?: http.ServerResponse | null };

type RequestGate = ReturnType<typeof requestGate>;

/**
 * What stands before the app. While draining (after SIGTERM, before stopping), /ready answers 503;
 * once stopping, every answer carries `Connection: close`, so each open connection serves at most
 * one more request and closes.
 *
 * Stopping also closes the connections of the answers in flight, once each is sent. They are found
 * through the open connections, not by keeping every response in a set: a set that each request
 * enters and leaves kept whole requests alive past V8's young-generation collections, which then
 * spent a large part of each request's CPU time copying them (bench/README.md, "Requests born
 * with the app's prototypes").
 */
function requestGate(server: http.Server, app: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  let closed = false;
  let draining = false;
  const connections = new Set<Socket>();

  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (closed) res.setHeader('connection', 'close');
    if (draining && (req.url === '/ready' || req.url?.startsWith('/ready?'))) {
      res.statusCode = 503;
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.setHeader('retry-after', '1');
      res.end(JSON.stringify({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'The server is shutting down; send requests elsewhere' } }));
      return;
    }
    app(req, res);
  });

  return {
    /** /ready answers 503 from now on; every other request is still the app's. */
    drain() {
      draining = true;
    },
    close() {
      closed = true;
      for (const socket of connections) {
        const res = (socket as Connection)._httpMessage;
        if (!res) continue;
        if (!res.headersSent) res.setHeader('connection', 'close');
        // An answer already on its way keeps its headers; its connection is ended once it is done.
        else res.once('finish', () => socket.end());
      }
    },
  };
}

function loadEnvFile(projectDir: string): NodeJS.ProcessEnv {
  const envFile = path.join(projectDir, '.env');
  if (fs.existsSync(envFile)) process.loadEnvFile(envFile);
  return process.env;
}
