#!/usr/bin/env bash
# PostgreSQL's side of the write cost of events: the statements of one POST /Projects (the scope,
# the event context, the INSERT, in one transaction as the app role), with the Project table's
# event trigger enabled and disabled, in alternating runs on a throwaway database made from a
# migration directory. Then the same INSERT 5,000 times in one session, the tables emptied before
# each run, for the cost of one write in microseconds (steadier than tps on a shared machine).
# Needs pgbench and psql, and a PostgreSQL that trusts the user.
#
#   bench/events-pgbench.sh [migrations dir] [database]
#   BENCH_CLIENTS (10), BENCH_SECONDS (5), BENCH_PAIRS (3), PGHOST (127.0.0.1), PGUSER (postgres)
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
