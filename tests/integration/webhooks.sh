#!/usr/bin/env bash
# tests/integration/webhooks.sh - a tenant's share of webhooks: at most
# TRAINYARD_WEBHOOKS_PER_TENANT of them (one more answers 409
# webhook_limit_reached, nothing stored, the refusal audited; a deleted one
# frees its place), and deliveries fair across tenants: while one tenant's
# receiver takes longer than the delivery timeout to answer every one of
# its webhooks, another tenant's alert still reaches its own receiver within
# a few seconds. A sender whose delivery another sender took over while it
# waited for its receiver (its claim ran out) records nothing over it: a
# delivery made stays delivered and is not sent again. Receivers listen on
# loopback, which a platform admin allows.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB
case ${BUILD:-build} in
/*) HOOK_BIN=${BUILD}/tests/tool_hook ;;
*) HOOK_BIN=$TY_ROOT/${BUILD:-build}/tests/tool_hook ;;
esac

ADMIN=$(admin_token)
SFX=$$
TA=wh-a-$SFX TB=wh-b-$SFX
TA_ID=$(tenant_new "$TA")
TB_ID=$(tenant_new "$TB")
JSON=(-H 'Content-Type: application/json')
CAP=${TRAINYARD_WEBHOOKS_PER_TENANT:-16}
SLOW_PORT=$((${TRAINYARD_API_PORT:-28080} + 310))
FAST_PORT=$((${TRAINYARD_API_PORT:-28080} + 311))

# ---- the cap ---------------------------------------------------------------
TOKEN=$ADMIN
made=0
for ((i = 1; i <= CAP; i++)); do
	api POST "/v1/tenants/$TA/webhooks" "${JSON[@]}" \
		-d "{\"url\": \"http://127.0.0.1:$SLOW_PORT/hook/$i\", \"allow_private\": true}"
	[[ $STATUS == 201 ]] && made=$((made + 1))
	[[ $i == 1 ]] && FIRST=$(printf '%s' "$BODY" | jq -r .id)
done
check_eq "a tenant gets its $CAP webhooks" "$CAP" "$made"
check_status "one more is refused" 409 POST "/v1/tenants/$TA/webhooks" "${JSON[@]}" \
	-d "{\"url\": \"http://127.0.0.1:$SLOW_PORT/hook/more\", \"allow_private\": true}"
check_json "as over the tenant's webhook limit" webhook_limit_reached .code
check_match "the detail names the limit" "$CAP" "$(printf '%s' "$BODY" | jq -r .detail)"
check_eq "nothing of it is stored" "$CAP" \
	"$(q "SELECT count(*) FROM webhooks WHERE tenant_id = '$TA_ID' AND deleted_at IS NULL")"
check_eq "the refusal is audited" 1 \
	"$(q "SELECT count(*) FROM audit_log WHERE tenant_id = '$TA_ID' AND action = 'webhook.create' AND outcome <> 'success'")"
check_status "another tenant still adds one" 201 POST "/v1/tenants/$TB/webhooks" "${JSON[@]}" \
	-d "{\"url\": \"http://127.0.0.1:$FAST_PORT/hook\", \"allow_private\": true}"
check_status "a deleted webhook frees its place" 204 DELETE "/v1/tenants/$TA/webhooks/$FIRST"
check_status "for a new one" 201 POST "/v1/tenants/$TA/webhooks" "${JSON[@]}" \
	-d "{\"url\": \"http://127.0.0.1:$SLOW_PORT/hook/again\", \"allow_private\": true}"

# ---- one tenant's slow receiver does not hold up another's deliveries ------------
SLOW=$TY_TMP/hook-slow FAST=$TY_TMP/hook-fast
rm -rf "$SLOW" "$FAST"
mkdir -p "$SLOW" "$FAST"
"$HOOK_BIN" "$SLOW_PORT" "$SLOW" 0 30000 &
SLOW_PID=$!
"$HOOK_BIN" "$FAST_PORT" "$FAST" 0 &
FAST_PID=$!
trap 'kill $SLOW_PID $FAST_PID 2>/dev/null' EXIT
sleep 0.5

q "SELECT raise_alert('$TA_ID', NULL, 'quota_nearly_spent', '{}', '0 seconds')" >/dev/null
slow_busy() { [[ $(find "$SLOW" -name '*.body' | wc -l) -ge 1 ]]; }
check "the slow tenant's deliveries are under way" wait_until 10 slow_busy
start=$SECONDS
q "SELECT raise_alert('$TB_ID', NULL, 'quota_nearly_spent', '{}', '0 seconds')" >/dev/null
fast_got() { [[ -f $FAST/1.body ]]; }
check "another tenant's alert reaches its receiver within 6 s" wait_until 6 fast_got
check_eq "with its tenant's name" "$TB" "$(jq -r .tenant "$FAST/1.body" 2>/dev/null)"
waited=$((SECONDS - start))
check_eq "while the slow tenant's $CAP deliveries are not all done" 1 \
	"$(q "SELECT (count(*) FILTER (WHERE d.state = 'pending' AND d.attempts <= 1) > 0)::int
	      FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
	      WHERE w.tenant_id = '$TA_ID'")"
printf '# the other tenant waited %s s\n' "$waited"

# the slow tenant's webhooks go, so nothing keeps calling its receiver
TOKEN=$ADMIN
for w in $(q "SELECT id FROM webhooks WHERE tenant_id = '$TA_ID' AND deleted_at IS NULL"); do
	api DELETE "/v1/tenants/$TA/webhooks/$w"
done

# ---- an outcome is written by the claim's holder alone ---------------------------
# The receiver answers the first POST 500 after 3 s. While the sender waits
# for it, the delivery is made by another sender (as one in another API
# process does once the first one's claim has run out): the late 500 must
# not turn it back into a pending delivery, which would be sent again.
TC=wh-c-$SFX
TC_ID=$(tenant_new "$TC")
LATE_PORT=$((${TRAINYARD_API_PORT:-28080} + 312))
LATE=$TY_TMP/hook-late
mkdir -p "$LATE"
"$HOOK_BIN" "$LATE_PORT" "$LATE" 1 3000 &
LATE_PID=$!
trap 'kill $SLOW_PID $FAST_PID $LATE_PID 2>/dev/null' EXIT
sleep 0.5
TOKEN=$ADMIN
check_status "a webhook to a receiver that answers late" 201 POST "/v1/tenants/$TC/webhooks" \
	"${JSON[@]}" -d "{\"url\": \"http://127.0.0.1:$LATE_PORT/hook\", \"allow_private\": true}"
WC=$(printf '%s' "$BODY" | jq -r .id)
q "SELECT raise_alert('$TC_ID', NULL, 'quota_nearly_spent', '{}', '0 seconds')" >/dev/null
late_busy() { [[ $(find "$LATE" -name '*.body' | wc -l) -ge 1 ]]; }
check "its delivery is under way" wait_until 10 late_busy
q "UPDATE webhook_deliveries SET state = 'delivered', delivered_at = clock_timestamp(),
    last_status = 204 WHERE webhook_id = '$WC'" >/dev/null
sleep 11 # the late 500, and a retry 5 s later, were it recorded
check_eq "the delivery another sender made stays delivered" "delivered 204" \
	"$(q "SELECT state || ' ' || last_status FROM webhook_deliveries WHERE webhook_id = '$WC'")"
check_eq "and the receiver got one POST" 1 "$(find "$LATE" -name '*.body' | wc -l)"
summary
