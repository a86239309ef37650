#!/usr/bin/env bash
# rate_limit.sh - the per-token rate limit: a burst past the bucket answers
# 429 with Retry-After, other tokens are unaffected, and the bucket refills.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

admin=$(admin_token) || { not_ok "admin token"; summary; exit 1; }
user=limited-$$
TOKEN=$admin
check_status "create a user" 201 POST /v1/users --json "{\"name\":\"$user\"}"
limited=$(TRAINYARD_TOKEN=$admin yardctl token create "$user")

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

check "restore the API's default limits" stack api-restart
summary
