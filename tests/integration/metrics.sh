#!/usr/bin/env bash
# tests/integration/metrics.sh - GET /metrics on the API: Prometheus' text
# format, clean by promtool's lint; requests counted by route pattern,
# method and status; the job queue by tenant and state, the oldest queued
# job's age, devices and quota per tenant; audit records by outcome; the
# process itself (process_*, as Prometheus' clients name them) and its
# build; no user or job id in any label; readable by platform admins and
# auditors only.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
SFX=$$
TA=met-a-$SFX
TA_ID=$(tenant_new "$TA")
ED=$(member_new "$TA" "met-ed-$SFX" editor)
TOKEN=$ADMIN api POST /v1/users -H 'Content-Type: application/json' \
	-d "{\"name\": \"met-pa-$SFX\", \"platform_role\": \"auditor\"}"
PA=$(TRAINYARD_TOKEN=$ADMIN yardctl token create "met-pa-$SFX")

JOB=$(tiny_job met 10 30)
TOKEN=$ADMIN
for n in 1 2; do
	check_status "job $n is submitted" 201 POST "/v1/tenants/$TA/jobs" \
		-H 'Content-Type: application/json' -d "$JOB"
done
check_status "a path no route matches" 404 GET /v1/no-such-thing

check_status "the admin scrapes" 200 GET /metrics
check_match "in the text format, version 0.0.4" '^text/plain; version=0\.0\.4' \
	"$(header Content-Type)"
printf '%s\n' "$BODY" >"$TY_TMP/metrics.txt" # (the shell dropped its last newline)
check "promtool finds no problem in it" promtool check metrics <"$TY_TMP/metrics.txt"

sample() { # sample REGEX: the value of the first sample line matching REGEX
	grep -E "^$1 " "$TY_TMP/metrics.txt" | head -n 1 | awk '{print $2}'
}
check_eq "the tenant's two queued jobs" 2 "$(sample "trainyard_jobs\\{tenant=\"$TA\",state=\"queued\"\\}")"
check_eq "its quota of devices" 64 "$(sample "trainyard_tenant_device_quota\\{tenant=\"$TA\"\\}")"
check_eq "no device in use" 0 "$(sample "trainyard_tenant_devices_in_use\\{tenant=\"$TA\"\\}")"
check_match "the age of its oldest queued job" '^[0-9.e+-]+$' \
	"$(sample "trainyard_queue_oldest_job_age_seconds\\{tenant=\"$TA\"\\}")"
check_match "submissions counted by route pattern, method and status" '^[0-9]+$' \
	"$(sample 'trainyard_http_requests_total\{route="/v1/tenants/\{tenant\}/jobs",method="POST",code="201"\}')"
check_match "an unmatched path counted as such" '^[1-9][0-9]*$' \
	"$(sample 'trainyard_http_requests_total\{route="unmatched",method="GET",code="404"\}')"
check_match "latency histograms end in +Inf" '^[1-9][0-9]*$' \
	"$(sample 'trainyard_http_request_duration_seconds_bucket\{route="/v1/tenants/\{tenant\}/jobs",method="POST",le="\+Inf"\}')"
check_match "the pool's waits are timed" '^[1-9][0-9]*$' \
	"$(sample 'trainyard_db_pool_wait_seconds_count')"
check_match "audit records counted by outcome" '^[1-9][0-9]*$' \
	"$(sample 'trainyard_audit_records_written_total\{outcome="success"\}')"
check_process_metrics "$TY_TMP/metrics.txt" api "$(cat "$TRAINYARD_VAR/api.pid")"
check_eq "no id (a UUID) anywhere in it" 0 \
	"$(grep -cE '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' "$TY_TMP/metrics.txt")"
check_eq "not the tenant's id either" 0 "$(grep -c "$TA_ID" "$TY_TMP/metrics.txt")"

before=$(sample 'trainyard_http_requests_total\{route="/metrics",method="GET",code="200"\}')
check_status "a second scrape" 200 GET /metrics
printf '%s\n' "$BODY" >"$TY_TMP/metrics.txt" # (the shell dropped its last newline)
check_eq "counts the first one" $((${before:-0} + 1)) \
	"$(sample 'trainyard_http_requests_total\{route="/metrics",method="GET",code="200"\}')"

TOKEN=$PA check_status "a platform auditor scrapes" 200 GET /metrics
TOKEN=$ED check_status "a tenant's editor may not" 403 GET /metrics
TOKEN='' check_status "nor may an anonymous caller" 401 GET /metrics
summary
