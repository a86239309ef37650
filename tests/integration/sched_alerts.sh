#!/usr/bin/env bash
# tests/integration/sched_alerts.sh - the alerts the scheduler raises: a
# running attempt that reports no step for TRAINYARD_ALERT_STALL_S (10 s
# here) is stalled, once; a tenant that used 90% of its monthly
# device-hours gets quota_nearly_spent, once; both reach the tenant's
# alerts and, for the job, its events. A job whose trainer is stopped
# (SIGTERM: it saves, exits "stopped", the scheduler retries it) three
# times running gets restarts, once, naming the class.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

sched_quiet
ADMIN=$(admin_token)
T=sal-$$
T_ID=$(tenant_new "$T")
VIEW=$(member_new "$T" "sal-view-$$" viewer)
JSON=(-H 'Content-Type: application/json')
TOKEN=$ADMIN
check_status "a budget of 10 device-hours a month" 200 PUT "/v1/tenants/$T/quota" "${JSON[@]}" \
	-d '{"max_gpus": 1, "max_running_jobs": 1, "gpu_hours_per_month": 10,
	     "max_storage_bytes": 1000000000, "weight": 1}'
# this month: a finished GPU job that held 2 devices for 5 hours (all 10)
q "WITH j AS (INSERT INTO jobs (tenant_id, name, state, spec, devices)
      VALUES ('$T_ID', 'history', 'succeeded',
              '{\"resources\": {\"gpus_per_node\": 2}}', 2) RETURNING id)
    INSERT INTO job_attempts (job_id, number, credential, expires_at, state, devices, nodes,
      started_at, ended_at)
    SELECT id, 1, decode(md5(random()::text) || md5(random()::text), 'hex'), now(), 'ended',
      2, 1, greatest(date_trunc('month', now()), now() - interval '5 hours'), now() FROM j" \
	>/dev/null
JOB=$(tiny_job NAME 30 30)
check_status "a job whose attempt goes silent" 201 POST "/v1/tenants/$T/jobs" "${JSON[@]}" \
	-d "${JOB/NAME/silent}"
J=$(printf '%s' "$BODY" | jq -r .id)
check_status "its attempt, started by hand" 201 POST "/v1/jobs/$J/attempts"
A=$(printf '%s' "$BODY" | jq -r .id)
CRED=$(printf '%s' "$BODY" | jq -r .credential)
TOKEN=$CRED check_status "it runs, then says nothing" 200 POST "/internal/v1/attempts/$A/heartbeat"
TOKEN=$ADMIN
check_status "a queued job, so the scheduler weighs the tenant" 201 POST "/v1/tenants/$T/jobs" \
	"${JSON[@]}" -d "${JOB/NAME/waiting}"

export TRAINYARD_ALERT_STALL_S=10
sched_start
trap 'sched_stop' EXIT
count() { q "SELECT count(*) FROM alerts WHERE tenant_id = '$T_ID' AND kind = '$1'"; }
raised() { [[ $(count "$1") -ge 1 ]]; }
# the first cycle syncs every tenant's Slurm account: slow after a long suite
check "the silent attempt is stalled" wait_until 150 raised stalled
check "the tenant's quota is nearly spent" wait_until 60 raised quota_nearly_spent
sleep 2 # more cycles
check_eq "each raised once" "1 1" "$(count quota_nearly_spent) $(count stalled)"
TOKEN=$VIEW
check_status "the viewer lists them" 200 GET "/v1/tenants/$T/alerts"
check_json "the quota's own, without a job" "null" \
	'.items[] | select(.kind == "quota_nearly_spent") | .job_id'
check_json "with the hours used" true \
	'.items[] | select(.kind == "quota_nearly_spent") | .detail.device_hours >= 9'
check_json "the stall names the attempt" 1 '.items[] | select(.kind == "stalled") | .detail.attempt'
check_status "the job's events" 200 GET "/v1/jobs/$J/events"
check_json "carry the stall" true '[.items[].reason] | any(. == "alert: stalled")'

# ---- restarts: a job stopped three times ---------------------------------
TOKEN=$ADMIN
R=sal-r-$$
R_ID=$(tenant_new "$R")
make_corpus
RJ=$(submit "$R" "$ADMIN" restarting '.resources.nodes = 1 | .parallel.data_parallel = 1
	| .parallel.global_batch = 4 | .training.steps = 100000 | .checkpoint.every_steps = 50
	| .fault_tolerance.max_restarts = 5')
# steps_of N: the metrics attempt N of the job reported
steps_of() {
	q "SELECT count(*) FROM job_metrics m JOIN job_attempts a ON a.id = m.attempt_id
	    WHERE a.job_id = '$RJ' AND a.number = $1"
}
trains() { (($(steps_of "$1") > 0)); }
restarts() { q "SELECT count(*) FROM alerts WHERE tenant_id = '$R_ID' AND kind = 'restarts'"; }
has_restarts() { (($(restarts) >= 1)); }
for n in 1 2 3; do
	check "attempt $n trains" wait_until 120 trains "$n"
	((n == 3)) && check_eq "two stops raise nothing yet" 0 "$(restarts)"
	# this job's trainer only: its checkpoint directory names the job
	check "attempt $n is stopped (SIGTERM)" pkill -TERM -f "^[^ ]*trainyard-train train .*$RJ"
done
check "the third raises restarts" wait_until 60 has_restarts
check "attempt 4 trains" wait_until 120 trains 4
check_eq "once" 1 "$(restarts)"
check_status "the job's alerts" 200 GET "/v1/tenants/$R/alerts"
check_json "three failed attempts, the last one stopped" '3 stopped' \
	'.items[] | select(.kind == "restarts") | "\(.detail.failed_attempts) \(.detail.last_class)"'
check_status "the job's events" 200 GET "/v1/jobs/$RJ/events"
check_json "carry it" true '[.items[].reason] | any(. == "alert: restarts")'
check_status "the job is cancelled" 200 POST "/v1/jobs/$RJ/cancel"
check "and ends" wait_state "$RJ" 60 cancelled
summary
