#!/usr/bin/env bash
# tests/integration/key_rotation.sh - the master key rotated on the running
# stack (docs/storage.md, "Rotating the master key"). A tenant's encrypted
# checkpoint and log and a dataset's key are stored under the stack's
# master key, and another tenant's key is made to look older than master
# key ids. The API is restarted with a new master key and the old one as
# the previous key: both open what they wrap, and new tenant keys go under
# the new one. yardctl keys rotate-master then wraps the stored keys again
# one batch at a time: stopped after one batch (a crash), the API still
# reads everything; run again, it finishes, audits each batch and retires
# the old key, and GET /v1/keys/master says the previous key is no longer
# needed. Restarted with the new key alone, the API still decrypts
# everything; the database now belongs with the new key (deployment_keys,
# api/keys_record.h), so the old key alone, no key, or another audit
# signing key, and the API refuses to start, saying which. At the end the
# stack's own key is rotated back in, so the stack is as it was.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_STORAGE_ROOT TRAINYARD_VAR "$SEAL"

# the stack's master key (deploy/stack makes it once) and a new one
OLD_KEY=${TRAINYARD_MASTER_KEY_FILE:-$TRAINYARD_VAR/master.key}
NEW_KEY=$TY_TMP/master.new.key
(umask 077 && openssl rand -hex 32 >"$NEW_KEY")
key_id() { # key_id FILE: the id crypt_key_id() gives the key in FILE
	{ printf 'trainyard key id v1'; xxd -r -p "$1"; } | sha256sum | cut -c1-16
}
OLD_ID=$(key_id "$OLD_KEY")
NEW_ID=$(key_id "$NEW_KEY")
check_match "the stack has a master key" '^[0-9a-f]{16}$' "$OLD_ID"
recorded() { q "SELECT key_id FROM deployment_keys WHERE role = '$1'"; }
check_eq "the database belongs with it" "$OLD_ID" "$(recorded master)"

ADMIN=$(admin_token)
SFX=$$
TA=rot-a-$SFX TB=rot-b-$SFX
TA_ID=$(tenant_new "$TA")
TB_ID=$(tenant_new "$TB")
ALICE=$(member_new "$TA" "rot-alice-$SFX" owner)
JSON=(-H 'Content-Type: application/json')
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; }
I=/internal/v1/attempts

# ---- what is stored under the old master key -------------------------------
TOKEN=$ALICE
check_status "alice registers a dataset" 201 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "notes", "classification": "public"}'
printf 'line one of the notes\nline two of the notes\n' >"$TY_TMP/notes.txt"
check_status "and uploads a version of it" 201 POST \
	"/v1/tenants/$TA/datasets/notes/versions?format=text" -H 'Content-Type: text/plain' \
	--data-binary "@$TY_TMP/notes.txt"
DV=$(jb .id)
check_status "alice submits a job on it" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" \
	-d "$(tiny_job rot 10 30 | jq '.data = {"dataset": "notes"}')"
J=$(jb .id)
TOKEN=$ADMIN
check_status "the admin starts its attempt" 201 POST "/v1/jobs/$J/attempts"
A=$(jb .id)
CRED=$(jb .credential)
TOKEN=$CRED
check_status "its runtime fetches the job's data key" 200 POST "$I/$A/key"
KEY=$(jb .keys)
check_status "and the dataset version's" 200 POST "$I/$A/datasets/$DV/key"
DKEY=$(jb .keys)
seal() { printf '%s\n' "$KEY" | "$SEAL" "$1" "$TRAINYARD_STORAGE_ROOT" "$TA_ID" "$J" "${@:2}"; }
check "the attempt writes a sealed log of three lines" seal log 1 1 3 close
read -r BYTES SHA < <(seal checkpoint 3 100000)
check_status "and registers an encrypted checkpoint" 201 POST "$I/$A/checkpoints" "${JSON[@]}" \
	-d "{\"step\": 3, \"world\": 1, \"shards\": [{\"name\": \"shard_00000_of_00001.bin\", \"bytes\": $BYTES, \"sha256\": \"$SHA\"}]}"
