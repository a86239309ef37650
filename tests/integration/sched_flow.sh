#!/usr/bin/env bash
# tests/integration/sched_flow.sh - the scheduler on the test stack's Slurm
# cluster (2 nodes), end to end:
#   1. the demo scenario: a 2-node data-parallel job is admitted, submitted
#      through libslurm, runs with the worker and trainer on both nodes and
#      succeeds; the attempt's record matches Slurm's accounting; the
#      tenant is a Slurm account whose GrpTRES mirrors its quota;
#   2. a queued job waiting on its quota shows why and where it waits, and
#      is cancelled without ever reaching Slurm; a running job is
#      cancelled through the API and Slurm ends it;
#   3. a node's slurmd killed mid-training: the attempt ends with a node
#      failure, the retry runs on the remaining node, resumes from the
#      last checkpoint and succeeds;
#   4. a hung worker (SIGSTOP): its heartbeat stops, the scheduler cancels
#      the attempt as a hang, and with no restarts left the job fails with
#      the attempt's story in its events.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

needs SLURM_CONF "$SCHED_BIN"
# attempts_done JOB: the scheduler follows none of JOB's attempts any more
attempts_done() { [[ $(q "SELECT count(*) FROM job_attempts WHERE job_id = '$1' AND followed") == 0 ]]; }
make_corpus
sched_quiet
ADMIN=$(admin_token)
T=sch-$$
tenant_new "$T" >/dev/null
ALICE=$(member_new "$T" "alice-$$" editor)
sched_start
trap 'sched_stop' EXIT

# ---- 1. the demo scenario ----------------------------------------------
J=$(submit "$T" "$ADMIN" demo .)
check "a 2-node job is admitted, runs and succeeds" wait_state "$J" 120 succeeded failed
check_eq "it succeeded" succeeded "$(job_state "$J")"
check "the scheduler follows the attempt to its end in Slurm" wait_until 30 attempts_done "$J"
check_eq "one attempt, on both nodes, every step done, none lost" "1|2|n[1-2]|20|0||completed" \
	"$(q "SELECT number, nodes, node_list, steps_done, steps_lost, failure_class, slurm_state
	       FROM job_attempts WHERE job_id = '$J'")"
wait_until 20 acct_caught_up "$J"
check_eq "the attempt's Slurm job is the one accounting holds under the job's name" \
	"$(slurm_ids "$J")" "$(db_slurm_ids "$J")"
SID=$(db_slurm_ids "$J")
check_eq "Slurm accounting: completed" COMPLETED "$(sacct_state "$SID")"
check_eq "in the tenant's Slurm account" "ty-$T" \
	"$(sacct -X -n -P -j "$SID" -o Account 2>/dev/null | head -n 1)"
check_match "the account's GrpTRES mirrors the quota (64 devices)" 'cpu=64.*gres/gpu=64' \
	"$(sacctmgr -n -P show assoc account="ty-$T" format=GrpTRES 2>/dev/null | head -n 1)"
check_match "its events tell the Slurm job" "submitted to Slurm as job $SID" \
	"$(q "SELECT string_agg(reason, ';') FROM job_events WHERE job_id = '$J'")"
TOKEN=$ALICE
check_status "alice lists its checkpoints" 200 GET "/v1/jobs/$J/checkpoints"
check_json "the newest 3 (checkpoint.keep) are listed, all of world 2" "10 15 20 [2]" \
	'"\([.items[].step] | sort | map(tostring) | join(" ")) \([.items[].world] | unique | tojson)"'
T_ID=$(q "SELECT tenant_id FROM jobs WHERE id = '$J'")
check_eq "the same three are on disk" "step_00000010 step_00000015 step_00000020" \
	"$(find "$TRAINYARD_STORAGE_ROOT/tenants/$T_ID/jobs/$J/checkpoints" -mindepth 1 -maxdepth 1 \
		-name 'step_*' -printf '%f\n' | sort | xargs)"

# ---- 2. cancel: queued and running -------------------------------------
TOKEN=$ADMIN api PUT "/v1/tenants/$T/quota" -H 'Content-Type: application/json' \
	-d '{"max_gpus": 64, "max_running_jobs": 1, "gpu_hours_per_month": 1000,
	     "max_storage_bytes": 1000000000, "weight": 1}'
LONG=$(submit "$T" "$ADMIN" long '.training.steps = 5000')
check "a long job runs" wait_state "$LONG" 60 running
WAIT=$(submit "$T" "$ADMIN" waiting .)
has_reason() { [[ -n $(q "SELECT state_reason FROM jobs WHERE id = '$1'") ]]; }
check "the scheduler gives the waiting job a reason" wait_until 10 has_reason "$WAIT"
TOKEN=$ALICE
check_status "alice reads the waiting job" 200 GET "/v1/jobs/$WAIT"
check_json "it is queued" queued .state
check_match "it waits on max_running_jobs" 'max_running_jobs' "$(printf '%s' "$BODY" | jq -r .queue.reason)"
check_json "first in its tenant's queue" 1 .queue.position
check_json "its tenant is ranked by fair share" true '.queue.tenant_rank >= 1'
y "$ALICE" job show "$WAIT"
check_match "yardctl job show tells its place in the queue" 'queue_position +1' "$OUT"
check_status "alice cancels it" 200 POST "/v1/jobs/$WAIT/cancel"
check_json "cancelled at once" cancelled .state
check_eq "it never reached Slurm" "" "$(slurm_ids "$WAIT")"
check "the long job has reported steps" wait_steps "$LONG" 3 60
check_status "alice cancels the running job" 200 POST "/v1/jobs/$LONG/cancel"
check_json "it is cancelling" cancelling .state
check "it ends cancelled" wait_state "$LONG" 60 cancelled
LSID=$(db_slurm_ids "$LONG")
check "Slurm ended its job" wait_until 30 bash -c "sacct -X -n -P -j $LSID -o State | grep -q CANCELLED"
gone() { [[ -z $(squeue -h -j "$1" -o %i 2>/dev/null) ]]; }
check "nothing of it runs in Slurm any more" wait_until 30 gone "$LSID"
TOKEN=$ADMIN api PUT "/v1/tenants/$T/quota" -H 'Content-Type: application/json' \
	-d '{"max_gpus": 64, "max_running_jobs": 4, "gpu_hours_per_month": 1000,
	     "max_storage_bytes": 1000000000, "weight": 1}'

