#!/usr/bin/env bash
# tests/integration/sched_chaos.sh - the whole platform under SIGKILL.
#
# A client submits small jobs one after another for CHAOS_SECONDS (default
# 60), each with its own Idempotency-Key, retrying a key until it is
# acknowledged (201). Meanwhile, every few seconds, one of the API, the
# scheduler, slurmctld, a slurmd or PostgreSQL (every one of its
# processes) is killed with SIGKILL at a random moment and started again a
# moment later. Then everything runs until the queue has drained, and:
#   - no acknowledged job is lost, and no key made two jobs;
#   - no job is stuck: every one ends (succeeded, failed or cancelled),
#     and a failed one says why;
#   - every Slurm job accounting holds for the tenant is an attempt the
#     database knows;
#   - every job has its audit record of the submission.
# Before it, tenant L, which is guaranteed nothing and may borrow 8
# devices, runs a long job of 4 ranks on each node (so that its ranks talk
# across the fake nodes of one host: deploy/slurm's task-prolog) on the
# whole idle cluster; the client's first job, within its tenant's
# guarantee, takes the room back by preemption. At the end: preemptions happened,
# every one is closed, none came before the minimum run time, no attempt
# was preempted twice, and L's job ends when cancelled.
# `make chaos` runs the same test longer (CHAOS_SECONDS=600).
#
# On the stack of several processes (`make chaos-ha`: TRAINYARD_PG_HA=1,
# TRAINYARD_API_REPLICAS=2, TRAINYARD_SCHEDULERS=2, the client going
# through haproxy) the victims are either API process, the leading
# scheduler (the standby takes over) and the PostgreSQL primary (its
# Patroni member and its postmaster: the synchronous standby is promoted),
# each started again a moment later. Either way the audit log's export
# verifies at the end.
# TEST_SEED=N repeats a run's choices.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

needs SLURM_CONF "$SCHED_BIN"
export TRAINYARD_PREEMPT_MIN_RUN_S=5 TRAINYARD_PREEMPT_GRACE_S=10
HA=0
((${TRAINYARD_PG_HA:-0} == 1 && ${TRAINYARD_API_REPLICAS:-1} > 1 && ${TRAINYARD_SCHEDULERS:-1} > 1)) && HA=1
CHAOS_SECONDS=${CHAOS_SECONDS:-60}
SETTLE_SECONDS=${SETTLE_SECONDS:-240}
SEED=${TEST_SEED:-$RANDOM}
RANDOM=$SEED
echo "# $CHAOS_SECONDS s of chaos, seed $SEED (TEST_SEED=$SEED repeats the choices)$( ((HA)) && echo ", on the stack of several processes")"

make_corpus
sched_quiet
sched_stop
ADMIN=$(admin_token)
at_least() { [[ $(q "$1") -ge $2 ]]; } # at_least SQL N: the count SQL gives is N or more
T=chaos-$$
tenant_new "$T" >/dev/null
TOKEN=$ADMIN api PUT "/v1/tenants/$T/quota" -H 'Content-Type: application/json' \
	-d '{"max_gpus": 64, "max_running_jobs": 8, "gpu_hours_per_month": 1000,
	     "max_storage_bytes": 1000000000, "weight": 1}'
T_ID=$(q "SELECT id FROM tenants WHERE name = '$T'")
tenant_data "$T_ID" "$DATA"/train_*.bin
L=chaos-lend-$$
L_ID=$(tenant_new "$L")
TOKEN=$ADMIN api PUT "/v1/tenants/$L/quota" -H 'Content-Type: application/json' \
	-d '{"max_gpus": 0, "borrow_gpus": 8, "max_running_jobs": 1}'
