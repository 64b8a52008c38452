import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startWireCounter, type WireCounter } from '../../../../bench/lib/pg-wire-counter.mjs';
import { pgbouncerBinary, startPgbouncer, type PgBouncer } from '../../../../bench/lib/pgbouncer.mjs';
import { startServer, type RunningServer } from '../../src/server.js';
import { startMailbox, tokenOf, type Mailbox } from './mailbox.js';

export const projectDir = path.resolve(import.meta.dirname, '../..');

/**
 * The databases the suite runs on: always the embedded one, and PostgreSQL when
 * AUTHSTRAP_TEST_POSTGRES_URL names a server to create throwaway databases on (CI sets it).
 */
export const postgresAdminUrl = process.env.AUTHSTRAP_TEST_POSTGRES_URL;
if (process.env.CI && !postgresAdminUrl) {
  // CI must exercise PostgreSQL; a missing variable must not quietly shrink the suite.
  throw new Error('CI is set but AUTHSTRAP_TEST_POSTGRES_URL is not: .ci/run should export it');
}
/**
 * A Redis server for the shared rate-limit counts (REDIS_URL); tests that need one run only
 * when it is set, and each run keys its counts under a prefix of its own. CI sets it.
 */
export const redisUrl = process.env.AUTHSTRAP_TEST_REDIS_URL;
if (process.env.CI && !redisUrl) {
  throw new Error('CI is set but AUTHSTRAP_TEST_REDIS_URL is not: .ci/run should export it');
}

export const databaseKinds = ['embedded', ...(postgresAdminUrl ? ['postgres' as const] : [])] as const;

if (process.env.CI && !pgbouncerBinary) throw new Error('CI is set but PgBouncer is not installed: .ci/run installs pgbouncer');
/**
 * The databases of the suites that also run through PgBouncer in transaction mode (with the
 * settings of docs/deploy.md): those kinds, and PostgreSQL behind PgBouncer when both are at hand.
 */
export const pooledDatabaseKinds = [...databaseKinds, ...(postgresAdminUrl && pgbouncerBinary ? ['pgbouncer' as const] : [])] as const;
export type DatabaseKind = (typeof pooledDatabaseKinds)[number];

