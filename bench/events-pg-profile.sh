#!/usr/bin/env bash
# Where PostgreSQL's time goes in the event trigger of one POST /Projects transaction: pgbench runs
# the statements of the write (bench/events-pgbench.sh's script, one INSERT per transaction, commit
# without waiting for the disk, so that CPU is what is measured) while `perf record` samples the
# database's backends; the samples whose stack holds the trigger (plpgsql_exec_trigger) are counted
# against the rest of the transaction and split by what they were doing. Share of samples, not time:
# it does not move with the machine's speed the way tps does. Needs perf (linux-perf), pgbench,
# psql, python3, and a PostgreSQL that trusts the user, on this machine.
#
#   bench/events-pg-profile.sh [migrations dir] [database]      (about 15 seconds)
#   BENCH_SECONDS (7), PGHOST (127.0.0.1), PGUSER (postgres)
set -euo pipefail
migrations=${1:-examples/saas-backend/migrations}
database=${2:-authstrap_events_profile}
seconds=${BENCH_SECONDS:-7}
export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres}
command -v perf >/dev/null || { echo "perf is not installed (Debian: apt-get install linux-perf)" >&2; exit 2; }

. "$(dirname "$0")/lib/events-database.sh"
events_database "$migrations" "$database"
work=$(mktemp -d)
trap 'rm -rf "$work"; psql -qX -d postgres -c "DROP DATABASE IF EXISTS \"$database\" WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
cat >"$work/write.sql" <<'SQL'
BEGIN;
SET LOCAL ROLE authstrap_app;
SELECT set_config('authstrap.organization_id', '00000000-0000-4000-8000-0000000000bb', true), set_config('authstrap.user_id', '00000000-0000-4000-8000-0000000000aa', true), set_config('authstrap.role', 'owner', true), set_config('authstrap.request', '{"requestId":"0f6c2a1e-6f1e-4d59-9a57-3c1d3b0e1a2b","ipAddress":"127.0.0.1","userAgent":"pgbench"}', true);
INSERT INTO "Project" ("name", "description", "organizationId") VALUES ('Bench project', 'written by pgbench', authstrap.organization_id()) RETURNING *;
COMMIT;
SQL
PGOPTIONS="-c synchronous_commit=off" pgbench -n -M prepared -c 10 -j 2 -T "$seconds" -f "$work/write.sql" "$database" >"$work/pgbench.out" 2>&1 &
sleep 1.5
perf record -e cpu-clock -F 2000 -g -p "$(pgrep -d, -f "postgres: .*$database")" -o "$work/perf.data" -- sleep $((seconds - 3)) >/dev/null 2>&1
wait
echo "pgbench: $(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/pgbench.out") tps"
perf script -i "$work/perf.data" -F ip,sym 2>/dev/null | python3 -c '
import collections, sys
# What a sample in the trigger was doing: the first of these on its stack, leaf first.
kinds = ["ExecInsertIndexTuples", "ExecOpenIndices", "heap_insert", "standard_ExecutorStart", "standard_ExecutorEnd", "GetCachedPlan",
         "to_jsonb", "jsonb_build_object", "jsonb_in", "set_config_by_name", "GetConfigOptionByName", "ExecSetParamPlan", "gen_random_uuid"]
counts, rest, stack = collections.Counter(), 0, []
def flush():
    global rest
    frames = [line.split()[-1] for line in stack]
    if not frames: return
    if "plpgsql_exec_trigger" not in frames: rest += 1; return
    inner = set(frames[:frames.index("plpgsql_exec_trigger")])
    counts[next((kind for kind in kinds if kind in inner), "the rest of PL/pgSQL and the executor")] += 1
for line in sys.stdin:
    if line.strip(): stack.append(line.strip())
    else: flush(); stack = []
flush()
print(f"the trigger, per 100 samples of the rest of the transaction: {100 * sum(counts.values()) / rest:.1f}")
for kind, n in counts.most_common(): print(f"  {100 * n / rest:5.1f}  {kind}")
'
