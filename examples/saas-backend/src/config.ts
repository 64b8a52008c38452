import net from 'node:net';
import { availableParallelism } from 'node:os';
import { z } from 'zod';

/** The backend's settings, read from the environment (and `.env`) and checked once at startup. */
export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  host: string;
  port: number;
  /** A PostgreSQL URL; when absent the embedded database is used. */
  databaseUrl?: string;
  /**
   * PostgreSQL itself, when DATABASE_URL goes through a pooler in transaction mode (PgBouncer):
   * migrations take their session-level advisory lock on it, and the pooled connections then
   * send no session settings (a pooler refuses them, and could not keep them).
   */
  databaseDirectUrl?: string;
  /** Where the embedded database keeps its files (relative to the project), or `memory://`. */
  embeddedDbDir: string;
  authSecret?: string;
  authUrl: string;
  allowedOrigins: string[];
  logLevel: string;
  bodyLimit: string;
  trustProxy: number;
  shutdownTimeoutMs: number;
  /**
   * After SIGTERM, how long the server keeps serving while /ready answers 503, so that a load
   * balancer or proxy stops sending it requests before it stops taking them (a rolling restart).
   */
  shutdownDrainMs: number;
  /** How long a client may take to send a whole request (headers and body) before it gets a 408. */
  requestTimeoutMs: number;
  /**
   * How long a kept-alive connection may stay idle before the server closes it: longer than the
   * proxy's own idle timeout, so that the proxy closes it first and never sends a request on a
   * connection the server is closing.
   */
  keepAliveTimeoutMs: number;
  projectDir: string;
  /** A trusted server authenticates with `Authorization: Bearer <serviceApiKey>`. */
  serviceApiKey?: string;
  /** Prometheus scrapes GET /metrics with `Authorization: Bearer <metricsToken>`; without one there are no metrics. */
  metricsToken?: string;
  /**
   * OpenTelemetry traces, when the standard OTEL_* variables ask for them (an exporter, or an OTLP
   * endpoint); undefined otherwise. The exporter reads its endpoint, headers and timeout from them itself.
   */
  tracing?: TracingSettings;
  bcryptCost: number;
  /** Shared rate-limit counts for several instances. */
  redisUrl?: string;
  /**
   * `prefix` (RATE_LIMIT_PREFIX) starts the counts' keys in Redis (`<prefix>auth:`, `<prefix>api:`).
   * Instances that should count together share it; other apps (or test runs) on the same Redis
   * each use their own.
   */
  rateLimits: {
    apiMax: number;
    apiWindowMs: number;
    authMax: number;
    authWindowMs: number;
    /** Single sign-on's start and callbacks (/api/auth/sso), per IP. */
    ssoMax: number;
    ssoWindowMs: number;
    /** The generated data routes (outside /api), per session or, anonymous, per IP. */
    dataMax: number;
    dataWindowMs: number;
    prefix: string;
    /** How long a count may wait for Redis before the request is let through uncounted. */
    redisTimeoutMs: number;
    /** How often each instance writes its machine keys' last use and count to their rows (http/machine-key-limit.ts). */
    machineKeyUsageFlushMs: number;
  };
  /** Bounds on every wait for PostgreSQL: a stalled server gives 503s, never hung requests. */
  databaseTimeouts: { connectMs: number; queryMs: number };
  /** Statements are prepared once per connection and then run by name (off by default behind a pooler, which may not keep them). */
  databasePreparedStatements: boolean;
  mail: MailSettings;
  /** An unverified address may not sign in (the default in production); sign-in sends a fresh link instead. */
  requireEmailVerification: boolean;
  /** Limits on invitations, so that an organization cannot be used to send mail to anyone in bulk. */
  invitations: { pendingMax: number; perInviterPerHour: number };
  /** The outbox's workers (src/outbox/outbox.ts): how often they look, and how they retry. */
  outbox: { pollMs: number; retryMs: number; maxAttempts: number };
  /**
   * The trusted server's transactions over HTTP (http/service-transactions.ts): each is rolled back
   * `timeoutMs` after it began or `idleMs` after its last request; at most `maxOpen` per key, a
   * begin waiting up to `waitMs` for a place.
   */
  serviceTransactions: { timeoutMs: number; idleMs: number; maxOpen: number; waitMs: number };
  /** The event log (src/events/events.ts): how many days an event is kept. */
  events: { retentionDays: number };
  /** Idempotency-Key (src/idempotency/): how long a write's answer is kept for its repeats. */
  idempotency: { keyHours: number };
  /** SCIM (src/scim/): its body limit, and each directory's share of an instance (requests a minute, in flight). */
  scim: { bodyLimit: string; rateLimitMax: number; maxConcurrentPerDirectory: number; maxConcurrentWhileBusy: number; rateWhileBusy: number };
  /**
   * Operators (src/operator/): a destructive action needs a sign-in this recent (minutes; undefined:
   * any session); an impersonation lasts at most `impersonationMaxMinutes`.
   */
  operators: { recentSignInMinutes?: number; impersonationMaxMinutes: number };
  webhooks: WebhookSettings;
  realtime: RealtimeSettings;
  domains: DomainSettings;
  sso: SsoSettings;
}

