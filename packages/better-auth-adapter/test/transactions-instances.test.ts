import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { betterAuth } from 'better-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../../examples/saas-backend/src/server.js';
import { apiClient, authSecret, createThrowawayDatabase, postgresAdminUrl, projectDir, serviceApiKey } from '../../../examples/saas-backend/test/support/backend.js';
import { freePort } from '../../cli/test/support/example-copies.js';
import { authstrapAdapter, authstrapPassword } from '../src/index.js';

/**
 * Two backend instances on one PostgreSQL behind a real nginx, as docs/deploy.md ("Several
 * instances") has it: hashing on x-authstrap-transaction keeps every request of a transaction
 * on the instance that began it, so Better Auth's sign-ups work; balanced round-robin instead,
 * the requests of a transaction land on the other instance, which refuses them (409), and the
 * sign-up fails with nothing written.
 */
const hasNginx = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((candidate) => fs.existsSync(candidate));
// CI installs it (.ci/run); a missing nginx there must not quietly shrink the suite.
if (process.env.CI && !hasNginx) throw new Error('CI is set but nginx is not installed: .ci/run should install nginx-light');

async function startNginx(upstreams: string[], balance: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-nginx-'));
  const port = await freePort();
  const log = path.join(dir, 'access.log');
  fs.writeFileSync(
    path.join(dir, 'nginx.conf'),
    `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 256; }
http {
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  log_format upstreams '$http_x_authstrap_transaction $upstream_addr $status';
  access_log ${log} upstreams;
  upstream backends {
    ${balance}
    ${upstreams.map((upstream) => `server ${upstream};`).join('\n    ')}
    keepalive 8;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  const child: ChildProcess = spawn(hasNginx!, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'ignore' });
  // Ready once it answers on its port.
  for (let attempt = 0; attempt < 50; attempt += 1) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then(() => true, () => false)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    /** Per transaction id, the instances its requests reached. */
    instancesByTransaction() {
      const seen = new Map<string, Set<string>>();
      for (const line of fs.readFileSync(log, 'utf8').split('\n').filter(Boolean)) {
        const [id, upstream] = line.split(' ');
        if (id === '-' || !id) continue;
        seen.set(id, (seen.get(id) ?? new Set()).add(upstream!));
      }
      return seen;
    },
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe.runIf(postgresAdminUrl && hasNginx)('transactions with two instances behind nginx (PostgreSQL)', () => {
  let database: Awaited<ReturnType<typeof createThrowawayDatabase>>;
  const instances: RunningServer[] = [];

  beforeAll(async () => {
    database = await createThrowawayDatabase();
    for (let index = 0; index < 2; index += 1) {
      instances.push(
        await startServer({
          projectDir,
          env: {
            NODE_ENV: 'test', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', BCRYPT_COST: '4', DATABASE_URL: database.url,
            SERVICE_API_KEY: serviceApiKey, AUTH_SECRET: authSecret, RATE_LIMIT_API_MAX: '1000000', RATE_LIMIT_AUTH_MAX: '1000000', RATE_LIMIT_DATA_MAX: '1000000',
            MAIL_OUTBOX_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-mail-')),
          },
        }),
      );
    }
  }, 60_000);
  afterAll(async () => {
    for (const instance of instances) await instance.stop();
    await database?.drop();
  });

  const upstreams = () => instances.map((instance) => new URL(instance.url).host.replace('localhost', '127.0.0.1'));
  const makeAuth = (baseUrl: string) =>
    betterAuth({
      baseURL: 'http://localhost:3100',
      secret: authSecret,
      database: authstrapAdapter({ baseUrl, serviceKey: serviceApiKey }),
      emailAndPassword: { enabled: true, password: authstrapPassword({ cost: 4 }) },
      logger: { disabled: true },
    });
  const usersLike = async (baseUrl: string, prefix: string) =>
    (await apiClient(baseUrl, { token: serviceApiKey })('GET', `/Users?where=${encodeURIComponent(JSON.stringify([{ field: 'email', operator: 'starts_with', value: prefix }]))}&limit=100`)).body.data as unknown[];

  it('hashing on the header: every request of a transaction reaches one instance, and every sign-up works', async () => {
    const nginx = await startNginx(upstreams(), 'hash $http_x_authstrap_transaction;');
    try {
      const auth = makeAuth(nginx.url);
      const instancesUsed = () => new Set([...nginx.instancesByTransaction().values()].map((reached) => [...reached][0])).size;
      // Eight sign-ups, and more until both instances have taken one: the transaction ids are
      // random, so eight all hash to one instance once in 128 runs; 24 once in eight million.
      let signedUp = 0;
      while (signedUp < 8 || (instancesUsed() < 2 && signedUp < 24)) {
        await auth.api.signUpEmail({ body: { email: `hashed-${signedUp}@example.com`, password: 'correct horse battery', name: 'Hashed' } });
        signedUp += 1;
      }
      expect(await usersLike(nginx.url, 'hashed-')).toHaveLength(signedUp);
      const seen = nginx.instancesByTransaction();
      expect(seen.size).toBe(signedUp);
      for (const reached of seen.values()) expect(reached.size).toBe(1);
      // Both instances took transactions.
      expect(instancesUsed()).toBe(2);
    } finally {
      await nginx.stop();
    }
  });

  it('balanced round-robin instead: the other instance refuses the requests, and nothing is half written', async () => {
    const nginx = await startNginx(upstreams(), '');
    try {
      const auth = makeAuth(nginx.url);
      const outcomes = [];
      for (let index = 0; index < 4; index += 1) {
        outcomes.push(await auth.api.signUpEmail({ body: { email: `spread-${index}@example.com`, password: 'correct horse battery', name: 'Spread' } }).then(() => 'signed up', () => 'failed'));
      }
      expect(outcomes).toEqual(['failed', 'failed', 'failed', 'failed']);
      expect(await usersLike(nginx.url, 'spread-')).toEqual([]);
    } finally {
      await nginx.stop();
    }
  });
});
