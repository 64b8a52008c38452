import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { startServer, type RunningServer } from '../../src/server.js';

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
export const databaseKinds = ['embedded', ...(postgresAdminUrl ? ['postgres' as const] : [])] as const;
export type DatabaseKind = (typeof databaseKinds)[number];

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

export interface TestBackend {
  url: string;
  running: RunningServer;
  stop(): Promise<void>;
}

/** The example backend listening on a free loopback port, on a database of its own. */
export async function startBackend(kind: DatabaseKind, extraEnv: Record<string, string> = {}): Promise<TestBackend> {
  const database = kind === 'postgres' ? await createThrowawayDatabase() : undefined;
  const env = {
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    ...(database ? { DATABASE_URL: database.url } : { EMBEDDED_DB_DIR: 'memory://' }),
    ...extraEnv,
  };
  const running = await startServer({ projectDir, env });
  return {
    url: running.url,
    running,
    async stop() {
      await running.stop();
      await database?.drop();
    },
  };
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** A small client for one backend: JSON in, JSON out, with the tenant header when given. */
export function apiClient(baseUrl: string) {
  return async function api(
    method: string,
    pathname: string,
    options: { body?: unknown; rawBody?: string; organizationId?: string; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.organizationId) headers['x-organization-id'] = options.organizationId;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(new URL(pathname, baseUrl), { method, headers, body });
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

/** Creates an organization (a tenant) and returns its id. */
export async function createOrganization(api: Api, slug: string): Promise<string> {
  const response = await api('POST', '/organizations', { body: { name: `Org ${slug}`, slug } });
  if (response.status !== 201) throw new Error(`could not create organization: ${JSON.stringify(response.body)}`);
  return response.body.data.id;
}
