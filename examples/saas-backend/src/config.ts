import { z } from 'zod';

/** The backend's settings, read from the environment (and `.env`) and checked once at startup. */
export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  host: string;
  port: number;
  /** A PostgreSQL URL; when absent the embedded database is used. */
  databaseUrl?: string;
  /** Where the embedded database keeps its files (relative to the project), or `memory://`. */
  embeddedDbDir: string;
  authSecret?: string;
  authUrl: string;
  allowedOrigins: string[];
  logLevel: string;
  bodyLimit: string;
  trustProxy: number;
  shutdownTimeoutMs: number;
  projectDir: string;
  /** A trusted server authenticates with `Authorization: Bearer <serviceApiKey>`. */
  serviceApiKey?: string;
  bcryptCost: number;
  /** Shared rate-limit counts for several instances. */
  redisUrl?: string;
  rateLimits: { apiMax: number; apiWindowMs: number; authMax: number; authWindowMs: number };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const blankToUndefined = (value: unknown) => (value === '' ? undefined : value);
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankToUndefined, schema.optional());

const count = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  optional(z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(min, `must be ${min} or more`).max(max, `must be ${max} or less`));

const environmentSchema = z.object({
  NODE_ENV: optional(z.enum(['development', 'production', 'test'], { error: 'must be development, production or test' })),
  HOST: optional(z.string()),
  PORT: count(0, 65535),
  DATABASE_URL: optional(z.string().regex(/^postgres(ql)?:\/\/.+/, 'must look like postgresql://user:password@host:5432/database')),
  EMBEDDED_DB_DIR: optional(z.string()),
  AUTH_SECRET: optional(z.string()),
  AUTH_URL: optional(z.url({ error: 'must be a URL like http://localhost:3000' })),
  ALLOWED_ORIGINS: optional(z.string()),
  LOG_LEVEL: optional(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'must be fatal, error, warn, info, debug, trace or silent' })),
  BODY_LIMIT: optional(z.string().regex(/^\d+(b|kb|mb)?$/i, 'must be a size like 100kb or 1mb')),
  TRUST_PROXY: count(0),
  SHUTDOWN_TIMEOUT_MS: count(0),
  SERVICE_API_KEY: optional(z.string().min(32, 'must be at least 32 characters (authstrap setup generates one)')),
  // 4 is bcrypt's minimum (fast, for tests); every step doubles the work.
  BCRYPT_COST: count(4, 15),
  REDIS_URL: optional(z.string().regex(/^rediss?:\/\/.+/, 'must look like redis://localhost:6379')),
  RATE_LIMIT_API_MAX: count(1),
  RATE_LIMIT_API_WINDOW_MS: count(1000),
  RATE_LIMIT_AUTH_MAX: count(1),
  RATE_LIMIT_AUTH_WINDOW_MS: count(1000),
});

function parseOrigins(list: string | undefined, problems: string[]): string[] {
  const origins: string[] = [];
  for (const entry of (list ?? '').split(',').map((item) => item.trim()).filter(Boolean)) {
    try {
      const url = new URL(entry);
      if (url.origin !== entry.replace(/\/$/, '')) throw new Error('not an origin');
      origins.push(url.origin);
    } catch {
      problems.push(`ALLOWED_ORIGINS: "${entry}" is not an origin like http://localhost:5173 (scheme, host and port only)`);
    }
  }
  return origins;
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
  if (nodeEnv === 'production' && (values.AUTH_SECRET ?? '').length < 32) {
    problems.push('AUTH_SECRET: production needs a random secret of at least 32 characters (authstrap setup generates one)');
  }
  const allowedOrigins = parseOrigins(values.ALLOWED_ORIGINS, problems);
  if (problems.length > 0) throw new ConfigError(problems);

  return {
    nodeEnv,
    host: values.HOST ?? '0.0.0.0',
    port,
    databaseUrl: values.DATABASE_URL,
    embeddedDbDir: values.EMBEDDED_DB_DIR ?? '.data/pglite',
    authSecret: values.AUTH_SECRET,
    authUrl: values.AUTH_URL ?? `http://localhost:${port}`,
    allowedOrigins,
    logLevel: values.LOG_LEVEL ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    bodyLimit: values.BODY_LIMIT ?? '100kb',
    trustProxy: values.TRUST_PROXY ?? 0,
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS ?? 10_000,
    projectDir,
    serviceApiKey: values.SERVICE_API_KEY,
    bcryptCost: values.BCRYPT_COST ?? 12,
    redisUrl: values.REDIS_URL,
    rateLimits: {
      apiMax: values.RATE_LIMIT_API_MAX ?? 100,
      apiWindowMs: values.RATE_LIMIT_API_WINDOW_MS ?? 15 * 60 * 1000,
      authMax: values.RATE_LIMIT_AUTH_MAX ?? 10,
      authWindowMs: values.RATE_LIMIT_AUTH_WINDOW_MS ?? 60 * 60 * 1000,
    },
  };
}

/** `postgresql://app:secret@db/app` -> `postgresql://app:***@db/app`, for messages and logs (also redis:// URLs). */
export function maskUrlPassword(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@]*@/, '$1***@');
}
