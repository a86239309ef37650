#!/usr/bin/env bash
# tests/integration/eta.sh - GET /v1/jobs/{job}/eta: with a quota of one
# device, a running job (30-minute limit) and two queued ones, the first
# queued job should start when the running one ends (its limit, while it
# reports no step; its pace once it does), the second a run time later;
# jobs that are not queued, or can never fit, have no estimate.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
T=eta-$$
tenant_new "$T" >/dev/null
VIEW=$(member_new "$T" "eta-view-$$" viewer)
JSON=(-H 'Content-Type: application/json')
TOKEN=$ADMIN
check_status "the tenant's quota: one device, one running job" 200 PUT "/v1/tenants/$T/quota" \
	"${JSON[@]}" -d '{"max_gpus": 1, "max_running_jobs": 1, "gpu_hours_per_month": 1000,
	"max_storage_bytes": 1000000000, "weight": 1}'
JOB=$(tiny_job eta 10 30)
submit() {
	check_status "$1" 201 POST "/v1/tenants/$T/jobs" "${JSON[@]}" -d "$JOB"
	printf '%s' "$BODY" | jq -r .id >"$TY_TMP/id"
}
submit "a job to run"
R=$(cat "$TY_TMP/id")
check_status "its attempt starts" 201 POST "/v1/jobs/$R/attempts"
A=$(printf '%s' "$BODY" | jq -r .id)
CRED=$(printf '%s' "$BODY" | jq -r .credential)
submit "a job queued behind it"
Q1=$(cat "$TY_TMP/id")
submit "and another"
Q2=$(cat "$TY_TMP/id")

TOKEN=$VIEW
check_status "the first queued job's estimate" 200 GET "/v1/jobs/$Q1/eta"
check_json "it waits for the running job's 30 minutes" true '.eta_seconds > 1700 and .eta_seconds <= 1800'
check_json "as an RFC 3339 time with milliseconds" true '.eta | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z$")'
check_json "nothing queued ahead, one job running" "0 1 1" '"\(.queued_ahead) \(.running) \(.duration_ratio)"'
check_status "the second's" 200 GET "/v1/jobs/$Q2/eta"
check_json "another 30 minutes on" true '.eta_seconds > 3500 and .eta_seconds <= 3600'
check_json "one queued ahead" 1 .queued_ahead
y "$VIEW" job show "$Q2" -o json
check_eq "yardctl job show carries it" "$(printf '%s' "$BODY" | jq -r .eta)" "$(jq_out .eta.eta)"
check_status "the running job has none" 200 GET "/v1/jobs/$R/eta"
check_json "it is not queued" "null the job is not queued" '"\(.eta) \(.reason)"'

TOKEN=$CRED
I=/internal/v1/attempts/$A
check_status "the running job reports" 200 POST "$I/heartbeat"
sleep 1
check_status "half its steps" 200 POST "$I/metrics" "${JSON[@]}" \
	-d '{"steps": [{"step": 4, "loss": 5}, {"step": 5, "loss": 5}]}'
TOKEN=$VIEW
check_status "the first queued job's estimate again" 200 GET "/v1/jobs/$Q1/eta"
check_json "now its pace: seconds, not half an hour" true '.eta_seconds < 600'

TOKEN=$ADMIN
check_status "a quota of no running job" 200 PUT "/v1/tenants/$T/quota" \
	"${JSON[@]}" -d '{"max_gpus": 1, "max_running_jobs": 0, "gpu_hours_per_month": 1000,
	"max_storage_bytes": 1000000000, "weight": 1}'
check_status "then" 200 GET "/v1/jobs/$Q1/eta"
check_json "no estimate, and why" "null the job cannot start within its tenant's quota as it stands" \
	'"\(.eta) \(.reason)"'
summary