LJOB=$(submit "$L" "$ADMIN" lend '.resources = {"nodes": 2, "ranks_per_node": 4, "time_limit_minutes": 20}
	| .parallel.data_parallel = 8 | .parallel.global_batch = 32 | .training.steps = 100000
	| .checkpoint.every_steps = 10 | .fault_tolerance.fallback = []')
STARTED=$(date -u '+%Y-%m-%dT%H:%M:%S')
SMALL='.resources.nodes = 1 | .parallel.data_parallel = 1 | .parallel.global_batch = 4
	| .training.steps = 3 | .checkpoint.every_steps = 3
	| .fault_tolerance.max_restarts = 4'
ACKED=$TY_TMP/acked
STOP=$TY_TMP/stop
: >"$ACKED"

# the scheduler, and L's job on the whole cluster past the minimum run time
SCHED_N=0
sched_up() {
	if ((HA)); then
		stack sched-start >/dev/null 2>&1
		return
	fi
	SCHED_N=$((SCHED_N + 1))
	sched_run "sched-$SCHED_N"
}
sched_up
check "L's job runs on the idle cluster" wait_state "$LJOB" 120 running
check "and trains, its 8 ranks across both nodes" wait_until 60 at_least \
	"SELECT count(*) FROM job_metrics WHERE job_id = '$LJOB'" 1
at_least "SELECT count(*) FROM job_metrics WHERE job_id = '$LJOB'" 1 || job_log_tail "$LJOB"
sleep 6

# ---- the client ------------------------------------------------------------
# submit_acked KEY: until a 201 (or STOP and 30 s more); "KEY ID" into ACKED.
submit_acked() {
	local key=$1 body out status give_up=0
	body=$(job_spec "$key" "$SMALL")
	while :; do
		out=$(curl -sS --max-time 5 -H "Authorization: Bearer $ADMIN" -H "Idempotency-Key: $key" \
			--json "$body" -w '\n%{http_code}' "$TRAINYARD_URL/v1/tenants/$T/jobs" 2>/dev/null)
		status=${out##*$'\n'}
		if [[ $status == 201 ]]; then
			echo "$key $(jq -r .id <<<"${out%$'\n'*}")" >>"$ACKED"
			return 0
		fi
		if [[ -e $STOP ]]; then
			((give_up == 0)) && give_up=$((SECONDS + 30))
			((SECONDS < give_up)) || return 1
		fi
		sleep 0.5
	done
}
(
	i=0
	until [[ -e $STOP ]]; do
		i=$((i + 1))
		submit_acked "chaos-$$-$i"
		sleep 1
	done
) &
CLIENT=$!

# ---- the killer ------------------------------------------------------------
sched_kill() {
	if ((HA)); then # the leader
		kill -KILL "$(q "SELECT split_part(holder, ':', 2) FROM scheduler_lease" 2>/dev/null)" 2>/dev/null
		return 0
	fi
	kill -KILL "$SCHED_PID" 2>/dev/null && wait "$SCHED_PID" 2>/dev/null
}
sched_alive() {
	if ((HA)); then
		stack status 2>/dev/null | grep -q '^scheduler *up'
	else
		kill -0 "$SCHED_PID" 2>/dev/null
	fi
}
# ha_is_primary I: Patroni member pgI says it is the primary
ha_is_primary() {
	curl -fsS --max-time 1 -o /dev/null \
		"http://127.0.0.1:$((TRAINYARD_PG_PORT + 100 + 10 * ($1 - 1)))/primary" 2>/dev/null
}
# ha_primary_kill: the primary's Patroni member, then its postmaster; the
# other member's number in PROMOTED
ha_primary_kill() {
	local i dir
	PROMOTED=
	for i in 1 2; do
		ha_is_primary "$i" || continue
		dir=$TRAINYARD_VAR/ha/pg$i
		kill -KILL "$(cat "$dir/patroni.pid")" 2>/dev/null
		pg_kill "$dir/data"
		PROMOTED=$((3 - i))
		return 0
	done
}
# ha_failover: until the standby is promoted (Patroni's leader key of the
# killed member runs out: about 10 s); a member back sooner would take
# its own key again and no failover would happen
ha_failover() {
	local t0=$SECONDS
	[[ -n $PROMOTED ]] || return 0
	if wait_until 40 ha_is_primary "$PROMOTED"; then
		echo "# pg$PROMOTED promoted $((SECONDS - t0)) s after the primary was killed"
		FAILOVERS=$((FAILOVERS + 1))
	else
		echo "# pg$PROMOTED was not promoted within 40 s"
	fi
}
FAILOVERS=0
pg_kill() { # pg_kill [DATA_DIR]: every process of a PostgreSQL, postmaster first
	local pm
	pm=$(head -n 1 "${1:-$TRAINYARD_PGDATA}/postmaster.pid" 2>/dev/null) || return 0
	kill -KILL "$pm" 2>/dev/null
	pkill -KILL -P "$pm" 2>/dev/null
	while kill -0 "$pm" 2>/dev/null; do sleep 0.05; done
	sleep 0.2
}
api_kill() { # the API, or one of the API processes at random
	local f=$TRAINYARD_VAR/api.pid
	((HA && RANDOM % 2)) && f=$TRAINYARD_VAR/api-2.pid
	kill -KILL "$(cat "$f" 2>/dev/null)" 2>/dev/null
}
VICTIMS=(api scheduler slurmctld slurmd postgresql)
((HA)) && VICTIMS=(api scheduler postgresql)
kills=()
t_end=$((SECONDS + CHAOS_SECONDS))
while ((SECONDS < t_end)); do
	sleep "$((2 + RANDOM % 4)).$((RANDOM % 10))"
	v=${VICTIMS[RANDOM % ${#VICTIMS[@]}]}
	down="$((RANDOM % 3)).$((RANDOM % 10))"
	kills+=("$v")
	echo "# t=$((CHAOS_SECONDS - t_end + SECONDS))s: SIGKILL $v, back after ${down}s"
	case $v in
	api) api_kill ;;
	scheduler) sched_kill ;;
	slurmctld) stack_slurm kill-ctld >/dev/null ;;
	slurmd) node=n$((1 + RANDOM % 2)) && stack_slurm kill-node "$node" >/dev/null ;;
	postgresql) if ((HA)); then ha_primary_kill; else pg_kill; fi ;;
	esac
	sleep "$down"
	((HA)) && [[ $v == postgresql ]] && ha_failover
	case $v in
	api) stack api-start >/dev/null 2>&1 ;;
	scheduler) sched_up ;;
	slurmctld) stack_slurm start-ctld >/dev/null 2>&1 ;;
	slurmd) stack_slurm start-node "$node" >/dev/null 2>&1 ;;
	postgresql) stack pg-start >/dev/null 2>&1 ;;
	esac
