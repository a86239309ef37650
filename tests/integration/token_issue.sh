#!/usr/bin/env bash
# token_issue.sh - the operator's way back in. Every token made through the
# API descends from the bootstrap token and dies with it, and bootstrap is
# refused once an admin exists; `yardctl token issue --user NAME` works on
# the database directly and gives an existing platform admin a token with
# no parent, shown once and audited (token.issue, the operator as actor).
# Anyone else is refused.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB "$YARDCTL"

admin=$(admin_token) || {
	not_ok "admin token"
	summary
	exit 1
}
OPS=ti-ops-$$ PLAIN=ti-plain-$$
TOKEN=$admin
check_status "a second platform admin" 201 POST /v1/users --json "{\"name\":\"$OPS\",\"platform_role\":\"admin\"}"
OPS_ID=$(printf '%s' "$BODY" | jq -r .id)
check_status "and a user who is none" 201 POST /v1/users --json "{\"name\":\"$PLAIN\"}"

y "$admin" token create "$OPS"
expect_rc "the admin makes the second admin a token" 0
ops=$OUT
y "$ops" token create "$OPS"
expect_rc "which makes another" 0
child=$OUT

# every token of the second admin revoked: the way the first admin's ends
# when its bootstrap token expires
y "$admin" -o json token list "$OPS"
for id in $(jq_out '.items[].id'); do
	y "$admin" token revoke "$id"
done
y "$ops" whoami
expect_rc "the revoked token is refused" 3
y "$child" whoami
expect_rc "and so is its child" 3
y "" bootstrap
expect_rc "bootstrap is no way back: an admin exists" 1

MARK=$(q "SELECT coalesce(max(id), 0) FROM audit_log")
y "" token issue --user "$OPS"
expect_rc "token issue gives the admin a token" 0
check_match "printed alone" '^ty_[A-Za-z0-9_-]{43}$' "$OUT"
issued=$OUT
y "$issued" -o json whoami
expect_rc "which works" 0
check_eq "as the second admin" "$OPS admin" "$(jq_out '"\(.user.name) \(.platform_role)"')"
ISSUED_ID=$(jq_out .token_id)
check_eq "it has no parent" "t" "$(q "SELECT parent_id IS NULL FROM api_tokens WHERE id = '$ISSUED_ID'")"
check_eq "and lives TRAINYARD_TOKEN_TTL_DAYS (90) days" "t" \
	"$(q "SELECT expires_at BETWEEN now() + interval '89 days' AND now() + interval '91 days'
	      FROM api_tokens WHERE id = '$ISSUED_ID'")"
check_eq "audited once, the operator as actor, naming user and token" 1 \
	"$(q "SELECT count(*) FROM audit_log WHERE id > $MARK AND action = 'token.issue'
	      AND outcome = 'success' AND actor_name = 'operator' AND actor_id IS NULL
	      AND resource = 'token/$ISSUED_ID' AND detail->>'user_id' = '$OPS_ID'
	      AND detail->>'os_user' <> '' AND NOT detail::text LIKE '%ty\_%'")"
y "$issued" token create "$OPS"
expect_rc "the issued token makes tokens again" 0

y "" -o json token issue --user "$OPS_ID" --days 7
expect_rc "by id, for 7 days, as JSON" 0
check_eq "with the user, the id, the secret and the expiry" "$OPS true true" \
	"$(jq_out '"\(.user) \(.token | startswith("ty_")) \(.expires_at | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601 < now + 8 * 86400)"')"

MARK=$(q "SELECT coalesce(max(id), 0) FROM audit_log")
y "" token issue --user "$PLAIN"
expect_rc "a user who is not a platform admin is refused (exit 1)" 1
check_match "saying why" "is not a platform admin" "$ERR"
check_eq "and gets no token" "" "$OUT"
check_eq "none is made" 0 \
	"$(q "SELECT count(*) FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE u.name = '$PLAIN'")"
check_eq "nor a record of one" 0 "$(q "SELECT count(*) FROM audit_log WHERE id > $MARK AND action = 'token.issue'")"
y "" token issue --user "ti-nobody-$$"
expect_rc "an unknown user (exit 4)" 4
y "" token issue
expect_rc "--user is required (exit 2)" 2
y "" token issue --user "$OPS" --days 0
expect_rc "--days below 1 (exit 2)" 2
y "" token issue --user "$OPS" --db "host=/nonexistent dbname=none"
expect_rc "no database (exit 5)" 5
summary
