import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer } from '../src/server.js';
import { postgresAdminUrl, projectDir, serviceApiKey } from './support/backend.js';

/**
 * A managed PostgreSQL gives its user no superuser: the backend must start on a database that user
 * owns, act as `authstrap_app` there, and, when that user may not make or grant the role, stop with
 * the exact statements a database administrator must run, and then start.
 */

const admin = async <T>(work: (client: pg.Client) => Promise<T>, database?: string): Promise<T> => {
  const url = new URL(postgresAdminUrl!);
  if (database) url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
};

describe.runIf(postgresAdminUrl)('the database role on a PostgreSQL where the user is not a superuser', () => {
  const made: { user: string; database: string }[] = [];
  // Mail goes to a folder (no SMTP here): one of the test's own.
  const mailDir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-roles-mail-'));

  /** A login user that owns a fresh database, as a managed service hands one out. */
  async function ownedDatabase(attributes: string) {
    const suffix = randomBytes(5).toString('hex');
    const user = `authstrap_owner_${suffix}`;
    const database = `authstrap_test_roles_${suffix}`;
    await admin(async (client) => {
      await client.query(`CREATE ROLE ${user} LOGIN PASSWORD 'owner-password' NOSUPERUSER ${attributes}`);
      await client.query(`CREATE DATABASE ${database} OWNER ${user}`);
    });
    made.push({ user, database });
    const url = new URL(postgresAdminUrl!);
    url.username = user;
    url.password = 'owner-password';
    url.pathname = `/${database}`;
    return { user, database, url: url.toString() };
  }

  const start = (databaseUrl: string) =>
    startServer({
      projectDir,
      env: { NODE_ENV: 'test', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', BCRYPT_COST: '4', SERVICE_API_KEY: serviceApiKey, AUTH_SECRET: 'x'.repeat(32), ALLOWED_ORIGINS: 'http://localhost:5173', DATABASE_URL: databaseUrl, MAIL_OUTBOX_DIR: mailDir },
    });

  afterAll(async () => {
    fs.rmSync(mailDir, { recursive: true, force: true });
    for (const { user, database } of made) {
      await admin(async (client) => {
        await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await client.query(`DROP ROLE IF EXISTS ${user}`);
      });
    }
  });

  it('stops a user who may not grant itself the role with the statement to run, then starts once it has run', async () => {
    // The role exists on this server (another database made it, or an administrator did); the user may not grant it.
    await admin((client) => client.query(`DO $$ BEGIN CREATE ROLE authstrap_app NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`));
    const { user, url } = await ownedDatabase('NOCREATEROLE');
    const refused = await start(url).then(
      (server) => server.stop().then(() => 'started'),
      (error: Error) => error.message,
    );
    expect(refused).toContain(`Ask a database administrator to run: GRANT authstrap_app TO ${user}; then start the backend again`);
    await admin((client) => client.query(`GRANT authstrap_app TO ${user}`));

    const server = await start(url);
    try {
      const signUp = await fetch(`${server.url}/api/auth/sign-up/email`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'ada@example.com', name: 'Ada', password: 'correct horse battery' }),
      }).then((response) => response.json());
      const created = await fetch(`${server.url}/Projects`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${signUp.data.token}` },
        body: JSON.stringify({ name: 'Managed' }),
      });
      expect(created.status).toBe(201);
      // The owner, a plain user, is held to the policies too (FORCE): without the maintenance setting it sees nothing.
      const owner = new pg.Client({ connectionString: url });
      await owner.connect();
      try {
        expect((await owner.query('SELECT count(*)::int AS n FROM "Project"')).rows[0]).toEqual({ n: 0 });
        await owner.query(`SELECT set_config('authstrap.maintenance', 'on', false)`);
        expect((await owner.query('SELECT "name" FROM "Project"')).rows).toEqual([{ name: 'Managed' }]);
      } finally {
        await owner.end();
      }
    } finally {
      await server.stop();
    }
  });

  it('starts without help for a user who may create roles (CREATEROLE, as managed services give)', async () => {
    const { url } = await ownedDatabase('CREATEROLE');
    const server = await start(url);
    try {
      const ready = await fetch(`${server.url}/ready`).then((response) => response.json());
      expect(ready).toMatchObject({ success: true, data: { status: 'ready' } });
    } finally {
      await server.stop();
    }
  });
});