done
touch "$STOP"
wait "$CLIENT"
echo "# killed: $(printf '%s\n' "${kills[@]}" | sort | uniq -c | xargs)"
# L's job stops with the chaos: cancelled (the API may be coming back)
for _ in 1 2 3 4 5; do
	TOKEN=$ADMIN api POST "/v1/jobs/$LJOB/cancel" >/dev/null 2>&1
	[[ $STATUS == 200 || $STATUS == 409 ]] && break
	sleep 2
done
if ((HA)); then
	pg_kills=$(printf '%s\n' "${kills[@]}" | grep -c postgresql)
	check_eq "every kill of the primary failed over to the standby" "$pg_kills" "$FAILOVERS"
fi

# ---- everything back, the queue drained ----------------------------------------
stack pg-start >/dev/null 2>&1
stack_slurm start-ctld >/dev/null 2>&1
for n in n1 n2; do stack_slurm start-node "$n" >/dev/null 2>&1; done
api_healthy 2>/dev/null || stack api-start >/dev/null 2>&1
sched_alive || sched_up
active() {
	q "SELECT count(*) FROM jobs WHERE tenant_id IN ('$T_ID', '$L_ID')
	    AND state NOT IN ('succeeded', 'failed', 'cancelled')"
}
# A slurmctld restarted from an older saved state hands out job ids again;
# a node still holding the old job of that id reports it, and slurmctld
# drains the node ("Duplicate jobid"), maybe after start-node above. Taking
# a drained node back is the operator's part: done here while the queue
# drains, as `deploy/slurm start-node` does.
resume_drained() {
	local n
	for n in n1 n2; do
		scontrol -o show node "$n" 2>/dev/null | grep -q 'State=[A-Z+]*DRAIN' &&
			scontrol update NodeName="$n" State=RESUME 2>/dev/null
	done
	return 0
}
drained() {
	resume_drained
	[[ $(active) == 0 ]]
}
wait_until "$SETTLE_SECONDS" drained

