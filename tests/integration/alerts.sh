#!/usr/bin/env bash
# tests/integration/alerts.sh - alerts from a job's steps and their
# delivery to a tenant's webhook: the rule against internal addresses
# (refused to the tenant, waived by a platform admin for a receiver on
# loopback), the secret shown once, a loss spike, a non-finite loss and
# slow steps raised as alerts and job events, each delivered signed
# (checked with openssl), a failed delivery retried, repeats quieted, a
# deleted webhook sent nothing, another tenant shown nothing.
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
T=al-$SFX TB=al-b-$SFX
tenant_new "$T" >/dev/null
tenant_new "$TB" >/dev/null
OWNER=$(member_new "$T" "al-owner-$SFX" owner)
VIEW=$(member_new "$T" "al-view-$SFX" viewer)
BOB=$(member_new "$TB" "al-bob-$SFX" owner)
JSON=(-H 'Content-Type: application/json')
PORT=$((${TRAINYARD_API_PORT:-28080} + 300))
HOOK_URL=http://127.0.0.1:$PORT/hook

# ---- the rule against internal addresses -----------------------------------
TOKEN=$OWNER
hook() { check_status "$1" "$2" POST "/v1/tenants/$T/webhooks" "${JSON[@]}" -d "$3"; }
hook "a receiver on loopback is refused to the tenant" 422 "{\"url\": \"$HOOK_URL\"}"
check_json "as an internal address, at the url" "webhook_address_not_allowed /url" \
	'"\(.errors[0].code) \(.errors[0].pointer)"'
hook "so is the cloud metadata address" 422 '{"url": "http://169.254.169.254/latest/meta-data"}'
check_json "for the same reason" webhook_address_not_allowed '.errors[0].code'
hook "and a private network" 422 '{"url": "https://10.0.0.8/h"}'
hook "an owner may not waive the rule" 422 "{\"url\": \"$HOOK_URL\", \"allow_private\": true}"
check_json "only a platform admin may" /allow_private '.errors[0].pointer'
hook "not an http URL" 422 '{"url": "file:///etc/passwd"}'
check_json "is no webhook URL" webhook_url_invalid '.errors[0].code'
hook "an unknown alert kind" 422 "{\"url\": \"$HOOK_URL\", \"kinds\": [\"bored\"]}"
TOKEN=$VIEW
hook "a viewer may not add webhooks" 403 '{"url": "https://example.org/h"}'

TOKEN=$ADMIN
hook "the admin allows the loopback receiver" 201 \
	"{\"url\": \"$HOOK_URL\", \"allow_private\": true, \"kinds\": [\"loss_spike\", \"non_finite\", \"slow_steps\"]}"
