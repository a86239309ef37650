#!/usr/bin/env bash
# tests/integration/sched_preempt.sh - borrowing, priority classes and
# preemption (scheduler/README.md, "Borrowing and preemption") on the test
# stack's Slurm cluster: 2 nodes x 4 cpus, each job 4 CPU ranks on one node.
#
#   1. reclaim: tenant A is guaranteed 4 devices and may borrow 4, B is
#      guaranteed 4; B idle, A runs a1 and a2 (a2 on 4 borrowed devices,
#      marked on its attempt). B submits b1: a2 is asked to save, checkpoints
#      at its next step, is preempted with 0 steps lost and requeued with its
#      submission time; b1 starts; a1, within A's guarantee, is untouched.
#      When b1 ends, a2 resumes from the preemption's checkpoint: no step
#      repeated or skipped, its loss continuous.
#   2. priority: tenant C (nothing guaranteed, 4 borrowable) may use the
#      class "urgent"; its urgent job preempts a normal one on a full cluster.
#   3. a job that ignores "save now" (own_code/hang.py, a command job that
#      ignores SIGUSR1 and SIGTERM) is cancelled through Slurm at the end of
#      its grace period and loses only the steps since its last checkpoint;
#      a job that is not preemptible beside it is never asked.
# Each preemption is a job event and an audit record, counted in the
# scheduler's metrics; the queue's reasons and the ETA say what a job
# waits for; refused class choices and a class in use are refused.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

needs SLURM_CONF "$SCHED_BIN"
export TRAINYARD_PREEMPT_GRACE_S=8 TRAINYARD_PREEMPT_MIN_RUN_S=4
make_corpus
sched_quiet
ADMIN=$(admin_token)
A=pra-$$ B=prb-$$ C=prc-$$
A_ID=$(tenant_new "$A")
tenant_new "$B" >/dev/null
C_ID=$(tenant_new "$C")
JSON=(-H 'Content-Type: application/json')
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; }
at_least() { [[ $(q "$1") -ge $2 ]]; } # at_least SQL N: the count SQL gives is N or more
quota() { # quota TENANT BODY
	TOKEN=$ADMIN api PUT "/v1/tenants/$1/quota" "${JSON[@]}" -d "$2"
}
quota "$A" '{"max_gpus": 4, "borrow_gpus": 4, "max_running_jobs": 4}'
check_eq "A: 4 guaranteed, 4 borrowable" "4 4" "$(jb '"\(.max_gpus) \(.borrow_gpus)"')"
quota "$B" '{"max_gpus": 4, "borrow_gpus": 0, "max_running_jobs": 4}'
# long jobs, a checkpoint every 25 steps; the test cancels them when done
LONG='.resources = {"nodes": 1, "ranks_per_node": 4, "time_limit_minutes": 10}
	| .parallel.data_parallel = 4 | .parallel.global_batch = 16 | .training.steps = 100000
	| .checkpoint.every_steps = 25 | .fault_tolerance.fallback = []'
SHORT="$LONG | .training.steps = 12 | .checkpoint.every_steps = 6"

# ---- classes and their rules ------------------------------------------------------
TOKEN=$ADMIN
check_status "an admin defines the class urgent" 200 PUT /v1/priority-classes/urgent \
	"${JSON[@]}" -d '{"value": 100, "description": "deadlines"}'
check_status "a class name is checked" 400 PUT /v1/priority-classes/Bad_Name "${JSON[@]}" \
	-d '{"value": 1}'
check_status "so is its value" 422 PUT /v1/priority-classes/huge "${JSON[@]}" -d '{"value": 5000}'
check_status "every token may list them" 200 GET /v1/priority-classes
check_eq "highest first, the default among them" "urgent normal" "$(jb '[.items[].name] | join(" ")')"
check_status "a quota names only classes that exist" 422 PUT "/v1/tenants/$C/quota" "${JSON[@]}" \
	-d '{"priority_classes": ["nope"]}'
check_eq "priority_class_not_allowed at /priority_classes" "/priority_classes" "$(jb '.errors[0].field // .errors[0].pointer')"
quota "$C" '{"max_gpus": 0, "borrow_gpus": 4, "max_running_jobs": 4, "priority_classes": ["urgent"]}'
check_eq "C may choose urgent" '["urgent"]' "$(jb '.priority_classes | tostring')"
check_status "a class a quota allows is not removed" 409 DELETE /v1/priority-classes/urgent
check_status "nor the default" 409 DELETE /v1/priority-classes/normal
tenant_data "$A_ID" "$DATA"/train_*.bin
check_status "A may not choose urgent" 422 POST "/v1/tenants/$A/jobs" "${JSON[@]}" \
	-d "$(job_spec nope "$SHORT | .resources.priority_class = \"urgent\"")"
