import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createThrowawayDatabase, postgresAdminUrl, projectDir, signUp } from './support/backend.js';
import { accepts, freePort, spawnBackend } from './support/process.js';

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

  it('refuses a trivially weak AUTH_SECRET in production, however long', async () => {
    for (const secret of ['a'.repeat(40), 'abcd'.repeat(10)]) {
      const backend = spawnBackend({ NODE_ENV: 'production', AUTH_SECRET: secret, EMBEDDED_DB_DIR: 'memory://' });
      expect(await backend.exited).toBe(1);
      expect(backend.output()).toContain('AUTH_SECRET: too weak for production (fewer than 16 different characters)');
    }
  });

  it('warns when production runs on the embedded database', async () => {
    const backend = spawnBackend({ NODE_ENV: 'production', AUTH_SECRET: 'Kq8vZ2mXw4Rt7Yb1Nc5Jh9Lp3Fd6Gs0A', EMBEDDED_DB_DIR: 'memory://' });
    try {
      await backend.listening;
      expect(backend.output()).toMatch(/"level":40,.*production is running on the embedded database/);
      // Nor has it a mail server: mail would only ever reach the folder.
      expect(backend.output()).toMatch(/"level":40,.*production has no SMTP_URL/);
    } finally {
      backend.child.kill('SIGTERM');
      expect(await backend.exited).toBe(0);
    }
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

  it("starts with its V8 settings (src/v8-flags.ts), all of which this Node's V8 knows", async () => {
    const backend = spawnBackend({ EMBEDDED_DB_DIR: 'memory://' });
    await backend.listening;
    backend.child.kill('SIGTERM');
    expect(await backend.exited).toBe(0);
    // V8 reports a flag it does not know on stderr and carries on without it.
    expect(backend.output()).not.toMatch(/unrecognized flag/i);
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

describe('one process per embedded database', () => {
  it('refuses a second process on the same folder, naming the folder and the process; after kill -9 a restart has every acknowledged write', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-pglite-lock-'));
    const started: ReturnType<typeof spawnBackend>[] = [];
    try {
      const first = spawnBackend({ EMBEDDED_DB_DIR: dataDir });
      started.push(first);
      const owner = await signUp(await first.listening, 'locked@example.com');

      const second = spawnBackend({ EMBEDDED_DB_DIR: dataDir });
      started.push(second);
      expect(await second.exited).toBe(1);
      expect(second.output()).toContain(`The embedded database in ${dataDir} is in use by process ${first.child.pid}`);
      expect(second.output()).not.toMatch(/\n\s+at /);
      // The first one was not disturbed.
      expect((await owner.api('GET', '/Projects')).status).toBe(200);

      const names: string[] = [];
      for (let n = 0; n < 20; n++) {
        const response = await owner.api('POST', '/Projects', { body: { name: `Acknowledged ${n}` } });
        expect(response.status).toBe(201);
        names.push(response.body.data.name);
      }
      first.child.kill('SIGKILL');
      await first.exited;
      // The lock file of the killed process is still there ...
      expect(fs.existsSync(`${dataDir}.lock`)).toBe(true);

      // ... and is taken over: the next start comes up with every acknowledged write.
      const third = spawnBackend({ EMBEDDED_DB_DIR: dataDir });
      started.push(third);
      const list = await (
        await fetch(`${await third.listening}/Projects?limit=100&sort=name&order=asc`, {
          headers: { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId },
        })
      ).json();
      expect(list.data.map((project: { name: string }) => project.name).sort()).toEqual(names.sort());
      third.child.kill('SIGTERM');
      expect(await third.exited).toBe(0);
      // A clean stop removes the lock.
      expect(fs.existsSync(`${dataDir}.lock`)).toBe(false);
    } finally {
      for (const instance of started) instance.child.kill('SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(`${dataDir}.lock`, { force: true });
    }
  });
});

describe('the port', () => {
  it('in use ends the start with one line naming the port and PORT, before any migration runs', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-port-')), 'pglite');
    try {
      const backend = spawnBackend({ PORT: String(port), EMBEDDED_DB_DIR: dataDir });
      expect(await backend.exited).toBe(1);
      const lines = backend.output().trim().split('\n');
      expect(lines).toEqual([`Port ${port} is already in use (127.0.0.1:${port}). Stop the other process or set PORT in .env.`]);
      // The database was never opened, so nothing was migrated.
      expect(fs.existsSync(dataDir)).toBe(false);
    } finally {
      holder.close();
      fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
    }
  });
});

describe('SIGTERM', () => {
  /** One request on a keep-alive agent: its status, or the network error that ended it. */
  function send(agent: http.Agent, url: URL, options: { method: string; path: string; headers?: Record<string, string>; body?: string }) {
    return new Promise<{ status?: number; connection?: string; error?: string }>((resolve) => {
      const request = http.request({ agent, host: url.hostname, port: url.port, method: options.method, path: options.path, headers: options.headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection }));
      });
      request.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
      request.end(options.body);
    });
  }

  it('refuses new connections after the signal, serves what arrives on open ones with Connection: close, finishes what is in flight and exits 0', async () => {
    // bcrypt at cost 12 keeps a sign-up in flight for a while.
    const backend = spawnBackend({ EMBEDDED_DB_DIR: 'memory://', BCRYPT_COST: '12' });
    const url = new URL(await backend.listening);
    const owner = await signUp(url.origin, 'draining@example.com');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const authorized = { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId, 'content-type': 'application/json' };
    // Warm four kept-alive connections.
    await Promise.all(Array.from({ length: 4 }, () => send(agent, url, { method: 'GET', path: '/Projects', headers: authorized })));
    expect(agent.freeSockets[`${url.hostname}:${url.port}:`]?.length).toBeGreaterThan(0);

    // In flight on connections of their own, which their clients would keep open.
    const inFlightAgent = new http.Agent({ keepAlive: true, maxSockets: 3 });
    const inFlight = Array.from({ length: 3 }, (_, n) =>
      send(inFlightAgent, url, {
        method: 'POST',
        path: '/api/auth/sign-up/email',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: `in-flight-${n}@example.com`, name: 'In Flight', password: 'correct horse battery' }),
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    backend.child.kill('SIGTERM');
    while (!backend.output().includes('shutting down')) await new Promise((resolve) => setTimeout(resolve, 10));

    // After the signal, without a drain: the idle kept-alive connections are closed and new ones
    // refused; a request that still reached an open connection is served, and its connection closed.
    const after = await Promise.all(
      Array.from({ length: 8 }, (_, n) => send(agent, url, { method: 'POST', path: '/Projects', headers: authorized, body: JSON.stringify({ name: `After ${n}` }) })),
    );
    for (const result of after) {
      if (result.status !== undefined) expect(result).toEqual({ status: 201, connection: 'close' });
      else expect(['ECONNRESET', 'ECONNREFUSED', 'EPIPE']).toContain(result.error);
    }
    expect(await accepts(Number(url.port))).toBe(false);
    // Answered, and told that their connections close with the answer.
    for (const result of await Promise.all(inFlight)) expect(result).toEqual({ status: 201, connection: 'close' });
    expect(await backend.exited).toBe(0);
    agent.destroy();
    inFlightAgent.destroy();
  });

  it('after a drain, refuses new connections but serves a request on a kept-alive one (Connection: close), and closes the idle ones a moment later', async () => {
    const backend = spawnBackend({ EMBEDDED_DB_DIR: 'memory://', SHUTDOWN_DRAIN_MS: '300' });
    const url = new URL(await backend.listening);
    const owner = await signUp(url.origin, 'kept-alive@example.com');
    const authorized = { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId, 'content-type': 'application/json' };
    // Two kept-alive connections, as a proxy keeps them to each instance.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
    await Promise.all(Array.from({ length: 2 }, () => send(agent, url, { method: 'GET', path: '/Projects', headers: authorized })));
    const idle = [...(agent.freeSockets[`${url.hostname}:${url.port}:`] ?? [])];
    expect(idle).toHaveLength(2);
    const closedAt = idle.map((socket) => new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now()))));

    backend.child.kill('SIGTERM');
    while (!backend.output().includes('shutting down')) await new Promise((resolve) => setTimeout(resolve, 10));
    const stoppedAt = performance.now();
    // New connections are refused (a proxy tries another instance, even for a POST) ...
    expect(await accepts(Number(url.port))).toBe(false);
    // ... while a POST on a connection that was idle is served, not refused with a 503.
    const created = await send(agent, url, { method: 'POST', path: '/Projects', headers: authorized, body: JSON.stringify({ name: 'On a kept-alive connection' }) });
    expect(created).toEqual({ status: 201, connection: 'close' });
    // The other idle connection is closed by the server about a second after it stopped listening.
    const lastClosed = Math.max(...(await Promise.all(closedAt)));
    expect(lastClosed - stoppedAt).toBeGreaterThan(500);
    expect(await backend.exited).toBe(0);
    agent.destroy();
  });

  it('refuses connections until it is ready, then answers at once (never a 503 while starting)', async () => {
    const port = await freePort();
    const backend = spawnBackend({ EMBEDDED_DB_DIR: 'memory://', PORT: String(port) });
    let refused = 0;
    while (!(await accepts(port))) {
      refused++;
      expect(backend.child.exitCode).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The embedded database takes a moment to open and migrate, during which nothing listened.
    expect(refused).toBeGreaterThan(0);
    expect((await fetch(`http://127.0.0.1:${port}/ready`)).status).toBe(200);
    backend.child.kill('SIGTERM');
    expect(await backend.exited).toBe(0);
  });

  it('drains first: /ready answers 503 for SHUTDOWN_DRAIN_MS while every other request is still served, then stops', async () => {
    const backend = spawnBackend({ EMBEDDED_DB_DIR: 'memory://', SHUTDOWN_DRAIN_MS: '1500' });
    const url = new URL(await backend.listening);
    const owner = await signUp(url.origin, 'drained@example.com');
    const projects = () => fetch(`${url.origin}/Projects`, { headers: { authorization: `Bearer ${owner.token}`, 'x-organization-id': owner.organizationId } });
    expect((await fetch(`${url.origin}/ready`)).status).toBe(200);

    const signalled = performance.now();
    backend.child.kill('SIGTERM');
    while (!backend.output().includes('draining')) await new Promise((resolve) => setTimeout(resolve, 10));
    const ready = await fetch(`${url.origin}/ready`);
    expect(ready.status).toBe(503);
    expect((await ready.json()).error.code).toBe('SERVICE_UNAVAILABLE');
    // Still serving everything else while the proxy takes it out of rotation.
    expect((await projects()).status).toBe(200);
    expect((await fetch(`${url.origin}/health`)).status).toBe(200);

    expect(await backend.exited).toBe(0);
    expect(performance.now() - signalled).toBeGreaterThanOrEqual(1500);
  });

  it('to `npm start` (the compiled server) stops the server and frees the port', async () => {
    const build = spawnSync(process.execPath, [path.join(projectDir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: projectDir, encoding: 'utf8' });
    expect(build.status, build.stdout + build.stderr).toBe(0);
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    await new Promise((resolve) => holder.close(resolve));

    const npm = spawn('npm', ['start'], {
      cwd: projectDir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', HOST: '127.0.0.1', PORT: String(port), EMBEDDED_DB_DIR: 'memory://', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => npm.once('exit', resolve));
    try {
      let ready = false;
      for (let i = 0; i < 300 && !ready; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        ready = await fetch(`http://127.0.0.1:${port}/ready`).then((response) => response.ok, () => false);
      }
      expect(ready).toBe(true);
      npm.kill('SIGTERM');
      await exited;
      let free = false;
      for (let i = 0; i < 50 && !free; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        free = await new Promise<boolean>((resolve) => {
          const socket = net.connect(port, '127.0.0.1');
          socket.once('connect', () => {
            socket.destroy();
            resolve(false);
          });
          socket.once('error', () => resolve(true));
        });
      }
      expect(free).toBe(true);
    } finally {
      npm.kill('SIGKILL');
    }
  });
});