# ---- 3. a node fails mid-training --------------------------------------
NF=$(submit "$T" "$ADMIN" nodefail '.training.steps = 400 | .checkpoint.every_steps = 10')
check "the job runs on both nodes" wait_state "$NF" 60 running
ckpt_at() { (($(q "SELECT count(*) FROM checkpoints WHERE job_id = '$1' AND step >= $2") > 0)); }
check "it passes its checkpoint of step 20" wait_until 90 ckpt_at "$NF" 20
stack_slurm kill-node n2 >/dev/null
check "it fails over and succeeds" wait_state "$NF" 180 succeeded failed
check_eq "it succeeded" succeeded "$(job_state "$NF")"
check "the scheduler follows both attempts to their end" wait_until 30 attempts_done "$NF"
# Slurm ends the first attempt NODE_FAIL, or FAILED when the worker's
# report of the lost rank (rank_lost) ends the batch script first.
check_match "attempt 1 on 2 nodes ended by the node's loss, attempt 2 on 1 node completed" \
	'^1\|2\|(node_failure\|node_fail|rank_lost\|failed)\|[0-9]+\|[0-9]+;2\|1\|\|completed\|400\|0$' \
	"$(q "SELECT string_agg(concat_ws('|', number, nodes, failure_class, slurm_state, steps_done,
	       steps_lost), ';' ORDER BY number) FROM job_attempts WHERE job_id = '$NF'")"
check_eq "the retry ran on the node still alive" n1 \
	"$(q "SELECT node_list FROM job_attempts WHERE job_id = '$NF' AND number = 2")"
RESUME=$(q "SELECT min(m.step) FROM job_metrics m JOIN job_attempts a ON a.id = m.attempt_id
             WHERE a.job_id = '$NF' AND a.number = 2")
# attempt 1's last checkpoint: its steps done less its steps lost (its own
# checkpoint records are gone by now: attempt 2's newer ones replaced them)
CKPT=$(q "SELECT steps_done - steps_lost FROM job_attempts WHERE job_id = '$NF' AND number = 1")
check "attempt 1 ended past its checkpoint of step 20 or later (every 10 steps)" \
	test "$CKPT" -ge 20 -a "$((CKPT % 10))" -eq 0
check_eq "the retry resumed after attempt 1's last checkpoint" "$((CKPT + 1))" "$RESUME"
TOKEN=$ADMIN
check_status "where the failed-over job's time went" 200 GET "/v1/jobs/$NF/goodput"
check_json "two attempts, the first ended by the node's loss" true \
	'.attempts == 2 and (.attempt_list[0].failure_class | test("node_failure|rank_lost"))'
LOST=$(q "SELECT steps_done - $CKPT FROM job_attempts WHERE job_id = '$NF' AND number = 1")
check_json "all 400 steps kept; attempt 1's reported past its checkpoint lost" true \
	".steps.kept == 400 and .steps.lost <= $LOST"
check_json "the failover cost recovery time" true '.badput_seconds.recovery > 0'
check_json "and it all adds up to the wall time" true \
	'((.goodput_seconds + ([.badput_seconds[]] | add)) - .wall_seconds) | fabs < 0.01'
check_match "the retry's event tells why it is smaller" 'retry on 1 node' \
	"$(q "SELECT string_agg(reason, ';') FROM job_events WHERE job_id = '$NF'")"
stack_slurm start-node n2 >/dev/null

# ---- 4. a hang ---------------------------------------------------------
H=$(submit "$T" "$ADMIN" hang '.training.steps = 5000 | .resources.nodes = 1 |
	.parallel.data_parallel = 1 | .parallel.global_batch = 4 |
	.fault_tolerance = {"max_restarts": 0, "heartbeat_timeout_s": 10}')
check "the job runs" wait_steps "$H" 2 90
HA=$(q "SELECT id FROM job_attempts WHERE job_id = '$H'")
# this stack's worker (beside its scheduler), not one of another stack on the machine
WPID=$(pgrep -f -o "^$(dirname "$SCHED_BIN")/trainyard-worker attempt" || true)
check "its worker is found" test -n "$WPID"
[[ -n $WPID ]] && kill -STOP "$WPID"
check "the scheduler detects the hang; the job fails" wait_state "$H" 60 failed
check_eq "the attempt ended as a hang" "hang|ended" \
	"$(q "SELECT failure_class, state FROM job_attempts WHERE id = '$HA'")"
check_match "the job's last event tells the story" 'hang.*no restarts left' \
	"$(q "SELECT reason || ' ' || (detail->'attempts'->0->>'failure_class') FROM job_events
	       WHERE job_id = '$H' ORDER BY id DESC LIMIT 1")"
[[ -n $WPID ]] && kill -CONT "$WPID" 2>/dev/null
check "Slurm ended the hung job" wait_until 30 \
	bash -c "sacct -X -n -P -j $(db_slurm_ids "$H") -o State | grep -q CANCELLED"

summary