W=$(printf '%s' "$BODY" | jq -r .id)
SECRET=$(printf '%s' "$BODY" | jq -r .secret)
check_match "its secret, shown this once" '^whsec_[0-9a-f]{64}$' "$SECRET"
TOKEN=$OWNER
check_status "the owner lists the webhooks" 200 GET "/v1/tenants/$T/webhooks"
check_json "one, without its secret" "1 false" '"\(.items | length) \(.items[0] | has("secret"))"'
check_eq "the secret is nowhere in the answer" 0 "$(printf '%s' "$BODY" | grep -c "${SECRET#whsec_}")"
check_eq "nor in any audit record" 0 \
	"$(q "SELECT count(*) FROM audit_log WHERE detail::text LIKE '%${SECRET#whsec_}%'")"

DIR=$TY_TMP/hook
mkdir -p "$DIR"
"$HOOK_BIN" "$PORT" "$DIR" 1 &
HOOK_PID=$!
trap 'kill $HOOK_PID 2>/dev/null' EXIT

# ---- a job whose steps raise alerts ----------------------------------------------
JOB=$(tiny_job al 100 30)
TOKEN=$ADMIN
check_status "a job" 201 POST "/v1/tenants/$T/jobs" "${JSON[@]}" -d "$JOB"
J=$(printf '%s' "$BODY" | jq -r .id)
check_status "its attempt" 201 POST "/v1/jobs/$J/attempts"
A=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
I=/internal/v1/attempts/$A
check_status "it runs" 200 POST "$I/heartbeat"
steps=$(jq -nc '[range(1; 26) | {step: ., loss: (5 + (. % 3) * 0.01), tokens_per_s: 1000}]')
check_status "25 ordinary steps" 200 POST "$I/metrics" "${JSON[@]}" -d "{\"steps\": $steps}"
alerts() { q "SELECT count(*) FROM alerts WHERE job_id = '$J'"; }
check_eq "raise nothing" 0 "$(alerts)"
check_status "a loss of 100" 200 POST "$I/metrics" "${JSON[@]}" \
	-d '{"steps": [{"step": 26, "loss": 100, "tokens_per_s": 1000}]}'
check_status "a loss that is not finite" 200 POST "$I/metrics" "${JSON[@]}" \
	-d '{"steps": [{"step": 27, "loss": null, "tokens_per_s": 1000}]}'
check_status "a tenth of the pace" 200 POST "$I/metrics" "${JSON[@]}" \
	-d '{"steps": [{"step": 28, "loss": 5, "tokens_per_s": 100}]}'
check_status "another spike soon after" 200 POST "$I/metrics" "${JSON[@]}" \
	-d '{"steps": [{"step": 29, "loss": 120, "tokens_per_s": 1000}]}'

TOKEN=$VIEW
check_status "a viewer lists the tenant's alerts" 200 GET "/v1/tenants/$T/alerts?job=$J"
check_eq "three, the repeated spike quieted" "loss_spike non_finite slow_steps" \
	"$(printf '%s' "$BODY" | jq -r '[.items[].kind] | sort | join(" ")')"
check_json "the spike at step 26" 26 '.items[] | select(.kind == "loss_spike") | .detail.step'
check_status "the job's events" 200 GET "/v1/jobs/$J/events"
check_json "carry them" true '[.items[].reason] | any(. == "alert: loss_spike")'

# ---- delivery ---------------------------------------------------------------------
delivered() { [[ $(find "$DIR" -name '*.body' | wc -l) -ge 4 ]]; }
check "four posts reach the receiver: three alerts, one of them twice" wait_until 40 delivered
first=$(find "$DIR" -name '1.body')
sig=$(sed -n 's/^signature //p' "$DIR/1.headers")
stamp=${sig#t=}
stamp=${stamp%%,*}
want=${sig##*v1=}
got=$(printf '%s.%s' "$stamp" "$(cat "$first")" | openssl dgst -sha256 -hmac "$SECRET" -r | cut -d' ' -f1)
check_eq "each is signed with the webhook's secret over time and body" "$want" "$got"
check_match "and names its kind" '^event (loss_spike|non_finite|slow_steps)$' \
	"$(grep '^event ' "$DIR/1.headers")"
check_eq "the body is the alert" "$T $J" "$(jq -r '"\(.tenant) \(.job_id)"' "$first")"
TOKEN=$OWNER
settled() {
	api GET "/v1/tenants/$T/webhooks/$W/deliveries"
	[[ $(printf '%s' "$BODY" | jq '[.items[] | select(.state == "delivered")] | length') == 3 ]]
}
check "the owner sees the three delivered" wait_until 30 settled
check_status "the deliveries" 200 GET "/v1/tenants/$T/webhooks/$W/deliveries"
check_json "one of them on its second try, past the receiver's 500" "1 204" \
	'[.items[] | select(.attempts == 2)] | "\(length) \(.[0].last_status)"'

check_status "the owner deletes the webhook" 204 DELETE "/v1/tenants/$T/webhooks/$W"
TOKEN=$ADMIN
check_status "another job" 201 POST "/v1/tenants/$T/jobs" "${JSON[@]}" -d "$JOB"
J2=$(printf '%s' "$BODY" | jq -r .id)
check_status "its attempt" 201 POST "/v1/jobs/$J2/attempts"
A2=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
check_status "a non-finite loss" 200 POST "/internal/v1/attempts/$A2/metrics" "${JSON[@]}" \
	-d '{"steps": [{"step": 1, "loss": null}]}'
check_eq "is an alert" 1 "$(q "SELECT count(*) FROM alerts WHERE job_id = '$J2'")"
check_eq "that no deleted webhook is sent" 0 \
	"$(q "SELECT count(*) FROM webhook_deliveries d JOIN alerts a ON a.id = d.alert_id WHERE a.job_id = '$J2'")"
TOKEN=$BOB
check_status "another tenant's owner sees none of the alerts" 404 GET "/v1/tenants/$T/alerts"
check_status "nor the webhooks" 404 GET "/v1/tenants/$T/webhooks"
summary
