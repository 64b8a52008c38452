import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { apiClient, createThrowawayDatabase, postgresAdminUrl, redisUrl, signUp } from './support/backend.js';
import { nginxBinary, siteFromDeployDocs, startNginx, type Nginx } from '../../../bench/lib/nginx.mjs';
import { freePort, spawnBackend, type BackendProcess } from './support/process.js';

/**
 * A rolling restart as a deployment does one: three instances of the backend on one PostgreSQL
 * database and one Redis, behind nginx configured as docs/deploy.md says; under a steady load of
 * reads and writes, each instance in turn gets SIGTERM and a new one is started on its port. No
 * client may see a 5xx or a broken connection, and every write that was acknowledged must be in the
 * database, once.
 */

const instances = 3;
const drainMs = 1000;
/** Concurrent clients, each sending its next request when the last is answered (and a short pause). */
const clients = 6;
const pauseMs = 5;
/** Bounds on the load, whatever happens to the restarts. */
const maxRequests = 30_000;
const maxLoadMs = 120_000;

interface Failure {
  method: string;
  path: string;
  status?: number;
  body?: string;
  error?: string;
  atMs: number;
}

if (process.env.CI && !nginxBinary) throw new Error('CI is set but nginx is not installed: .ci/run installs nginx-light');

describe.runIf(postgresAdminUrl && redisUrl && nginxBinary)('a rolling restart behind nginx', () => {
  it('under load, each of three instances stopped (SIGTERM) and started again: no 5xx, no connection error, every acknowledged write kept once', async () => {
    const database = await createThrowawayDatabase();
    const ports = await Promise.all(Array.from({ length: instances }, () => freePort()));
    const env = (port: number) => ({
      PORT: String(port),
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl!,
      RATE_LIMIT_PREFIX: `rolling-${randomBytes(4).toString('hex')}:`,
      RATE_LIMIT_API_MAX: '1000000',
      RATE_LIMIT_AUTH_MAX: '1000000',
      RATE_LIMIT_DATA_MAX: '1000000',
      TRUST_PROXY: '1',
      SHUTDOWN_DRAIN_MS: String(drainMs),
      EMBEDDED_DB_DIR: '',
    });
    const running: BackendProcess[] = [];
    let nginx: Nginx | undefined;
    try {
      // The first one migrates; the other two find nothing to do.
      for (const port of ports) {
        const instance = spawnBackend(env(port));
        running.push(instance);
        await instance.listening;
      }
      const nginxPort = await freePort();
      nginx = await startNginx(siteFromDeployDocs(ports, nginxPort), nginxPort);
      const owner = await signUp(nginx.url, 'rolling@example.com');
      const api = apiClient(nginx.url, { token: owner.token, organizationId: owner.organizationId });

      const started = performance.now();
      const failures: Failure[] = [];
      /** Projects whose create was acknowledged (201), with the last description a PATCH acknowledged. */
      const acknowledged = new Map<string, { name: string; description: string | null }>();
      let sent = 0;
      let stopLoad = false;

      const client = async (index: number) => {
        const mine: string[] = [];
        for (let step = 0; !stopLoad && sent < maxRequests && performance.now() - started < maxLoadMs; step++) {
          sent++;
          const kind = step % 4;
          const [method, path, body] =
            kind === 0 || mine.length === 0
              ? (['POST', '/Projects', { name: `Client ${index} step ${step}` }] as const)
              : kind === 1
                ? (['GET', '/Projects?limit=5', undefined] as const)
                : kind === 2
                  ? (['GET', `/Projects/${mine[step % mine.length]}`, undefined] as const)
                  : (['PATCH', `/Projects/${mine[step % mine.length]}`, { description: `Step ${step}` }] as const);
          try {
            const response = await api(method, path, { body });
            if (response.status >= 500 || (method === 'POST' ? response.status !== 201 : response.status !== 200)) {
              failures.push({ method, path, status: response.status, body: JSON.stringify(response.body).slice(0, 300), atMs: Math.round(performance.now() - started) });
            } else if (method === 'POST') {
              mine.push(response.body.data.id);
              acknowledged.set(response.body.data.id, { name: response.body.data.name, description: null });
            } else if (method === 'PATCH') {
              acknowledged.get(response.body.data.id)!.description = response.body.data.description;
            }
          } catch (error) {
            failures.push({ method, path, error: String((error as Error).cause ?? error), atMs: Math.round(performance.now() - started) });
          }
          await new Promise((resolve) => setTimeout(resolve, pauseMs));
        }
      };
      const load = Promise.all(Array.from({ length: clients }, (_, index) => client(index)));

      const restarts: { port: number; exitCode: number | null; downMs: number }[] = [];
      await new Promise((resolve) => setTimeout(resolve, 1000));
      for (let index = 0; index < instances; index++) {
        const old = running[index]!;
        const signalled = performance.now();
        old.child.kill('SIGTERM');
        const exitCode = await old.exited;
        const replacement = spawnBackend(env(ports[index]!));
        running[index] = replacement;
        await replacement.listening;
        restarts.push({ port: ports[index]!, exitCode, downMs: Math.round(performance.now() - signalled) });
        // The next one goes once this one takes its share (nginx tries it again after fail_timeout).
        const deadline = performance.now() + 10_000;
        while (!replacement.output().includes('request completed') && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      stopLoad = true;
      await load;
      const elapsedMs = Math.round(performance.now() - started);

      const retried = nginx.accessLog().split('\n').filter((line) => line.includes(', ')).length;
      console.info(
        `[measured] rolling restart of ${instances} instances behind nginx: ${sent} requests in ${elapsedMs} ms from ${clients} clients, ` +
          `${failures.length} failed; restarts ${restarts.map((restart) => `${restart.downMs} ms`).join(', ')}; ` +
          `${retried} requests retried by nginx on another instance`,
      );
      // nginx's error log says why (a refused connection, a connection closed before the answer).
      expect(failures, nginx.errorLog()).toEqual([]);
      for (const restart of restarts) expect(restart.exitCode).toBe(0);
      // The load really ran through the restarts, and each new instance took its share of it.
      expect(sent).toBeGreaterThan(500);
      for (const instance of running) expect(instance.output()).toContain('request completed');

      const direct = new pg.Client({ connectionString: database.url });
      await direct.connect();
      try {
        const { rows } = await direct.query<{ id: string; name: string; description: string | null }>(
          'SELECT "id", "name", "description" FROM "Project" WHERE "organizationId" = $1',
          [owner.organizationId],
        );
        const stored = new Map(rows.map((row) => [row.id, row]));
        for (const [id, expected] of acknowledged) {
          expect(stored.get(id), `acknowledged project ${id}`).toEqual({ id, ...expected });
        }
        // No create was made twice (a POST that nginx sent again would be a second row of that name).
        const names = rows.map((row) => row.name);
        expect(new Set(names).size).toBe(names.length);
      } finally {
        await direct.end();
      }
    } finally {
      await nginx?.stop();
      for (const instance of running) instance.child.kill('SIGTERM');
      await Promise.all(running.map((instance) => instance.exited));
      await database.drop();
    }
  }, 180_000);
});
