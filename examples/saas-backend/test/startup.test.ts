import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createThrowawayDatabase, postgresAdminUrl, signUp } from './support/backend.js';
import { spawnBackend } from './support/process.js';

const migrationFiles = fs.readdirSync(path.resolve(import.meta.dirname, '../migrations')).filter((name) => name.endsWith('.sql'));

describe('startup and shutdown of the backend process', () => {
  it.runIf(postgresAdminUrl)('two instances starting at once on one empty PostgreSQL database both come up, and each migration runs once', async () => {
    const database = await createThrowawayDatabase();
    const first = spawnBackend({ DATABASE_URL: database.url });
    const second = spawnBackend({ DATABASE_URL: database.url });
    try {
      const urls = await Promise.all([first.listening, second.listening]);
      for (const url of urls) expect((await fetch(`${url}/ready`)).status).toBe(200);

      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      const { rows } = await client.query('SELECT name, count(*)::int AS times FROM authstrap_migrations GROUP BY name ORDER BY name');
      await client.end();
      expect(rows).toEqual(migrationFiles.map((name) => ({ name, times: 1 })));
      // Exactly one of the two applied them; the other found nothing to do.
      const appliedBy = [first.output(), second.output()].filter((output) => output.includes('migrations applied'));
      expect(appliedBy).toHaveLength(1);
    } finally {
      first.child.kill('SIGTERM');
      second.child.kill('SIGTERM');
      await Promise.all([first.exited, second.exited]);
      await database.drop();
    }
  });

  it('refuses to start with a bad setting, naming the variable, without a stack trace', async () => {
    const backend = spawnBackend({ PORT: 'eighty', EMBEDDED_DB_DIR: 'memory://' });
    expect(await backend.exited).toBe(1);
    expect(backend.output()).toContain('PORT: must be a number');
    expect(backend.output()).not.toMatch(/\n\s+at /);
  });

  it('refuses to start in production without a long AUTH_SECRET', async () => {
    const backend = spawnBackend({ NODE_ENV: 'production', AUTH_SECRET: 'short', EMBEDDED_DB_DIR: 'memory://' });
    expect(await backend.exited).toBe(1);
    expect(backend.output()).toContain('AUTH_SECRET');
  });

  it('reports an unreachable PostgreSQL with the password masked', async () => {
    const backend = spawnBackend({ DATABASE_URL: 'postgresql://app:hunter2@127.0.0.1:1/app' });
    expect(await backend.exited).toBe(1);
    expect(backend.output()).toContain('Cannot connect to postgresql://app:***@127.0.0.1:1/app');
    expect(backend.output()).not.toContain('hunter2');
  });

  it('on SIGTERM finishes the request in flight, then exits 0', async () => {
    const backend = spawnBackend({ EMBEDDED_DB_DIR: 'memory://' });
    const url = new URL(await backend.listening);
    const owner = await signUp(url.origin, 'slow@example.com');

    // A request whose body is still arriving when the signal comes.
    const body = JSON.stringify({ name: 'Finished after SIGTERM' });
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = http.request(
        { host: url.hostname, port: url.port, path: '/Projects', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-organization-id': owner.organizationId, authorization: `Bearer ${owner.token}` } },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      request.on('error', reject);
      request.write(body.slice(0, 10));
      setTimeout(() => {
        backend.child.kill('SIGTERM');
        setTimeout(() => request.end(body.slice(10)), 300);
      }, 200);
    });

    const result = await response;
    expect(result.status).toBe(201);
    expect(JSON.parse(result.text).data.name).toBe('Finished after SIGTERM');
    expect(await backend.exited).toBe(0);
  });

  it('keeps the embedded database in its folder across restarts', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-pglite-'));
    try {
      const first = spawnBackend({ EMBEDDED_DB_DIR: dataDir });
      const owner = await signUp(await first.listening, 'kept@example.com');
      expect((await owner.api('POST', '/Projects', { body: { name: 'Kept' } })).status).toBe(201);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);

      // The same session token still works after the restart: sessions live in the database.
      const second = spawnBackend({ EMBEDDED_DB_DIR: dataDir });
      const list = await (
        await fetch(`${await second.listening}/Projects`, { headers: { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId } })
      ).json();
      expect(list.data.map((project: { name: string }) => project.name)).toEqual(['Kept']);
      expect(second.output()).not.toContain('migrations applied');
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