acked=$(wc -l <"$ACKED")
check "jobs were acknowledged under chaos (at least 10)" test "$acked" -ge 10
ids=$(awk '{ printf "%s'\''%s'\''", (NR > 1 ? "," : ""), $2 }' "$ACKED")
check_eq "no acknowledged job is lost" "$acked" \
	"$(q "SELECT count(*) FROM jobs WHERE id IN ($ids)")"
check_eq "no key made two jobs" 0 \
	"$(q "SELECT count(*) FROM (SELECT name FROM jobs WHERE tenant_id = '$T_ID'
	       GROUP BY name HAVING count(*) > 1) d")"
check_eq "no job is stuck: every one ended" 0 "$(active)"
q "SELECT id, state, state_reason FROM jobs WHERE tenant_id = '$T_ID'
    AND state NOT IN ('succeeded', 'failed', 'cancelled')" | sed 's/^/# stuck: /'
check_eq "every failed job says why" 0 \
	"$(q "SELECT count(*) FROM jobs WHERE tenant_id = '$T_ID' AND state = 'failed'
	       AND state_reason = ''")"
echo "# jobs: $(q "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) AS n
	FROM jobs WHERE tenant_id = '$T_ID' GROUP BY state) s")"
check "most jobs succeeded" test "$(q "SELECT count(*) FROM jobs WHERE tenant_id = '$T_ID'
	AND state = 'succeeded'")" -ge $((acked / 2))
# preemption under chaos: L's job lent the room and gave it back
echo "# preemptions: $(q "SELECT string_agg(outcome || ' ' || n, ', ') FROM (SELECT outcome, count(*) AS n
	FROM preemptions WHERE tenant_id = '$L_ID' GROUP BY outcome) s")"
check "L's job was preempted for the client's jobs" test \
	"$(q "SELECT count(*) FROM preemptions WHERE job_id = '$LJOB'")" -ge 1
check_eq "every preemption is closed" 0 \
	"$(q "SELECT count(*) FROM preemptions WHERE tenant_id = '$L_ID' AND ended_at IS NULL")"
check_eq "none came before the minimum run time (no loop)" 0 \
	"$(q "SELECT count(*) FROM preemptions p JOIN job_attempts a ON a.id = p.attempt_id
	       WHERE p.tenant_id = '$L_ID' AND p.asked_at < a.started_at + interval '5 seconds'")"
check_eq "no attempt was preempted twice" 0 \
	"$(q "SELECT count(*) FROM (SELECT attempt_id FROM preemptions WHERE tenant_id = '$L_ID'
	       GROUP BY attempt_id HAVING count(*) > 1) x")"
check_eq "the client's jobs were never the victims (within their guarantee)" 0 \
	"$(q "SELECT count(*) FROM preemptions WHERE tenant_id = '$T_ID'")"
# (cancelled; or failed when a slurmd killed under it left it no node to retry on)
check_eq "L's job ended, failed only saying why" 0 \
	"$(q "SELECT count(*) FROM jobs WHERE tenant_id = '$L_ID' AND NOT (state = 'cancelled'
	       OR (state = 'failed' AND state_reason <> ''))")"
