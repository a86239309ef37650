#!/usr/bin/env bash
# read_cache.sh - GET /v1/jobs/{job} answered from memory (api/readcache.h),
# and never once it may be wrong. The API runs with a read cache of a
# minute here, so an answer that changes within the script changed because
# the cache was told, not because it aged out:
#   - a second read is served from memory (the request log says "cached");
#   - a change made beside the API (psql, as the scheduler or another API
#     process would) shows at once: the job's row, another job of its
#     tenant (the queue position), a role binding, a token's revocation;
#   - a change made through this API (a submission, a cancel, a token's
#     revocation) shows in its very next answer;
#   - another token, another tenant's member, gets nothing of it;
#   - while PostgreSQL is down nothing is served from memory (503), and
#     once it is back the answers are read afresh.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
SFX=$$
T=rc-$SFX
T_ID=$(tenant_new "$T")
tenant_new "rc-other-$SFX" >/dev/null
ALICE=$(member_new "$T" "rc-alice-$SFX" editor)
BOB=$(member_new "$T" "rc-bob-$SFX" viewer)
MALLORY=$(member_new "rc-other-$SFX" "rc-mallory-$SFX" owner)
JOB=$(tiny_job rc 10)

check "the API restarts with a read cache of a minute" \
	env TRAINYARD_READ_CACHE_MS=60000 "$TY_ROOT/deploy/stack" api-restart
wait_until 10 api_healthy

# the jobs read a data path, so the platform admin submits them (docs/datasets.md)
TOKEN=$ADMIN
check_status "the admin submits job 1" 201 POST "/v1/tenants/$T/jobs" --json "$JOB"
J1=$(printf '%s' "$BODY" | jq -r .id)
check_status "and job 2" 201 POST "/v1/tenants/$T/jobs" --json "$JOB"
J2=$(printf '%s' "$BODY" | jq -r .id)

# read ID TOKEN: GET the job with a request id of its own; sets RID.
n=0
read_job() {
	n=$((n + 1))
	RID=rc-$SFX-$n
	TOKEN=$2 api GET "/v1/jobs/$1" -H "X-Request-Id: $RID"
}
# cached RID: "true" when the API logged the request as served from memory.
cached() {
	grep -F "\"request_id\":\"$RID\"" "$TRAINYARD_VAR/api.log" | tail -n 1 |
		jq -r '.cached // false'
}
# state_reason_is JOB TOKEN WANT: alice's read shows WANT (for wait_until)
state_reason_is() { read_job "$1" "$2" && [[ $(jq -r .state_reason <<<"$BODY") == "$3" ]]; }

read_job "$J2" "$ALICE"
check_eq "the first read goes to the database" "200 false" "$STATUS $(cached)"
check_json "job 2 is second in the queue" 2 .queue.position
read_job "$J2" "$ALICE"
check_eq "the second is served from memory" "200 true" "$STATUS $(cached)"
check_json "with the same answer" "$J2 2" '"\(.id) \(.queue.position)"'
read_job "$J2" "$BOB"
check_eq "bob's token has an entry of its own: from the database" "200 false" \
	"$STATUS $(cached)"
read_job "$J2" "$MALLORY"
check_eq "another tenant's owner gets 404, not alice's answer" "404 false" "$STATUS $(cached)"
read_job "$J2" "$BOB"
check_eq "bob's second read is from memory" "200 true" "$STATUS $(cached)"

# a change beside the API: the job's own row
q "UPDATE jobs SET state_reason = 'changed by hand' WHERE id = '$J2'" >/dev/null
check "a change of the job's row shows at once" \
	wait_until 2 state_reason_is "$J2" "$ALICE" 'changed by hand'
read_job "$J2" "$ALICE"
check_eq "and is kept again" "200 true" "$STATUS $(cached)"

