// (f) The floor: what Node needs to do the example's whole job for its authenticated, tenant-scoped
// list and create, written by hand on node:http and pg, one named (prepared) statement each. It
// looks the bearer's session up by its SHA-256, checks the membership of x-organization-id, and
// then counts and pages (GET /Projects?limit=) or inserts (POST /Projects {name}) in the same
// statement, with PostgreSQL writing the JSON, which the server splices into the envelope as text.
// It validates nothing else: no other query parameter, no body schema, no rate limit, no headers
// beyond the content type. Not the example's second wall either (row-level security): a floor.
// Env: DATABASE_URL, PORT (127.0.0.1 only). `pg` is the example backend's own copy, same pool size.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';

const pg = createRequire(new URL('../examples/saas-backend/package.json', import.meta.url))('pg');
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, idleTimeoutMillis: 30_000 });
pool.on('error', () => {});

/** A timestamp as the example writes it (UTC, milliseconds), for the years it will meet here. */
const iso = (column) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** A project's columns as the API sends them, for row_to_json. */
const columns = `"id", "organizationId", "name", "description", "status", ${iso('"createdAt"')} AS "createdAt", ${iso('"updatedAt"')} AS "updatedAt"`;
const caller = `FROM "session" s JOIN "member" m ON m."userId" = s."userId" AND m."organizationId" = $2 WHERE s."token" = $1 AND s."expiresAt" > now()`;

/** The caller, the total and the page, in one statement: no row when the caller may not. */
const listStatement = {
  name: 'floor_list',
  text: `SELECT (SELECT count(*)::int FROM "Project" WHERE "organizationId" = $2) AS "total",
           array_to_json(ARRAY(SELECT row_to_json(r) FROM (SELECT ${columns} FROM "Project" WHERE "organizationId" = $2 ORDER BY "createdAt" DESC, "id" DESC LIMIT $3) r))::text AS "page"
         ${caller}`,
};

/** The insert, made only when the caller is a member, and the new row's JSON. */
const createStatement = {
  name: 'floor_create',
  text: `WITH inserted AS (INSERT INTO "Project" ("organizationId", "name") SELECT $2, $3 ${caller} RETURNING *)
         SELECT row_to_json(r)::text AS "record" FROM (SELECT ${columns} FROM inserted) r`,
};

const tokenOf = (req) => {
  const header = req.headers.authorization ?? '';
  return header.startsWith('Bearer ') ? createHash('sha256').update(header.slice(7)).digest('hex') : '';
};
const refuse = (res) => res.writeHead(403, { 'content-type': 'application/json; charset=utf-8' }).end('{"success":false,"error":{"code":"FORBIDDEN","message":"Not a member"}}');

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  // For the bench to know it is up.
  if (url.pathname === '/health') return res.writeHead(200).end();
  if (url.pathname !== '/Projects') return res.writeHead(404).end();
  const organizationId = req.headers['x-organization-id'];
  if (req.method === 'GET') {
    const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 20) || 20, 1), 100);
    pool.query({ ...listStatement, values: [tokenOf(req), organizationId, limit] }).then(
      ({ rows }) => {
        if (rows.length === 0) return refuse(res);
        const { total, page } = rows[0];
        const body = `{"success":true,"data":${page},"meta":{"page":1,"limit":${limit},"total":${total},"totalPages":${Math.ceil(total / limit)}}}`;
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(body);
      },
      () => res.writeHead(500).end(),
    );
    return;
  }
  if (req.method === 'POST') {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      let name;
      try {
        name = JSON.parse(text).name;
      } catch {
        return res.writeHead(400).end();
      }
      pool.query({ ...createStatement, values: [tokenOf(req), organizationId, name] }).then(
        ({ rows }) => (rows.length === 0 ? refuse(res) : res.writeHead(201, { 'content-type': 'application/json; charset=utf-8' }).end(`{"success":true,"data":${rows[0].record}}`)),
        () => res.writeHead(500).end(),
      );
    });
    return;
  }
  res.writeHead(405).end();
});

server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`floor server on ${server.address().port}`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => server.close(() => pool.end().then(() => process.exit(0))));
}