/** Single sign-on (src/sso/). */
export interface SsoSettings {
  /** SSO_ALLOW_PRIVATE_ADDRESSES: identity providers on loopback or private addresses, and over http:// (development and tests only). */
  allowPrivateAddresses: boolean;
  /** How far the identity provider's clock may be from ours (ID token `iat`/`exp`, SAML `NotBefore`/`NotOnOrAfter`), in seconds. */
  clockSkewSeconds: number;
  /** SSO_APP_REDIRECTS: where an app (`client=app`) may be sent back with its one-time code: custom schemes, loopback URLs. */
  appRedirects: string[];
  /** SSO_REFRESH_INTERVAL_HOURS: how often each connection's IdP metadata is read again (src/sso/metadata-refresh.ts). */
  refreshIntervalHours: number;
  /** SSO_REFRESH_POLL_MS: how often an instance looks for connections due a refresh; 0 never. */
  refreshPollMs: number;
  /** SSO_SAML_THREADS: at most this many worker threads check SAML responses at the ACS (src/sso/saml-verifier.ts); by default one fewer than the cores, at least one. */
  samlThreads: number;
}

/** Verified domains (src/domains/): where their DNS TXT records are asked for, and how often. */
export interface DomainSettings {
  /** DNS_SERVERS: the resolvers asked, each `ip` or `ip:port` (`[ipv6]:port`); empty: the system's own. */
  dnsServers: string[];
  /** One DNS query's timeout; a query is tried twice. A timeout is no finding: the domain keeps its state. */
  dnsTimeoutMs: number;
  /** How often a verified domain is checked again (hours). */
  checkIntervalHours: number;
  /** How long a verified domain whose record is gone still counts (`failing`) before it lapses (days). */
  failingGraceDays: number;
  /** How often this instance looks for domains due a check; 0: never (another instance checks them). */
  checkPollMs: number;
}

/** Live change streams (GET /realtime, src/realtime/). */
export interface RealtimeSettings {
  /** How often each instance looks for committed events while it holds a stream. */
  pollMs: number;
  /** A comment line on every idle stream this often, so that proxies keep it open. */
  heartbeatMs: number;
  /** How often every stream's session or machine key and membership are checked again. */
  recheckMs: number;
  /** Streams one user (or machine key) may hold on one instance, and one organization. */
  perUser: number;
  perOrganization: number;
  /** Bytes a stream may have waiting for its client; past them it falls behind (and catches up from the table once read). */
  bufferBytes: number;
  /** How long a stream may stay behind before it is ended (its client can resume). */
  drainMs: number;
}

