#!/usr/bin/env bash
# tests/integration/data_key_rotation.sh - data keys rotated for new
# objects (docs/storage.md, "Rotating data keys"). A job writes a sealed
# log and a checkpoint, and a dataset gets a version, under the first
# generation of their data keys. The tenant's owner rotates the tenant's
# keys with {"data_keys": true}: the next key the attempt takes is a ring
# of two generations whose first is the old key; what it writes from then
# on names generation 2 in its header, and a new dataset version does too.
# Every file, old and new, still decrypts through the API, and the old
# files keep their bytes. A rotation without data_keys changes no ring, bad bodies
# are refused, and another tenant's keys are untouched.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_STORAGE_ROOT "$SEAL"

ADMIN=$(admin_token)
SFX=$$
TA=dkr-a-$SFX TB=dkr-b-$SFX
TA_ID=$(tenant_new "$TA")
TB_ID=$(tenant_new "$TB")
ALICE=$(member_new "$TA" "dkr-alice-$SFX" owner)
EDITOR=$(member_new "$TA" "dkr-ed-$SFX" editor)
JSON=(-H 'Content-Type: application/json')
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; }
I=/internal/v1/attempts
TREE=$TRAINYARD_STORAGE_ROOT/tenants
# generation FILE [OFFSET]: the format version and the data key generation
# named by the header at OFFSET (0: the file's; a log's later segments start further on)
generation() {
	local at=${2:-0}
	printf '%d %d' "0x$(xxd -p -s $((at + 4)) -l 1 "$1")" \
		"0x$(xxd -p -s $((at + 10)) -l 4 "$1" | sed -E 's/(..)(..)(..)(..)/\4\3\2\1/')"
}

# ---- written under the first generation -----------------------------------
TOKEN=$ALICE
check_status "alice registers a dataset" 201 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "notes", "classification": "public"}'
DS=$(jb .id)
printf 'the first version of the notes\n' >"$TY_TMP/v1.txt"
check_status "and uploads a version" 201 POST "/v1/tenants/$TA/datasets/notes/versions?format=text" \
	-H 'Content-Type: text/plain' --data-binary "@$TY_TMP/v1.txt"
DV1=$(jb .id)
check_status "alice submits a job on it" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" \
	-d "$(tiny_job dkr 10 30 | jq '.data = {"dataset": "notes"}')"
J=$(jb .id)
TOKEN=$ADMIN
check_status "the admin starts its attempt" 201 POST "/v1/jobs/$J/attempts"
A=$(jb .id)
CRED=$(jb .credential)
TOKEN=$CRED
check_status "its runtime fetches the job's data key" 200 POST "$I/$A/key"
RING1=$(jb .keys)
check_eq "a ring of one generation" "1 ^[0-9a-f]{64}\$" \
	"$(jb .key_generation) $( [[ $RING1 =~ ^[0-9a-f]{64}$ ]] && echo '^[0-9a-f]{64}$')"
check_status "and the dataset version's" 200 POST "$I/$A/datasets/$DV1/key"
DRING1=$(jb .keys)
check_eq "of one generation too" 1 "$(jb .key_generation)"
seal() { # seal RING KIND ARGS...: write as the attempt does, under RING
	printf '%s\n' "$1" | "$SEAL" "$2" "$TRAINYARD_STORAGE_ROOT" "$TA_ID" "$J" "${@:3}"
}
check "the attempt writes two lines of its sealed log" seal "$RING1" log 1 1 2 open
read -r BYTES3 SHA3 < <(seal "$RING1" checkpoint 3 70000)
check_status "and registers a checkpoint at step 3" 201 POST "$I/$A/checkpoints" "${JSON[@]}" \
	-d "{\"step\": 3, \"world\": 1, \"shards\": [{\"name\": \"shard_00000_of_00001.bin\", \"bytes\": $BYTES3, \"sha256\": \"$SHA3\"}]}"
