#!/usr/bin/env bash
# tests/integration/sched_quota.sh - the quota rule, once (lib/job/quota.h),
# seen from outside:
# - devices in use: a job retried on fewer nodes holds its current
#   attempt's devices, in the usage route, the API's metric and the
#   scheduler's gauge alike; the scheduler's gauge shows a tenant with
#   nothing queued, and drops to 0 when its jobs end;
# - GPU-hours: a CPU job is never refused for a GPU-hour budget;
# - nodes: more than the scheduler places is refused at submission, and so
#   is a job the cluster's nodes could never hold (cluster_never_fits);
# - backfill: a queued job whose quota was lowered below it keeps its
#   reason, and the smaller job behind it runs.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

make_corpus
sched_quiet
ADMIN=$(admin_token)
A=sqa-$$ B=sqb-$$
A_ID=$(tenant_new "$A")
B_ID=$(tenant_new "$B")
JSON=(-H 'Content-Type: application/json')
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; }
quota() { # quota TENANT MAX_GPUS GPU_HOURS
	TOKEN=$ADMIN api PUT "/v1/tenants/$1/quota" "${JSON[@]}" \
		-d "{\"max_gpus\": $2, \"max_running_jobs\": 4, \"gpu_hours_per_month\": $3,
		     \"max_storage_bytes\": 1000000000, \"weight\": 1}"
}
quota "$A" 8 1000
quota "$B" 8 1000

# ---- devices in use -----------------------------------------------------------
# tenant B's job asked for 4 devices; its second attempt, on one node, holds 2
q "WITH j AS (INSERT INTO jobs (tenant_id, name, state, spec, devices, attempts)
      VALUES ('$B_ID', 'retried', 'running', '{\"resources\": {\"gpus_per_node\": 0}}', 4, 2)
      RETURNING id)
    INSERT INTO job_attempts (job_id, number, credential, expires_at, state, devices, nodes,
      started_at)
    SELECT id, n, decode(md5(random()::text) || md5(random()::text), 'hex'),
      now() + interval '1 hour', CASE n WHEN 1 THEN 'ended' ELSE 'running' END,
      CASE n WHEN 1 THEN 4 ELSE 2 END, CASE n WHEN 1 THEN 2 ELSE 1 END, now()
    FROM j, generate_series(1, 2) n" >/dev/null
JB=$(q "SELECT id FROM jobs WHERE tenant_id = '$B_ID' AND name = 'retried'")
TOKEN=$ADMIN
check_status "tenant B's usage" 200 GET "/v1/tenants/$B/usage"
check_json "counts the devices its retried job holds now" "2 1" \
	'"\(.quota.devices_in_use) \(.quota.running_jobs)"'
api_sample() { # api_sample REGEX: the API's metric
	curl -fsS --max-time 10 -H "Authorization: Bearer $ADMIN" "$TRAINYARD_URL/metrics" |
		grep -E "^$1 " | head -n 1 | awk '{print $2}'
}
check_eq "so does the API's metric" 2 "$(api_sample "trainyard_tenant_devices_in_use\\{tenant=\"$B\"\\}")"
check_eq "and the database's one definition" "2 1" \
	"$(q "SELECT devices, running_jobs FROM tenant_quota_use('$B_ID')" | tr '|' ' ')"

# ---- GPU-hours, nodes ------------------------------------------------------------
quota "$A" 8 0
tenant_data "$A_ID" "$DATA"/train_*.bin
TOKEN=$ADMIN
check_status "with no GPU-hours left, a CPU job is accepted" 201 POST "/v1/tenants/$A/jobs" \
	"${JSON[@]}" -d "$(job_spec cpu '.name = "cpu"')"
q "UPDATE jobs SET state = 'cancelled' WHERE id = '$(jb .id)'" >/dev/null
check_status "a GPU job is not" 422 POST "/v1/tenants/$A/jobs" "${JSON[@]}" \
	-d "$(job_spec gpu '.resources.gpus_per_node = 1')"
check_json "quota_never_fits, naming the budget" "quota_never_fits gpu_hours_per_month" \
	'.errors[0] | "\(.code) \(.message | capture("(?<l>gpu_hours_per_month)").l)"'
quota "$A" 8 1000
check_status "300 nodes are more than the scheduler places" 422 POST "/v1/tenants/$A/jobs" \
	"${JSON[@]}" -d "$(job_spec big '.resources.nodes = 300 | .parallel.data_parallel = 300 |
		.parallel.global_batch = 1200')"
check_json "out_of_range at /resources/nodes" "/resources/nodes out_of_range" \
	'.errors[0] | "\(.field // .pointer) \(.code)"'

# ---- the scheduler ----------------------------------------------------------------
# tenant A: a 2-node job, then a 1-node one; its quota is then lowered below the first
check_status "tenant A queues a job of 2 devices" 201 POST "/v1/tenants/$A/jobs" "${JSON[@]}" \
	-d "$(job_spec two '.')"
TWO=$(jb .id)
check_status "and one of 1 behind it" 201 POST "/v1/tenants/$A/jobs" "${JSON[@]}" \
	-d "$(job_spec one '.resources.nodes = 1 | .parallel.data_parallel = 1 |
		.parallel.global_batch = 4')"
ONE=$(jb .id)
quota "$A" 1 1000
check_eq "the quota is lowered below the first" 200 "$STATUS"
sched_start
trap 'sched_stop' EXIT
sched_sample() { # sched_sample REGEX: the scheduler's metric
	curl -fsS --max-time 10 "http://$TRAINYARD_SCHED_METRICS_LISTEN/metrics" |
		grep -E "^$1 " | head -n 1 | awk '{print $2}'
}
b_gauge() { [[ $(sched_sample "trainyard_scheduler_tenant_devices_in_use\\{tenant=\"$B\"\\}") == "$1" ]]; }
check "the scheduler's gauge shows tenant B, which has nothing queued: 2 devices" \
	wait_until 30 b_gauge 2
check "the job behind the one that can never fit now runs" wait_state "$ONE" 120 \
	dispatching scheduled running succeeded
check_eq "the first is still queued" queued "$(job_state "$TWO")"
check_match "saying which limit it is over" 'max_gpus' \
	"$(q "SELECT state_reason FROM jobs WHERE id = '$TWO'")"
q "UPDATE jobs SET state = 'succeeded' WHERE id = '$JB'" >/dev/null
q "UPDATE job_attempts SET state = 'ended', ended_at = now() WHERE job_id = '$JB'" >/dev/null
check "when tenant B's job ends, its gauge drops to 0" wait_until 30 b_gauge 0
check "tenant A's small job succeeds" wait_state "$ONE" 240 succeeded failed cancelled
check_eq "succeeded" succeeded "$(job_state "$ONE")"
NODES=$(q "SELECT count(*) FROM scheduler_cluster")
check "the scheduler recorded the cluster's nodes" test "$NODES" -ge 1
quota "$A" 64 1000
check_status "a job that needs more nodes than the cluster has" 422 POST "/v1/tenants/$A/jobs" \
	"${JSON[@]}" -d "$(job_spec wide ".resources.nodes = $((NODES + 1)) |
		.parallel.data_parallel = $((NODES + 1)) | .parallel.global_batch = $((4 * (NODES + 1)))")"
check_json "is cluster_never_fits" "/resources/nodes cluster_never_fits" \
	'.errors[0] | "\(.field // .pointer) \(.code)"'
q "UPDATE jobs SET state = 'cancelled' WHERE id = '$TWO'" >/dev/null

summary
