#!/usr/bin/env bash
# db_restart.sh - PostgreSQL crashes and comes back while clients submit
# jobs: requests fail fast with 503 while it is down, the API recovers by
# itself, no acknowledged (201) submission is lost, and retries with the
# same Idempotency-Key never create a second job.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

TOKEN=$(admin_token) || { not_ok "admin token"; summary; exit 1; }
tenant=restart-$$
check_status "create a tenant" 201 POST /v1/tenants --json "{\"name\":\"$tenant\"}"
spec='{"name":"restart","model":{"preset":"tiny"},"data":{"train":"d_*.bin"},
 "parallel":{"data_parallel":1,"micro_batch":1,"global_batch":1},
 "resources":{"nodes":1},"training":{"steps":1}}'
log=$TY_TMP/submissions
: >"$log"

# shellcheck disable=SC2001 # (the id is the body before the two trailing numbers)
# submit KEY: one submission; appends "KEY STATUS SECONDS ID" to the log.
submit() {
	local out
	out=$(curl -sS --max-time 10 -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: $1" \
		--json "$spec" -w ' %{http_code} %{time_total}' \
		"$TRAINYARD_URL/v1/tenants/$tenant/jobs" 2>/dev/null) || true
	local id status secs
	status=$(awk '{print $(NF-1)}' <<<"$out")
	secs=$(awk '{print $NF}' <<<"$out")
	id=$(sed 's/ [0-9]* [0-9.]*$//' <<<"$out" | jq -r '.id // empty' 2>/dev/null)
	echo "$1 ${status:-000} ${secs:-0} ${id:--}" >>"$log"
}

(
	for i in $(seq 1 120); do
		submit "k$i"
		sleep 0.03
	done
) &
loader=$!
sleep 1
check "crash PostgreSQL (immediate stop) under load" stack pg-stop immediate
sleep 1.5
api GET /readyz
check_eq "readyz answers 503 while the database is down" 503 "$STATUS"
check "start PostgreSQL again" stack pg-start
wait "$loader"

acked=$(awk '$2 == 201' "$log" | wc -l)
unavail=$(awk '$2 == 503' "$log" | wc -l)
slow503=$(awk '$2 == 503 && $3 > 1.0' "$log" | wc -l)
other=$(awk '$2 != 201 && $2 != 503' "$log" | wc -l)
check_match "some submissions were acknowledged" '^[1-9][0-9]*$' "$acked"
check_match "some submissions got 503 while the database was down" '^[1-9][0-9]*$' "$unavail"
check_eq "every 503 came back within a second (fail fast)" 0 "$slow503"
check_eq "no answer other than 201 or 503" 0 "$other"
wait_until 10 api_healthy
api GET /readyz
check_eq "readyz recovers by itself" 200 "$STATUS"

# Every acknowledged job is in the database.
missing=0
while read -r _ status _ id; do
	[[ $status == 201 ]] || continue
	n=$(psql -qAt -c "SELECT count(*) FROM jobs WHERE id = '$id'")
	[[ $n == 1 ]] || missing=$((missing + 1))
done <"$log"
check_eq "no acknowledged submission was lost" 0 "$missing"

# Retrying every key (acknowledged or not) converges on one job per key.
while read -r key _ _ _; do
	submit "$key"
done < <(cp "$log" "$log.first" && cat "$log.first")
retried_ok=$(tail -n 120 "$log" | awk '$2 == 201' | wc -l)
check_eq "every retry succeeds once the database is back" 120 "$retried_ok"
jobs=$(psql -qAt -c "SELECT count(*) FROM jobs j JOIN tenants t ON t.id = j.tenant_id
	WHERE t.name = '$tenant'")
check_eq "one job per idempotency key, none twice" 120 "$jobs"
same=$(join <(awk '$2 == 201 {print $1, $4}' "$log.first" | sort) \
	<(tail -n 120 "$log" | awk '{print $1, $4}' | sort) | awk '$2 != $3' | wc -l)
check_eq "a retried acknowledged key returns its first job" 0 "$same"
events=$(psql -qAt -c "SELECT count(*) FROM jobs j JOIN tenants t ON t.id = j.tenant_id
	WHERE t.name = '$tenant' AND NOT EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id)")
check_eq "every job has its creation event (committed together)" 0 "$events"
summary