/** Webhook deliveries (src/events/webhooks.ts). */
export interface WebhookSettings {
  /** One delivery attempt, connection to last byte. */
  timeoutMs: number;
  /** The first retry's delay; each one after doubles it (at most an hour), with jitter. */
  retryMs: number;
  /** Attempts before a delivery is marked failed. */
  maxAttempts: number;
  /** Deliveries to one endpoint that failed for good in a row before it is disabled (and its owners mailed). */
  disableAfter: number;
  /** Development only: http:// URLs and loopback, private and link-local addresses are allowed. */
  allowPrivate: boolean;
  /** AUTH_SECRET, which the endpoints' signing secrets are sealed under (events/webhook-secrets.ts). */
  authSecret?: string;
}

export interface TracingSettings {
  exporters: ('otlp' | 'console')[];
  /** OTLP over HTTP, as protobuf (the standard's default) or JSON. */
  protocol: 'http/protobuf' | 'http/json';
}

export interface MailSettings {
  /** `smtp://user:password@host:587` or `smtps://...:465`; without it, mail goes to `folder`. */
  smtpUrl?: string;
  /** Where mail goes when there is no SMTP server (development, the demo), relative to the project. */
  folder: string;
  from: string;
  /** The frontend's address: links in mail point at its pages (/verify-email, /reset-password, ...). */
  appUrl: string;
  /** One delivery attempt, connection to last byte; a stalled server costs at most this, then a retry. */
  timeoutMs: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

// Whitespace-only counts as unset too: `Number('  ')` is 0, so `PORT=  ` would otherwise
// quietly mean "any free port" instead of the default.
const blankToUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankToUndefined, schema.optional());

const maxTimerMs = 2 ** 31 - 1;

const count = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  optional(z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(min, `must be ${min} or more`).max(max, `must be ${max} or less`));