check_eq "priority_class_not_allowed" "priority_class_not_allowed /resources/priority_class" \
	"$(jb '.errors[0] | "\(.code) \(.field // .pointer)"')"
check_status "a job that is not preemptible must fit the guarantee" 422 POST "/v1/tenants/$C/jobs" \
	"${JSON[@]}" -d "$(job_spec pinned "$SHORT | .resources.preemptible = false")"
check_eq "quota_never_fits" quota_never_fits "$(jb '.errors[0].code')"

sched_start
trap 'sched_stop' EXIT

# ---- 1. reclaim ---------------------------------------------------------------------
A1=$(submit "$A" "$ADMIN" a1 "$LONG")
A2=$(submit "$A" "$ADMIN" a2 "$LONG")
check "a1 and a2 run" wait_state "$A2" 60 running
wait_state "$A1" 30 running
borrowed() { q "SELECT a.borrowed_devices FROM job_attempts a JOIN jobs j ON j.id = a.job_id
	AND a.number = j.attempts WHERE j.id = '$1'"; }
check_eq "a1 runs within A's guarantee" 0 "$(borrowed "$A1")"
check_eq "a2 on 4 borrowed devices, marked on its attempt" 4 "$(borrowed "$A2")"
check "a2 has checkpointed once" wait_until 60 at_least "SELECT count(*) FROM checkpoints WHERE job_id = '$A2'" 1
sleep 1
B_AT=$(date +%s.%N)
B1=$(submit "$B" "$ADMIN" b1 "$SHORT")
reason_says() { [[ $(q "SELECT state_reason FROM jobs WHERE id = '$1'") == *"$2"* ]]; }
check "b1 says what it waits for" wait_until 20 reason_says "$B1" 'waiting for borrowed devices to return'
check "a2 is preempted for b1" wait_state "$A2" 30 preempting queued dispatching scheduled running
TOKEN=$ADMIN api GET "/v1/jobs/$B1/eta"
check_match "and so does its ETA" 'waiting for borrowed devices to return|^null$' "$(jb .waiting)"
check "b1 starts" wait_state "$B1" 60 running succeeded
# the job's start (its move to running, by the worker's first report or the
# scheduler's follow, whichever comes first), not the attempt's, which the
# scheduler records when it next follows Slurm
B_START=$(q "SELECT extract(epoch FROM started_at) FROM jobs WHERE id = '$B1'")
P="SELECT reason, outcome, steps_lost, borrowed_devices, beneficiary_job_id FROM preemptions
	WHERE job_id = '$A2'"
check_eq "the preemption: reclaim, checkpointed, 0 steps lost, of 4 borrowed devices, for b1" \
	"reclaim|checkpointed|0|4|$B1" "$(q "$P")"
check_eq "a1 was not touched" "running 0" \
	"$(q "SELECT state, (SELECT count(*) FROM preemptions WHERE job_id = '$A1') FROM jobs WHERE id = '$A1'" | tr '|' ' ')"
check_eq "a2's attempt ended in the class preempted" preempted \
	"$(q "SELECT failure_class FROM job_attempts WHERE job_id = '$A2' AND number = 1")"
check_eq "its last step is its last checkpoint's" \
	"$(q "SELECT max(step) FROM checkpoints WHERE job_id = '$A2'")" \
	"$(q "SELECT max(step) FROM job_metrics m JOIN job_attempts a ON a.id = m.attempt_id WHERE a.job_id = '$A2' AND a.number = 1")"
check_eq "the events tell it: running -> preempting -> queued" "preempting queued" \
	"$(q "SELECT to_state FROM job_events WHERE job_id = '$A2' AND from_state IN ('running', 'preempting') AND to_state <> from_state ORDER BY id" | xargs)"
check_eq "the requeue event's detail names the beneficiary, the grace used, the steps lost" \
	"$B1 8 0 checkpointed" \
	"$(q "SELECT detail->'preemption'->>'beneficiary_job_id', detail->'preemption'->>'grace_s',
	    detail->'preemption'->>'steps_lost', detail->'preemption'->>'outcome'
	    FROM job_events WHERE job_id = '$A2' AND from_state = 'preempting' AND to_state = 'queued'" | tr '|' ' ')"
check_eq "two audit records: job.preempt and job.preempted" "job.preempt job.preempted" \
	"$(q "SELECT action FROM audit_log WHERE resource = 'job/$A2' AND action LIKE 'job.preempt%' ORDER BY id" | xargs)"
check_match "b1 started within the grace + 10 s of its submission" '^[0-9]' \
	"$(awk -v a="$B_AT" -v b="$B_START" 'BEGIN { if (b - a < 18) print b - a }')"
check_eq "a2 is requeued with its submission time" 1 \
	"$(q "SELECT count(*) FROM jobs WHERE id = '$A2' AND created_at < '$(date -u -d "@${B_AT%.*}" '+%F %T')+00'")"
check_eq "and a requeue is not a restart" "" \
	"$(q "SELECT state_reason FROM jobs WHERE id = '$A2'" | grep -o 'retry [0-9]* of')"
check "b1 succeeds" wait_state "$B1" 120 succeeded
check "a2 resumes when b1 ends" wait_until 60 at_least "SELECT count(*) FROM job_metrics m JOIN job_attempts a ON a.id = m.attempt_id WHERE a.job_id = '$A2' AND a.number = 2" 3
STEPS="SELECT m.step FROM job_metrics m JOIN job_attempts a ON a.id = m.attempt_id
	WHERE a.job_id = '$A2' ORDER BY a.number, m.step"
check_eq "no step repeated or skipped across the preemption" "" \
	"$(q "$STEPS" | awk 'NR > 1 && $1 != prev + 1 { print "gap after " prev } { prev = $1 }')"
LOSS="SELECT m.data->>'loss' FROM job_metrics m JOIN job_attempts a ON a.id = m.attempt_id
	WHERE a.job_id = '$A2' AND m.step = "
CK=$(q "SELECT max(step) FROM checkpoints WHERE job_id = '$A2' AND attempt_id = (SELECT id FROM job_attempts WHERE job_id = '$A2' AND number = 1)")
check_eq "attempt 2 starts at the step after the preemption's checkpoint" "$((CK + 1))" \
	"$(q "SELECT min(m.step) FROM job_metrics m JOIN job_attempts a ON a.id = m.attempt_id WHERE a.job_id = '$A2' AND a.number = 2")"
# continuous: the resumed step's loss is near the one before, and far below the untrained first step's
check_match "its loss continuous across the preemption" '^ok' \
	"$(awk -v f="$(q "${LOSS}1")" -v x="$(q "$LOSS$CK")" -v y="$(q "$LOSS$((CK + 1))")" 'BEGIN {
		d = x - y; if (d < 0) d = -d
		print (d < 0.25 * x && y < 0.9 * f ? "ok" : "jump: first " f ", before " x ", after " y) }')"

echo "# reclaim done after ${SECONDS}s"

# ---- 2. priority ---------------------------------------------------------------------
TOKEN=$ADMIN api POST "/v1/jobs/$A2/cancel"
wait_state "$A2" 60 cancelled
B2=$(submit "$B" "$ADMIN" b2 "$LONG")
check "b2 runs beside a1" wait_state "$B2" 60 running
sleep 5 # past the minimum run time
tenant_data "$C_ID" "$DATA"/train_*.bin
C1=$(submit "$C" "$ADMIN" c1 "$SHORT | .resources.priority_class = \"urgent\"")
check_eq "c1 has its class's value as its priority" "urgent 100" \
	"$(q "SELECT priority_class, priority FROM jobs WHERE id = '$C1'" | tr '|' ' ')"
check "c1 starts" wait_state "$C1" 90 running succeeded
check_eq "one normal job was preempted for it, by priority" "priority" \
	"$(q "SELECT reason FROM preemptions WHERE beneficiary_job_id = '$C1'" | xargs)"
VICTIM=$(q "SELECT job_id FROM preemptions WHERE beneficiary_job_id = '$C1'")
check_match "a1 or b2" "^($A1|$B2)\$" "$VICTIM"
check_eq "it checkpointed first" "checkpointed 0" \
	"$(q "SELECT outcome, steps_lost FROM preemptions WHERE beneficiary_job_id = '$C1'" | tr '|' ' ')"
check "c1 succeeds" wait_state "$C1" 120 succeeded

echo "# priority done after ${SECONDS}s"

# ---- 3. a job that ignores "save now" ------------------------------------------------
# the victim waits while c1 (a higher class) runs, and does not take it back
check_eq "the victim did not take c1's devices back" 1 \
	"$(q "SELECT count(*) FROM preemptions WHERE job_id = '$C1' OR beneficiary_job_id = '$C1'")"
check "the victim runs again after c1" wait_state "$VICTIM" 60 running
for j in "$A1" "$B2"; do TOKEN=$ADMIN api POST "/v1/jobs/$j/cancel" >/dev/null; done
for j in "$A1" "$B2"; do wait_state "$j" 60 cancelled; done
# B's job may not be preempted (within B's guarantee); A's runs hang.py,
# which ignores SIGUSR1 and SIGTERM (own_code/hang.py): the only victim
B3=$(submit "$B" "$ADMIN" b3 "$LONG | .resources.preemptible = false")
SRC=$TY_TMP/hang
mkdir -p "$SRC"
cp "$HERE/own_code/hang.py" "$TY_ROOT/sdk/python/trainyard.py" "$SRC/"
tar -cf "$TY_TMP/hang.tar" -C "$SRC" .
TOKEN=$ADMIN
check_status "the program that ignores stops, as a code bundle of A" 201 POST "/v1/tenants/$A/code" \
	"${JSON[@]}" -d '{"name": "hang", "classification": "internal"}'
check_status "its version" 201 POST "/v1/tenants/$A/code/hang/versions" \
	-H 'Content-Type: application/x-tar' --data-binary "@$TY_TMP/hang.tar"
check_status "A runs it" 201 POST "/v1/tenants/$A/jobs" "${JSON[@]}" -d '{"name": "hang",
	"kind": "command", "code": "hang@1", "command": ["python3", "hang.py"],
	"resources": {"nodes": 1, "ranks_per_node": 4, "time_limit_minutes": 10},
	"checkpoint": {"keep": 2}, "fault_tolerance": {"max_restarts": 1, "heartbeat_timeout_s": 60}}'
