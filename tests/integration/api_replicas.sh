#!/usr/bin/env bash
# tests/integration/api_replicas.sh - the control plane on several
# processes: deploy/stack with two API processes behind haproxy and two
# schedulers (TRAINYARD_API_REPLICAS, TRAINYARD_SCHEDULERS).
#
#   1. Both processes count each other (trainyard_api_processes 2) and
#      haproxy spreads requests over both.
#   2. A token's rate limit holds across them: what passes is at most 1.1x
#      what the limit allows over the flood (two processes each holding
#      the whole limit allowed twice that).
#   3. A token's follower cap holds across them: 2 followed logs at once,
#      the others 429 (each process holds one).
#   4. The client address is the one haproxy saw: an X-Forwarded-For the
#      client wrote is not believed, one from the trusted balancer is.
#   5. A slow webhook receiver gets each delivery once, with both
#      processes' senders at work.
#   6. The leading scheduler stopped (SIGSTOP): the standby leads within
#      the lease plus a poll and runs a job submitted through haproxy; the
#      old leader, continued, follows.
#   7. One API process killed: requests through haproxy go on answering.
# The stack is put back to one API process and one scheduler at the end.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_VAR
case ${BUILD:-build} in
/*) HOOK_BIN=${BUILD}/tests/tool_hook ;;
*) HOOK_BIN=$TY_ROOT/${BUILD:-build}/tests/tool_hook ;;
esac
command -v haproxy >/dev/null || {
	not_ok "environment" "haproxy is not installed (deploy/deps installs it)"
	summary
	exit 1
}

RPS=20 BURST=40 TTL=4
ADMIN=$(admin_token)
T=replicas-$$
T_ID=$(tenant_new "$T")
JSON=(-H 'Content-Type: application/json')
PORT1=$((TRAINYARD_API_PORT + 10)) PORT2=$((TRAINYARD_API_PORT + 20))
# The schedulers record the cluster's nodes (scheduler_cluster), which the
# API then checks submissions against; the scripts after this one that
# start no scheduler expect no record, as before it.
CLUSTER_WAS=$(q "SELECT count(*) FROM scheduler_cluster")
restore() {
	env TRAINYARD_API_REPLICAS=1 "$TY_ROOT/deploy/stack" api-restart >/dev/null 2>&1
	env TRAINYARD_SCHEDULERS=1 "$TY_ROOT/deploy/stack" sched-stop >/dev/null 2>&1
	((CLUSTER_WAS > 0)) || q "DELETE FROM scheduler_cluster" >/dev/null
	kill "${HOOK_PID:-}" 2>/dev/null
}
trap restore EXIT

sched_quiet
SCHED_WAS=0
sched_running && SCHED_WAS=1
sched_stop
check "two API processes behind haproxy" \
	env TRAINYARD_API_REPLICAS=2 TRAINYARD_RATE_RPS=$RPS TRAINYARD_RATE_BURST=$BURST \
	TRAINYARD_RATE_USER_RPS=100000 TRAINYARD_RATE_USER_BURST=100000 \
	TRAINYARD_LOG_FOLLOWERS_PER_TOKEN=2 "$TY_ROOT/deploy/stack" api-restart

# ---- 1. two processes ------------------------------------------------------
# processes PORT: trainyard_api_processes as the process on PORT counts
processes() {
	curl -fsS -H "Authorization: Bearer $ADMIN" "https://127.0.0.1:$1/metrics" 2>/dev/null |
		awk '$1 == "trainyard_api_processes" { print $2 }'
}
both_count_two() { [[ $(processes "$PORT1") == 2 && $(processes "$PORT2") == 2 ]]; }
check "each process counts two" wait_until 10 both_count_two
check_eq "both are registered" 2 \
	"$(q "SELECT count(*) FROM api_processes WHERE seen_at > now() - interval '6 seconds'")"

# ---- 2. a token's rate limit over both -------------------------------------
TOKEN_U=$(member_new "$T" "replicas-u-$$" viewer)
urls=()
for ((i = 0; i < 40; i++)); do urls+=(-o /dev/null "$TRAINYARD_URL/v1/whoami"); done
sleep 2 # both buckets full
start=$(date +%s.%N)
: >"$TY_TMP/codes"
for ((round = 0; round < 30; round++)); do
	curl -s -H "Authorization: Bearer $TOKEN_U" -w '%{http_code}\n' "${urls[@]}" >>"$TY_TMP/codes"
done
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
passed=$(grep -c '^200$' "$TY_TMP/codes")
refused=$(grep -c '^429$' "$TY_TMP/codes")
allowed=$(awk -v t="$took" -v r=$RPS -v b=$BURST 'BEGIN { printf "%d", b + r * t }')
echo "# $((passed + refused)) requests in $took s: $passed passed, $refused refused; the limit allows $allowed"
check "every answer is 200 or 429" test "$((passed + refused))" -eq 1200
check "what passed is at most 1.1x the limit" \
	awk -v p="$passed" -v a="$allowed" 'BEGIN { exit !(p <= 1.1 * a) }'
check "and at least half of it (the processes share it evenly)" \
	awk -v p="$passed" -v a="$allowed" 'BEGIN { exit !(p >= 0.5 * a) }'
served() { grep -c "api_processes/api$1 " "$TRAINYARD_VAR/lb.log"; }
check "haproxy sent requests to the first process" test "$(served 1)" -gt 100
check "and to the second" test "$(served 2)" -gt 100

# ---- 3. a token's follower cap over both -------------------------------------
make_corpus
SMALL='.resources.nodes = 1 | .parallel.data_parallel = 1 | .parallel.global_batch = 4
	| .training.steps = 3 | .checkpoint.every_steps = 3'
JOB=$(submit "$T" "$ADMIN" follow-me "$SMALL") # queued: no scheduler runs yet
check_eq "a job to follow" queued "$(job_state "$JOB")"
sleep 1.2 # the token's bucket refilled
for i in 1 2 3 4; do
	curl -s -N --max-time 4 -H "Authorization: Bearer $TOKEN_U" -o /dev/null -w '%{http_code}\n' \
		"$TRAINYARD_URL/v1/jobs/$JOB/logs?follow=1" >"$TY_TMP/follow.$i" &
	sleep 0.3
done
wait
full=$(cat "$TY_TMP"/follow.* | grep -c '^429$')
echo "# follow answers: $(cat "$TY_TMP"/follow.* | tr '\n' ' ')"
check_eq "of 4 followers with one token, 2 (the cap) follow and 2 are refused" 2 "$full"
q "UPDATE jobs SET state = 'cancelled', state_reason = 'followed only' WHERE id = '$JOB'" >/dev/null

# ---- 4. the client's address -------------------------------------------------
last_deny() {
	q "SELECT client_addr FROM audit_log WHERE action = 'authz.deny' AND status = 401
	   ORDER BY id DESC LIMIT 1"
}
sleep 1
curl -s -o /dev/null -H "Authorization: Bearer nope-$$" -H "X-Forwarded-For: 203.0.113.7" \
	"$TRAINYARD_URL/v1/whoami"
check "through haproxy, the address the client wrote is not believed" \
	wait_until 5 test "$(last_deny)" = 127.0.0.1
curl -s -o /dev/null -H "Authorization: Bearer nope-$$-2" -H "X-Forwarded-For: 198.51.100.9" \
	"https://127.0.0.1:$PORT1/v1/whoami"
addr_is() { [[ $(last_deny) == "$1" ]]; }
check "from the trusted balancer's address, its last X-Forwarded-For entry counts" \
	wait_until 5 addr_is 198.51.100.9

# ---- 5. a slow webhook receiver, two senders -----------------------------------
HOOK_PORT=$((TRAINYARD_API_PORT + 313))
HOOK=$TY_TMP/hook
mkdir -p "$HOOK"
"$HOOK_BIN" "$HOOK_PORT" "$HOOK" 0 1500 &
HOOK_PID=$!
sleep 0.5
TOKEN=$ADMIN api POST "/v1/tenants/$T/webhooks" "${JSON[@]}" \
	-d "{\"url\": \"http://127.0.0.1:$HOOK_PORT/hook\", \"allow_private\": true}"
check_eq "a webhook to a receiver that takes 1.5 s" 201 "$STATUS"
for i in 1 2 3 4 5 6; do
	q "SELECT raise_alert('$T_ID', NULL, 'quota_nearly_spent', '{}', '0 seconds')" >/dev/null
done
all_delivered() {
	[[ $(q "SELECT count(*) FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
	        WHERE w.tenant_id = '$T_ID' AND d.state = 'delivered'") == 6 ]]
}
check "the 6 alerts are delivered" wait_until 40 all_delivered
sleep 2
check_eq "the receiver got 6 POSTs, one for each" "6 6" \
	"$(find "$HOOK" -name '*.body' | wc -l) $(cat "$HOOK"/*.body | jq -r .id 2>/dev/null | sort -u | wc -l)"

# ---- 6. the leading scheduler stopped ---------------------------------------------
check "two schedulers" env TRAINYARD_SCHEDULERS=2 TRAINYARD_SCHED_LEADER_TTL_S=$TTL \
	"$TY_ROOT/deploy/stack" sched-restart
lease_held() { [[ -n $(q "SELECT holder FROM scheduler_lease WHERE deadline > now()") ]]; }
check "one of them leads" wait_until 10 lease_held
leader_pid() { q "SELECT split_part(holder, ':', 2) FROM scheduler_lease"; }
L=$(leader_pid)
E0=$(q "SELECT epoch FROM scheduler_lease")
check "one of the stack's schedulers leads" grep -qx "$L" "$TRAINYARD_VAR/scheduler.pid" "$TRAINYARD_VAR/scheduler-2.pid"
kill -STOP "$L"
stopped=$(date +%s.%N)
taken() { (($(q "SELECT epoch FROM scheduler_lease") > E0)); }
wait_until $((TTL + 10)) taken
took=$(awk -v a="$stopped" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
echo "# the standby took over $took s after the leader was stopped"
check "the standby leads within the lease plus a poll and a second" \
	awk -v t="$took" -v l=$TTL 'BEGIN { exit !(t <= l + 1.3) }'
J=$(submit "$T" "$ADMIN" through-haproxy "$SMALL")
check "a job submitted through haproxy succeeds" wait_state "$J" 120 succeeded
check_eq "dispatched by the new leader" "$(q "SELECT holder FROM scheduler_lease")" \
	"$(q "SELECT dispatch_owner FROM jobs WHERE id = '$J'")"
kill -CONT "$L"
LOG=$TRAINYARD_VAR/scheduler.log
grep -qx "$L" "$TRAINYARD_VAR/scheduler-2.pid" && LOG=$TRAINYARD_VAR/scheduler-2.log
check "the old leader, continued, follows" wait_until 10 \
	grep -q "scheduler [^ ]*:$L follows: another scheduler leads" "$LOG"

# ---- 7. one API process killed --------------------------------------------------
kill -KILL "$(cat "$TRAINYARD_VAR/api-2.pid")"
ok=0
for ((i = 0; i < 10; i++)); do
	code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ADMIN" \
		"$TRAINYARD_URL/v1/tenants/$T")
	[[ $code == 200 ]] && ok=$((ok + 1))
	sleep 0.1
done
check_eq "requests through haproxy go on answering" 10 "$ok"

restore
trap - EXIT
check "back to one API process" api_healthy
((SCHED_WAS)) && sched_start
summary