/** A fresh, empty PostgreSQL database; `drop` removes it again. */
export async function createThrowawayDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!postgresAdminUrl) throw new Error('AUTHSTRAP_TEST_POSTGRES_URL is not set');
  const name = `authstrap_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: postgresAdminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/**
 * The example on a throwaway PostgreSQL database behind the wire counter (bench/lib/pg-wire-counter.mjs),
 * to count round trips per request. The outbox worker's polls would be counted too: it polls once
 * here, and has sent a user's mail before `signUpQuietly` returns.
 */
export async function startCountedBackend(): Promise<{ backend: TestBackend; counter: WireCounter; signUpQuietly(email: string): Promise<SignedUp>; stop(): Promise<void> }> {
  const database = await createThrowawayDatabase();
  const target = new URL(database.url);
  const counter = await startWireCounter({ upstreamHost: target.hostname, upstreamPort: Number(target.port || 5432) });
  target.host = `127.0.0.1:${counter.port}`;
  // No timer's statement in the counted requests: the outbox's poll and the machine keys' usage flush
  // wait, and the SSO refresh's and domain checks' polls (every 60 s by default: a loaded machine's
  // test can reach the first) are off.
  const backend = await startBackend('embedded', {
    DATABASE_URL: target.toString(),
    OUTBOX_POLL_MS: '600000',
    MACHINE_KEY_USAGE_FLUSH_MS: '600000',
    SSO_REFRESH_POLL_MS: '0',
    DOMAIN_CHECK_POLL_MS: '0',
  });
  return {
    backend,
    counter,
    async signUpQuietly(email) {
      const person = await signUp(backend.url, email);
      const deadline = Date.now() + 10_000;
      while (mailboxOf(backend.url).to(email).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      // The outbox marks the mail sent after SMTP took it: wait until the wire has been still for
      // 300 ms, so that statement is not counted against the test's first request.
      let last = JSON.stringify(counter.snapshot().totals);
      let stillSince = Date.now();
      while (Date.now() - stillSince < 300 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const now = JSON.stringify(counter.snapshot().totals);
        if (now !== last) [last, stillSince] = [now, Date.now()];
      }
      return person;
    },
    async stop() {
      await backend.stop();
      await counter.close();
      await database.drop();
    },
  };
}

export interface TestBackend {
  url: string;
  running: RunningServer;
  /** The SMTP server this backend's mail goes to (SMTP_URL), unless the test chose its own. */
  mailbox: Mailbox;
  stop(): Promise<void>;
}

/** Each test backend's mailbox, by its URL: helpers that get a backend's URL read its mail. */
const mailboxes = new Map<string, Mailbox>();
export function mailboxOf(baseUrl: string): Mailbox {
  const mailbox = mailboxes.get(new URL(baseUrl).origin);
  if (!mailbox) throw new Error(`no test mailbox for ${baseUrl}: start the backend with startBackend`);
  return mailbox;
}

export const serviceApiKey = 'test-service-key-0123456789abcdef0123456789';
/** AUTH_SECRET of every test backend: Better Auth on the adapter signs its cookie with it too. */
export const authSecret = 'test-auth-secret-0123456789abcdef0123456789';
export const allowedOrigin = 'http://localhost:5173';

/**
 * The example backend listening on a free loopback port, on a database of its own. bcrypt runs
 * at its lowest cost and the rate limits are out of the way unless a test sets them.
 */
export async function startBackend(kind: DatabaseKind, extraEnv: Record<string, string> = {}): Promise<TestBackend> {
  const database = kind === 'embedded' ? undefined : await createThrowawayDatabase();
  const pgbouncer = kind === 'pgbouncer' ? await behindPgbouncer(database!.url) : undefined;
  const capture = kind === 'postgres' && captureSqlFile ? await sqlCapture(database!.url) : undefined;
  const mailbox = await startMailbox();
  const env = {
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    BCRYPT_COST: '4',
    RATE_LIMIT_API_MAX: '1000000',
    RATE_LIMIT_AUTH_MAX: '1000000',
    RATE_LIMIT_DATA_MAX: '1000000',
    SERVICE_API_KEY: serviceApiKey,
    AUTH_SECRET: authSecret,
    ALLOWED_ORIGINS: allowedOrigin,
    ...(database ? { DATABASE_URL: pgbouncer?.urlFor(database.url) ?? capture?.url ?? database.url } : { EMBEDDED_DB_DIR: 'memory://' }),
    ...(pgbouncer ? { DATABASE_DIRECT_URL: database!.url } : {}),
    SMTP_URL: mailbox.url,
    SMTP_TIMEOUT_MS: '3000',
    OUTBOX_POLL_MS: '100',
    OUTBOX_RETRY_MS: '200',
    ...extraEnv,
  };
  const running = await startServer({ projectDir, env });
  mailboxes.set(new URL(running.url).origin, mailbox);
  return {
    url: running.url,
    running,
    mailbox,
    async stop() {
      await running.stop();
      mailboxes.delete(new URL(running.url).origin);
      await mailbox.close();
      await capture?.close();
      await pgbouncer?.stop();
      await database?.drop();
    },
  };
}

/**
 * With AUTHSTRAP_TEST_CAPTURE_SQL=<file>, every statement the backends on PostgreSQL send is
 * appended to that file (one JSON string a line), read on the wire (bench/lib/pg-wire-counter.mjs)
 * between the backend and PostgreSQL: what docs/scaling.md checks against Citus's rules, with
 * bench/statements.mjs.
 */
const captureSqlFile = process.env.AUTHSTRAP_TEST_CAPTURE_SQL;

async function sqlCapture(databaseUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(databaseUrl);
  const counter = await startWireCounter({ upstreamHost: target.hostname, upstreamPort: Number(target.port || 5432) });
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(counter.port);
  return {
    url: url.toString(),
    async close() {
      const texts = [...counter.snapshot().texts.keys()];
      fs.appendFileSync(captureSqlFile!, texts.map((text) => `${JSON.stringify(text)}\n`).join(''));
      await counter.close();
    },
  };
}

/**
 * PgBouncer in transaction mode in front of `databaseUrl`'s server, as docs/deploy.md sets it up
 * (the statement timeout on the database, since the backend cannot ask for one through it), but
 * with only 3 server connections: every transaction is likely to land on a connection another
 * client used last, which is what any session state left behind would show.
 */
async function behindPgbouncer(databaseUrl: string): Promise<PgBouncer> {
  await setStatementTimeout(databaseUrl, '5s');
  return startPgbouncer({ targetUrl: databaseUrl, settings: 'default_pool_size = 3\n' });
}

/** PostgreSQL's statement_timeout for every new session of the database at `databaseUrl` (docs/deploy.md, PgBouncer). */
export async function setStatementTimeout(databaseUrl: string, timeout: string): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`ALTER DATABASE "${new URL(databaseUrl).pathname.slice(1)}" SET statement_timeout = '${timeout}'`);
  await admin.end();
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

export interface RequestOptions {
  body?: unknown;
  rawBody?: string;
  organizationId?: string;
  /** A session token or the service key, sent as `Authorization: Bearer`. */
  token?: string;
  headers?: Record<string, string>;
}

/**
 * A small client for one backend: JSON in, JSON out. `defaults` (a token, an organization) apply
 * to every request unless the request names its own; `token: ''` sends none.
 */
export function apiClient(baseUrl: string, defaults: Pick<RequestOptions, 'token' | 'organizationId'> = {}) {
  return async function api(method: string, pathname: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    const organizationId = options.organizationId ?? defaults.organizationId;
    const token = options.token ?? defaults.token;
    if (organizationId) headers['x-organization-id'] = organizationId;
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    // Redirects are followed on this backend only (/api/docs to /api/docs/); one elsewhere (single
    // sign-on's to APP_URL or an identity provider) is answered as it is.
    let url = new URL(pathname, baseUrl);
    let response = await fetch(url, { method, headers, body, redirect: 'manual' });
    for (let hop = 0; hop < 5 && response.status >= 300 && response.status < 400 && response.headers.has('location'); hop++) {
      const next = new URL(response.headers.get('location')!, url);
      if (next.origin !== url.origin) break;
      url = next;
      response = await fetch(url, { method: 'GET', headers, redirect: 'manual' });
    }
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON (e.g. the docs page): keep the text.
    }
    return { status: response.status, headers: response.headers, body: parsed };
  };
}

export type Api = ReturnType<typeof apiClient>;

export interface SignedUp {
  /** The backend this user signed up on. */
  baseUrl: string;
  user: { id: string; email: string; name: string };
  token: string;
  /** The personal organization sign-up created, with this user as owner. */
  organizationId: string;
  /** A client that sends this user's token and organization with every request. */
  api: Api;
}

/** Signs a new user up through the real endpoint. */
export async function signUp(baseUrl: string, email: string, password = 'correct horse battery', name = email.split('@')[0]): Promise<SignedUp> {
  const anonymous = apiClient(baseUrl);
  const response = await anonymous('POST', '/api/auth/sign-up/email', { body: { email, name, password } });
  if (response.status !== 201) throw new Error(`sign-up failed: ${response.status} ${JSON.stringify(response.body)}`);
  const { user, token } = response.body.data;
  const session = await anonymous('GET', '/api/auth/get-session', { token });
  const organizationId = session.body.data.organizations[0].id;
  return { baseUrl, user, token, organizationId, api: apiClient(baseUrl, { token, organizationId }) };
}

/** The secret of the first invitation mailed to `email` after the first `sentAfter` messages to it. */
export async function invitationTokenFor(baseUrl: string, email: string, sentAfter: number): Promise<string> {
  const mailbox = mailboxOf(baseUrl);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mail = mailbox.to(email).slice(sentAfter).find((candidate) => /invited to join/.test(candidate.subject));
    if (mail) return tokenOf(mail);
    if (Date.now() > deadline) throw new Error(`no invitation mailed to ${email}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The owner invites `member` to their organization with `role`, and `member` accepts with the mailed secret. */
export async function joinOrganization(owner: SignedUp, member: SignedUp, role: 'owner' | 'admin' | 'member'): Promise<void> {
  const before = mailboxOf(owner.baseUrl).to(member.user.email).length;
  const invited = await owner.api('POST', '/members', { body: { email: member.user.email, role } });
  if (invited.status !== 202) throw new Error(`invite failed: ${JSON.stringify(invited.body)}`);
  const token = await invitationTokenFor(owner.baseUrl, member.user.email, before);
  const accepted = await member.api('POST', '/api/auth/invitations/accept', { body: { token } });
  if (accepted.status !== 200) throw new Error(`accept failed: ${JSON.stringify(accepted.body)}`);
}

/** Signs `email` up, and makes them a member of the owner's organization with `role` (invited, then accepting). */
export async function addMember(baseUrl: string, owner: SignedUp, email: string, role: 'owner' | 'admin' | 'member', name?: string): Promise<SignedUp> {
  const member = await signUp(baseUrl, email, undefined, name);
  await joinOrganization(owner, member, role);
  return { ...member, organizationId: owner.organizationId, api: apiClient(baseUrl, { token: member.token, organizationId: owner.organizationId }) };
}
