-- legacy-backend: the tables of an app that existed before authstrap.
-- Plain PostgreSQL 13+ (gen_random_uuid() is built in from 13). Loaded by scripts/load.mjs,
-- or by hand: psql "$DATABASE_URL" -f schema.sql -f seed.sql
--
-- On purpose, this schema is NOT shaped like an authstrap one: snake_case columns, serial and
-- bigserial keys next to a uuid key, a composite key, a CHECK constraint, nullable references,
-- ON DELETE rules, and two tables whose names clash with authstrap's auth entities
-- (`accounts` is billing, `sessions` is workshops). `authstrap add-auth` has to cope with all of it.

CREATE TABLE users (
  id          serial PRIMARY KEY,
  email       text NOT NULL UNIQUE,
  full_name   text,                                 -- nullable: early sign-ups never gave one
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE accounts (
  id             serial PRIMARY KEY,
  user_id        integer REFERENCES users (id),     -- nullable: the company's own "house" account has no owner
  plan           text NOT NULL CHECK (plan IN ('free', 'pro', 'team')),
  balance_cents  integer NOT NULL DEFAULT 0,
  created_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE accounts IS 'Billing accounts (plan and balance). Not login accounts.';
CREATE INDEX accounts_user_id_idx ON accounts (user_id);

CREATE TABLE sessions (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  title         text NOT NULL,
  starts_at     timestamptz NOT NULL,
  capacity      integer CHECK (capacity > 0),       -- NULL means no limit
  host_user_id  integer REFERENCES users (id) ON DELETE SET NULL
);
COMMENT ON TABLE sessions IS 'Workshop sessions people sign up for. Not login sessions.';
CREATE INDEX sessions_starts_at_idx ON sessions (starts_at);

CREATE TABLE invoices (
  id            bigserial PRIMARY KEY,
  account_id    integer NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  amount_cents  integer NOT NULL,
  status        text NOT NULL DEFAULT 'open',
  issued_at     timestamptz NOT NULL DEFAULT now()
);
-- The billing page lists one account's open invoices.
CREATE INDEX invoices_account_id_status_idx ON invoices (account_id, status);

-- Who attends which workshop: a composite primary key, no id column of its own.
CREATE TABLE session_attendees (
  session_id     uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  user_id        integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  registered_at  timestamptz NOT NULL DEFAULT now(),
  checked_in_at  timestamptz,                       -- NULL until they turn up
  PRIMARY KEY (session_id, user_id)
);
