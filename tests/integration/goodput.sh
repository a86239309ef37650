#!/usr/bin/env bash
# tests/integration/goodput.sh - GET /v1/jobs/{job}/goodput and
# GET /v1/tenants/{tenant}/usage on a timeline scripted through the
# attempt routes: the queue before the attempt, steps of known length and
# data wait, a checkpoint, a fallback between two steps; the pieces add up
# to the wall time, each lands in its category, a running job counts up
# to now, another tenant sees nothing. (lib/job/goodput.c's cases with lost
# steps and recovery after a failure are tests/unit/test_goodput.c's;
# worker_flow.sh reads a real trainer's.)
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
SFX=$$
TA=gp-a-$SFX TB=gp-b-$SFX
tenant_new "$TA" >/dev/null
tenant_new "$TB" >/dev/null
VIEW=$(member_new "$TA" "gp-view-$SFX" viewer)
BOB=$(member_new "$TB" "gp-bob-$SFX" owner)
JSON=(-H 'Content-Type: application/json')

JOB=$(tiny_job gp 10 30)
TOKEN=$ADMIN
check_status "a job is submitted" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "$JOB"
J=$(printf '%s' "$BODY" | jq -r .id)
sleep 1 # in the queue
check_status "its attempt starts" 201 POST "/v1/jobs/$J/attempts"
A=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
I=/internal/v1/attempts/$A
check_status "it runs" 200 POST "$I/heartbeat"

now_ms() { date +%s%3N; }
# step N: the trainer's line of step N, ending now: 0.3 s long, 0.1 s of it waiting for data
step() {
	check_status "step $1" 200 POST "$I/metrics" "${JSON[@]}" -d "{\"steps\": [{\"type\": \"step\",
		\"step\": $1, \"time_ms\": $(now_ms), \"step_s\": 0.3, \"data_wait_s\": 0.1,
		\"loss\": 5, \"tokens_per_s\": 1000, \"flops_per_s\": 1e9}]}"
}
SHA=$(printf 'x' | sha256sum | cut -d' ' -f1)
sleep 0.5
step 1
sleep 0.3
step 2
check_status "step 2 is saved" 201 POST "$I/checkpoints" "${JSON[@]}" \
	-d "{\"step\": 2, \"world\": 1, \"shards\": [{\"name\": \"s.bin\", \"bytes\": 1, \"sha256\": \"$SHA\"}]}"
sleep 0.8 # the save, then step 3
step 3
sleep 0.3
check_status "the worker falls back" 201 POST "$I/events" "${JSON[@]}" \
	-d '{"kind": "fallback", "reason": "out_of_memory", "detail": {"steps_lost": 0}}'
sleep 0.8
step 4

TOKEN=$VIEW
check_status "a viewer reads the running job's goodput" 200 GET "/v1/jobs/$J/goodput"
check_json "four steps kept" "4 0" '"\(.steps.kept) \(.steps.lost)"'
check_json "its goodput: four steps less their data wait" true '(.goodput_seconds - 0.8) | fabs < 0.01'
check_json "the data wait" true '(.badput_seconds.data_wait - 0.4) | fabs < 0.01'
check_json "the queue: a second or more" true '.badput_seconds.queueing >= 1'
check_json "the save after step 2" true '.badput_seconds.checkpoint >= 0.5'
check_json "the fallback between steps 3 and 4" true '.badput_seconds.fallback >= 0.5'
check_json "no failure: nothing lost, no recovery" "0 0" \
	'"\(.badput_seconds.lost) \(.badput_seconds.recovery)"'
check_json "the pieces add up to the wall time" true \
	'((.goodput_seconds + ([.badput_seconds[]] | add)) - .wall_seconds) | fabs < 0.001'
check_json "one attempt, its devices' time" true '.attempts == 1 and .device_seconds > 0'
check_json "listed: running, one device, four steps" "1  1 4 null" \
	'.attempt_list[0] | "\(.number) \(.failure_class) \(.devices) \(.steps) \(.ended_at)"'
check_json "the trainer's throughput" 1000 .tokens_per_s
check_json "no device peak configured: no MFU, no estimate" "null null null" \
	'"\(.mfu) \(.predicted_tokens_per_s) \(.scaling_efficiency)"'
running=$(printf '%s' "$BODY" | jq .wall_seconds)
sleep 0.5
check_status "read again" 200 GET "/v1/jobs/$J/goodput"
check_json "a running job counts up to now" true ".wall_seconds > $running"

check_status "the tenant's usage" 200 GET "/v1/tenants/$TA/usage?days=7"
check_json "one job" "1 false 7" '"\(.jobs) \(.truncated) \(.days)"'
check_json "its steps" 4 .steps.kept
check_json "adds up too" true \
	'((.goodput_seconds + ([.badput_seconds[]] | add)) - .wall_seconds) | fabs < 0.01'
check_json "with the quota and what is in use" "64 1" '"\(.quota.max_gpus) \(.quota.devices_in_use)"'
check_status "days out of range" 400 GET "/v1/tenants/$TA/usage?days=0"
y "$VIEW" job show "$J"
expect_rc "yardctl job show" 0
check_match "prints the goodput beside the job" 'goodput_s +0\.8' "$OUT"
check_match "and the badput by cause" 'badput_fallback_s +[0-9.]+' "$OUT"
y "$VIEW" job show "$J" -o json
check_eq "in JSON, as the job's goodput member" 4 "$(jq_out .goodput.steps.kept)"
y "$VIEW" tenant usage "$TA" --days 7 -o json
expect_rc "yardctl tenant usage" 0
check_eq "one job, four steps" "1 4" "$(jq_out '"\(.jobs) \(.steps.kept)"')"
y "$VIEW" tenant usage "$TA"
check_match "as a table too" 'devices_in_use +1' "$OUT"

# with the cluster's device known: MFU and the planner's estimate
check "restart the API with a device of 1 TFLOP/s and 1 GB/s" \
	env TRAINYARD_DEVICE_PEAK_GFLOPS=1000 TRAINYARD_DEVICE_LINK_MBPS=1000 \
	"$TY_ROOT/deploy/stack" api-restart
TOKEN=$VIEW
check_status "the goodput again" 200 GET "/v1/jobs/$J/goodput"
check_json "MFU: the trainer's 1 GFLOP/s of the device's 1 TFLOP/s" true '(.mfu - 0.001) | fabs < 1e-12'
check_json "the planner's estimate for the job's layout" true '.predicted_tokens_per_s > 0'
check_json "the scaling efficiency: tokens/s over the estimate" true \
	'(.scaling_efficiency - .tokens_per_s / .predicted_tokens_per_s) | fabs < 1e-9'
check "restore the API's settings" stack api-restart

TOKEN=$BOB
check_status "another tenant's owner does not see the job's" 404 GET "/v1/jobs/$J/goodput"
check_status "nor the tenant's usage" 404 GET "/v1/tenants/$TA/usage"
summary
