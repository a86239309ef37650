#!/usr/bin/env bash
# tests/integration/isolation.sh - tenant isolation, by every route: for
# each operation of the served OpenAPI document (so a route added later is
# covered without touching this test), tenant B's owner and tenant B's
# attempt credential try it on tenant A's tenant, job, checkpoint, attempt
# and user. Every try must be refused the way the route table says: a
# user token answers 404 on another tenant's resources (it cannot tell
# them from missing ones) and 401 on the worker runtime's routes; an
# attempt credential answers 401 everywhere but its own attempt's routes,
# and 404 on another attempt's. Nothing of A's may come back in a body.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
SFX=$$
TA=iso-a-$SFX TB=iso-b-$SFX
tenant_new "$TA" >/dev/null
tenant_new "$TB" >/dev/null
ALICE=$(member_new "$TA" "iso-alice-$SFX" owner)
BOB=$(member_new "$TB" "iso-bob-$SFX" owner)
JOB=$(tiny_job iso 10)

# job_with_attempt TOKEN TENANT: submit a job, start an attempt; prints "job attempt credential"
job_with_attempt() {
	local j
	TOKEN=$1 api POST "/v1/tenants/$2/jobs" -H 'Content-Type: application/json' -d "$JOB"
	j=$(printf '%s' "$BODY" | jq -r .id)
	TOKEN=$ADMIN api POST "/v1/jobs/$j/attempts"
	printf '%s %s\n' "$j" "$(printf '%s' "$BODY" | jq -r '"\(.id) \(.credential)"')"
}
# the jobs read a data path, so the platform admin submits both (docs/datasets.md)
read -r JA AA CRED_A <<<"$(job_with_attempt "$ADMIN" "$TA")"
read -r _ AB CRED_B <<<"$(job_with_attempt "$ADMIN" "$TB")"
check_match "tenant A has a job and an attempt" '^[0-9a-f-]{36}$' "$AA"
check_match "tenant B too" '^[0-9a-f-]{36}$' "$AB"
TOKEN=$CRED_A
SHA=$(printf 'x' | sha256sum | cut -d' ' -f1)
api POST "/internal/v1/attempts/$AA/checkpoints" -H 'Content-Type: application/json' \
	-d "{\"step\": 5, \"world\": 1, \"shards\": [{\"name\": \"shard_00000_of_00001.bin\", \"bytes\": 1, \"sha256\": \"$SHA\"}]}"
CA=$(printf '%s' "$BODY" | jq -r .id)
check_match "and a registered checkpoint" '^[0-9a-f-]{36}$' "$CA"
TOKEN=$ALICE
api GET "/v1/users/iso-alice-$SFX/tokens"
ALICE_TOKEN_ID=$(printf '%s' "$BODY" | jq -r '.items[0].id')

# A's identifiers, by placeholder
declare -A VALUE=([tenant]=$TA [job]=$JA [checkpoint]=$CA [attempt]=$AA
	[user]=iso-alice-$SFX [token_id]=$ALICE_TOKEN_ID)
TOKEN=''
api GET /v1/openapi.json
printf '%s' "$BODY" >"$TY_TMP/openapi.json"
mapfile -t OPS < <(jq -r '.paths | to_entries[] | .key as $p | .value | to_entries[]
	| select(.key | test("^(get|post|put|delete)$")) | "\(.key | ascii_upcase) \($p) \(.value["x-scope"])"' \
	"$TY_TMP/openapi.json")
check "the document lists the routes" test "${#OPS[@]}" -gt 30

leaked=0 tried=0
# try WHO TOKEN METHOD PATH WANT: one refusal, checked and counted
try() {
	local who=$1 method=$3 path=$4 want=$5
	TOKEN=$2
	api "$method" "$path" -H 'Content-Type: application/json' -d '{}'
	tried=$((tried + 1))
	if [[ $STATUS != "$want" ]]; then
		not_ok "$who: $method $path answers $want" "got $STATUS: ${BODY:0:300}"
	else
		ok "$who: $method ${path//$SFX/} answers $want"
	fi
	if [[ $BODY == *"$JA"* || $BODY == *"$CA"* || $BODY == *"$AA"* ]]; then
		leaked=$((leaked + 1))
		not_ok "$who: $method $path reveals nothing of tenant A" "${BODY:0:300}"
	fi
}
for op in "${OPS[@]}"; do
	read -r method pattern scope <<<"$op"
	path=$pattern
	for k in "${!VALUE[@]}"; do path=${path//\{$k\}/${VALUE[$k]}}; done
	case $scope in
	tenant | job | checkpoint)
		try "tenant B's owner" "$BOB" "$method" "$path" 404
		try "tenant B's attempt" "$CRED_B" "$method" "$path" 401
		;;
	attempt)
		try "tenant B's owner" "$BOB" "$method" "$path" 401
		try "tenant B's attempt" "$CRED_B" "$method" "$path" 404
		;;
	user | token)
		try "tenant B's owner" "$BOB" "$method" "$path" 404
		try "tenant B's attempt" "$CRED_B" "$method" "$path" 401
		;;
	platform)
		# platform routes hold nothing of one tenant; the credential is refused there
		# (the public ones answer anyone: the probes, the contract, the web view's files)
		[[ $pattern == /healthz || $pattern == /readyz || $pattern == /v1/openapi.json ||
			$pattern == /ui* ]] ||
			try "tenant B's attempt" "$CRED_B" "$method" "$path" 401
		;;
	esac
done
check "every route refused the other tenant ($tried tries over ${#OPS[@]} operations)" test "$tried" -ge "${#OPS[@]}"
check_eq "no body revealed tenant A's ids" 0 "$leaked"
TOKEN=$ALICE
check_status "tenant A's owner still sees its job" 200 GET "/v1/jobs/$JA"
check_json "untouched (running since its checkpoint report)" running .state
TOKEN=$CRED_A
check_status "and its attempt still works" 200 GET "/internal/v1/attempts/$AA"
summary