H=$(jb .id)
check "b3 and hang run" wait_state "$H" 60 running
wait_state "$B3" 60 running
check "hang has checkpointed" wait_until 60 at_least "SELECT count(*) FROM checkpoints WHERE job_id = '$H'" 1
sleep 3 # past the minimum run time, steps past the checkpoint
C2=$(submit "$C" "$ADMIN" c2 "$SHORT | .resources.priority_class = \"urgent\"")
check "hang is preempted for c2" wait_until 30 at_least \
	"SELECT count(*) FROM preemptions WHERE job_id = '$H' AND beneficiary_job_id = '$C2'" 1
HA=$(q "SELECT attempt_id FROM preemptions WHERE job_id = '$H'")
ASKED=$(date +%s)
check "and cancelled through Slurm at the end of its grace" wait_until 60 at_least \
	"SELECT count(*) FROM preemptions WHERE attempt_id = '$HA' AND ended_at IS NOT NULL AND outcome = 'cancelled'" 1
ENDED=$(date +%s)
check_match "not before the grace (8 s) was over" '^ok' \
	"$(q "SELECT CASE WHEN ended_at - asked_at >= interval '8 seconds' THEN 'ok' ELSE 'early' END FROM preemptions WHERE attempt_id = '$HA'")"
check_match "nor long after (Slurm's KillWait 5 s)" '^ok' "$( ((ENDED - ASKED < 30)) && echo ok)"
LOST=$(q "SELECT steps_lost FROM preemptions WHERE attempt_id = '$HA'")
check_eq "it lost only the steps since its last checkpoint" \
	"$(q "SELECT max(m.step) - (SELECT max(step) FROM checkpoints WHERE job_id = '$H') FROM job_metrics m WHERE m.attempt_id = '$HA'")" \
	"$LOST"
