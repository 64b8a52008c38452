// legacy-backend: the app's own HTTP API, written before authstrap was anywhere near it.
// Plain Express 5 over pg, hand-written SQL, snake_case JSON straight from the rows.
//
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/legacy PORT=4000 node src/server.js
import express from 'express';
import pg from 'pg';

const { DATABASE_URL } = process.env;
const PORT = Number(process.env.PORT ?? 4000);
if (!DATABASE_URL) {
  console.error('legacy-backend: set DATABASE_URL, e.g. postgresql://postgres@127.0.0.1:5432/legacy');
  process.exit(1);
}

const pool = new pg.Pool({ connectionString: DATABASE_URL });
const app = express();
app.use(express.json());

// An error with a status the handler below turns into that response.
function httpError(status, message) {
  return Object.assign(new Error(message), { status });
}

// Route ids come from the URL: check them here rather than let PostgreSQL reject the cast (a 500).
function intParam(value, name) {
  if (!/^\d{1,9}$/.test(value)) throw httpError(400, `${name} must be a positive integer`);
  return Number(value);
}

function optionalText(value, name) {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw httpError(400, `${name} must be a string`);
  return value.trim() || null;
}

app.get('/health', (_req, res) => {
  res.json({ ok: true });
});

app.get('/users', async (_req, res) => {
  const { rows } = await pool.query('SELECT id, email, full_name, created_at FROM users ORDER BY id');
  res.json(rows);
});

app.get('/users/:id', async (req, res) => {
  const id = intParam(req.params.id, 'id');
  const { rows } = await pool.query('SELECT id, email, full_name, created_at FROM users WHERE id = $1', [id]);
  if (rows.length === 0) throw httpError(404, 'user not found');
  res.json(rows[0]);
});

// The app's own insert. It names only the columns it knows about: whatever authstrap add-auth
// adds to `users` later must have a default, or this statement breaks.
app.post('/users', async (req, res) => {
  const body = req.body ?? {};
  if (typeof body.email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(body.email)) {
    throw httpError(400, 'email is required and must be an email address');
  }
  const fullName = optionalText(body.full_name, 'full_name');
  const { rows } = await pool.query(
    'INSERT INTO users (email, full_name) VALUES ($1, $2) RETURNING id, email, full_name, created_at',
    [body.email.trim().toLowerCase(), fullName],
  );
  res.status(201).json(rows[0]);
});

// Billing accounts, with the owner's email (the house account has none).
app.get('/accounts', async (_req, res) => {
  const { rows } = await pool.query(
    `SELECT a.id, a.user_id, u.email AS user_email, a.plan, a.balance_cents, a.created_at
       FROM accounts a LEFT JOIN users u ON u.id = a.user_id
      ORDER BY a.id`,
  );
  res.json(rows);
});

// The table is `sessions`; the path says what they are, so nobody mistakes them for logins.
app.get('/workshop-sessions', async (_req, res) => {
  const { rows } = await pool.query(
    `SELECT s.id, s.title, s.starts_at, s.capacity, s.host_user_id,
            (SELECT count(*)::int FROM session_attendees sa WHERE sa.session_id = s.id) AS attendee_count
       FROM sessions s
      ORDER BY s.starts_at, s.id`,
  );
  res.json(rows);
});

app.post('/workshop-sessions', async (req, res) => {
  const body = req.body ?? {};
  const title = optionalText(body.title, 'title');
  if (!title) throw httpError(400, 'title is required');
  if (typeof body.starts_at !== 'string' || Number.isNaN(Date.parse(body.starts_at))) {
    throw httpError(400, 'starts_at is required and must be a date-time (ISO 8601)');
  }
  const capacity = body.capacity ?? null;
  if (capacity !== null && !(Number.isInteger(capacity) && capacity > 0)) {
    throw httpError(400, 'capacity must be a positive integer or null');
  }
  const host = body.host_user_id ?? null;
  if (host !== null && !(Number.isInteger(host) && host > 0)) {
    throw httpError(400, 'host_user_id must be a user id or null');
  }
  const { rows } = await pool.query(
    `INSERT INTO sessions (title, starts_at, capacity, host_user_id) VALUES ($1, $2, $3, $4)
     RETURNING id, title, starts_at, capacity, host_user_id`,
    [title, new Date(body.starts_at), capacity, host],
  );
  res.status(201).json(rows[0]);
});

app.use((_req, res) => {
  res.status(404).json({ error: 'not found' });
});

// Express 5 passes rejected promises of async handlers here.
app.use((err, _req, res, _next) => {
  if (err.code === '23505') return res.status(409).json({ error: 'already exists' }); // unique_violation
  if (err.code === '23503') return res.status(400).json({ error: 'a referenced row does not exist' }); // foreign_key_violation
  if (err.type === 'entity.parse.failed') return res.status(400).json({ error: 'malformed JSON body' });
  // express.json() sets status 400/413 on other bad bodies; our own httpError sets the rest.
  const status = Number.isInteger(err.status) && err.status >= 400 && err.status < 500 ? err.status : 500;
  if (status === 500) console.error(err);
  res.status(status).json({ error: status === 500 ? 'internal error' : err.message });
});

// Express 5 hands a listen error (port in use) to this callback.
const server = app.listen(PORT, (error) => {
  if (error) {
    console.error(`legacy-backend: cannot listen on port ${PORT}: ${error.message}`);
    process.exit(1);
  }
  console.log(`legacy-backend listening on http://localhost:${PORT}`);
});

// Finish the requests in flight, close the pool, then exit (docker stop, CI, Ctrl-C).
function shutdown(signal) {
  console.log(`${signal}: shutting down`);
  server.close(async () => {
    await pool.end();
    process.exit(0);
  });
  // Keep-alive connections can hold close() open; do not wait forever.
  setTimeout(() => process.exit(1), 10_000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
