# Sourced by bench/events-pgbench.sh and bench/events-pg-profile.sh: a database made anew from a
# migration directory, with one owner in one organization (the ids their pgbench scripts use).
#   events_database <migrations dir> <database>
events_database() {
  psql -qX -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS \"$2\"" -c "CREATE DATABASE \"$2\"" >/dev/null
  for migration in "$1"/*.sql; do psql -qX -v ON_ERROR_STOP=1 -d "$2" -f "$migration" >/dev/null 2>&1; done
  psql -qX -v ON_ERROR_STOP=1 -d "$2" >/dev/null <<'SQL'
INSERT INTO "User" ("id", "email", "name") VALUES ('00000000-0000-4000-8000-0000000000aa', 'owner@example.com', 'Owner');
INSERT INTO "Organization" ("id", "name", "slug") VALUES ('00000000-0000-4000-8000-0000000000bb', 'Bench', 'bench');
INSERT INTO "member" ("organizationId", "userId", "role") VALUES ('00000000-0000-4000-8000-0000000000bb', '00000000-0000-4000-8000-0000000000aa', 'owner');
SQL
}