check_match "some, as it never saved again" '^[1-9]' "$LOST"
check_eq "its attempt ended preempted" preempted "$(q "SELECT failure_class FROM job_attempts WHERE id = '$HA'")"
check "and the job is requeued, not failed" wait_state "$H" 20 queued dispatching scheduled running
check_eq "b3, not preemptible, was never asked" 0 "$(q "SELECT count(*) FROM preemptions WHERE job_id = '$B3'")"
check "c2 runs" wait_state "$C2" 90 running succeeded
echo "# ignored save done after ${SECONDS}s"

# ---- the record ------------------------------------------------------------------------
sched_prom() { curl -fsS -o "$TY_TMP/sched.prom" "http://$TRAINYARD_SCHED_METRICS_LISTEN/metrics"; }
check "the scheduler's metrics" sched_prom
check_match "count the reclaim of A's job" '^1$' \
	"$(grep -E "^trainyard_scheduler_preemptions_total\\{tenant=\"$A\",class=\"normal\",reason=\"reclaim\"\\} " "$TY_TMP/sched.prom" | awk '{print $2}')"
check_eq "no job was preempted twice in one attempt" 0 \
	"$(q "SELECT count(*) FROM (SELECT attempt_id FROM preemptions GROUP BY attempt_id HAVING count(*) > 1) x")"
for j in "$H" "$B3" "$C2" "$VICTIM"; do
	TOKEN=$ADMIN api POST "/v1/jobs/$j/cancel" >/dev/null
done
for j in "$H" "$B3" "$C2" "$VICTIM"; do wait_state "$j" 60 cancelled succeeded failed; done
q "UPDATE quotas SET priority_classes = '{}' WHERE tenant_id = '$C_ID'" >/dev/null
TOKEN=$ADMIN
check_status "a class no quota and no live job names is removed" 204 DELETE /v1/priority-classes/urgent
check_eq "its ended jobs fall back to normal" 0 \
	"$(q "SELECT count(*) FROM jobs WHERE priority_class = 'urgent'")"
summary
