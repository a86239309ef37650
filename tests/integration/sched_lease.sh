#!/usr/bin/env bash
# tests/integration/sched_lease.sh - the scheduler's leadership as a lease
# with a fencing number (scheduler/leader.h, migration 0026).
#
#   1. Every table carries the fencing trigger, and a session whose epoch
#      is not the lease's can write nothing (SQLSTATE TYF01).
#   2. Two schedulers: A leads, B follows. A is stopped (SIGSTOP): B takes
#      over within the lease plus a poll, with the next epoch, and
#      dispatches a job submitted meanwhile. A continued (SIGCONT) finds
#      its lease taken, follows, and has submitted nothing to Slurm.
#   3. The leader's database session is cut: leadership passes at once.
#   4. A leader stopped with TERM gives the lease up: the standby leads at
#      its next poll.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

TTL=4
export TRAINYARD_SCHED_LEADER_TTL_S=$TTL
make_corpus
sched_quiet
SCHED_WAS=0
sched_running && SCHED_WAS=1
sched_stop
ADMIN=$(admin_token)
T=lease-$$
tenant_new "$T" >/dev/null
TOKEN=$ADMIN api PUT "/v1/tenants/$T/quota" -H 'Content-Type: application/json' \
	-d '{"max_gpus": 64, "max_running_jobs": 32, "gpu_hours_per_month": 1000,
	     "max_storage_bytes": 1000000000, "weight": 1}'
SMALL='.resources.nodes = 1 | .parallel.data_parallel = 1 | .parallel.global_batch = 4
	| .training.steps = 3 | .checkpoint.every_steps = 3'

# ---- 1. the fence --------------------------------------------------------
check_eq "every table but the lease's and the migrations' has the fencing trigger" "" \
	"$(q "SELECT string_agg(c.relname, ' ') FROM pg_class c
	      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
	      WHERE c.relkind IN ('r', 'p')
	        AND c.relname NOT IN ('scheduler_lease', 'schema_migrations')
	        AND NOT EXISTS (SELECT 1 FROM pg_trigger t
	                        WHERE t.tgrelid = c.oid AND t.tgname = 'scheduler_fence')")"
EPOCH=$(q "SELECT epoch FROM scheduler_lease")
# fenced SQL EPOCH: the SQLSTATE of SQL in a session at EPOCH ("" when it ran)
fenced() {
	psql "$TRAINYARD_DB" -X -qtA -v VERBOSITY=verbose \
		-c "SET trainyard.scheduler_epoch = '$2'" -c "$1" 2>&1 |
		sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p'
}
check_eq "a write at a stale epoch is refused" TYF01 \
	"$(fenced "UPDATE jobs SET state_reason = state_reason WHERE false" $((EPOCH - 1)))"
check_eq "an insert at a stale epoch is refused" TYF01 \
	"$(fenced "INSERT INTO job_events (job_id, from_state, to_state) SELECT id, state, state FROM jobs WHERE false" $((EPOCH + 5)))"
check_eq "a write at the lease's epoch runs" "" \
	"$(fenced "UPDATE jobs SET state_reason = state_reason WHERE false" "$EPOCH")"
check_eq "a session with no epoch (the API's) is not fenced" "" \
	"$(fenced "UPDATE jobs SET state_reason = state_reason WHERE false" "")"

# ---- 2. a stopped leader ---------------------------------------------------
leads() { grep -q ' leads (epoch' "$TY_TMP/$1.log"; }
leads_n() { grep -c ' leads (epoch' "$TY_TMP/$1.log"; }
owner_of() { echo "$(hostname):$1"; }
# since START: seconds from START (date +%s.%N) to now; below A B: A < B
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
sched_run A
A=$SCHED_PID
check "A leads" wait_until 10 leads A
sched_run B
B=$SCHED_PID
check "B follows, naming the leader" wait_until 10 \
	grep -q "follows: another scheduler leads ($(owner_of "$A"), epoch" "$TY_TMP/B.log"
E0=$(q "SELECT epoch FROM scheduler_lease")
check_eq "the lease is A's" "$(owner_of "$A")" "$(q "SELECT holder FROM scheduler_lease")"

kill -STOP "$A"
stopped=$(date +%s.%N)
J=$(submit "$T" "$ADMIN" while-stopped "$SMALL")
wait_until $((TTL + 10)) leads B
took=$(since "$stopped")
echo "# B took over $took s after A was stopped (lease $TTL s)"
check "B takes over within the lease plus a poll and a second" below "$took" $((TTL + 1)).3
check "B takes over no sooner than the lease allows" below 1 "$took"
check_eq "with the next epoch" "$((E0 + 1)) $(owner_of "$B")" \
	"$(q "SELECT epoch || ' ' || holder FROM scheduler_lease")"
check "the job submitted meanwhile succeeds" wait_state "$J" 120 succeeded
check_eq "B dispatched it" "$(owner_of "$B")" "$(q "SELECT dispatch_owner FROM jobs WHERE id = '$J'")"

kill -CONT "$A"
check "A, continued, finds its lease taken" wait_until 10 \
	grep -q "its lease (epoch $E0) was taken over\|lost the lead" "$TY_TMP/A.log"
check "and follows" wait_until 10 grep -q "follows: another scheduler leads" "$TY_TMP/A.log"
J2=$(submit "$T" "$ADMIN" after-continue "$SMALL")
check "a job submitted after succeeds" wait_state "$J2" 120 succeeded
check_eq "B dispatched it too" "$(owner_of "$B")" "$(q "SELECT dispatch_owner FROM jobs WHERE id = '$J2'")"
check_eq "A leads no more" 1 "$(leads_n A)"
kill -TERM "$A"
wait "$A"
check_eq "A stops cleanly" 0 "$?"
check "A submitted nothing to Slurm" grep -q "[0-9]* cycles, [0-9]* admitted, 0 submitted" "$TY_TMP/A.log"

# ---- 3. the leader's session is cut ----------------------------------------
E1=$(q "SELECT epoch FROM scheduler_lease")
q "SELECT pg_terminate_backend(backend_pid) FROM scheduler_lease" >/dev/null
cut=$(date +%s.%N)
epoch_past() { (($(q "SELECT epoch FROM scheduler_lease") > $1)); }
wait_until 10 epoch_past "$E1"
took=$(since "$cut")
echo "# leadership taken again $took s after the session was cut"
check "the lease is taken again, at the next epoch, within two seconds" below "$took" 2
check_eq "by B, reconnected" "$(owner_of "$B")" "$(q "SELECT holder FROM scheduler_lease")"
check "B says it lost the lead" grep -q "lost the lead\|lost the database connection" "$TY_TMP/B.log"

# ---- 4. a clean stop hands over --------------------------------------------
sched_run C
C=$SCHED_PID
check "C follows" wait_until 10 grep -q "follows: another scheduler leads" "$TY_TMP/C.log"
kill -TERM "$B"
gone=$(date +%s.%N)
wait "$B"
check "C leads" wait_until 10 leads C
took=$(since "$gone")
check "within a second and a half of B's stop (not the lease's $TTL s)" below "$took" 1.5
kill -TERM "$C"
wait "$C"
check_eq "C stops cleanly" 0 "$?"
((SCHED_WAS)) && sched_start
summary
