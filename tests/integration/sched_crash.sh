#!/usr/bin/env bash
# tests/integration/sched_crash.sh - crash safety of dispatch, checked
# against Slurm's accounting.
#
#   1. 20 rounds: a scheduler that SIGKILLs itself at a dispatch point
#      picked at random (after the prepare transaction, before or after the
#      submission, after the record transaction) meets two new jobs (in
#      batches of one, so through the dispatch pipeline) and whatever
#      earlier rounds left half done; then a scheduler without
#      crash points finishes everything. Every job succeeds with exactly one
#      attempt, and the one Slurm job the database recorded for it is the
#      only one accounting holds under its name: nothing lost, nothing run
#      twice.
#   2. Two schedulers: the follower waits while the leader leads; the
#      leader is killed right after a submission, before recording it. The
#      follower takes over, finds the submission in Slurm by its comment,
#      records it, and the job succeeds once.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

make_corpus
sched_quiet
sched_stop
ADMIN=$(admin_token)
T=crash-$$
tenant_new "$T" >/dev/null
TOKEN=$ADMIN api PUT "/v1/tenants/$T/quota" -H 'Content-Type: application/json' \
	-d '{"max_gpus": 64, "max_running_jobs": 32, "gpu_hours_per_month": 1000,
	     "max_storage_bytes": 1000000000, "weight": 1}'
SMALL='.resources.nodes = 1 | .parallel.data_parallel = 1 | .parallel.global_batch = 4
	| .training.steps = 3 | .checkpoint.every_steps = 3'
POINTS=(after_prepare before_submit after_submit after_record)
SEED=${TEST_SEED:-$RANDOM}
RANDOM=$SEED
echo "# crash points drawn with seed $SEED (TEST_SEED=$SEED repeats them)"

# waits SECONDS PID: until PID has exited; its status in WAITED.
waits() {
	local deadline=$((SECONDS + $1))
	while kill -0 "$2" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			kill -KILL "$2" 2>/dev/null
			wait "$2" 2>/dev/null
			WAITED=timeout
			return 1
		fi
		sleep 0.1
	done
	wait "$2"
	WAITED=$?
}

# ---- 1. 20 crashes ---------------------------------------------------------
JOBS=()
killed=0
for ((i = 1; i <= 20; i++)); do
	point=${POINTS[RANDOM % ${#POINTS[@]}]}
	JOBS+=("$(submit "$T" "$ADMIN" "crash$i-a" "$SMALL")" "$(submit "$T" "$ADMIN" "crash$i-b" "$SMALL")")
	# batches of one: the two jobs go through the dispatch pipeline
	# (the second is prepared while the first is submitted)
	sched_run "crash$i" TRAINYARD_SCHED_CRASH_AT="$point" TRAINYARD_SCHED_BATCH=1
	waits 20 "$SCHED_PID" 2>/dev/null # (bash would report the SIGKILL on stderr)
	[[ $WAITED == 137 ]] && killed=$((killed + 1))
	echo "# round $i: killed at $point (exit $WAITED)"
done
check "the schedulers died at their crash points (at least 15 of 20)" test "$killed" -ge 15
sched_run finish
for ((i = 0; i < ${#JOBS[@]}; i++)); do
	wait_state "${JOBS[i]}" 180 succeeded failed cancelled
done
lost=0 twice=0 mismatch=0 states=
for j in "${JOBS[@]}"; do
	states+="$(job_state "$j") "
	n=$(q "SELECT count(*) FROM job_attempts WHERE job_id = '$j'")
	((n == 1)) || twice=$((twice + 1))
	wait_until 20 test -z "$(q "SELECT 1 FROM job_attempts WHERE job_id = '$j' AND followed")"
	wait_until 20 acct_caught_up "$j"
	acct=$(slurm_ids "$j") db=$(db_slurm_ids "$j")
	[[ -n $db ]] || lost=$((lost + 1))
	[[ $acct == "$db" && $acct != *" "* ]] || {
		mismatch=$((mismatch + 1))
		echo "# job $j: accounting has [$acct], the database [$db]"
	}
done
check_eq "all 40 jobs succeeded" "$(printf 'succeeded %.0s' {1..40})" "$states"
check_eq "each has exactly one attempt" 0 "$twice"
check_eq "each has a recorded Slurm job" 0 "$lost"
check_eq "accounting holds exactly that one Slurm job for each" 0 "$mismatch"
kill -TERM "$SCHED_PID" 2>/dev/null
waits 20 "$SCHED_PID"

# ---- 2. the leader dies, the follower takes over ----------------------------
sched_run leader TRAINYARD_SCHED_CRASH_AT=after_submit
LEADER=$SCHED_PID
leads() { grep -q ' leads' "$TY_TMP/$1.log"; }
check "the first scheduler leads" wait_until 10 leads leader
sched_run follower
FOLLOWER=$SCHED_PID
follows() { grep -q 'follows: another scheduler leads' "$TY_TMP/follower.log"; }
check "the second one follows" wait_until 10 follows
J=$(submit "$T" "$ADMIN" leader-dies "$SMALL")
waits 20 "$LEADER" 2>/dev/null
check_eq "the leader was killed right after submitting" 137 "$WAITED"
check "the follower takes the lead" wait_until 15 leads follower
check "the job succeeds" wait_state "$J" 120 succeeded
check "the follower finished the dispatch" wait_until 20 grep -q "found in Slurm as" "$TY_TMP/follower.log"
check_eq "one attempt" 1 "$(q "SELECT count(*) FROM job_attempts WHERE job_id = '$J'")"
wait_until 20 test -z "$(q "SELECT 1 FROM job_attempts WHERE job_id = '$J' AND followed")"
wait_until 20 acct_caught_up "$J"
check_eq "one Slurm job, the recorded one" "$(db_slurm_ids "$J")" "$(slurm_ids "$J")"
kill -TERM "$FOLLOWER" 2>/dev/null
waits 20 "$FOLLOWER"
check_eq "the follower stops cleanly on TERM" 0 "$WAITED"

summary
