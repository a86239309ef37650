#!/usr/bin/env bash
# tests/integration/sched_slurm_restart.sh - slurmctld killed and brought
# back with an older saved state, as after a crash that came before its
# asynchronous state save:
#   - it no longer knows a job (B) and hands B's Slurm id out again (to
#     C): the scheduler records C under that id, tells the two apart by
#     their comments, ends B's attempt as lost and retries it, never
#     applies one's Slurm job to the other, and keeps admitting (D);
#   - it runs a batch job again (A) that had already completed: the
#     worker sees that its attempt has started before and exits with
#     attempt_over without side effects; A's output is kept, not
#     overwritten; A stays succeeded with one attempt;
#   - a job left running whose attempt had ended (E) is settled by the
#     sweep, as its attempt's failure says.
# The old state is made deterministic: slurmctld is stopped cleanly (its
# state saved) while A waits in a partition that is down, the state is
# copied, and once B waits there too it is put back under a SIGKILLed
# slurmctld.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

needs SLURM_CONF "$SCHED_BIN"
make_corpus
sched_quiet
sched_stop
ADMIN=$(admin_token)
T=ctld-$$
tenant_new "$T" >/dev/null
TOKEN=$ADMIN api PUT "/v1/tenants/$T/quota" -H 'Content-Type: application/json' \
	-d '{"max_gpus": 64, "max_running_jobs": 8, "gpu_hours_per_month": 1000,
	     "max_storage_bytes": 1000000000, "weight": 1}'
SMALL='.resources.nodes = 1 | .parallel.data_parallel = 1 | .parallel.global_batch = 4
	| .training.steps = 3 | .checkpoint.every_steps = 3'
PART=$(sinfo -h -o %R | head -n 1)
partition() { scontrol update PartitionName="$PART" State="$1"; }
restore_cluster() {
	stack_slurm start-ctld >/dev/null 2>&1
	partition UP 2>/dev/null
	sched_stop_own
}
sched_stop_own() { [[ -n ${SCHED_PID:-} ]] && kill "$SCHED_PID" 2>/dev/null && wait "$SCHED_PID" 2>/dev/null; }
trap restore_cluster EXIT
sid_of() { q "SELECT coalesce(slurm_job_id::text, '') FROM job_attempts WHERE job_id = '$1' AND number = ${2:-1}"; }
has_sid() { [[ -n $(sid_of "$1" "${2:-1}") ]]; }
output_of() { # the batch job's output, in its tenant's directory of the spool
	cat "$TRAINYARD_VAR/spool/tenants/$(q "SELECT tenant_id FROM jobs WHERE id = '$1'")/$1-1.out" 2>/dev/null
}

sched_run ctld
# ---- A waits in a partition that is down; its state is saved ----------------
partition DOWN
A=$(submit "$T" "$ADMIN" ctld-a "$SMALL")
check "A is submitted to Slurm and waits there" wait_until 60 has_sid "$A"
SA=$(sid_of "$A")
waits_down() { [[ $(squeue -h -j "$SA" -o %r 2>/dev/null) == PartitionDown ]]; }
check "A pends in Slurm: its partition is down" wait_until 20 waits_down
stack_slurm stop-ctld >/dev/null
SAVED=$TY_TMP/ctld-state
cp -a "$(stack_slurm ctld-state)" "$SAVED"
stack_slurm start-ctld >/dev/null
partition UP
check "A runs and succeeds" wait_state "$A" 120 succeeded failed
check_eq "A succeeded" succeeded "$(job_state "$A")"
check "A's first run wrote its output" grep -q 'trainyard-worker: attempt 1 of job' <<<"$(output_of "$A")"
a_gone() { [[ -z $(squeue -h -j "$SA" -o %i 2>/dev/null) ]]; }
check "A's Slurm job is over" wait_until 30 a_gone

