#!/usr/bin/env bash
# rate_limit.sh - the rate limits and the token cap. Per token: a burst past
# the bucket answers 429 with Retry-After, other tokens are unaffected, and
# the bucket refills. Per user: the user's tokens share one bucket, so a
# fresh token adds no requests. Per user, too: at most
# TRAINYARD_TOKENS_PER_USER live tokens, also when created at once.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

admin=$(admin_token) || { not_ok "admin token"; summary; exit 1; }
user=limited-$$
TOKEN=$admin
check_status "create a user" 201 POST /v1/users --json "{\"name\":\"$user\"}"
limited=$(TRAINYARD_TOKEN=$admin yardctl token create "$user")
second=$(TRAINYARD_TOKEN=$admin yardctl token create "$user")
third=$(TRAINYARD_TOKEN=$admin yardctl token create "$user")

restart_api() { TRAINYARD_RATE_RPS=$1 TRAINYARD_RATE_BURST=$2 stack api-restart; }
check "restart the API with 1 request/s and a burst of 4" restart_api 1 4

TOKEN=$limited # read by api() in lib.sh
codes=""
for _ in 1 2 3 4 5 6; do
	api GET /v1/whoami
	codes="$codes $STATUS"
done
check_eq "the burst passes, then 429" " 200 200 200 200 429 429" "$codes"
check_json "the problem code is rate_limited" rate_limited .code
retry=$(header Retry-After)
check_match "Retry-After is a positive number of seconds" '^[1-9][0-9]*$' "$retry"

TOKEN=$admin
check_status "another token is not limited" 200 GET /v1/whoami

sleep "${retry:-1}"
TOKEN=$limited # read by api() in lib.sh
check_status "the bucket refills after Retry-After" 200 GET /v1/whoami

# ---- per user: the user's tokens share one bucket ----------------------
check "restart the API with 1 request/s and a burst of 4 per token, 6 per user" \
	env TRAINYARD_RATE_RPS=1 TRAINYARD_RATE_BURST=4 TRAINYARD_RATE_USER_RPS=1 \
	TRAINYARD_RATE_USER_BURST=6 "$TY_ROOT/deploy/stack" api-restart
# at 1 request/s the user's bucket gains one in a second: the requests go
# one after the other, and the checks come after the last
codes=""
for t in "$limited" "$limited" "$limited" "$limited" "$second" "$second" "$second" "$third"; do
	TOKEN=$t api GET /v1/whoami
	codes="$codes $STATUS"
done
check_eq "the user's second token gets what is left of the user's 6, a third token nothing" \
	" 200 200 200 200 200 200 429 429" "$codes"
check_json "rate_limited" rate_limited .code
check_match "by the user's limit, says the detail" "per user" "$(printf '%s' "$BODY" | jq -r .detail)"
check_match "with Retry-After" '^[1-9][0-9]*$' "$(header Retry-After)"
TOKEN=$admin
check_status "another user is not limited" 200 GET /v1/whoami

# ---- at most TRAINYARD_TOKENS_PER_USER live tokens ----------------------
check "restart the API with 3 tokens per user" \
	env TRAINYARD_TOKENS_PER_USER=3 "$TY_ROOT/deploy/stack" api-restart
capped=capped-$$
TOKEN=$admin
check_status "create a user" 201 POST /v1/users --json "{\"name\":\"$capped\"}"
for i in 1 2 3 4 5 6 7 8; do
	curl -sS -o "$TY_TMP/mint.$i" -w '%{http_code}\n' -X POST -H "Authorization: Bearer $admin" \
		"$TRAINYARD_URL/v1/users/$capped/tokens" >"$TY_TMP/mint.$i.status" 2>/dev/null &
done
wait
check_eq "eight creations at once make three tokens" "201 201 201 409 409 409 409 409" \
	"$(cat "$TY_TMP"/mint.*.status | sort | xargs)"
check_eq "the others are token_limit_reached" "token_limit_reached" \
	"$(cat "$TY_TMP"/mint.? | jq -r 'select(.code) | .code' | sort -u)"
check_eq "the user has three tokens" 3 \
	"$(q "SELECT count(*) FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE u.name = '$capped'")"
mine=$(cat "$TY_TMP"/mint.? | jq -r 'select(.token) | .token' | head -n 1)
mine_id=$(cat "$TY_TMP"/mint.? | jq -r --arg t "$mine" 'select(.token == $t) | .id')
TOKEN=$mine
check_status "the user may not make a fourth either" 409 POST "/v1/users/$capped/tokens"
check_json "token_limit_reached" token_limit_reached .code
TOKEN=$admin
check_status "the admin lists them" 200 GET "/v1/users/$capped/tokens"
one=$(printf '%s' "$BODY" | jq -r --arg m "$mine_id" '[.items[] | select(.id != $m)][0].id')
check_status "and revokes one" 204 DELETE "/v1/tokens/$one"
TOKEN=$mine
check_status "then the user makes one" 201 POST "/v1/users/$capped/tokens"
check_status "but not one more" 409 POST "/v1/users/$capped/tokens"
q "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = (SELECT t.id
	FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE u.name = '$capped'
	AND t.revoked_at IS NULL AND t.expires_at > now() AND t.id <> '$mine_id' LIMIT 1)" >/dev/null
check_status "an expired token leaves room for a new one" 201 POST "/v1/users/$capped/tokens"

check "restore the API's default limits" stack api-restart
summary