C=$(jb .id)
# tenant B's key as a key from before master key ids: the rotation names it
TOKEN=$ADMIN
check_status "a job of tenant B" 201 POST "/v1/tenants/$TB/jobs" "${JSON[@]}" -d "$(tiny_job rotb 10 30)"
JB=$(jb .id)
check_status "its attempt" 201 POST "/v1/jobs/$JB/attempts"
AB=$(jb .id)
TOKEN=$(jb .credential)
check_status "fetches its key" 200 POST "$I/$AB/key"
KEYB=$(jb .keys)
CRED_B=$TOKEN
TOKEN=$ADMIN
hook_new() { # hook_new N: a webhook of tenant A (the master key seals its secret); prints its id
	TOKEN=$ADMIN api POST "/v1/tenants/$TA/webhooks" "${JSON[@]}" \
		-d "{\"url\": \"http://127.0.0.1:9/rotation/$1\", \"allow_private\": true}"
	jb .id
}
sealed() { q "SELECT encode(secret_sealed, 'hex') || ' ' || coalesce(secret_master_key_id, '-') FROM webhooks WHERE id = '$1'"; }
W1=$(hook_new 1)
W1_SEALED=$(sealed "$W1")
check_match "a webhook's secret sealed under the old key, naming it" " $OLD_ID\$" "$W1_SEALED"
# as a row from before key ids
q "UPDATE webhooks SET secret_master_key_id = NULL WHERE id = '$W1'" >/dev/null
W1_SEALED=$(sealed "$W1")
check_eq "the tenant keys name the stack's master key" "$OLD_ID" \
	"$(q "SELECT string_agg(DISTINCT master_key_id, ',') FROM tenant_keys WHERE tenant_id IN ('$TA_ID', '$TB_ID')")"
q "UPDATE tenant_keys SET master_key_id = NULL WHERE tenant_id = '$TB_ID'" >/dev/null

SHARD_Q="/v1/checkpoints/$C/download?file=shard_00000_of_00001.bin"
EXPECT_LOG=$(printf 'attempt 1 line %d\n' 1 2 3)
# readable WHAT: alice's shard and log decrypt, and the attempts get their keys unchanged
readable() {
	local what=$1 sha
	local code
	code=$(curl -sS --max-time 30 -H "Authorization: Bearer $ALICE" -o "$TY_TMP/shard" \
		-w '%{http_code}' "$TRAINYARD_URL$SHARD_Q" 2>"$TY_TMP/get.err")
	sha=$(sha256sum <"$TY_TMP/shard" | cut -d' ' -f1)
	check_eq "$what: the checkpoint decrypts to its registered SHA-256" "200 $SHA" "$code $sha"
	TOKEN=$ALICE
	api GET "/v1/jobs/$J/logs"
	check_eq "$what: the log decrypts" "200 $EXPECT_LOG" "$STATUS $BODY"
	TOKEN=$CRED
	api POST "$I/$A/key"
	check_eq "$what: the job's data key unwraps, unchanged" "200 $KEY" "$STATUS $(jb .keys)"
	api POST "$I/$A/datasets/$DV/key"
	check_eq "$what: the dataset's data key unwraps, unchanged" "200 $DKEY" "$STATUS $(jb .keys)"
	TOKEN=$CRED_B
	api POST "$I/$AB/key"
	check_eq "$what: tenant B's key unwraps, unchanged" "200 $KEYB" "$STATUS $(jb .keys)"
}
readable "before the rotation"

restart() { # restart MASTER [PREVIOUS]
	TRAINYARD_MASTER_KEY_FILE=$1 TRAINYARD_MASTER_KEY_PREVIOUS_FILE=${2:-} stack api-restart
}
status() { TOKEN=$ADMIN api GET /v1/keys/master; }

# ---- the API holds both keys ------------------------------------------------
check "the API restarts with the new master key and the old one as previous" \
	restart "$NEW_KEY" "$OLD_KEY"
check_eq "the database now belongs with the new key" "$NEW_ID" "$(recorded master)"
status
check_eq "GET /v1/keys/master names both" "200 $NEW_ID $OLD_ID true" \
	"$STATUS $(jb '"\(.master_key_id) \(.previous_key_id) \(.previous_needed)"')"
check_eq "and tenant B's key among those from before ids" 1 \
	"$(jb '.unidentified.tenant_keys >= 1 | if . then 1 else 0 end')"
