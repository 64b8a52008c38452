import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BetterAuthOptions } from 'better-auth';
import { getAuthTables } from 'better-auth/db';
import { allowedOrigin, authSecret, createThrowawayDatabase, projectDir as exampleDir, serviceApiKey, type DatabaseKind } from '../../../../examples/saas-backend/test/support/backend.js';
import { spawnBackend, type BackendProcess } from '../../../../examples/saas-backend/test/support/process.js';
import type { RunningServer } from '../../../../examples/saas-backend/src/server.js';
import { cliPath } from '../../../cli/test/support/cli.js';
import { freePort } from '../../../cli/test/support/example-copies.js';
import { betterAuthSchema, type AuthstrapSchemaPart } from '../../src/schema.js';


/**
 * A copy of the example backend whose schema follows Better Auth's options, as a project using
 * the adapter keeps it: `createSchema`'s better-auth.schema.json written into the project,
 * `authstrap generate` (dropping what the options no longer have), and a restart, which applies
 * the new migrations. Each step runs only when the options' tables changed.
 *
 * `inProcess`: the copy's server runs in this process (`running`, whose `db.asOwner` seeds what
 * no route writes, such as a verified domain). Its modules load once, so such a backend follows
 * one schema only.
 */
export function schemaFollowingBackend(kind: DatabaseKind, extraEnv: Record<string, string> = {}, options: { inProcess?: boolean } = {}) {
  let dir: string | undefined;
  let database: { url: string; drop(): Promise<void> } | undefined;
  let running: BackendProcess | undefined;
  let inProcess: RunningServer | undefined;
  let url: string | undefined;
  let written: string | undefined;
  let generations = 0;

  let port: number | undefined;

  async function prepare() {
    // One port for every restart: the adapter Better Auth's suites hold keeps working.
    port ??= await freePort();
    dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-better-auth-suites-')), 'saas-backend');
    const skipped = new Set(['node_modules', '.data', 'test', '.env', 'dist']);
    fs.cpSync(exampleDir, dir, { recursive: true, filter: (source) => !skipped.has(path.relative(exampleDir, source).split(path.sep)[0]!) });
    fs.symlinkSync(path.join(exampleDir, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    if (kind === 'postgres') database = await createThrowawayDatabase();
  }

  /** Drops the database and removes the copy. */
  async function discard() {
    await database?.drop();
    database = undefined;
    if (dir) fs.rmSync(path.dirname(dir), { recursive: true, force: true });
    dir = undefined;
  }

  async function stopProcess() {
    await inProcess?.stop();
    inProcess = undefined;
    if (!running) return;
    running.child.kill('SIGTERM');
    await running.exited;
    running = undefined;
  }

  async function migrateTo(part: AuthstrapSchemaPart) {
    if (!dir) await prepare();
    const schema = `${JSON.stringify(part, null, 2)}\n`;
    if (schema === written && running) return;
    const generate = () => {
      fs.writeFileSync(path.join(dir!, 'better-auth.schema.json'), schema);
      execFileSync(process.execPath, [cliPath, 'generate', '--allow-drop', '--allow-type-change'], { cwd: dir!, stdio: 'pipe', timeout: 60_000 });
    };
    try {
      generate();
    } catch (error) {
      // A new required column on a table that has rows: a project would choose a default; the
      // suites' tables hold only test rows, so start again from an empty project and database.
      if (!String((error as { stderr?: Buffer }).stderr ?? '').includes('is new and required')) throw error;
      await stopProcess();
      await discard();
      await prepare();
      generate();
    }
    written = schema;
    generations += 1;
    await stopProcess();
    const env = {
      LOG_LEVEL: 'info',
      PORT: String(port),
      SERVICE_API_KEY: serviceApiKey,
      AUTH_SECRET: authSecret,
      ALLOWED_ORIGINS: allowedOrigin,
      RATE_LIMIT_API_MAX: '1000000',
      RATE_LIMIT_AUTH_MAX: '1000000',
      RATE_LIMIT_DATA_MAX: '1000000',
      ...extraEnv,
      ...(database ? { DATABASE_URL: database.url } : { EMBEDDED_DB_DIR: path.join(dir!, '.data') }),
    };
    if (options.inProcess) {
      if (generations > 1) throw new Error('a backend in this process follows one schema: its modules are loaded once');
      const { startServer } = (await import(pathToFileURL(path.join(dir!, 'src/server.ts')).href)) as { startServer: typeof import('../../../../examples/saas-backend/src/server.js').startServer };
      inProcess = await startServer({ projectDir: dir!, env: { NODE_ENV: 'test', HOST: '127.0.0.1', BCRYPT_COST: '4', ...env, LOG_LEVEL: 'silent' } });
      url = inProcess.url;
      return;
    }
    running = spawnBackend(env, dir);
    url = await running.listening;
  }

  return {
    /** The backend's address: the same across restarts (once `migrate` has run). */
    get url() {
      return url;
    },
    /** The server, when it runs in this process (`inProcess`). */
    get running() {
      return inProcess;
    },
    get generations() {
      return generations;
    },
    /** The project folder of the copy (once `migrate` has run). */
    get dir() {
      return dir;
    },
    /** Makes the backend's tables those of `options`: the suites' runMigrations. */
    migrate(options: BetterAuthOptions) {
      return migrateTo(betterAuthSchema(getAuthTables(options)));
    },
    /** Makes the backend's tables those of the project's schema with `part` as its better-auth.schema.json. */
    migrateTo,
    async stop() {
      await stopProcess();
      await discard();
    },
  };
}
