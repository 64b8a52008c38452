import fs from 'node:fs';
import http, { type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { createApp } from './app.js';
import { appPrototypes } from './http/app-prototypes.js';
import { loadConfig, maskUrlPassword, type Config } from './config.js';
import { DatabaseUnavailableError, openDatabase, type Database } from './db/database.js';
import { EmbeddedDatabaseLockedError } from './db/embedded-lock.js';
import { migrate } from './db/migrate.js';
import { actAsAppRole } from './db/scope.js';
import { createRateLimits, type RateLimits } from './http/rate-limit.js';
import { serviceTransactions } from './http/service-transactions.js';
import { createLogger } from './logger.js';
import { mailChannel } from './mail/mail.js';
import { createOutbox, type Outbox } from './outbox/outbox.js';

export interface RunningServer {
  url: string;
  config: Config;
  db: Database;
  server: Server;
  /** Mail waiting to be sent, and the worker that sends it. */
  outbox: Outbox;
  /** Drains (SHUTDOWN_DRAIN_MS: /ready 503), stops taking requests, lets in-flight ones finish, then closes the database. */
  stop(): Promise<void>;
}

/** A startup problem the user can fix: printed as one message, without a stack trace. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/**
 * Starts the backend, in the order that makes a failed start cheap and clear: configuration; the
 * port (one in use ends the start before anything else runs); the database (the embedded one is
 * locked to this process first); migrations; rate limits; then the app takes the requests. Until
 * then, and once stopping, requests get a 503. `env` defaults to the process environment plus the
 * project's `.env` (variables already set win over the file).
 */
export async function startServer(options: { projectDir: string; env?: NodeJS.ProcessEnv }): Promise<RunningServer> {
  const { projectDir } = options;
  const env = options.env ?? loadEnvFile(projectDir);
  const config = loadConfig(env, projectDir);
  const logger = createLogger(config);
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
  const gate = requestGate(server);
  server.on('clientError', answerUnparsableRequest);
  await listen(server, config);

  const steps: { close(): Promise<void> }[] = [];
  const abort = async (error: unknown): Promise<never> => {
    for (const step of steps.reverse()) await step.close().catch(() => {});
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw error;
  };

  let db: Database;
  try {
    db = await openDatabase(config);
    steps.push(db);
    // On a connection of its own: the pool is first used once the migrations are applied (actAsAppRole).
    await db.withConnection((connection) => connection.query('SELECT 1'));
  } catch (error) {
    if (error instanceof EmbeddedDatabaseLockedError) return abort(new StartupError(error.message));
    const [where, setting] = config.databaseUrl
      ? [maskUrlPassword(config.databaseUrl), 'DATABASE_URL']
      : [`the embedded database in ${config.embeddedDbDir}`, 'EMBEDDED_DB_DIR'];
    const reason = error instanceof DatabaseUnavailableError ? ((error.cause as Error)?.message ?? error.message) : (error as Error).message;
    return abort(new StartupError(`Cannot connect to ${where}: ${reason}. Check ${setting} in .env.`));
  }

  try {
    const report = await migrate(db, path.join(projectDir, 'migrations'));
    if (report.applied.length > 0) logger.info({ applied: report.applied }, 'migrations applied');
    // From here on, requests act as the role row-level security applies to (db/scope.ts).
    await actAsAppRole(db);
  } catch (error) {
    return abort(new StartupError((error as Error).message));
  }

  let rateLimits: RateLimits;
  try {
    rateLimits = await createRateLimits(config, logger);
    steps.push(rateLimits);
  } catch (error) {
    return abort(new StartupError(`Cannot connect to Redis at ${maskUrlPassword(config.redisUrl ?? '')}: ${(error as Error).message}. Check REDIS_URL in .env.`));
  }

  // Every instance runs a worker: whichever claims a message first sends it (outbox/outbox.ts).
  const outbox = createOutbox({ db, logger, settings: config.outbox, channels: [mailChannel(config.mail, { ...config, logger })] });
  const transactions = serviceTransactions(db, config);
  const app = createApp({ config, db, logger, rateLimits, outbox, transactions });
  prototypes.adopt(app);
  gate.open(app);
  outbox.start();
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host}:${port}`;
  logger.info({ url, database: db.kind }, `listening on ${url}`);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (config.shutdownDrainMs > 0) {
        // First not ready, still serving: a proxy or load balancer polling /ready sends its
        // requests elsewhere before this instance stops taking them.
        gate.drain();
        logger.info({ drainMs: config.shutdownDrainMs }, 'draining: /ready answers 503, requests are still served');
        await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // From now on nothing new is served: requests on kept-alive connections get a 503 with
      // `Connection: close`, answers in flight are sent with it, idle connections are closed.
      gate.close();
      logger.info('shutting down: finishing the requests in flight, refusing new ones');
      server.closeIdleConnections();
      const deadline = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      deadline.unref();
      await closed;
      clearTimeout(deadline);
      // Deliveries in hand finish (each is bounded); what is left waits in the table for the next instance.
      await outbox.stop();
      await transactions.close();
      await rateLimits.close();
      await db.close();
    })());

  return { url, config, db, server, outbox, stop };
}

/** Binds the port, or explains in one line why it cannot. */
function listen(server: http.Server, config: Config): Promise<void> {
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

/**
 * What stands before the app: while starting and once stopping, every request gets a 503 (and,
 * when stopping, `Connection: close`, so keep-alive clients go elsewhere); in between, the app.
 * While draining (after SIGTERM, before stopping), only /ready gets the 503.
 *
 * Stopping also closes the connections of the answers in flight, once each is sent. They are found
 * through the open connections, not by keeping every response in a set: a set that each request
 * enters and leaves kept whole requests alive past V8's young-generation collections, which then
 * spent a large part of each request's CPU time copying them (bench/README.md, "Requests born
 * with the app's prototypes").
 */
function requestGate(server: http.Server) {
  let app: ((req: http.IncomingMessage, res: http.ServerResponse) => void) | undefined;
  let closed = false;
  let draining = false;
  const connections = new Set<Socket>();

  const unavailable = (res: http.ServerResponse, message: string) => {
    res.statusCode = 503;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('retry-after', '1');
    if (closed) res.setHeader('connection', 'close');
    res.end(JSON.stringify({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message } }));
  };

  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (closed) return unavailable(res, 'The server is shutting down; try again');
    if (!app) return unavailable(res, 'The server is starting; try again in a moment');
    if (draining && (req.url === '/ready' || req.url?.startsWith('/ready?'))) return unavailable(res, 'The server is shutting down; send requests elsewhere');
    app(req, res);
  });

  return {
    open(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
      app = handler;
    },
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
