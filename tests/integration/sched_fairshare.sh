#!/usr/bin/env bash
# tests/integration/sched_fairshare.sh - two tenants compete for the
# cluster's GPUs (2 nodes x 4 fake GPUs; each job takes 2 GPUs on one node).
#
#   tenant A: max_gpus 4, and 10 GPU-hours of usage from an hour ago
#   tenant B: max_gpus 2, no usage; both weight 1
#   each submits 3 jobs, interleaved (A1 B1 A2 B2 A3 B3), before the
#   scheduler starts.
#
# Expected: B ranks first by fair share (usage 0 < 10). The first cycle
# admits B1 (B's key becomes 2 with the up-front charge, still below A's
# 10), then B2 waits on B's max_gpus (2 + 2 > 2), so A1 and A2 follow
# (A: 2 + 2 <= 4), and A3 waits on A's max_gpus. B never runs two jobs at
# once, A never more than two, each tenant's jobs start in submit order,
# and B's Slurm account carries gres/gpu=2. All six succeed.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

make_corpus
sched_quiet
ADMIN=$(admin_token)
A=fsa-$$ B=fsb-$$
A_ID=$(tenant_new "$A")
B_ID=$(tenant_new "$B")
quota() { # quota TENANT MAX_GPUS
	TOKEN=$ADMIN api PUT "/v1/tenants/$1/quota" -H 'Content-Type: application/json' \
		-d "{\"max_gpus\": $2, \"max_running_jobs\": 4, \"gpu_hours_per_month\": 1000,
		     \"max_storage_bytes\": 1000000000, \"weight\": 1}"
}
quota "$A" 4
quota "$B" 2
# A's past: one finished job that held 10 GPUs for the last hour
q "WITH j AS (INSERT INTO jobs (tenant_id, name, state, spec, devices)
      VALUES ('$A_ID', 'history', 'succeeded', '{}', 10) RETURNING id)
    INSERT INTO job_attempts (job_id, number, credential, expires_at, state, devices, nodes,
      started_at, ended_at)
    SELECT id, 1, decode(md5(random()::text) || md5(random()::text), 'hex'), now(), 'ended',
      10, 1, now() - interval '1 hour', now() FROM j" >/dev/null

GPU='.resources = {"nodes": 1, "ranks_per_node": 2, "gpus_per_node": 2, "time_limit_minutes": 10}
	| .parallel.data_parallel = 2 | .training.steps = 8'
declare -A ID
for n in 1 2 3; do
	ID[A$n]=$(submit "$A" "$ADMIN" "a$n" "$GPU")
	ID[B$n]=$(submit "$B" "$ADMIN" "b$n" "$GPU")
done
sched_start
trap 'sched_stop' EXIT

dispatched() { # the jobs that went to dispatching, in the order they did
	local ids=("${ID[@]}") list
	list=$(printf "'%s'," "${ids[@]}")
	q "SELECT job_id FROM job_events WHERE to_state = 'dispatching'
	    AND job_id IN (${list%,}) ORDER BY id" |
		while read -r j; do
			for k in "${!ID[@]}"; do [[ ${ID[$k]} == "$j" ]] && printf '%s ' "$k"; done
		done | xargs
}
three() { [[ $(dispatched | wc -w) -ge 3 ]]; }
check "the first cycle dispatches three jobs" wait_until 30 three
check_eq "in fair-share order within the quotas: B1, then A1 and A2" "B1 A1 A2" \
	"$(dispatched | cut -d' ' -f1-3)"
check_eq "fair-share ranks: B first, A second" "1 2" \
	"$(q "SELECT (SELECT rank FROM scheduler_tenants WHERE tenant_id = '$B_ID'),
	              (SELECT rank FROM scheduler_tenants WHERE tenant_id = '$A_ID')" | tr '|' ' ')"
check_match "B2 waits on B's max_gpus" 'quota: max_gpus' \
	"$(q "SELECT state_reason FROM jobs WHERE id = '${ID[B2]}'")"
check_match "B's Slurm account carries its quota" 'gres/gpu=2' \
	"$(sacctmgr -n -P show assoc account="ty-$B" format=GrpTRES 2>/dev/null | head -n 1)"
