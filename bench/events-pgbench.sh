#!/usr/bin/env bash
# PostgreSQL's side of the write cost of events: the statements of one POST /Projects (the scope,
# the event context, the INSERT, in one transaction as the app role), with the Project table's
# event trigger enabled and disabled, in alternating runs on a throwaway database made from a
# migration directory. Then the same INSERT 5,000 times in one session, the tables emptied before
# each run, for the cost of one write in microseconds (steadier than tps on a shared machine).
# Then whole transactions, 3,000 in one session (a procedure that commits after each write, as
# the backend does; without a client's round trips, so it varies by about a microsecond): what a
# transaction costs with the trigger off, with the generated function, and with each function
# file of BENCH_VARIANTS in its place (bench/events-variants/, which says what they leave out).
# Needs pgbench and psql, and a PostgreSQL that trusts the user.
#
#   bench/events-pgbench.sh [migrations dir] [database]
#   BENCH_CLIENTS (10), BENCH_SECONDS (5), BENCH_PAIRS (3), BENCH_LOOPS (7), PGHOST (127.0.0.1), PGUSER (postgres)
#   BENCH_VARIANTS="bench/events-variants/insert-only.sql bench/events-variants/with-record.sql ..." 
set -euo pipefail
migrations=${1:-examples/saas-backend/migrations}
database=${2:-authstrap_events_pgbench}
clients=${BENCH_CLIENTS:-10}
seconds=${BENCH_SECONDS:-5}
pairs=${BENCH_PAIRS:-3}
export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres}

. "$(dirname "$0")/lib/events-database.sh"
events_database "$migrations" "$database"

script=$(mktemp)
trap 'rm -f "$script"' EXIT
cat >"$script" <<'SQL'
BEGIN;
SET LOCAL ROLE authstrap_app;
SELECT set_config('authstrap.organization_id', '00000000-0000-4000-8000-0000000000bb', true), set_config('authstrap.user_id', '00000000-0000-4000-8000-0000000000aa', true), set_config('authstrap.role', 'owner', true);
SELECT set_config('authstrap.request', '{"requestId":"0f6c2a1e-6f1e-4d59-9a57-3c1d3b0e1a2b","ipAddress":"127.0.0.1","userAgent":"pgbench"}', true);
INSERT INTO "Project" ("name", "description", "organizationId") VALUES ('Bench project', 'written by pgbench', authstrap.organization_id()) RETURNING *;
COMMIT;
SQL