TOKEN=$ALICE
check_status "an editor may not read it" 403 GET /v1/keys/master
readable "with both keys, nothing wrapped again yet"
TC=rot-c-$SFX
TC_ID=$(tenant_new "$TC")
TOKEN=$ADMIN
check_status "a job of a new tenant" 201 POST "/v1/tenants/$TC/jobs" "${JSON[@]}" -d "$(tiny_job rotc 10 30)"
JC=$(jb .id)
check_status "its attempt" 201 POST "/v1/jobs/$JC/attempts"
AC=$(jb .id)
TOKEN=$(jb .credential)
check_status "fetches its key" 200 POST "$I/$AC/key"
check_eq "which the new master key wraps" "$NEW_ID" \
	"$(q "SELECT master_key_id FROM tenant_keys WHERE tenant_id = '$TC_ID'")"

W2=$(hook_new 2)
W2_SEALED=$(sealed "$W2")
check_match "a webhook made now: its secret sealed under the new key, naming it" " $NEW_ID\$" \
	"$W2_SEALED"
# as a row from before key ids: the rotation finds it under the new key and only names it
q "UPDATE webhooks SET secret_master_key_id = NULL WHERE id = '$W2'" >/dev/null
W2_SEALED=$(sealed "$W2")

# ---- the rotation -------------------------------------------------------------
under_old() { q "SELECT count(*) FROM tenant_keys WHERE master_key_id IS DISTINCT FROM '$NEW_ID'"; }
BEFORE=$(under_old)
check "more than one stored key to move" test "$BEFORE" -ge 2
y "" keys rotate-master --new-key-file "$OLD_KEY" --old-key-file "$OLD_KEY"
check "one key as both old and new is refused" test "$RC" -ne 0
check_match "saying so" 'same key' "$ERR"
(umask 077 && openssl rand -hex 32 >"$TY_TMP/other.key")
y "" keys rotate-master --new-key-file "$NEW_KEY" --old-key-file "$TY_TMP/other.key"
check "a wrong old key is refused" test "$RC" -ne 0
check_eq "and moves nothing" "$BEFORE" "$(under_old)"

y "" -o json keys rotate-master --new-key-file "$NEW_KEY" --old-key-file "$OLD_KEY" \
	--batch 1 --max-batches 1
expect_rc "one batch of one key, then a stop (as a crash would)" 0
check_eq "one key moved, the old key not retired" "1 false" "$(jq_out '"\(.rewrapped) \(.retired)"')"
check_eq "one fewer key under the old master key" "$((BEFORE - 1))" "$(under_old)"
status
check_eq "the previous key is still needed" true "$(jb .previous_needed)"
readable "half-way through the rotation"

RC=0
OUT=$(TRAINYARD_MASTER_KEY_FILE=$OLD_KEY "$YARDCTL" -o json keys rotate-master \
	--new-key-file "$NEW_KEY" --batch 2 2>"$TY_TMP/err") || RC=$?
check_eq "the rotation run again, the old key from TRAINYARD_MASTER_KEY_FILE" 0 "$RC"
check_eq "goes on from where it stopped and retires the old key" "true 0" \
	"$(jq_out '"\(.retired) \(.left)"')"
check_eq "no stored key is under the old master key" 0 "$(under_old)"
check_eq "the old webhook's secret is sealed again and names the new key" "changed $NEW_ID" \
	"$( [[ $(sealed "$W1" | cut -d' ' -f1) != "${W1_SEALED% *}" ]] && echo changed) $(sealed "$W1" | cut -d' ' -f2)"
check_eq "the new webhook's secret keeps its bytes and gets the new key's id" "${W2_SEALED% *} $NEW_ID" \
	"$(sealed "$W2")"
check_eq "every tenant key names the new one" 0 \
	"$(q "SELECT count(*) FROM tenant_keys WHERE master_key_id IS DISTINCT FROM '$NEW_ID'")"
check "each batch is on record" test "$(q "SELECT count(*) FROM audit_log WHERE action = 'key.master_rewrap' AND resource = 'master-key/$NEW_ID'")" -ge 2
check_eq "and the retirement" 1 \
	"$(q "SELECT count(*) FROM audit_log WHERE action = 'key.master_retire' AND resource = 'master-key/$OLD_ID'")"