q "SELECT j.name || ': ' || e.from_state || ' -> ' || e.to_state || ': ' || e.reason
    FROM job_events e JOIN jobs j ON j.id = e.job_id WHERE j.tenant_id = '$L_ID'
    AND e.from_state <> e.to_state ORDER BY e.id" | sed "s/^/# L's /"
# a job the worker's report ended may leave its attempt followed until
# its Slurm job ends or is lost (TRAINYARD_SCHED_LOST_S)
followed() {
	q "SELECT count(*) FROM job_attempts a JOIN jobs j ON j.id = a.job_id
	    WHERE j.tenant_id = '$T_ID' AND a.followed"
}
none_followed() { [[ $(followed) == 0 ]]; }
wait_until 90 none_followed
check_eq "the scheduler follows nothing of them any more" 0 "$(followed)"

# Every Slurm job of the tenant's account is an attempt the database knows,
# by its comment. A submission that slurmctld lost in a crash can stay in
# accounting without its comment: such a record must still name, by its
# job name, a job the database knows. (slurmdbd learns of jobs a moment
# after slurmctld.)
orphans() {
	local jid name state comment n=0
	while IFS='|' read -r jid name state comment; do
		if [[ -z $comment && $name =~ ^ty-([0-9a-f-]{36})$ ]]; then
			[[ $(q "SELECT count(*) FROM jobs WHERE id = '${BASH_REMATCH[1]}'
			         AND tenant_id = '$T_ID'") == 1 ]] && continue
		elif [[ $comment =~ ^trainyard\ job=([0-9a-f-]{36})\ attempt=([0-9]+)$ ]]; then
			[[ $(q "SELECT count(*) FROM job_attempts WHERE job_id = '${BASH_REMATCH[1]}'
			         AND number = ${BASH_REMATCH[2]}") == 1 ]] && continue
		fi
		echo "# Slurm job $jid ($name, $state, comment '$comment'): no attempt of it" >&2
		n=$((n + 1))
	done < <(sacct -X -n -P -a -D -A "ty-$T" -S "$STARTED" -o JobID,JobName,State,Comment 2>/dev/null)
	echo "$n"
}
has_slurm_jobs() { [[ -n $(sacct -X -n -P -a -D -A "ty-$T" -S "$STARTED" -o JobID 2>/dev/null) ]]; }
check "accounting holds the tenant's Slurm jobs" wait_until 30 has_slurm_jobs
check_eq "every Slurm job of the tenant is an attempt the database knows" 0 "$(orphans)"
check_eq "every job has the audit record of its submission" 0 \
	"$(q "SELECT count(*) FROM jobs j WHERE j.tenant_id = '$T_ID' AND NOT EXISTS
	       (SELECT 1 FROM audit_log a WHERE a.action = 'job.submit'
	        AND a.resource = 'job/' || j.id AND a.outcome = 'success')")"

# the verifiable log came through: a head over all of it, the export
# verified with the public key alone
TOKEN=$ADMIN
check_status "a head of the audit log" 201 POST /v1/audit/heads
check_status "the signing key" 200 GET /v1/audit/signing-key
PUB=$(printf '%s' "$BODY" | jq -r .public_key)
y "$ADMIN" audit export
expect_rc "the audit log exports" 0
printf '%s\n' "$OUT" >"$TY_TMP/export.jsonl"
y "" audit verify "$TY_TMP/export.jsonl" --pubkey "$PUB" -o json
expect_rc "and the export verifies" 0
check_eq "every submission acknowledged is in it" 0 \
	"$(while read -r _ id; do grep -q "\"resource\":\"job/$id\"" "$TY_TMP/export.jsonl" || echo "$id"; done <"$ACKED" | wc -l)"
if ((HA)); then
	stack sched-stop >/dev/null 2>&1
else
	kill "$SCHED_PID" 2>/dev/null
	wait "$SCHED_PID" 2>/dev/null
fi
summary