# another job of the tenant leaves the queue: job 2 moves up
q "UPDATE jobs SET state = 'cancelled' WHERE id = '$J1'" >/dev/null
pos_is() { read_job "$1" "$ALICE" && [[ $(jq -r .queue.position <<<"$BODY") == "$2" ]]; }
check "job 1 leaving the queue moves job 2 up at once" wait_until 2 pos_is "$J2" 1

# a change through this API: its next answer has it
read_job "$J2" "$ALICE"
check_eq "job 2 is read from memory again" "200 true" "$STATUS $(cached)"
TOKEN=$ADMIN
check_status "the admin submits job 3" 201 POST "/v1/tenants/$T/jobs" --json "$JOB"
J3=$(printf '%s' "$BODY" | jq -r .id)
read_job "$J2" "$ALICE"
check_eq "a submission drops its tenant's answers here at once (no notification)" \
	"200 false" "$STATUS $(cached)"
TOKEN=$ALICE
check_status "alice cancels job 2" 200 POST "/v1/jobs/$J2/cancel"
read_job "$J2" "$ALICE"
check_eq "its next read says cancelled" "cancelled false" "$(jq -r .state <<<"$BODY") $(cached)"

# roles and tokens changed beside the API
read_job "$J3" "$BOB"
read_job "$J3" "$BOB"
check_eq "bob reads job 3 from memory" "200 true" "$STATUS $(cached)"
BOB_ID=$(q "SELECT id FROM users WHERE name = 'rc-bob-$SFX'")
q "DELETE FROM role_bindings WHERE user_id = '$BOB_ID' AND tenant_id = '$T_ID'" >/dev/null
gone() { read_job "$1" "$2" && [[ $STATUS == "$3" ]]; }
check "bob's membership removed by hand: 404 at once" wait_until 2 gone "$J3" "$BOB" 404

read_job "$J3" "$ALICE"
read_job "$J3" "$ALICE"
check_eq "alice reads job 3 from memory" "200 true" "$STATUS $(cached)"
ALICE_TOKEN_ID=$(q "SELECT t.id FROM api_tokens t JOIN users u ON u.id = t.user_id
	WHERE u.name = 'rc-alice-$SFX'")
q "UPDATE api_tokens SET revoked_at = now() WHERE id = '$ALICE_TOKEN_ID'" >/dev/null
check "her token revoked by hand: 401 at once" wait_until 2 gone "$J3" "$ALICE" 401

ALICE2=$(user_token "rc-alice-$SFX")
read_job "$J3" "$ALICE2"
read_job "$J3" "$ALICE2"
check_eq "her new token reads job 3 from memory" "200 true" "$STATUS $(cached)"
ALICE2_ID=$(TOKEN=$ALICE2 api GET /v1/whoami && jq -r .token_id <<<"$BODY")
TOKEN=$ADMIN check_status "the admin revokes it through the API" 204 DELETE "/v1/tokens/$ALICE2_ID"
read_job "$J3" "$ALICE2"
check_eq "the very next read with it is refused" 401 "$STATUS"

# PostgreSQL down: nothing from memory
ALICE3=$(user_token "rc-alice-$SFX")
read_job "$J3" "$ALICE3"
read_job "$J3" "$ALICE3"
check_eq "a third token's read is from memory" "200 true" "$STATUS $(cached)"
check "PostgreSQL stops" stack pg-stop immediate
sleep 0.5
read_job "$J3" "$ALICE3"
check_eq "while it is down the read answers 503, not a kept answer" 503 "$STATUS"
check "PostgreSQL starts again" stack pg-start
ok_again() { read_job "$J3" "$ALICE3" && [[ $STATUS == 200 ]]; }
check "reads come back" wait_until 15 ok_again
kept_again() { read_job "$J3" "$ALICE3" && [[ $STATUS == 200 && $(cached) == true ]]; }
check "and are kept again once the cache listens again" wait_until 5 kept_again

check "the API restarts with its default settings" stack api-restart
wait_until 10 api_healthy
summary