reported() { # reported ACTION MIN: the platform's key-management report has MIN rows of ACTION
	TOKEN=$ADMIN api GET "/v1/reports/key-management?format=json"
	(($(jb "[.sections[] | select(.name == \"keys\") | .rows[] | select(.action == \"$1\")] | length") >= $2))
}
check "the platform's key-management report lists the batches" wait_until 30 reported key.master_rewrap 2
check "and the retirement" wait_until 30 reported key.master_retire 1
status
check_eq "the API says the previous key is no longer needed" "false" "$(jb .previous_needed)"
check_match "and when it was retired" '^[0-9]{4}-' \
	"$(jb ".keys[] | select(.id == \"$OLD_ID\") | .retired_at")"
y "$ADMIN" keys status
expect_rc "yardctl keys status" 0
check_match "shows it" "previous still needed +false" "$OUT"
readable "after the rotation, with both keys"

# ---- the new key alone; the old key alone -------------------------------------
check "the API restarts with the new master key alone" restart "$NEW_KEY"
readable "with the new key alone"
# refused DESC PATTERN VAR=VALUE...: another API process, on a port of its
# own, with these keys: it exits at once with status 1, saying PATTERN
API_BIN=$(dirname "$YARDCTL")/trainyard-api
refused() {
	local desc=$1 pattern=$2 rc=0
	shift 2
	env -u TRAINYARD_MASTER_KEY -u TRAINYARD_MASTER_KEY_PREVIOUS_FILE \
		TRAINYARD_DB="$TRAINYARD_DB" TRAINYARD_LISTEN="127.0.0.1:$((TRAINYARD_API_PORT + 41))" \
		TRAINYARD_PLAIN_HTTP=1 TRAINYARD_TLS_CERT_FILE= TRAINYARD_TLS_KEY_FILE= "$@" \
		timeout 5 "$API_BIN" >"$TY_TMP/start.out" 2>&1 || rc=$?
	check_eq "$desc: the API does not start" 1 "$rc"
	check_match "$desc: saying which key" "$pattern" "$(cat "$TY_TMP/start.out")"
}
AUDIT_KEY=${TRAINYARD_AUDIT_KEY_FILE:-$TRAINYARD_VAR/audit.key}
refused "the old master key alone" "master key is $OLD_ID .*belongs with master key $NEW_ID" \
	TRAINYARD_MASTER_KEY_FILE="$OLD_KEY" TRAINYARD_AUDIT_KEY_FILE="$AUDIT_KEY"
refused "no master key" "holds no master key .*belongs with master key $NEW_ID" \
	TRAINYARD_MASTER_KEY_FILE= TRAINYARD_AUDIT_KEY_FILE="$AUDIT_KEY"
"$YARDCTL" audit keygen --out "$TY_TMP/audit.other.key" >/dev/null 2>&1
refused "another audit signing key" \
	"audit signing key is [0-9a-f]{16} .*belongs with audit signing key $(recorded audit)" \
	TRAINYARD_MASTER_KEY_FILE="$NEW_KEY" TRAINYARD_AUDIT_KEY_FILE="$TY_TMP/audit.other.key"
refused "no audit signing key" "holds no audit signing key" \
	TRAINYARD_MASTER_KEY_FILE="$NEW_KEY" TRAINYARD_AUDIT_KEY_FILE=
check_eq "the records stay as they were" "$NEW_ID" "$(recorded master)"
check_match "with the stack's audit key on record" '^[0-9a-f]{16}$' "$(recorded audit)"
readable "the API that holds the keys serves on"

# ---- back to the stack's key ----------------------------------------------------
check "the API restarts with the stack's key as new, the rotated one as previous" \
	restart "$OLD_KEY" "$NEW_KEY"
check_eq "the database belongs with the stack's key again" "$OLD_ID" "$(recorded master)"
y "" keys rotate-master --new-key-file "$OLD_KEY" --old-key-file "$NEW_KEY"
expect_rc "rotating back to the retired key" 0
check_match "retires the other" "master key $NEW_ID is retired" "$OUT"
check "the API restarts as the stack started it" stack api-restart
readable "back on the stack's key"

summary
