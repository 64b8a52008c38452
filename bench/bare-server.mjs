// The baseline: node:http + pg, no framework, no auth. Same pool size as the example (10) and
// the same two statements its GET /Projects runs (count, then one page), for one fixed organization.
// Env: DATABASE_URL, ORG_ID, PORT (127.0.0.1 only). `pg` is the example backend's own copy.
import http from 'node:http';
import { createRequire } from 'node:module';

const pg = createRequire(new URL('../examples/saas-backend/package.json', import.meta.url))('pg');
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, idleTimeoutMillis: 30_000 });
pool.on('error', () => {});
const organizationId = process.env.ORG_ID;
const columns = '"id", "organizationId", "name", "description", "status", "createdAt", "updatedAt"';
const from = 'FROM "Project" WHERE "organizationId" = $1';

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://localhost');
  if (req.method !== 'GET' || url.pathname !== '/Projects') {
    res.writeHead(404).end();
    return;
  }
  try {
    const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 20) || 20, 1), 100);
    const { rows: countRows } = await pool.query(`SELECT count(*)::int AS total ${from}`, [organizationId]);
    const total = countRows[0]?.total ?? 0;
    const { rows } = await pool.query(
      `SELECT ${columns} ${from} ORDER BY "createdAt" DESC, "id" DESC LIMIT ${limit} OFFSET 0`,
      [organizationId],
    );
    const body = JSON.stringify({ success: true, data: rows, meta: { page: 1, limit, total, totalPages: Math.ceil(total / limit) } });
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(body);
  } catch {
    res.writeHead(500).end();
  }
});

server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`bare server on ${server.address().port}`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => server.close(() => pool.end().then(() => process.exit(0))));
}