# ---- B waits in Slurm when slurmctld dies and comes back with the old state ----
partition DOWN
B=$(submit "$T" "$ADMIN" ctld-b "$SMALL")
check "B is submitted to Slurm and waits there" wait_until 60 has_sid "$B"
SB=$(sid_of "$B")
stack_slurm kill-ctld >/dev/null
rm -rf "$(stack_slurm ctld-state)"
cp -a "$SAVED" "$(stack_slurm ctld-state)"
stack_slurm start-ctld >/dev/null
partition UP

# ---- C gets B's Slurm id; D comes after ------------------------------------
C=$(submit "$T" "$ADMIN" ctld-c "$SMALL")
check "C is submitted to Slurm" wait_until 60 has_sid "$C"
check_eq "Slurm hands out B's id again, to C" "$SB" "$(sid_of "$C")"
check "C succeeds" wait_state "$C" 120 succeeded failed
check_eq "C succeeded with one attempt" "succeeded|1" \
	"$(q "SELECT state || '|' || attempts FROM jobs WHERE id = '$C'")"
D=$(submit "$T" "$ADMIN" ctld-d "$SMALL")
check "the scheduler keeps admitting: D succeeds" wait_state "$D" 120 succeeded failed
check_eq "D succeeded" succeeded "$(job_state "$D")"
check "B is retried and succeeds" wait_state "$B" 240 succeeded failed
check_eq "B succeeded" succeeded "$(job_state "$B")"
# C's Slurm job completed; B's first attempt must not have ended with it
check_match "B's first attempt ended lost with its own Slurm job, not with C's" \
	'^lost\|(failed|cancelled|node_fail)$' \
	"$(q "SELECT failure_class || '|' || slurm_state FROM job_attempts
	       WHERE job_id = '$B' AND number = 1")"

# ---- A, run again by Slurm, does nothing -----------------------------------
rerun_seen() { grep -q 'has started before' <<<"$(output_of "$A")"; }
check "Slurm ran A's batch job again; its worker saw the attempt had started" \
	wait_until 60 rerun_seen
check "A's output from its first run is kept" grep -q 'trainyard-worker: attempt 1 of job' \
	<<<"$(output_of "$A")"
rerun_over() { [[ $(sacct -X -n -P -j "$SA" -o ExitCode 2>/dev/null | tail -n 1) == 17:0 ]]; }
check "accounting shows the run again as attempt_over (exit status 17)" wait_until 30 rerun_over
check_eq "A is still succeeded, with one attempt" "succeeded|1" \
	"$(q "SELECT state || '|' || attempts FROM jobs WHERE id = '$A'")"
# ---- a job left running whose attempt has ended ------------------------------
# What a scheduler that died between the two writes of an older release, or
# a hand-made fix, leaves behind: the attempt ended (the worker reported
# data_error) and is no longer followed, the job still running. The sweep
# settles it by the retry rules: data_error is not retried.
E=$(submit "$T" "$ADMIN" ctld-e "$SMALL | .training.steps = 5000")
check "E runs" wait_steps "$E" 2 90
SE=$(sid_of "$E")
q "UPDATE job_attempts SET followed = false, state = 'ended', outcome = 'failed',
    failure_class = 'data_error', ended_at = now() WHERE job_id = '$E'" >/dev/null
scancel "$SE" 2>/dev/null
check_eq "E is left running with no attempt followed" running "$(job_state "$E")"
check "the scheduler settles it" wait_state "$E" 60 failed succeeded queued
check_match "E failed as its attempt did, and says so" '^failed\|attempt 1 failed \(data_error\)' \
	"$(q "SELECT state || '|' || state_reason FROM jobs WHERE id = '$E'")"

check_eq "the scheduler follows nothing of this tenant any more" 0 \
	"$(q "SELECT count(*) FROM job_attempts a JOIN jobs j ON j.id = a.job_id
	       JOIN tenants t ON t.id = j.tenant_id WHERE t.name = '$T' AND a.followed")"
check "the scheduler recorded every submission (no failed statement)" \
	bash -c "! grep -q 'query failed' '$TY_TMP/ctld.log'"
summary