run() {
  psql -qX -d "$database" -c "ALTER TABLE \"Project\" $1 TRIGGER \"authstrap_events\"" >/dev/null
  local tps
  tps=$(pgbench -n -M prepared -c "$clients" -j 2 -T "$seconds" -f "$script" "$database" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  echo "$2 $tps"
}
for _ in $(seq "$pairs"); do
  run DISABLE off
  run ENABLE events
done | awk '{ print; sum[$1] += $2; n[$1]++ } END { printf "mean tps: off %.0f, events %.0f, events/off %.3f\n", sum["off"]/n["off"], sum["events"]/n["events"], sum["events"]/sum["off"] }'
echo "events recorded: $(psql -qAtX -d "$database" -c 'SELECT count(*) FROM "authstrap_event" WHERE "type" = '"'project.created'")"

cat >"$script" <<'SQL'
BEGIN;
SET LOCAL ROLE authstrap_app;
SELECT set_config('authstrap.organization_id', '00000000-0000-4000-8000-0000000000bb', true), set_config('authstrap.user_id', '00000000-0000-4000-8000-0000000000aa', true), set_config('authstrap.role', 'owner', true), set_config('authstrap.request', '{"requestId":"0f6c2a1e-6f1e-4d59-9a57-3c1d3b0e1a2b","ipAddress":"127.0.0.1","userAgent":"pgbench"}', true);
DO $$
DECLARE started timestamptz := clock_timestamp();
BEGIN
  FOR i IN 1..5000 LOOP
    INSERT INTO "Project" ("name", "description", "organizationId") VALUES ('Bench project', 'written by pgbench', authstrap.organization_id());
  END LOOP;
  RAISE NOTICE 'microseconds per write: %', round(extract(epoch FROM clock_timestamp() - started) * 1e6 / 5000, 1);
END $$;
COMMIT;
SQL
loop() {
  psql -qX -d "$database" -c 'TRUNCATE "Project", "authstrap_event", "authstrap_outbox" CASCADE' -c "ALTER TABLE \"Project\" $1 TRIGGER \"authstrap_events\"" >/dev/null 2>&1
  echo "$2 $(psql -qX -d "$database" -f "$script" 2>&1 | sed -n 's/.*microseconds per write: //p')"
}
for _ in $(seq "${BENCH_LOOPS:-7}"); do
  loop DISABLE off
  loop ENABLE events
done | sort -k2 -n | awk '{ v[$1] = v[$1] " " $2; n[$1]++ } END { for (k in v) { split(substr(v[k], 2), a, " "); printf "microseconds per write, %s: median %s (of%s)\n", k, a[int((n[k] + 1) / 2)], v[k] } }'

# Whole transactions in one session. The first 200 are not counted: they fill the session's caches.
psql -qX -v ON_ERROR_STOP=1 -d "$database" >/dev/null <<'SQL'
CREATE OR REPLACE PROCEDURE public.bench_transactions(n integer) LANGUAGE plpgsql AS $$
DECLARE started timestamptz;
BEGIN
  FOR i IN 1..n LOOP
    IF i = 201 THEN started := clock_timestamp(); END IF;
    EXECUTE 'SET LOCAL ROLE authstrap_app';
    PERFORM set_config('authstrap.organization_id', '00000000-0000-4000-8000-0000000000bb', true), set_config('authstrap.user_id', '00000000-0000-4000-8000-0000000000aa', true), set_config('authstrap.role', 'owner', true), set_config('authstrap.request', '{"requestId":"0f6c2a1e-6f1e-4d59-9a57-3c1d3b0e1a2b","ipAddress":"127.0.0.1","userAgent":"pgbench"}', true);
    INSERT INTO "Project" ("name", "description", "organizationId") VALUES ('Bench project', 'written by pgbench', authstrap.organization_id());
    COMMIT;
  END LOOP;
  RAISE NOTICE 'microseconds per transaction: %', round(extract(epoch FROM clock_timestamp() - started) * 1e6 / (n - 200), 1);
END $$;
SQL
generated=$(mktemp)
trap 'rm -f "$script" "$generated"' EXIT
sed -n '/^CREATE OR REPLACE FUNCTION authstrap.data_event/,/^\$\$;/p' "$migrations"/*.sql >"$generated"
transactions() {
  if [ "$1" = off ]; then
    psql -qX -d "$database" -c 'ALTER TABLE "Project" DISABLE TRIGGER "authstrap_events"' >/dev/null
  else
    psql -qX -v ON_ERROR_STOP=1 -d "$database" -c 'ALTER TABLE "Project" ENABLE TRIGGER "authstrap_events"' -f "$1" >/dev/null
  fi
  psql -qX -d "$database" -c 'TRUNCATE "Project", "authstrap_event", "authstrap_outbox" CASCADE' >/dev/null 2>&1
  echo "$2 $(PGOPTIONS="-c synchronous_commit=off" psql -qX -d "$database" -c 'CALL bench_transactions(3200)' 2>&1 | sed -n 's/.*per transaction: //p')"
}
for _ in $(seq "${BENCH_LOOPS:-7}"); do
  transactions off off
  for variant in ${BENCH_VARIANTS:-}; do transactions "$variant" "$(basename "$variant" .sql)"; done
  transactions "$generated" generated
done | sort -k2 -n | awk '{ v[$1] = v[$1] " " $2; n[$1]++ } END { for (k in v) { split(substr(v[k], 2), a, " "); printf "microseconds per transaction, %s: median %s (of%s)\n", k, a[int((n[k] + 1) / 2)], v[k] } }' | sort -k6,6n
