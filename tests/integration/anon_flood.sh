#!/usr/bin/env bash
# anon_flood.sh - requests without a valid token cannot flood the server or
# its audit log. From one client address, failed authentications take from
# the address's bucket (TRAINYARD_RATE_ANON_RPS and _BURST) before any
# token is looked up: past it every request answers 429 rate_limited with
# Retry-After. The failures let through leave at most one audit record per
# address and TRAINYARD_AUTH_FAIL_AUDIT_S (the first at once, the rest
# counted into one record when the interval closes, or when the API stops),
# whose counts add up to the failures; the denials report counts them.
# Refusals of authenticated callers stay one record each.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

admin=$(admin_token) || {
	not_ok "admin token"
	summary
	exit 1
}
plain=$(user_token "flood-$$") || {
	not_ok "a user's token"
	summary
	exit 1
}

# failed authentications from loopback since record id $1: "records failures"
failures_since() {
	q "SELECT count(*) || ' ' || coalesce(sum(coalesce((detail->>'count')::bigint, 1)), 0)
	   FROM audit_log WHERE action = 'authz.deny' AND status = 401
	   AND client_addr = '127.0.0.1' AND id > $1"
}
last_id() { q "SELECT coalesce(max(id), 0) FROM audit_log"; }

SINCE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
sleep 1 # the report's period starts at a whole second
check "restart the API with 20 failed authentications per address at once, 1/s after, counted over 3 s" \
	env TRAINYARD_RATE_ANON_RPS=1 TRAINYARD_RATE_ANON_BURST=20 TRAINYARD_AUTH_FAIL_AUDIT_S=3 \
	"$TY_ROOT/deploy/stack" api-restart
START=$(last_id)

# ---- the flood: no token, a malformed one, a well-formed unknown one -------
N=90
BAD="ty_$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
denied=0 limited=0 other=0
t0=$(date +%s%N)
for ((i = 0; i < N; i++)); do
	case $((i % 3)) in
	0) TOKEN= ;;
	1) TOKEN=not-a-token ;;
	2) TOKEN=$BAD ;;
	esac
	api GET /v1/whoami
	case $STATUS in
	401) denied=$((denied + 1)) ;;
	429)
		limited=$((limited + 1))
		# the last refusal, kept: the bucket refills one a second, so the
		# last request of the loop may be let through again
		L_BODY=$BODY L_RETRY=$(header Retry-After)
		;;
	*) other=$((other + 1)) ;;
	esac
done
# the flood's length in whole seconds, rounded up: what the bucket refilled
# in it, and how many 3 s windows it spans, bound what follows
secs=$((($(date +%s%N) - t0 + 999999999) / 1000000000))
windows=$(((secs + 2) / 3))
flood_denied=$denied
# A valid token from the address waits too while its bucket is empty: right
# after a refused request (the bucket empty), a valid token's request is
# refused as well. The bucket refills one a second, so a try may meet a
# fresh token between the two (the valid request then passes and gives it
# back, and the next failed one takes it): up to five tries. A failure let
# through counts with the flood's for the audit below.
valid_waits=0
for ((i = 0; i < 5 && valid_waits == 0; i++)); do
	TOKEN=$BAD
	api GET /v1/whoami
	[[ $STATUS == 401 ]] && denied=$((denied + 1))
	[[ $STATUS == 429 ]] || continue
	TOKEN=$admin
	api GET /v1/whoami
	[[ $STATUS == 429 ]] && valid_waits=1
done
check_eq "every answer is 401 or 429" 0 "$other"
check "about the burst is let through (20 and what refilled in ${secs}s): $flood_denied" \
	test "$flood_denied" -ge 20 -a "$flood_denied" -le $((20 + secs + 1))
check_eq "the rest answer 429" $((N - flood_denied)) "$limited"
check_eq "a refusal is rate_limited" rate_limited "$(printf '%s' "${L_BODY:-}" | jq -r .code)"
check_match "by the client address's limit, says the detail" "per client address" \
	"$(printf '%s' "${L_BODY:-}" | jq -r .detail)"
check_match "with Retry-After" '^[1-9][0-9]*$' "${L_RETRY:-}"
check_eq "while the address's bucket is empty, a valid token from it waits too" 1 "$valid_waits"

sleep 5 # the interval closes; its record is written within a second
read -r records counted <<<"$(failures_since "$START")"
# the first at once, then at most one a window the flood touched
check "the audit log grew by a few records, not one a failure: $records in ${secs}s" \
	test "$records" -ge 2 -a "$records" -le $((windows + 2)) -a "$records" -lt "$denied"
check_eq "whose counts add up to the failures let through" "$denied" "$counted"
many=$(q "SELECT count(*) FROM audit_log WHERE action = 'authz.deny' AND status = 401
	      AND id > $START AND (detail->>'count')::int > 1 AND detail->'routes' IS NOT NULL
	      AND detail->'codes'->>'unauthenticated' IS NOT NULL")
check "a record counts many, with their routes and codes: $many" \
	test "$many" -ge 1 -a "$many" -lt "$records"

# ---- the failures still counted when the API stops are written then -------
check "restart the API counting over an hour" \
	env TRAINYARD_AUTH_FAIL_AUDIT_S=3600 "$TY_ROOT/deploy/stack" api-restart
TOKEN=$admin
check_status "the restart emptied no bucket" 200 GET /v1/whoami
MID=$(last_id)
TOKEN=$BAD
for _ in 1 2 3 4; do api GET /v1/whoami; done
check_eq "four more failures" 401 "$STATUS"
sleep 2
check_eq "the first is on record at once, the others counted" "1 1" "$(failures_since "$MID")"
check "stop the API (and start it again with the defaults)" stack api-restart
check_eq "when it stops it writes them: four in two records" "2 4" "$(failures_since "$MID")"

# ---- refusals of authenticated callers: one record each --------------------
MID=$(last_id)
TOKEN=$plain
for _ in 1 2 3; do api GET /v1/users; done
check_eq "a user without user.read is refused" 403 "$STATUS"
check_eq "each refusal its own record" 3 \
	"$(q "SELECT count(*) FROM audit_log WHERE action = 'authz.deny' AND status = 403
	      AND actor_name = 'flood-$$' AND id > $MID")"

# ---- the denials report counts the failures, not the records ---------------
TOKEN=$admin
api GET "/v1/reports/denials?from=$SINCE&format=json"
check_eq "the denials report" 200 "$STATUS"
check_eq "failed authentications on GET /v1/whoami, as many as let through" $((denied + 4)) \
	"$(printf '%s' "$BODY" | jq '[.sections[] | select(.name == "denials") | .rows[]
		| select(.actor == "(unauthenticated)" and .route == "GET /v1/whoami")
		| .failed_authentications] | add')"
check_eq "the user's refusals, three" 3 \
	"$(printf '%s' "$BODY" | jq "[.sections[] | select(.name == \"denials\") | .rows[]
		| select(.actor == \"flood-$$\" and .route == \"GET /v1/users\") | .denials] | add")"

summary
