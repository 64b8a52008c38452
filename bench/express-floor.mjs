// (d), the floor under (a): Express 5 and pg with nothing of authstrap's pipeline around them. One
// route, GET /Projects, runs the example's own list statement (the text its repository builds for
// `?limit=20`, built once here from the compiled example) for one fixed organization and sends
// the same envelope, byte for byte. No auth, no caller check, no middleware, no query parsing per
// request. So (a) / (d) is what the pipeline itself costs (guards, middleware, the caller CTE,
// building the SQL per request), and (d) / (b) is what Express and the JSON statement cost.
// The server is made as (a)'s is, with the app's prototypes (src/http/app-prototypes.ts): without
// them the floor would carry a cost that (a) no longer pays (bench/README.md).
// Env: DATABASE_URL, ORG_ID, PORT (127.0.0.1 only). Needs the example built (dist/).
import http from 'node:http';
import { createRequire } from 'node:module';

const exampleUrl = new URL('../examples/saas-backend/', import.meta.url);
const requireFromExample = createRequire(new URL('package.json', exampleUrl));
const pg = requireFromExample('pg');
const express = requireFromExample('express');
const { parseListQuery } = await import(new URL('dist/http/list-query.js', exampleUrl).href);
const { appPrototypes } = await import(new URL('dist/http/app-prototypes.js', exampleUrl).href);
const { projectListSpec, projectRepository } = await import(new URL('dist/generated/Project/project.repository.js', exampleUrl).href);

const organizationId = process.env.ORG_ID;
const query = parseListQuery({ limit: '20' }, projectListSpec);

// The repository is asked once, through a stand-in database that only keeps the statement. (a)
// reads the organization from its transaction's scope (authstrap.organization_id(), set by the
// caller lookup in the same round trip); here, with no caller, it is one more parameter.
let statement;
await projectRepository.listJson(
  {
    async query(text, params) {
      const values = [...params, organizationId];
      statement = { name: 'list', text: text.replaceAll('authstrap.organization_id()', `$${values.length}::uuid`), values };
      return { rows: [{ total: 0, json: '[]' }], rowCount: 1 };
    },
  },
  query,
);

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
pool.on('error', () => {});

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.get('/Projects', async (_req, res) => {
  try {
    const { rows } = await pool.query(statement);
    const { total, json } = rows[0];
    const meta = { page: 1, limit: query.limit, total, totalPages: Math.ceil(total / query.limit) };
    res.type('json').send(`{"success":true,"data":${json},"meta":${JSON.stringify(meta)}}`);
  } catch {
    res.status(500).end();
  }
});

const prototypes = appPrototypes();
prototypes.adopt(app);
const server = http.createServer({ IncomingMessage: prototypes.IncomingMessage, ServerResponse: prototypes.ServerResponse }, app);
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`express floor on ${server.address().port}`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => server.close(() => pool.end().then(() => process.exit(0))));
}
