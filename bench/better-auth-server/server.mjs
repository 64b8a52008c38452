// Column (c) of bench/run.mjs: what a team would write with Better Auth instead of authstrap.
// Better Auth 1.7 (pinned in package.json) on Express 5, its tables beside the example's in the
// bench database (ba_user, ba_session, ...), its routes under /api/auth. GET /Projects resolves
// the session with `auth.api.getSession` (Better Auth's own lookup, cookie cache off: the
// default), checks the caller's membership in the organization of `x-organization-id`, then
// reads the same page and total as the example, in one statement with the same SQL shape.
// Env: DATABASE_URL, PORT (127.0.0.1 only), AUTH_SECRET. Started by bench/run.mjs.
import express from 'express';
import pg from 'pg';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { fromNodeHeaders, toNodeHandler } from 'better-auth/node';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, idleTimeoutMillis: 30_000 });
pool.on('error', () => {});
const port = Number(process.env.PORT);

const options = {
  baseURL: `http://127.0.0.1:${port}`,
  secret: process.env.AUTH_SECRET,
  database: pool,
  emailAndPassword: { enabled: true },
  // Its own tables: the example's "User", "session", "account" and "verification" are authstrap's.
  user: { modelName: 'ba_user' },
  session: { modelName: 'ba_session' },
  account: { modelName: 'ba_account' },
  verification: { modelName: 'ba_verification' },
  rateLimit: { enabled: false },
  telemetry: { enabled: false },
  logger: { disabled: true },
};
const { runMigrations } = await getMigrations(options);
await runMigrations();
const auth = betterAuth(options);

const columns = '"id", "organizationId", "name", "description", "status", "createdAt", "updatedAt"';
const from = 'FROM "Project" WHERE "organizationId" = $1';

const app = express();
app.all('/api/auth/*splat', toNodeHandler(auth));
app.get('/Projects', async (req, res) => {
  const session = await auth.api.getSession({ headers: fromNodeHeaders(req.headers) });
  if (!session) return res.status(401).json({ success: false, error: { code: 'UNAUTHORIZED', message: 'Sign in first' } });
  const organizationId = req.header('x-organization-id');
  // Better Auth's user is the example's user with the same address (the bench signs both up).
  const { rows: members } = await pool.query(
    'SELECT m."role" FROM "member" m JOIN "User" u ON u."id" = m."userId" WHERE m."organizationId" = $1 AND u."email" = $2',
    [organizationId, session.user.email],
  );
  if (members.length === 0) return res.status(403).json({ success: false, error: { code: 'FORBIDDEN', message: 'Not a member' } });
  const limit = Math.min(Math.max(Number(req.query.limit ?? 20) || 20, 1), 100);
  const { rows } = await pool.query(
    `SELECT ${columns}, (SELECT count(*)::int ${from}) AS "total" ${from} ORDER BY "createdAt" DESC, "id" DESC LIMIT ${limit} OFFSET 0`,
    [organizationId],
  );
  const total = rows[0]?.total ?? 0;
  const data = rows.map(({ total: _total, ...row }) => row);
  res.json({ success: true, data, meta: { page: 1, limit, total, totalPages: Math.ceil(total / limit) } });
});

const server = app.listen(port, '127.0.0.1', () => console.log(`better-auth server on ${port}`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => server.close(() => pool.end().then(() => process.exit(0))));
}