for k in A1 A2 A3 B1 B2 B3; do
	check "$k succeeds" wait_state "${ID[$k]}" 240 succeeded failed cancelled
	check_eq "$k: succeeded" succeeded "$(job_state "${ID[$k]}")"
done
# most attempts of a tenant that held their devices at the same time: from
# the dispatch (created_at) to the end (Slurm's start times have whole
# seconds only)
overlap() {
	q "SELECT coalesce(max(c), 0) FROM (SELECT (SELECT count(*) FROM job_attempts b
	      JOIN jobs jb ON jb.id = b.job_id WHERE jb.tenant_id = '$1' AND jb.name <> 'history'
	      AND b.created_at <= a.created_at AND b.ended_at > a.created_at) AS c
	    FROM job_attempts a JOIN jobs j ON j.id = a.job_id
	    WHERE j.tenant_id = '$1' AND j.name <> 'history') x"
}
check_eq "B never ran two jobs at once (max_gpus 2)" 1 "$(overlap "$B_ID")"
check_match "A ran at most two at once (max_gpus 4)" '^[12]$' "$(overlap "$A_ID")"
order() { # the tenant's jobs by the start of their attempt
	q "SELECT j.name FROM jobs j JOIN job_attempts a ON a.job_id = j.id
	    WHERE j.tenant_id = '$1' AND j.name <> 'history' ORDER BY a.started_at, a.created_at" | xargs
}
check_eq "A's jobs started in submit order" "a1 a2 a3" "$(order "$A_ID")"
check_eq "B's jobs started in submit order" "b1 b2 b3" "$(order "$B_ID")"

# The scheduler's own GET /metrics tells the same story. A job is final
# once its attempt reports; the scheduler counts the attempt's end when it
# next follows the Slurm job, a moment later: wait for all six.
sched_prom() { curl -fsS -o "$TY_TMP/sched.prom" "http://$TRAINYARD_SCHED_METRICS_LISTEN/metrics"; }
six_ended() {
	sched_prom && [[ $(smp 'trainyard_scheduler_attempts_ended_total\{class="ok"\}') -ge 6 ]] 2>/dev/null
}
check "the scheduler serves its metrics" sched_prom
check "promtool finds no problem in them" promtool check metrics <"$TY_TMP/sched.prom"
smp() { grep -E "^$1 " "$TY_TMP/sched.prom" | head -n 1 | awk '{print $2}'; }
check "and counts the six attempts' ends" wait_until 60 six_ended
check_eq "it leads" 1 "$(smp trainyard_scheduler_leader)"
attempts() { q "SELECT count(*) FROM job_attempts a JOIN jobs j ON j.id = a.job_id
	WHERE j.tenant_id = '$1' AND j.name <> 'history'"; }
check_eq "A's admissions, one per attempt" "$(attempts "$A_ID")" \
	"$(smp "trainyard_scheduler_admitted_total\{tenant=\"$A\"\}")"
check_eq "B's" "$(attempts "$B_ID")" "$(smp "trainyard_scheduler_admitted_total\{tenant=\"$B\"\}")"
check_eq "A's waits in the queue, one each" "$(attempts "$A_ID")" \
	"$(smp "trainyard_scheduler_queue_wait_seconds_count\{tenant=\"$A\"\}")"
check_match "every dispatch went to Slurm" '^([6-9]|[1-9][0-9]+)$' \
	"$(smp 'trainyard_scheduler_dispatches_total\{outcome="submitted"\}')"
check_match "attempts that ended well" '^([6-9]|[1-9][0-9]+)$' \
	"$(smp 'trainyard_scheduler_attempts_ended_total\{class="ok"\}')"
check_eq "B's quota" 2 "$(smp "trainyard_scheduler_tenant_device_quota\{tenant=\"$B\"\}")"
check_match "cycles counted" '^[1-9][0-9]*$' "$(smp 'trainyard_scheduler_cycles_total\{outcome="ok"\}')"
check_eq "no id (a UUID) in them" 0 \
	"$(grep -cE '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' "$TY_TMP/sched.prom")"
check_process_metrics "$TY_TMP/sched.prom" scheduler "$(cat "$TRAINYARD_VAR/scheduler.pid")"

summary