C3=$(jb .id)
CK3=$TREE/$TA_ID/jobs/$J/checkpoints/step_00000003/shard_00000_of_00001.bin
check_eq "its shard's header: format 2, generation 1" "2 1" "$(generation "$CK3")"
CK3_SUM=$(sha256sum "$CK3" | cut -d' ' -f1)
LOG=$TREE/$TA_ID/jobs/$J/logs/attempt-1.log
check_eq "so is the log's" "2 1" "$(generation "$LOG")"
LOG_SIZE=$(stat -c %s "$LOG")
check_eq "and the dataset version's shard" "2 1" \
	"$(generation "$TREE/$TA_ID/datasets/$DS/$DV1/shard_000000.bin")"
TOKEN=$ADMIN
check_status "a job of tenant B takes its key" 201 POST "/v1/tenants/$TB/jobs" "${JSON[@]}" \
	-d "$(tiny_job dkrb 10 30)"
JB=$(jb .id)
check_status "through an attempt" 201 POST "/v1/jobs/$JB/attempts"
AB=$(jb .id)
CRED_B=$(jb .credential)
TOKEN=$CRED_B
check_status "which fetches it" 200 POST "$I/$AB/key"
RING_B=$(jb .keys)

# ---- the rotation ----------------------------------------------------------------
TOKEN=$EDITOR
check_status "an editor may not rotate the data keys" 403 POST "/v1/tenants/$TA/keys/rotate" \
	"${JSON[@]}" -d '{"data_keys": true}'
TOKEN=$ALICE
check_status "data_keys must be true or false" 422 POST "/v1/tenants/$TA/keys/rotate" \
	"${JSON[@]}" -d '{"data_keys": "yes"}'
check_json "naming the field" /data_keys '.errors[0].field // .errors[0].pointer'
check_status "an unknown field is refused" 422 POST "/v1/tenants/$TA/keys/rotate" \
	"${JSON[@]}" -d '{"data_key": true}'
check_status "a body that is not JSON" 400 POST "/v1/tenants/$TA/keys/rotate" "${JSON[@]}" -d '{'
y "$ALICE" -o json keys rotate "$TA"
expect_rc "yardctl keys rotate: the KEK alone" 0
check_eq "to version 2, saying the data keys stay" "2 false" "$(jq_out '"\(.version) \(.data_keys)"')"
TOKEN=$CRED
check_status "leaves the job's ring as it was" 200 POST "$I/$A/key"
check_eq "the same single generation" "1 $RING1" "$(jb .key_generation) $(jb .keys)"
TOKEN=$ALICE
y "$ALICE" keys rotate "$TA" --data-keys
expect_rc "yardctl keys rotate --data-keys: the owner rotates the data keys too" 0
check_match "to KEK version 3, saying so" 'key version +3.*data keys rotated +true' "$(printf '%s' "$OUT" | tr '\n' ' ')"
check_eq "the tenant's data-key epoch is 2" 2 \
	"$(q "SELECT data_key_epoch FROM tenants WHERE id = '$TA_ID'")"
check_eq "no key got a new generation yet: they are made when next written with" "1 1" \
	"$(q "SELECT (SELECT max(generation) FROM job_keys WHERE job_id = '$J'), (SELECT max(generation) FROM dataset_keys WHERE dataset_id = '$DS')" | tr '|' ' ')"

# ---- written under the second generation ------------------------------------------
TOKEN=$CRED
check_status "the runtime fetches the job's key again" 200 POST "$I/$A/key"
RING2=$(jb .keys)
check_eq "two generations, the first the old key" "2 $RING1" \
	"$(jb .key_generation) ${RING2%%,*}"
check "the second is a new key" test "${RING2#*,}" != "$RING1"
check_eq "both wrapped by KEK version 3, generation 2 of epoch 2" "1|3|1 2|3|2" \
	"$(q "SELECT string_agg(generation || '|' || key_version || '|' || epoch, ' ' ORDER BY generation) FROM job_keys WHERE job_id = '$J'")"
check_eq "the ring is handed out once more unchanged" "$RING2" \
	"$(TOKEN=$CRED api POST "$I/$A/key" >/dev/null; jb .keys)"