const environmentSchema = z.object({
  NODE_ENV: optional(z.enum(['development', 'production', 'test'], { error: 'must be development, production or test' })),
  HOST: optional(z.string()),
  PORT: count(0, 65535),
  DATABASE_URL: optional(z.string().regex(/^postgres(ql)?:\/\/.+/, 'must look like postgresql://user:password@host:5432/database')),
  DATABASE_DIRECT_URL: optional(z.string().regex(/^postgres(ql)?:\/\/.+/, 'must look like postgresql://user:password@host:5432/database')),
  EMBEDDED_DB_DIR: optional(z.string()),
  AUTH_SECRET: optional(z.string()),
  // http(s) only: the CSRF check trusts this URL's origin, and any other scheme's origin is the
  // opaque "null", which sandboxed iframes and data: pages can send as their Origin.
  AUTH_URL: optional(z.url({ protocol: /^https?$/, error: 'must be a URL like http://localhost:3000' })),
  ALLOWED_ORIGINS: optional(z.string()),
  LOG_LEVEL: optional(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'must be fatal, error, warn, info, debug, trace or silent' })),
  BODY_LIMIT: optional(z.string().regex(/^\d+(b|kb|mb)?$/i, 'must be a size like 100kb or 1mb')),
  TRUST_PROXY: count(0),
  SHUTDOWN_TIMEOUT_MS: count(0),
  SHUTDOWN_DRAIN_MS: count(0, 600_000),
  REQUEST_TIMEOUT_MS: count(1000, 600_000),
  KEEP_ALIVE_TIMEOUT_MS: count(1000, 600_000),
  SERVICE_API_KEY: optional(z.string().min(32, 'must be at least 32 characters (authstrap setup generates one)')),
  METRICS_TOKEN: optional(z.string().min(32, 'must be at least 32 characters (openssl rand -base64 32)')),
  // 4 is bcrypt's minimum (fast, for tests); every step doubles the work.
  BCRYPT_COST: count(4, 15),
  REDIS_URL: optional(z.string().regex(/^rediss?:\/\/.+/, 'must look like redis://localhost:6379')),
  RATE_LIMIT_API_MAX: count(1),
  // At most 2^31-1 ms (24.8 days): the in-memory store's timers cannot wait longer, and Node
  // turns a longer delay into 1 ms, which would reset the counts every millisecond.
  RATE_LIMIT_API_WINDOW_MS: count(1000, maxTimerMs),
  RATE_LIMIT_AUTH_MAX: count(1),
  RATE_LIMIT_AUTH_WINDOW_MS: count(1000, maxTimerMs),
  RATE_LIMIT_SSO_MAX: count(1),
  RATE_LIMIT_SSO_WINDOW_MS: count(1000, maxTimerMs),
  RATE_LIMIT_DATA_MAX: count(1),
  RATE_LIMIT_DATA_WINDOW_MS: count(1000, maxTimerMs),
  RATE_LIMIT_REDIS_TIMEOUT_MS: count(10, 10_000),
  MACHINE_KEY_USAGE_FLUSH_MS: count(100, 3_600_000),
  DATABASE_CONNECT_TIMEOUT_MS: count(100, 600_000),
  DATABASE_QUERY_TIMEOUT_MS: count(100, 3_600_000),
  DATABASE_PREPARED_STATEMENTS: optional(z.enum(['true', 'false'], { error: 'must be true or false' })),
  SMTP_URL: optional(z.string().regex(/^smtps?:\/\/.+/, 'must look like smtp://user:password@smtp.example.com:587 (or smtps://... for port 465)')),
  EMAIL_FROM: optional(z.string().min(3)),
  APP_URL: optional(z.url({ protocol: /^https?$/, error: 'must be a URL like http://localhost:5173 (your frontend)' })),
  MAIL_OUTBOX_DIR: optional(z.string()),
  SMTP_TIMEOUT_MS: count(100, 600_000),
  REQUIRE_EMAIL_VERIFICATION: optional(z.enum(['true', 'false'], { error: 'must be true or false' })),
  INVITATIONS_PENDING_MAX: count(1),
  INVITATIONS_PER_HOUR: count(1),
  OUTBOX_POLL_MS: count(10, 600_000),
  OUTBOX_RETRY_MS: count(10, maxTimerMs),
  OUTBOX_MAX_ATTEMPTS: count(1, 100),
  SERVICE_TRANSACTION_TIMEOUT_MS: count(100, 600_000),
  SERVICE_TRANSACTION_IDLE_MS: count(100, 600_000),
  SERVICE_TRANSACTIONS_MAX: count(1, 1000),
  EVENTS_RETENTION_DAYS: count(1, 36_500),
  IDEMPOTENCY_KEY_HOURS: count(1, 8760),
  SCIM_BODY_LIMIT: optional(z.string().regex(/^\d+(b|kb|mb)?$/i, 'must be a size like 100kb or 1mb')),
  SCIM_RATE_LIMIT_MAX: count(1),
  SCIM_MAX_CONCURRENT_PER_DIRECTORY: count(1, 1000),
  SCIM_MAX_CONCURRENT_WHILE_BUSY: count(1, 1000),
  SCIM_RATE_WHILE_BUSY: count(0, 100_000),
  OPERATOR_RECENT_SIGN_IN_MINUTES: count(1, 525_600),
  OPERATOR_IMPERSONATION_MAX_MINUTES: count(1, 1440),
  REALTIME_POLL_MS: count(5, 60_000),
  REALTIME_HEARTBEAT_MS: count(1000, 600_000),
  REALTIME_RECHECK_MS: count(100, 60_000),
  REALTIME_STREAMS_PER_USER: count(1, 1_000_000),
  REALTIME_STREAMS_PER_ORGANIZATION: count(1, 1_000_000),
  // At least a socket's own buffer (Node's 16 KiB high-water mark), so that "full" is felt as one.
  REALTIME_BUFFER_BYTES: count(65_536, 1_073_741_824),
  REALTIME_DRAIN_MS: count(100, 600_000),
  WEBHOOK_TIMEOUT_MS: count(100, 600_000),
  WEBHOOK_RETRY_MS: count(10, maxTimerMs),
  WEBHOOK_MAX_ATTEMPTS: count(1, 100),
  WEBHOOK_DISABLE_AFTER: count(1, 10_000),
  WEBHOOKS_ALLOW_PRIVATE: optional(z.enum(['true', 'false'], { error: 'must be true or false' })),
  DNS_SERVERS: optional(z.string()),
  SSO_ALLOW_PRIVATE_ADDRESSES: optional(z.enum(['true', 'false'], { error: 'must be true or false' })),
  SSO_CLOCK_SKEW_SECONDS: count(0, 600),
  SSO_APP_REDIRECTS: optional(z.string()),
  SSO_REFRESH_INTERVAL_HOURS: count(1, 8760),
  SSO_REFRESH_POLL_MS: count(0, 3_600_000),
  SSO_SAML_THREADS: count(1, 256),
  DNS_TIMEOUT_MS: count(10, 60_000),
  DOMAIN_CHECK_INTERVAL_HOURS: count(1, 8760),
  DOMAIN_FAILING_GRACE_DAYS: count(1, 365),
  DOMAIN_CHECK_POLL_MS: count(0, 3_600_000),
  RATE_LIMIT_PREFIX: optional(z.string().regex(/^\S+$/, 'must be a key prefix without spaces, like authstrap:rl:')),
  // The OpenTelemetry variables this backend reads itself (the SDK and exporter read the rest).
  OTEL_SDK_DISABLED: optional(z.string()),
  OTEL_TRACES_EXPORTER: optional(z.string().regex(/^\s*(otlp|console|none)\s*(,\s*(otlp|console|none)\s*)*$/, 'must be otlp, console or none (or a comma-separated list of them)')),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(z.url({ protocol: /^https?$/, error: 'must be a URL like http://localhost:4318' })),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional(z.url({ protocol: /^https?$/, error: 'must be a URL like http://localhost:4318/v1/traces' })),
  OTEL_EXPORTER_OTLP_PROTOCOL: optional(z.enum(['http/protobuf', 'http/json'], { error: 'must be http/protobuf or http/json (gRPC is not built in)' })),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: optional(z.enum(['http/protobuf', 'http/json'], { error: 'must be http/protobuf or http/json (gRPC is not built in)' })),
});

