# tests/integration/lib_sched.sh - what the scheduler's tests share, on top
# of lib.sh: the stack's scheduler started with test settings, jobs on the
# corpus, waiting for states, and the Slurm side of a job.
# shellcheck shell=bash

# shellcheck source=SCRIPTDIR/../trainer/lib.sh disable=SC1091
. "$TY_ROOT/tests/trainer/lib.sh"

# Test settings: short cycles, leases and backoffs, frequent heartbeats.
export TRAINYARD_SCHED_INTERVAL_MS=${TRAINYARD_SCHED_INTERVAL_MS:-300}
export TRAINYARD_SCHED_LEASE_S=${TRAINYARD_SCHED_LEASE_S:-3}
export TRAINYARD_RETRY_BACKOFF_S=${TRAINYARD_RETRY_BACKOFF_S:-1}
export TRAINYARD_HEARTBEAT_S=${TRAINYARD_HEARTBEAT_S:-2}
export TRAINYARD_SCHED_LOST_S=${TRAINYARD_SCHED_LOST_S:-20}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
SCHED_BIN=$(dirname "$TRAIN_BIN")/trainyard-scheduler


# sched_quiet: no queued job of an earlier test is left for the scheduler
# to admit (their tests drive their jobs by hand), and Slurm runs nothing.
sched_quiet() {
	q "UPDATE jobs SET state = 'cancelled', state_reason = 'left by an earlier test'
	    WHERE state = 'queued'" >/dev/null
	# every job of the cluster: attempts run as their tenants' users
	scancel --full --quiet --partition "${TRAINYARD_SLURM_PARTITION:-main}" 2>/dev/null || true
}

sched_start() { stack sched-start >/dev/null; }
# stack_slurm COMMAND...: deploy/slurm on the test stack's cluster
stack_slurm() { TRAINYARD_VAR=$TRAINYARD_VAR "$TY_ROOT/deploy/slurm" "$@"; }
sched_stop() { stack sched-stop >/dev/null; }
# sched_running: the stack's scheduler runs (a test that stops it starts it again after)
sched_running() { [[ -s $TRAINYARD_VAR/scheduler.pid ]] && kill -0 "$(cat "$TRAINYARD_VAR/scheduler.pid")" 2>/dev/null; }

# sched_run NAME [ENV=VALUE...]: a scheduler of our own in the background,
# its log in $TY_TMP/NAME.log; its pid in SCHED_PID.
sched_run() {
	local name=$1
	shift
	env "$@" TRAINYARD_SCHED_SPOOL="$TRAINYARD_VAR/spool" "$SCHED_BIN" \
		>"$TY_TMP/$name.log" 2>&1 &
	# shellcheck disable=SC2034 # read by the scripts
	SCHED_PID=$!
}

# job_log_tail JOB [N]: the last N (default 40) lines of JOB's log (its
# ranks' output and the runtime's own lines) as comments, read as the
# platform admin; for a check that failed on what the job did.
job_log_tail() {
	TOKEN=$(admin_token) api GET "/v1/jobs/$1/logs"
	printf '%s\n' "$BODY" | tail -n "${2:-40}" | sed 's/^/# log: /'
}

# job_spec NAME JQ: the tiny model on the corpus (in the tenant's data
# root, where submit puts it), dp over 2 nodes x 1 rank, changed by the jq
# filter JQ.
job_spec() {
	jq -n --arg data "train_*.bin" --arg name "$1" '{"name": $name,
		"model": {"preset": "tiny"}, "data": {"train": $data},
		"parallel": {"data_parallel": 2, "micro_batch": 4, "global_batch": 8},
		"resources": {"nodes": 2, "ranks_per_node": 1, "time_limit_minutes": 10},
		"training": {"steps": 20, "lr": 0.002, "warmup_steps": 2, "seed": 7},
		"checkpoint": {"every_steps": 5, "keep": 3},
		"fault_tolerance": {"max_restarts": 2, "heartbeat_timeout_s": 30, "fallback": "auto"}}' |
		jq "$2"
}

# submit TENANT TOKEN NAME JQ: the corpus into TENANT's data root, then
# the job; prints the new job's id. The job names a data path, so TOKEN is
# the platform admin's (docs/datasets.md); admission, quotas and fair
# share are the tenant's, whoever submits.
submit() {
	tenant_data "$(q "SELECT id FROM tenants WHERE name = '$1'")" "$DATA"/train_*.bin || return 1
	TOKEN=$2 api POST "/v1/tenants/$1/jobs" -H 'Content-Type: application/json' \
		-d "$(job_spec "$3" "$4")"
	[[ $STATUS == 201 ]] || {
		echo "submit $3: HTTP $STATUS $BODY" >&2
		return 1
	}
	printf '%s' "$BODY" | jq -r .id
}

job_state() { q "SELECT state FROM jobs WHERE id = '$1'"; }

# wait_state JOB SECONDS STATE...: until JOB is in one of the STATEs.
wait_state() {
	local job=$1 deadline=$((SECONDS + $2)) s
	shift 2
	while :; do
		s=$(job_state "$job")
		for want in "$@"; do
			[[ $s == "$want" ]] && return 0
		done
		((SECONDS < deadline)) || return 1
		sleep 0.3
	done
}

# wait_steps JOB N SECONDS: until JOB has reported N steps' metrics.
wait_steps() {
	local deadline=$((SECONDS + $3))
	until (($(q "SELECT count(*) FROM job_metrics WHERE job_id = '$1'") >= $2)); do
		((SECONDS < deadline)) || return 1
		sleep 0.3
	done
}

# slurm_ids JOB: the Slurm jobs accounting holds for JOB (by their name),
# sorted. slurmdbd learns of jobs a moment after slurmctld: wait for the
# one the database recorded before comparing (acct_caught_up).
slurm_ids() {
	sacct -X -n -P -a --name "ty-$1" -S 2020-01-01 -o JobID 2>/dev/null | sort -n | xargs
}
acct_caught_up() { [[ -n $(slurm_ids "$1") && $(slurm_ids "$1") == *"$(db_slurm_ids "$1" | awk '{ print $NF }')"* ]]; }

# db_slurm_ids JOB: the Slurm ids the database recorded for JOB's attempts, sorted.
db_slurm_ids() {
	q "SELECT slurm_job_id FROM job_attempts WHERE job_id = '$1' AND slurm_job_id IS NOT NULL
	    ORDER BY slurm_job_id" | xargs
}

sacct_state() { sacct -X -n -P -j "$1" -o State 2>/dev/null | head -n 1 | awk '{ print $1 }'; }