check "the attempt writes two more lines and closes its log" seal "$RING2" log 1 3 2 close
read -r BYTES5 SHA5 < <(seal "$RING2" checkpoint 5 70000)
check_status "and a checkpoint at step 5" 201 POST "$I/$A/checkpoints" "${JSON[@]}" \
	-d "{\"step\": 5, \"world\": 1, \"shards\": [{\"name\": \"shard_00000_of_00001.bin\", \"bytes\": $BYTES5, \"sha256\": \"$SHA5\"}]}"
C5=$(jb .id)
check_eq "its shard names generation 2" "2 2" \
	"$(generation "$TREE/$TA_ID/jobs/$J/checkpoints/step_00000005/shard_00000_of_00001.bin")"
check_eq "so does the log's new segment" "2 2" "$(generation "$LOG" "$LOG_SIZE")"
check_eq "while its first segment still names generation 1" "2 1" "$(generation "$LOG")"
check_eq "the old shard keeps its bytes" "$CK3_SUM" "$(sha256sum "$CK3" | cut -d' ' -f1)"
TOKEN=$ALICE
printf 'the second version of the notes\n' >"$TY_TMP/v2.txt"
check_status "alice uploads a second version" 201 POST \
	"/v1/tenants/$TA/datasets/notes/versions?format=text" -H 'Content-Type: text/plain' \
	--data-binary "@$TY_TMP/v2.txt"
DV2=$(jb .id)
check_eq "its shard names generation 2 of the dataset's key" "2 2" \
	"$(generation "$TREE/$TA_ID/datasets/$DS/$DV2/shard_000000.bin")"
check_eq "the dataset's key has two generations" 2 \
	"$(q "SELECT count(*) FROM dataset_keys WHERE dataset_id = '$DS'")"
TOKEN=$CRED
check_status "the attempt takes the first version's key" 200 POST "$I/$A/datasets/$DV1/key"
check_eq "a ring whose first generation opens it" "2 $DRING1" \
	"$(jb .key_generation) $(jb '.keys | split(",")[0]')"

# ---- everything still reads --------------------------------------------------------
shard() { # shard CHECKPOINT: the SHA-256 of its shard, downloaded by alice
	curl -sS --max-time 30 -H "Authorization: Bearer $ALICE" -o "$TY_TMP/shard" \
		"$TRAINYARD_URL/v1/checkpoints/$1/download?file=shard_00000_of_00001.bin" &&
		sha256sum <"$TY_TMP/shard" | cut -d' ' -f1
}
check_eq "the checkpoint from before the rotation downloads" "$SHA3" "$(shard "$C3")"
check_eq "and the one from after it" "$SHA5" "$(shard "$C5")"
TOKEN=$ALICE
check_status "the job's log reads across both generations" 200 GET "/v1/jobs/$J/logs"
check_eq "every line of both segments" "$(printf 'attempt 1 line %d\n' 1 2 3 4)" "$BODY"
check_eq "both attempts' keys are audited with their generation" "1 2" \
	"$(q "SELECT string_agg(DISTINCT detail->>'key_generation', ' ') FROM audit_log WHERE action = 'key.release' AND resource = 'job/$J/key'")"
check_eq "and no key is in an audit record" 0 \
	"$(q "SELECT count(*) FROM audit_log WHERE detail::text LIKE '%${RING2#*,}%'")"

# ---- another tenant; shredding -------------------------------------------------------
TOKEN=$CRED_B
check_status "tenant B's job takes its key again" 200 POST "$I/$AB/key"
check_eq "unchanged: the rotation was tenant A's" "1 $RING_B" "$(jb .key_generation) $(jb .keys)"
TOKEN=$ADMIN
check_status "the admin destroys tenant A's keys" 204 DELETE "/v1/tenants/$TA/keys"
check_eq "every generation goes with them" "0 0" \
	"$(q "SELECT (SELECT count(*) FROM job_keys WHERE tenant_id = '$TA_ID'), (SELECT count(*) FROM dataset_keys WHERE tenant_id = '$TA_ID')" | tr '|' ' ')"
TOKEN=$ALICE
check_status "and neither checkpoint opens" 503 GET \
	"/v1/checkpoints/$C3/download?file=shard_00000_of_00001.bin"

summary