/**
 * Whether the OTEL_* variables ask for traces: off by default, as the SDK switched off
 * (OTEL_SDK_DISABLED=true) or with OTEL_TRACES_EXPORTER=none; on with an exporter named in
 * OTEL_TRACES_EXPORTER, or with an OTLP endpoint (then the exporter is OTLP, the standard's default).
 */
function tracingSettings(values: z.infer<typeof environmentSchema>): TracingSettings | undefined {
  if (values.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const named = (values.OTEL_TRACES_EXPORTER ?? '').split(',').map((name) => name.trim()).filter(Boolean);
  const exporters = (named.length > 0 ? named : values.OTEL_EXPORTER_OTLP_ENDPOINT || values.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? ['otlp'] : [])
    .filter((name): name is 'otlp' | 'console' => name !== 'none');
  if (exporters.length === 0) return undefined;
  return { exporters: [...new Set(exporters)], protocol: values.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? values.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf' };
}

function parseOrigins(list: string | undefined, problems: string[]): string[] {
  const origins: string[] = [];
  for (const entry of (list ?? '').split(',').map((item) => item.trim()).filter(Boolean)) {
    try {
      const url = new URL(entry);
      // Scheme, host and port only. The list keeps the origin as browsers send it (lowercase,
      // no default port), so `HTTPS://App.example.com:443` matches `https://app.example.com`.
      const bare = url.pathname === '/' && !/[?#]/.test(entry) && !url.username && !url.password;
      if (!bare || url.origin === 'null') throw new Error('not an origin');
      origins.push(url.origin);
    } catch {
      problems.push(`ALLOWED_ORIGINS: "${entry}" is not an origin like http://localhost:5173 (scheme, host and port only)`);
    }
  }
  return origins;
}

/**
 * DNS_SERVERS as `node:dns` `Resolver.setServers` takes it: `ip`, `ip:port` or `[ipv6]:port`,
 * comma-separated. Host names are refused: a resolver that must itself be resolved is no setting.
 */
function parseDnsServers(list: string | undefined, problems: string[]): string[] {
  const servers: string[] = [];
  for (const entry of (list ?? '').split(',').map((item) => item.trim()).filter(Boolean)) {
    const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
    const withPort = /^([^:]+):(\d{1,5})$/.exec(entry);
    const [address, port] = bracketed ? [bracketed[1]!, bracketed[2]] : withPort ? [withPort[1]!, withPort[2]] : [entry, undefined];
    const addressOk = bracketed ? net.isIPv6(address) : withPort ? net.isIPv4(address) : net.isIP(address) !== 0;
    const portOk = port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
    if (addressOk && portOk) servers.push(entry);
    else problems.push(`DNS_SERVERS: "${entry}" is not a resolver address like 127.0.0.1, 127.0.0.1:53 or [::1]:53`);
  }
  return servers;
}

/** Reads and checks the environment. Every problem is reported, each naming its variable. */
export function loadConfig(env: NodeJS.ProcessEnv, projectDir: string): Config {
  const parsed = environmentSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0]);
        return `${name}: ${issue.message} (got ${JSON.stringify(env[name])})`;
      }),
    );
  }
  const values = parsed.data;
  const problems: string[] = [];
  const nodeEnv = values.NODE_ENV ?? 'development';
  const port = values.PORT ?? 3000;
  if (nodeEnv === 'production') {
    const secret = values.AUTH_SECRET ?? '';
    if (secret.length < 32) {
      problems.push('AUTH_SECRET: production needs a random secret of at least 32 characters (authstrap setup generates one)');
    } else if (new Set(secret).size < 16) {
      // "aaaa...", "abababab...", a word repeated: long enough, and still guessable.
      problems.push('AUTH_SECRET: too weak for production (fewer than 16 different characters); generate one with `openssl rand -base64 32`');
    }
    // Webhooks to private addresses would let any organization's admin reach the backend's own network.
    if (values.WEBHOOKS_ALLOW_PRIVATE === 'true') problems.push('WEBHOOKS_ALLOW_PRIVATE: development only; production sends webhooks to public https:// addresses only');
    // The same reach as webhooks: an admin's issuer URL would let the backend ask its own network.
    if (values.SSO_ALLOW_PRIVATE_ADDRESSES === 'true') problems.push('SSO_ALLOW_PRIVATE_ADDRESSES: development only; production reaches identity providers at public https:// addresses only');
  }
  if (values.DATABASE_DIRECT_URL && !values.DATABASE_URL) {
    problems.push('DATABASE_DIRECT_URL: set it only with DATABASE_URL (it is PostgreSQL itself when DATABASE_URL is a pooler such as PgBouncer)');
  }
  const allowedOrigins = parseOrigins(values.ALLOWED_ORIGINS, problems);
  const dnsServers = parseDnsServers(values.DNS_SERVERS, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  const authUrl = values.AUTH_URL ?? `http://localhost:${port}`;

  return {
    nodeEnv,
    host: values.HOST ?? '0.0.0.0',
    port,
    databaseUrl: values.DATABASE_URL,
    databaseDirectUrl: values.DATABASE_DIRECT_URL,
    embeddedDbDir: values.EMBEDDED_DB_DIR ?? '.data/pglite',
    authSecret: values.AUTH_SECRET,
    authUrl,
    allowedOrigins,
    logLevel: values.LOG_LEVEL ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    bodyLimit: values.BODY_LIMIT ?? '100kb',
    trustProxy: values.TRUST_PROXY ?? 0,
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS ?? 10_000,
    // Production runs behind something that routes by /ready: give it time to notice. Elsewhere a
    // restart should be quick.
    shutdownDrainMs: values.SHUTDOWN_DRAIN_MS ?? (nodeEnv === 'production' ? 5000 : 0),
    // A client that trickles its request in (a slow-loris attack, a stalled upload) holds a
    // connection; 30 s is long enough for any honest request under the body limit.
    requestTimeoutMs: values.REQUEST_TIMEOUT_MS ?? 30_000,
    // nginx keeps idle upstream connections 60 s (keepalive_timeout), and so does AWS's ALB by default.
    keepAliveTimeoutMs: values.KEEP_ALIVE_TIMEOUT_MS ?? 65_000,
    projectDir,
    serviceApiKey: values.SERVICE_API_KEY,
    metricsToken: values.METRICS_TOKEN,
    tracing: tracingSettings(values),
    bcryptCost: values.BCRYPT_COST ?? 12,
    redisUrl: values.REDIS_URL,
    rateLimits: {
      apiMax: values.RATE_LIMIT_API_MAX ?? 100,
      apiWindowMs: values.RATE_LIMIT_API_WINDOW_MS ?? 15 * 60 * 1000,
      authMax: values.RATE_LIMIT_AUTH_MAX ?? 10,
      authWindowMs: values.RATE_LIMIT_AUTH_WINDOW_MS ?? 60 * 60 * 1000,
      ssoMax: values.RATE_LIMIT_SSO_MAX ?? 300,
      ssoWindowMs: values.RATE_LIMIT_SSO_WINDOW_MS ?? 15 * 60 * 1000,
      // Generous: a busy single-page app stays far below it; a runaway script does not.
      dataMax: values.RATE_LIMIT_DATA_MAX ?? 1000,
      dataWindowMs: values.RATE_LIMIT_DATA_WINDOW_MS ?? 60 * 1000,
      prefix: values.RATE_LIMIT_PREFIX ?? 'authstrap:rl:',
      redisTimeoutMs: values.RATE_LIMIT_REDIS_TIMEOUT_MS ?? 500,
      machineKeyUsageFlushMs: values.MACHINE_KEY_USAGE_FLUSH_MS ?? 1000,
    },
    databaseTimeouts: {
      connectMs: values.DATABASE_CONNECT_TIMEOUT_MS ?? 5000,
      queryMs: values.DATABASE_QUERY_TIMEOUT_MS ?? 5000,
    },
    // Behind a pooler, off unless asked for: only PgBouncer 1.21+ with max_prepared_statements keeps them.
    databasePreparedStatements: values.DATABASE_PREPARED_STATEMENTS ? values.DATABASE_PREPARED_STATEMENTS === 'true' : !values.DATABASE_DIRECT_URL,
    mail: {
      smtpUrl: values.SMTP_URL,
      folder: values.MAIL_OUTBOX_DIR ?? '.data/mail',
      from: values.EMAIL_FROM ?? `no-reply@${new URL(authUrl).hostname}`,
      // Links go to the frontend: APP_URL, else the first allowed origin (the frontend in development).
      appUrl: (values.APP_URL ?? allowedOrigins[0] ?? authUrl).replace(/\/+$/, ''),
      timeoutMs: values.SMTP_TIMEOUT_MS ?? 10_000,
    },
    // Production proves every address before it signs in; development and tests let people in
    // at once (the link is still sent, and shown in the log).
    requireEmailVerification: (values.REQUIRE_EMAIL_VERIFICATION ?? String(nodeEnv === 'production')) === 'true',
    invitations: {
      pendingMax: values.INVITATIONS_PENDING_MAX ?? 100,
      perInviterPerHour: values.INVITATIONS_PER_HOUR ?? 20,
    },
    outbox: {
      pollMs: values.OUTBOX_POLL_MS ?? 1000,
      // 10 s, 20 s, 40 s, ... at most an hour apart: 20 attempts span about 11 hours of outage.
      retryMs: values.OUTBOX_RETRY_MS ?? 10_000,
      maxAttempts: values.OUTBOX_MAX_ATTEMPTS ?? 20,
    },
    // A Better Auth sign-up (a bcrypt hash and four writes) takes well under a second; a held
    // transaction keeps a connection from everyone else, so its bounds are short. Half the pool
    // (10) may be held at once, so the rest of the API always has connections.
    serviceTransactions: {
      timeoutMs: values.SERVICE_TRANSACTION_TIMEOUT_MS ?? 10_000,
      idleMs: values.SERVICE_TRANSACTION_IDLE_MS ?? 5000,
      maxOpen: values.SERVICE_TRANSACTIONS_MAX ?? 5,
      waitMs: values.DATABASE_CONNECT_TIMEOUT_MS ?? 5000,
    },
    events: { retentionDays: values.EVENTS_RETENTION_DAYS ?? 365 },
    idempotency: { keyHours: values.IDEMPOTENCY_KEY_HOURS ?? 24 },
    // A 10,000-user initial sync at 4 requests at a time needs about 90 a second.
    scim: { bodyLimit: values.SCIM_BODY_LIMIT ?? '1mb', rateLimitMax: values.SCIM_RATE_LIMIT_MAX ?? 12_000, maxConcurrentPerDirectory: values.SCIM_MAX_CONCURRENT_PER_DIRECTORY ?? 4, maxConcurrentWhileBusy: values.SCIM_MAX_CONCURRENT_WHILE_BUSY ?? 1, rateWhileBusy: values.SCIM_RATE_WHILE_BUSY ?? 20 },
    operators: { recentSignInMinutes: values.OPERATOR_RECENT_SIGN_IN_MINUTES, impersonationMaxMinutes: values.OPERATOR_IMPERSONATION_MAX_MINUTES ?? 60 },
    realtime: {
      pollMs: values.REALTIME_POLL_MS ?? 25,
      heartbeatMs: values.REALTIME_HEARTBEAT_MS ?? 15_000,
      // Well inside the 5 s in which a removed member or a revoked key must stop hearing.
      recheckMs: values.REALTIME_RECHECK_MS ?? 2000,
      perUser: values.REALTIME_STREAMS_PER_USER ?? 20,
      perOrganization: values.REALTIME_STREAMS_PER_ORGANIZATION ?? 2000,
      bufferBytes: values.REALTIME_BUFFER_BYTES ?? 1_048_576,
      drainMs: values.REALTIME_DRAIN_MS ?? 10_000,
    },
    webhooks: {
      timeoutMs: values.WEBHOOK_TIMEOUT_MS ?? 10_000,
      // 5 s, 10 s, 20 s, ... at most an hour apart: 16 attempts span about 8 hours.
      retryMs: values.WEBHOOK_RETRY_MS ?? 5000,
      maxAttempts: values.WEBHOOK_MAX_ATTEMPTS ?? 16,
      disableAfter: values.WEBHOOK_DISABLE_AFTER ?? 20,
      allowPrivate: values.WEBHOOKS_ALLOW_PRIVATE === 'true',
      authSecret: values.AUTH_SECRET,
    },
    domains: {
      dnsServers,
      dnsTimeoutMs: values.DNS_TIMEOUT_MS ?? 2000,
      checkIntervalHours: values.DOMAIN_CHECK_INTERVAL_HOURS ?? 24,
      failingGraceDays: values.DOMAIN_FAILING_GRACE_DAYS ?? 7,
      checkPollMs: values.DOMAIN_CHECK_POLL_MS ?? 60_000,
    },
    sso: {
      allowPrivateAddresses: values.SSO_ALLOW_PRIVATE_ADDRESSES === 'true',
      clockSkewSeconds: values.SSO_CLOCK_SKEW_SECONDS ?? 180,
      appRedirects: (values.SSO_APP_REDIRECTS ?? '').split(',').map((entry) => entry.trim()).filter(Boolean),
      refreshIntervalHours: values.SSO_REFRESH_INTERVAL_HOURS ?? 24,
      refreshPollMs: values.SSO_REFRESH_POLL_MS ?? 60_000,
      // A core is left to the event loop, which serves every other request meanwhile (bench/README.md, "SSO sign-in").
      samlThreads: values.SSO_SAML_THREADS ?? Math.max(1, availableParallelism() - 1),
    },
  };
}

/** `postgresql://app:secret@db/app` -> `postgresql://app:***@db/app`, for messages and logs (also redis:// URLs). */
export function maskUrlPassword(url: string): string {
  // The user name may be empty: Redis URLs are usually `redis://:password@host`.
  return url.replace(/(\/\/[^:/@]*:)[^@/]*@/, '$1***@');
}
