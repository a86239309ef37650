#!/usr/bin/env bash
# tests/integration/upstream_terms.sh - an owner's terms travel with what
# is trained from its checkpoint (docs/datasets.md, "Terms that travel").
# Tenant A grants its checkpoint to B to start from, without download;
# B trains a step from it (as a learning rate of 1e-30 would, its
# checkpoint is A's weights) and may not download that checkpoint
# (upstream_terms), grant it to C, nor may C start from or download it;
# B's checkpoint says for whom it is held. The same checkpoint granted to
# C with download gives C a checkpoint of its own it may download.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_STORAGE_ROOT "$SEAL"

ADMIN=$(admin_token)
SFX=$$
TA=ut-a-$SFX TB=ut-b-$SFX TC=ut-c-$SFX
TA_ID=$(tenant_new "$TA")
TB_ID=$(tenant_new "$TB")
TC_ID=$(tenant_new "$TC")
OLGA=$(member_new "$TA" "ut-olga-$SFX" owner)
BEA=$(member_new "$TB" "ut-bea-$SFX" owner)
CAL=$(member_new "$TC" "ut-cal-$SFX" owner)
JSON=(-H 'Content-Type: application/json')
I=/internal/v1/attempts
in_days() { date -u -d "+$1 days" +%Y-%m-%dT%H:%M:%SZ; }

# trained TENANT TENANT_ID NAME [INIT_FROM]: a job of the tenant (the
# admin submits it: a data path) whose attempt registers a checkpoint at
# step 1 and ends; CKPT is its id
trained() {
	local job att cred key bytes sha
	TOKEN=$ADMIN
	check_status "job $3 is submitted" 201 POST "/v1/tenants/$1/jobs" "${JSON[@]}" \
		-d "$(tiny_job "$3" 10 30 | jq -c --arg c "${4:-}" \
			'if $c == "" then . else .training.init_from = $c end')"
	job=$(printf '%s' "$BODY" | jq -r .id)
	check_status "its attempt starts" 201 POST "/v1/jobs/$job/attempts"
	att=$(printf '%s' "$BODY" | jq -r .id)
	cred=$(printf '%s' "$BODY" | jq -r .credential)
	TOKEN=$cred
	check_status "and fetches the job's data key" 200 POST "$I/$att/key"
	key=$(printf '%s' "$BODY" | jq -r .keys)
	read -r bytes sha < <(printf '%s\n' "$key" |
		"$SEAL" checkpoint "$TRAINYARD_STORAGE_ROOT" "$2" "$job" 1 1000)
	check_status "it registers a checkpoint" 201 POST "$I/$att/checkpoints" "${JSON[@]}" \
		-d "{\"step\": 1, \"world\": 1, \"shards\": [{\"name\":
		\"shard_00000_of_00001.bin\", \"bytes\": $bytes, \"sha256\": \"$sha\"}]}"
	CKPT=$(printf '%s' "$BODY" | jq -r .id)
	check_status "and ends" 200 POST "$I/$att/finish" "${JSON[@]}" \
		-d '{"outcome": "succeeded", "reason": "all steps done"}'
}
grant() { # grant TOKEN CHECKPOINT GRANTEE DOWNLOAD
	TOKEN=$1
	api POST "/v1/checkpoints/$2/grants" "${JSON[@]}" \
		-d "{\"tenant\": \"$3\", \"expires_at\": \"$(in_days 7)\", \"download\": $4}"
}

trained "$TA" "$TA_ID" ut-a
CA=$CKPT
grant "$OLGA" "$CA" "$TB" false
check_eq "A grants its checkpoint to B to start from, without download" 201 "$STATUS"
grant "$OLGA" "$CA" "$TC" true
check_eq "and to C with download" 201 "$STATUS"

trained "$TB" "$TB_ID" ut-b "$CA"
CB=$CKPT
TOKEN=$BEA
check_status "B's own checkpoint, trained from A's, is not downloaded" 403 \
	GET "/v1/checkpoints/$CB/download"
check_json "upstream_terms" upstream_terms .code
check_status "nor its shard" 403 GET "/v1/checkpoints/$CB/download?file=shard_00000_of_00001.bin"
check_eq "it is held for A" "[\"$TA_ID\"]" \
	"$(q "SELECT to_json(held_for) FROM checkpoints WHERE id = '$CB'")"
grant "$BEA" "$CB" "$TC" true
check_eq "B may not grant it to C" "403 upstream_terms" "$STATUS $(printf '%s' "$BODY" | jq -r .code)"
grant "$BEA" "$CB" "$TC" false
check_eq "not even to start from" "403 upstream_terms" "$STATUS $(printf '%s' "$BODY" | jq -r .code)"
TOKEN=$CAL
check_status "C sees no grant of it to download" 404 \
	GET "/v1/tenants/$TC/shared-checkpoints/$CB/download"

# what B trains from B's held checkpoint stays held for A
trained "$TB" "$TB_ID" ut-b2 "$CB"
check_eq "a checkpoint trained from it is held for A too" "[\"$TA_ID\"]" \
	"$(q "SELECT to_json(held_for) FROM checkpoints WHERE id = '$CKPT'")"
TOKEN=$BEA
check_status "and is not downloaded either" 403 GET "/v1/checkpoints/$CKPT/download"

# with download granted, C's own checkpoint is C's to take
TOKEN=$CAL
check_status "C downloads A's checkpoint, as granted" 200 \
	GET "/v1/tenants/$TC/shared-checkpoints/$CA/download"
trained "$TC" "$TC_ID" ut-c "$CA"
TOKEN=$CAL
check_status "and the checkpoint it trains from it" 200 GET "/v1/checkpoints/$CKPT/download"
check_eq "held for nobody" "[]" "$(q "SELECT to_json(held_for) FROM checkpoints WHERE id = '$CKPT'")"

summary
