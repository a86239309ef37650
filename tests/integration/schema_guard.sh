#!/usr/bin/env bash
# schema_guard.sh - migrations: idempotent, safe to run concurrently, and
# binaries refuse a database whose schema is newer than they know.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

out=$(yardctl db migrate 2>&1)
check_match "migrate on a current database applies nothing" 'applied 0 migrations' "$out"

# Two migrators racing on an empty database: both succeed, each migration once.
fresh=mig_$$
psql -qAt -c "CREATE DATABASE $fresh" >/dev/null
fresh_db="${TRAINYARD_DB/dbname=trainyard/dbname=$fresh}"
TRAINYARD_DB=$fresh_db yardctl db migrate >"$TY_TMP/m1" 2>&1 &
p1=$!
TRAINYARD_DB=$fresh_db yardctl db migrate >"$TY_TMP/m2" 2>&1 &
p2=$!
rc1=0 rc2=0
wait $p1 || rc1=$?
wait $p2 || rc2=$?
check_eq "two concurrent migrators both succeed" "0 0" "$rc1 $rc2"
rows=$(psql -qAt -d "$fresh" -c "SELECT count(*) = count(DISTINCT version) FROM schema_migrations")
check_eq "each migration recorded once" t "$rows"
tables=$(psql -qAt -d "$fresh" -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'
	AND tablename IN ('tenants','users','api_tokens','role_bindings','quotas','jobs',
	'job_events','idempotency_keys','audit_log','schema_migrations')")
check_eq "every table exists" 10 "$tables"
psql -qAt -c "DROP DATABASE $fresh" >/dev/null

# A schema from the future is refused by the API and by the CLI.
psql -qAt -c "INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future.sql')" >/dev/null
check_fails "yardctl db migrate refuses a newer schema" 5 yardctl db migrate
out=$(TRAINYARD_LISTEN=127.0.0.1:28099 timeout 10 trainyard-api 2>&1)
rc=$?
check_eq "trainyard-api exits with status 1 on a newer schema" 1 "$rc"
check_match "and says why" 'newer than this binary' "$out"
psql -qAt -c "DELETE FROM schema_migrations WHERE version = 9999" >/dev/null
summary
