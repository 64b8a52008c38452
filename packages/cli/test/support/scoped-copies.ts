import fs from 'node:fs';
import path from 'node:path';
import { runCli } from './cli.js';

/**
 * What the row-level security and rules tests add to their copies of the example: routes of the
 * user's own in src/extensions (where a hand-written route lives), and test-only routes that show
 * the database as it is. Test-only means the service key's: a test's own copy, never a real backend.
 */
export const scopedExtension = `import { Router, type Request } from 'express';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { withScope } from '../db/scope.js';
import { asCaller, tenantScoped } from '../generated/guards/tenant.guard.js';
import { isServiceKeyRequest } from '../http/session-token.js';
import type { AuthService } from '../auth/auth-service.js';

/** The tables a test may look into or switch row-level security off for. */
const tables = new Set(['Project', 'Task', 'Invoice', 'InvoiceLine', 'Note']);

export function extensionRouter(deps: { config: Config; db: Database; auth: AuthService }): Router {
  const router = Router();
  const trusted = (req: Request) => {
    if (!isServiceKeyRequest(req, deps.config.serviceApiKey)) throw new Error('test routes are for the service key');
    const table = String(req.params.table);
    if (!tables.has(table)) throw new Error('not a test table');
    return table;
  };

  // A route of the user's own that forgets the organization filter: only row-level security
  // keeps other organizations' rows out of its answer.
  const reports = Router();
  reports.get('/projects', async (req, res) => {
    const { rows } = await asCaller(deps.db, req).query<{ name: string }>('SELECT "name" FROM "Project" ORDER BY "name"');
    res.json({ names: rows.map((row) => row.name) });
  });
  router.use('/reports', ...tenantScoped(deps, reports));

  // Statements with no scope at all, as a script or a careless route would send them.
  router.get('/raw/:table', async (req, res) => {
    const { rows } = await deps.db.query('SELECT * FROM "' + trusted(req) + '"');
    res.json({ rows });
  });
  router.post('/raw/:table/write', async (req, res) => {
    const table = trusted(req);
    const attempt = async (text: string, params: unknown[]) =>
      deps.db.query(text, params).then((result) => ({ rowCount: result.rowCount }), (error: { code?: string }) => ({ error: error.code }));
    res.json({
      insert: await attempt('INSERT INTO "Project" ("organizationId", "name") VALUES ($1, $2)', [req.body.organizationId, 'Planted']),
      update: await attempt('UPDATE "' + table + '" SET "updatedAt" = now()', []),
      delete: await attempt('DELETE FROM "' + table + '"', []),
    });
  });

  // A statement without the generated code's conditions, under a scope: the policies alone decide.
  router.post('/test/under-scope', async (req, res) => {
    if (!isServiceKeyRequest(req, deps.config.serviceApiKey)) throw new Error('test routes are for the service key');
    const { scope, text, params } = req.body as { scope: { organizationId: string; userId: string; role: string }; text: string; params: unknown[] };
    const result = await withScope(deps.db, scope).query(text, params).then(
      ({ rows, rowCount }) => ({ rows, rowCount }),
      (error: { code?: string; message?: string }) => ({ error: error.code, message: error.message }),
    );
    res.json(result);
  });

  // The database as it is, past row-level security (the owner's maintenance transaction).
  router.get('/test/rows/:table', async (req, res) => {
    const table = trusted(req);
    const { rows } = await deps.db.asOwner((tx) => tx.query('SELECT * FROM "' + table + '" ORDER BY "id"'));
    res.json({ rows });
  });
  router.post('/test/row-security/:table/off', async (req, res) => {
    const table = trusted(req);
    await deps.db.asOwner((tx) => tx.query('ALTER TABLE "' + table + '" NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY'));
    res.json({ off: table });
  });
  return router;
}
`;

/** Writes `schema` and the scoped extension into a copy of the example, and generates it. */
export function prepareScopedCopy(dir: string, schema: string): void {
  fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), schema);
  fs.writeFileSync(path.join(dir, 'src/extensions/index.ts'), scopedExtension);
  const generate = runCli(['generate', '--allow-drop'], dir);
  if (generate.status !== 0) throw new Error(`generate failed:\n${generate.output}`);
}

/** A small HTTP client for a test backend: JSON in, status and JSON out. */
export function client(baseUrl: string, token?: string, organizationId?: string) {
  return async (method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    if (organizationId) headers['x-organization-id'] = organizationId;
    const response = await fetch(`${baseUrl}${route}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
}

export interface Person {
  id: string;
  email: string;
  token: string;
  /** Their own organization (made at sign-up). */
  organizationId: string;
}

/** Signs up a person (addresses need no confirming outside production). */
export async function signUp(baseUrl: string, email: string): Promise<Person> {
  const answer = await client(baseUrl)('POST', '/api/auth/sign-up/email', { email, name: email.split('@')[0], password: 'correct horse battery' });
  if (answer.status !== 201) throw new Error(`sign-up of ${email}: ${answer.status} ${JSON.stringify(answer.body)}`);
  const session = await client(baseUrl, answer.body.data.token)('GET', '/api/auth/get-session');
  return { id: answer.body.data.user.id, email, token: answer.body.data.token, organizationId: session.body.data.session.activeOrganizationId };
}

/** Makes `person` a member of `organizationId` with `role`, as the trusted server (the service key) may. */
export async function addToOrganization(baseUrl: string, serviceApiKey: string, person: Person, organizationId: string, role: string): Promise<void> {
  const answer = await client(baseUrl, serviceApiKey)('POST', '/members', { organizationId, userId: person.id, role });
  if (answer.status !== 201) throw new Error(`adding ${person.email}: ${answer.status} ${JSON.stringify(answer.body)}`);
}
