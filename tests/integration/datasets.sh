#!/usr/bin/env bash
# tests/integration/datasets.sh - the dataset registry from outside
# (docs/datasets.md). Registering: names, classifications and custom
# patterns checked, duplicates refused, viewers and other tenants kept out.
# Uploading text: personal data masked before it is stored (each kind
# counted, Luhn-failing numbers, dates and version strings left alone),
# the shards sealed on disk with no plaintext in them. A restricted
# dataset: unmasked text and token shards refused until a platform admin
# records an exemption. Token shards: several in one body, each kept; a
# body that is not shards, one cut short, an empty one, the wrong
# Content-Type, and an upload cut off half-way leave no version and no
# file. Jobs: name@version and the newest pinned at submission, unknown
# names and versions and another tenant's dataset refused, a vocabulary
# the model does not cover refused; then the worker unseals the version,
# the job trains on it and succeeds, the read is audited with its key
# version and listed by the data-access report, and the unsealed files
# are gone afterwards.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/../trainer/lib.sh disable=SC1091
. "$HERE/../trainer/lib.sh"

WORKER_BIN=$(dirname "$TRAIN_BIN")/trainyard-worker
needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_DATA_ROOT TRAINYARD_STORAGE_ROOT "$WORKER_BIN"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
make_corpus

ADMIN=$(admin_token)
SFX=$$
TA=ds-a-$SFX TB=ds-b-$SFX
TA_ID=$(tenant_new "$TA")
tenant_new "$TB" >/dev/null
ALICE=$(member_new "$TA" "ds-alice-$SFX" editor)
VIC=$(member_new "$TA" "ds-vic-$SFX" viewer)
BOB=$(member_new "$TB" "ds-bob-$SFX" editor)
JSON=(-H 'Content-Type: application/json')
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; } # jb FILTER: the filter over the last answer

# ---- registering -----------------------------------------------------------
TOKEN=$ALICE
check_status "a dataset is registered" 201 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "notes", "description": "support notes", "classification": "internal",
	     "mask_patterns": [{"name": "employee_id", "regex": "EMP-[0-9]{6}"}]}'
check_json "with its classification" internal .classification
check_json "and no version yet" null .latest_version
check_status "the same name again: 409" 409 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "notes", "classification": "public"}'
check_json "dataset_exists" dataset_exists .code
check_status "a bad name: 422" 422 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "Bad/Name", "classification": "public"}'
check_json "at /name" /name '.errors[0].pointer'
check_status "an unknown classification: 422" 422 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "x1", "classification": "secret"}'
check_json "at /classification" /classification '.errors[0].pointer'
check_status "a pattern PCRE2 cannot compile: 422" 422 POST "/v1/tenants/$TA/datasets" \
	"${JSON[@]}" -d '{"name": "x2", "classification": "public",
	"mask_patterns": [{"name": "broken", "regex": "(unclosed"}]}'
check_json "at /mask_patterns" /mask_patterns '.errors[0].pointer'
check_status "a pattern matching the empty string: 422" 422 POST "/v1/tenants/$TA/datasets" \
	"${JSON[@]}" -d '{"name": "x3", "classification": "public",
	"mask_patterns": [{"name": "anything", "regex": "a*"}]}'
TOKEN=$VIC
check_status "a viewer may not register one: 403" 403 POST "/v1/tenants/$TA/datasets" \
	"${JSON[@]}" -d '{"name": "v1", "classification": "public"}'
check_status "a viewer reads the list" 200 GET "/v1/tenants/$TA/datasets"
check_json "which holds notes" notes '[.items[].name] | join(",")'
TOKEN=$BOB
check_status "another tenant's member sees nothing: 404" 404 GET "/v1/tenants/$TA/datasets/notes"

# ---- text, masked ----------------------------------------------------------
cat >"$TY_TMP/notes.txt" <<'TEXT'
Ticket 1: mail jane.doe@example.com or j.smith+ops@mail.example.org about it.
Card 4111 1111 1111 1111 was charged; 4111 1111 1111 1112 is only a reference.
Logged in from 192.168.10.25 and from 2001:db8::8a2e:370:7334 at 12:30.
Call +1 415 555 0123 or (415) 555-0199 before 2024-05-20; build 1.2.3.4.5 is fine.
Employee EMP-123456 closed it.
TEXT
upload() { # upload TENANT DATASET QUERY CONTENT_TYPE FILE
	api POST "/v1/tenants/$1/datasets/$2/versions?$3" -H "Content-Type: $4" \
		--data-binary "@$5"
}
TOKEN=$ALICE
upload "$TA" notes "format=text" text/plain "$TY_TMP/notes.txt"
check_eq "masked text is stored as version 1" "201 1" "$STATUS $(jb .version)"
check_json "as text, masked" "text false" '"\(.format) \(.unmasked)"'
check_json "two addresses, one card, one IPv6, one IPv4, two phones, one employee id" \
	"email=2 card=1 ipv6=1 ipv4=1 phone=2 employee_id=1" \
	'.masking.counts | "email=\(.email) card=\(.card) ipv6=\(.ipv6) ipv4=\(.ipv4) phone=\(.phone) employee_id=\(.employee_id)"'
check_json "the policy recorded names the built-in and the dataset's patterns" \
	"email,card,ipv6,ipv4,phone employee_id" \
	'"\(.masking.policy.builtin | join(",")) \([.masking.policy.custom[].name] | join(","))"'
# the text as stored: what the placeholders left, counted in tokens (one per byte)
masked_len=$(sed -e 's/jane.doe@example.com/[EMAIL]/; s/j.smith+ops@mail.example.org/[EMAIL]/' \
	-e 's/4111 1111 1111 1111/[CARD]/; s/192.168.10.25/[IPV4]/; s/2001:db8::8a2e:370:7334/[IPV6]/' \
	-e 's/+1 415 555 0123/[PHONE]/; s/(415) 555-0199/[PHONE]/; s/EMP-123456/[EMPLOYEE_ID]/' \
	"$TY_TMP/notes.txt" | wc -c)
check_json "its tokens are the masked text's bytes" "$masked_len" .tokens
V1=$(jb .id)
NOTES_ID=$(q "SELECT id FROM datasets WHERE name = 'notes' AND tenant_id = '$TA_ID'")
VDIR=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/datasets/$NOTES_ID/$V1
check "its shard is on disk, sealed" test -s "$VDIR/shard_000000.bin"
check_eq "in a private directory" 700 "$(stat -c %a "$VDIR")"
check "no address, card or id appears in the stored bytes" \
	bash -c "! grep -a -q -e 'jane.doe' -e '4111 1111' -e 'EMP-123456' -e 'Ticket' '$VDIR/shard_000000.bin'"

cat "$DATA"/train_*.bin >"$TY_TMP/shards.bin"

# ---- the same through yardctl (streamed from a file and from a pipe) ---------
y "$ALICE" dataset create "$TA" clidata --classification internal --mask-pattern 'ticket=Ticket [0-9]+'
expect_rc "yardctl dataset create" 0
y "$ALICE" dataset create "$TA" clidata2 --classification internal --mask-pattern 'noequals'
expect_rc "a --mask-pattern without NAME=REGEX is a usage error" 2
y "$ALICE" -o json dataset upload "$TA" clidata "$TY_TMP/notes.txt" --format text
expect_rc "yardctl dataset upload FILE" 0
check_eq "masks the dataset's own pattern too" "1 2" \
	"$(printf '%s' "$OUT" | jq -r '"\(.masking.counts.ticket) \(.masking.counts.email)"')"
OUT=$(TRAINYARD_TOKEN=$ALICE "$YARDCTL" -o json dataset upload "$TA" clidata - --format tokens \
	<"$TY_TMP/shards.bin" 2>&1) || true
check_eq "and from a pipe, sent chunked" "2 tokens" "$(printf '%s' "$OUT" | jq -r '"\(.version) \(.format)"')"
y "$ALICE" -o json dataset show "$TA" clidata
check_eq "yardctl dataset show lists both versions" "1,2" \
	"$(printf '%s' "$OUT" | jq -r '[.versions[].version] | join(",")')"
y "$VIC" dataset list "$TA"
check_match "yardctl dataset list" "clidata +internal +2" "$OUT"

# ---- a restricted dataset ----------------------------------------------------
check_status "a restricted dataset" 201 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "pii", "classification": "restricted"}'
upload "$TA" pii "format=text&mask=off" text/plain "$TY_TMP/notes.txt"
check_eq "takes no unmasked text: 422 masking_required" "422 masking_required" \
	"$STATUS $(jb .code)"
upload "$TA" pii "format=tokens" application/octet-stream "$TY_TMP/shards.bin"
check_eq "nor token shards" "422 masking_required" "$STATUS $(jb .code)"
# A refusal known from the headers alone still reaches a client that sends
# its body at once (no Expect: 100-continue): the API reads the body
# before answering, so the connection is not reset under the client.
head -c $((8 << 20)) /dev/zero >"$TY_TMP/big.bin"
for i in 1 2 3; do
	api POST "/v1/tenants/$TA/datasets/pii/versions?format=tokens" -H 'Expect:' \
		-H 'Content-Type: application/octet-stream' --data-binary "@$TY_TMP/big.bin"
	check_eq "8 MiB sent at once, refused: the client reads 422 ($i)" "422 masking_required" \
		"$STATUS $(jb .code)"
done
api POST "/v1/tenants/$TA/datasets/pii/versions?format=tokens" -H 'Expect: 100-continue' \
	-H 'Content-Type: application/octet-stream' --data-binary "@$TY_TMP/big.bin"
check_eq "with Expect: 100-continue, refused before the body is sent" "422 masking_required" \
	"$STATUS $(jb .code)"
check_status "an editor may not exempt it: 403" 403 PUT "/v1/tenants/$TA/datasets/pii/exemption" \
	"${JSON[@]}" -d '{"reason": "please"}'
TOKEN=$ADMIN
check_status "a platform admin exempts it, with a reason" 200 PUT \
	"/v1/tenants/$TA/datasets/pii/exemption" "${JSON[@]}" \
	-d '{"reason": "tokenized upstream under contract 7"}'
check_json "the exemption shows" "true" .masking_exempt
TOKEN=$ALICE
upload "$TA" pii "format=tokens" application/octet-stream "$TY_TMP/shards.bin"
check_eq "then token shards are taken" "201 true" "$STATUS $(jb .unmasked)"
check_eq "the exemption is on record with its reason" "tokenized upstream under contract 7" \
	"$(q "SELECT detail->>'reason' FROM audit_log WHERE action = 'dataset.exempt'
		AND resource = 'dataset/pii' AND outcome = 'success'")"

# ---- token shards ------------------------------------------------------------
TOKEN=$ALICE
check_status "a dataset of token shards" 201 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "corpus", "classification": "internal"}'
nshards=$(ls "$DATA"/train_*.bin | wc -l)
want_tokens=$(($(cat "$DATA"/train_*.bin | wc -c) / 2 - 512 * nshards))
upload "$TA" corpus "format=tokens" application/octet-stream "$TY_TMP/shards.bin"
check_eq "several shards in one body: version 1" "201 1" "$STATUS $(jb .version)"
check_json "each kept as a shard, every token counted" "$nshards $want_tokens" \
	'"\(.shards) \(.tokens)"'
CORPUS_SHA=$(jb .sha256)

versions() { q "SELECT count(*) FROM dataset_versions v JOIN datasets d ON d.id = v.dataset_id
	WHERE d.name = 'corpus' AND d.tenant_id = '$TA_ID'"; }
leftovers() { find "$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/datasets" -name '*.partial' | wc -l; }
# what a crash would leave: a version no row names, a partial upload, both old
CDIR=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/datasets/$(q "SELECT id FROM datasets
	WHERE name = 'corpus' AND tenant_id = '$TA_ID'")
ORPHAN=$CDIR/0b9e0c52-0000-4000-8000-00000000aaaa
mkdir -m 700 "$ORPHAN" "$ORPHAN.partial" "$CDIR/0b9e0c52-0000-4000-8000-00000000bbbb.partial"
touch -d '2 days ago' "$ORPHAN" "$ORPHAN.partial"
head -c 5000 /dev/urandom >"$TY_TMP/noise.bin"
upload "$TA" corpus "format=tokens" application/octet-stream "$TY_TMP/noise.bin"
check_eq "bytes that are not a shard: 422 dataset_not_shards" "422 dataset_not_shards" \
	"$STATUS $(jb .code)"
check "the next upload swept what the crash left" test ! -e "$ORPHAN" -a ! -e "$ORPHAN.partial"
check "but not a partial upload of today" test -d "$CDIR/0b9e0c52-0000-4000-8000-00000000bbbb.partial"
rmdir "$CDIR/0b9e0c52-0000-4000-8000-00000000bbbb.partial"
head -c 3000 "$DATA/train_000000.bin" >"$TY_TMP/cut.bin"
upload "$TA" corpus "format=tokens" application/octet-stream "$TY_TMP/cut.bin"
check_eq "a shard cut short: 422 dataset_not_shards" "422 dataset_not_shards" \
	"$STATUS $(jb .code)"
check_match "which says where" "shard 1 of the upload: the upload ends inside its tokens" \
	"$(jb .detail)"
: >"$TY_TMP/empty.txt"
upload "$TA" corpus "format=text" text/plain "$TY_TMP/empty.txt"
check_eq "an empty body: 422 dataset_empty" "422 dataset_empty" "$STATUS $(jb .code)"
upload "$TA" corpus "format=tokens" text/plain "$TY_TMP/shards.bin"
check_eq "the wrong Content-Type: 415 unsupported_media_type" "415 unsupported_media_type" \
	"$STATUS $(jb .code)"
upload "$TA" corpus "format=csv" text/plain "$TY_TMP/notes.txt"
check_eq "an unknown format: 400" "400 upload_param_invalid" "$STATUS $(jb .code)"
upload "$TA" nothing "format=text" text/plain "$TY_TMP/notes.txt"
check_eq "a dataset that does not exist: 404" "404 dataset_not_found" "$STATUS $(jb .code)"

# an upload cut off half-way: the connection closes after part of the body
host=${TRAINYARD_URL#*://}
host=${host%%/*}
{
	printf 'POST /v1/tenants/%s/datasets/corpus/versions?format=tokens HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n' \
		"$TA" "$host" "$ALICE" "$(stat -c %s "$TY_TMP/shards.bin")"
	head -c 60000 "$TY_TMP/shards.bin"
	sleep 0.5
} | timeout 10 openssl s_client -quiet -no_ign_eof -verify_return_error -CAfile "$TRAINYARD_CA_FILE" \
	-connect "$host" -servername localhost >/dev/null 2>&1
wait_until 10 bash -c "[[ \$(find '$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/datasets' -name '*.partial' | wc -l) == 0 ]]"
check_eq "nothing half-registered: still one version" 1 "$(versions)"
check_eq "and no partial shard left on disk" 0 "$(leftovers)"
check_eq "every refused upload is on record as a failure" 12 \
	"$(q "SELECT count(*) FROM audit_log WHERE action = 'dataset.version.create'
		AND outcome <> 'success' AND tenant_id = '$TA_ID'")"

# a shard with token ids the tiny model (vocabulary 256) does not cover
perl -e 'print pack("l<3", 20240520, 1, 600), "\0" x 1012, pack("v*", map { $_ * 97 % 60000 } 1 .. 600)' \
	>"$TY_TMP/wide.bin"
check_status "a dataset of wide token ids" 201 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "wide", "classification": "public"}'
upload "$TA" wide "format=tokens" application/octet-stream "$TY_TMP/wide.bin"
check_eq "its version records the largest id (600 x 97)" "201 58200" "$STATUS $(jb .max_token)"

# ---- jobs --------------------------------------------------------------------
spec() { # spec DATASET: the tiny one-rank job on a registered dataset
	jq -n --arg ds "$1" '{"name": "ds", "model": {"preset": "tiny"}, "data": {"dataset": $ds},
		"parallel": {"data_parallel": 1, "micro_batch": 4, "global_batch": 8},
		"resources": {"nodes": 1, "ranks_per_node": 1, "time_limit_minutes": 30},
		"training": {"steps": 6, "lr": 0.002, "seed": 7}, "checkpoint": {"every_steps": 3}}'
}
submit_ds() { # submit_ds TOKEN TENANT DATASET
	TOKEN=$1
	api POST "/v1/tenants/$2/jobs" "${JSON[@]}" -d "$(spec "$3")"
}
submit_ds "$ALICE" "$TA" "corpus@9"
check_eq "a version that does not exist: 422 unknown_dataset" "422 unknown_dataset" \
	"$STATUS $(jb '.errors[0].code')"
submit_ds "$ALICE" "$TA" "nosuch"
check_eq "a dataset that does not exist: 422 unknown_dataset at /data/dataset" \
	"422 /data/dataset unknown_dataset" "$STATUS $(jb '.errors[0] | "\(.pointer) \(.code)"')"
submit_ds "$ALICE" "$TA" "wide"
check_eq "token ids beyond the model's vocabulary: 422" "422 dataset_vocab_too_large" \
	"$STATUS $(jb '.errors[0].code')"
TOKEN=$ADMIN
api POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "$(spec corpus | jq '.data = {"train": "attempts/*/train/shard_*.bin"}')"
check_eq "no data path, not even a platform admin's, may read where attempts' datasets are unsealed" \
	"422 /data/train path_not_allowed" \
	"$STATUS $(jb '.errors[0] | "\(.pointer) \(.code)"')"
submit_ds "$BOB" "$TB" "corpus"
check_eq "another tenant's dataset is not there for it" "422 unknown_dataset" \
	"$STATUS $(jb '.errors[0].code')"
submit_ds "$ALICE" "$TA" "corpus"
check_eq "the newest version, pinned at submission" "201 corpus@1" \
	"$STATUS $(jb .spec.data.dataset)"
J=$(jb .id)
TOKEN=$ADMIN
api POST "/v1/jobs/$J/attempts"
ATT=$(jb .id)
WRC=0
TRAINYARD_ATTEMPT=$ATT TRAINYARD_ATTEMPT_TOKEN=$(jb .credential) TRAINYARD_HEARTBEAT_S=2 \
	"$WORKER_BIN" attempt --url "$TRAINYARD_URL" >"$TY_TMP/w.out" 2>"$TY_TMP/w.err" || WRC=$?
check_eq "the worker trains on the registered dataset" 0 "$WRC"
check_match "having unsealed every token of it" "dataset corpus@1: $want_tokens tokens in $nshards shards" \
	"$(cat "$TY_TMP/w.err")"
api GET "/v1/jobs/$J"
check_json "the job succeeded" succeeded .state
check_eq "the read is on record, with the tenant key version" "dataset/corpus@1 1" \
	"$(q "SELECT resource || ' ' || (detail->>'tenant_key_version') FROM audit_log
		WHERE action = 'dataset.read' AND detail->>'attempt_id' = '$ATT'")"
check "and the unsealed files went with the attempt" \
	test ! -e "$TRAINYARD_DATA_ROOT/tenants/$TA_ID/attempts/$ATT"
api GET "/v1/tenants/$TA/reports/data-access?format=json"
check_json "the data-access report lists the read" "dataset.read dataset/corpus@1" \
	"[.sections[0].rows[] | select(.action == \"dataset.read\") | \"\\(.action) \\(.file)\"] | first"
TOKEN=$ALICE
api GET "/v1/tenants/$TA/datasets/corpus"
check_json "the version keeps its hash" "$CORPUS_SHA" '.versions[0].sha256'

# ---- grants --------------------------------------------------------------------
OLGA=$(member_new "$TA" "ds-olga-$SFX" owner)
in_days() { date -u -d "+$1 days" +%Y-%m-%dT%H:%M:%SZ; }
submit_ds "$BOB" "$TB" "$TA/corpus"
check_eq "without a grant another tenant's dataset is not there" "422 unknown_dataset" \
	"$STATUS $(jb '.errors[0].code')"
grant() { # grant TOKEN DATASET GRANTEE EXPIRES
	TOKEN=$1
	api POST "/v1/tenants/$TA/datasets/$2/grants" "${JSON[@]}" \
		-d "{\"tenant\": \"$3\", \"expires_at\": \"$4\"}"
}
grant "$ALICE" corpus "$TB" "$(in_days 7)"
check_eq "an editor may not grant: 403" 403 "$STATUS"
grant "$OLGA" corpus "$TA" "$(in_days 7)"
check_eq "nor grant the dataset's own tenant" "422 /tenant" "$STATUS $(jb '.errors[0].pointer')"
grant "$OLGA" corpus "$TB" "2020-01-01T00:00:00Z"
check_eq "nor with an expiry in the past" "422 /expires_at" "$STATUS $(jb '.errors[0].pointer')"
grant "$OLGA" corpus "$TB" "$(in_days 7)"
check_eq "the owner grants an internal dataset: in force at once" "201 active" \
	"$STATUS $(jb .state)"
CORPUS_GRANT=$(jb .id)
TOKEN=$BOB
check_status "the grantee sees it among its shared datasets" 200 GET "/v1/tenants/$TB/shared-datasets"
check_json "with its owner" "$TA corpus" '.items[] | "\(.owner) \(.name)"'
submit_ds "$BOB" "$TB" "$TA/corpus"
check_eq "the grantee's job names owner/name, pinned" "201 $TA/corpus@1" "$STATUS $(jb .spec.data.dataset)"
J2=$(jb .id)
submit_ds "$BOB" "$TB" "$TA/corpus@1"
J3=$(jb .id)
attempt() { # attempt JOB NAME: start an attempt and run the worker; WRC, ATT
	TOKEN=$ADMIN
	api POST "/v1/jobs/$1/attempts"
	ATT=$(jb .id)
	WRC=0
	TRAINYARD_ATTEMPT=$ATT TRAINYARD_ATTEMPT_TOKEN=$(jb .credential) TRAINYARD_HEARTBEAT_S=2 \
		"$WORKER_BIN" attempt --url "$TRAINYARD_URL" >"$TY_TMP/$2.out" 2>"$TY_TMP/$2.err" || WRC=$?
}
attempt "$J2" shared
check_eq "the grantee's job trains on the shared dataset" 0 "$WRC"
check_eq "the read is on record with the owner's tenant" "$TA dataset/corpus@1" \
	"$(q "SELECT (detail->>'dataset_tenant') || ' ' || resource FROM audit_log
		WHERE action = 'dataset.read' AND detail->>'attempt_id' = '$ATT'")"
TOKEN=$OLGA
api GET "/v1/tenants/$TA/reports/data-access?format=json"
check_json "the owner's data-access report lists the other tenant's read" "$TB" \
	"[.sections[0].rows[] | select(.action == \"dataset.read\" and .tenant == \"$TB\") | .tenant] | first"
check_status "the owner revokes the grant" 204 DELETE "/v1/tenants/$TA/datasets/corpus/grants/$CORPUS_GRANT"
check_status "a second revocation: 409" 409 DELETE "/v1/tenants/$TA/datasets/corpus/grants/$CORPUS_GRANT"
submit_ds "$BOB" "$TB" "$TA/corpus"
check_eq "after the revocation no new job names it" "422 unknown_dataset" "$STATUS $(jb '.errors[0].code')"
attempt "$J3" revoked
check "an attempt that starts after the revocation does not run" test "$WRC" -ne 0
check_match "it was refused the key" "/key: HTTP 403" "$(cat "$TY_TMP/revoked.err")"
check_eq "and the refusal is on record" grant_not_in_force \
	"$(q "SELECT detail->>'code' FROM audit_log WHERE action = 'dataset.read' AND status = 403
		AND resource LIKE '%/$ATT/%'")"
TOKEN=$ADMIN
api GET "/v1/jobs/$J3"
check_json "and its job failed" failed .state
check "nothing of the dataset was unsealed for it" test ! -e "$TRAINYARD_DATA_ROOT/tenants/$(q "SELECT id FROM tenants WHERE name = '$TB'")/attempts/$ATT"

soon=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)
grant "$OLGA" notes "$TB" "$soon"
check_eq "a grant that ends in two seconds" "201 active" "$STATUS $(jb .state)"
submit_ds "$BOB" "$TB" "$TA/notes"
check_eq "is in force until then" 201 "$STATUS"
sleep 3
submit_ds "$BOB" "$TB" "$TA/notes"
check_eq "and not after: an expired grant gives nothing" "422 unknown_dataset" \
	"$STATUS $(jb '.errors[0].code')"
TOKEN=$OLGA
api GET "/v1/tenants/$TA/datasets/notes/grants"
check_json "the grant shows as expired" expired '.items[0].state'

grant "$OLGA" pii "$TB" "$(in_days 3)"
check_eq "a restricted dataset's grant waits for a platform admin" "201 pending" "$STATUS $(jb .state)"
PII_GRANT=$(jb .id)
submit_ds "$BOB" "$TB" "$TA/pii"
check_eq "a pending grant is not in force" "422 unknown_dataset" "$STATUS $(jb '.errors[0].code')"
TOKEN=$OLGA
check_status "the owner cannot approve it: 403" 403 POST "/v1/tenants/$TA/datasets/pii/grants/$PII_GRANT/approve"
TOKEN=$ADMIN
check_status "a platform admin approves it" 200 POST "/v1/tenants/$TA/datasets/pii/grants/$PII_GRANT/approve"
check_json "in force" active .state
check_status "approving twice: 409" 409 POST "/v1/tenants/$TA/datasets/pii/grants/$PII_GRANT/approve"
submit_ds "$BOB" "$TB" "$TA/pii"
check_eq "then the grantee's job may name it" 201 "$STATUS"
TOKEN=$ADMIN
api GET "/v1/tenants/$TA/reports/permission-changes?format=json"
check_json "the owner's permission-changes report lists grants, approval, revocation and exemption" \
	"dataset.exempt dataset.grant dataset.grant.approve dataset.grant.revoke" \
	'[.sections[] | select(.name == "datasets") | .rows[].action] | unique | join(" ")'
api GET "/v1/tenants/$TB/reports/permission-changes?format=json"
check_json "and the grantee's lists the grants made to it" "corpus notes pii" \
	'[.sections[] | select(.name == "datasets") | .rows[] | select(.action == "dataset.grant") | .dataset] | unique | join(" ")'

# ---- lineage and weights -------------------------------------------------------
TOKEN=$ALICE
check_status "the first job's checkpoints" 200 GET "/v1/jobs/$J/checkpoints"
check_json "classified as their data: internal" internal '[.items[].classification] | unique | join(",")'
CK=$(jb '.items | max_by(.step) | .id')
check_status "a checkpoint's lineage" 200 GET "/v1/checkpoints/$CK/lineage"
check_json "names the dataset version it was trained on, with its hash" \
	"train $TA corpus 1 $CORPUS_SHA" '.datasets[0] | "\(.role) \(.owner) \(.dataset) \(.version) \(.sha256)"'
check_json "and the checkpoint it continues from" 3 .follows.step
check_json "and no data paths" null .data_paths
TOKEN=$BOB
check_status "another tenant cannot read it: 404" 404 GET "/v1/checkpoints/$CK/lineage"
TOKEN=$VIC
check_status "the derived checkpoints of corpus" 200 GET "/v1/tenants/$TA/datasets/corpus/derived"
check_json "are the owner's and the grantee's" "$TA $TB" '[.items[].tenant] | unique | join(" ")'
check_json "each at its version" 1 '[.items[].version] | unique | join(",")'
check_status "of a version that has none" 200 GET "/v1/tenants/$TA/datasets/corpus/derived?version=2"
check_json "none" 0 '.items | length'
check_status "of a dataset that does not exist: 404" 404 GET "/v1/tenants/$TA/datasets/nosuch/derived"

submit_ds "$ALICE" "$TA" "pii"
check_eq "a job on restricted data" 201 "$STATUS"
JR=$(jb .id)
attempt "$JR" restricted
check_eq "trains" 0 "$WRC"
TOKEN=$ALICE
api GET "/v1/jobs/$JR/checkpoints"
check_json "its checkpoints are restricted" restricted '[.items[].classification] | unique | join(",")'
CKR=$(jb '.items[0].id')
check_status "an editor may not download them: 403" 403 GET "/v1/checkpoints/$CKR/download"
TOKEN=$OLGA
check_status "the tenant's owner may" 200 GET "/v1/checkpoints/$CKR/download"

# ---- keys: rotation re-wraps dataset keys, and what was sealed still reads --------
before=$(q "SELECT count(*) FROM dataset_keys WHERE tenant_id = '$TA_ID'")
TOKEN=$OLGA
check_status "the owner rotates the tenant's key" 200 POST "/v1/tenants/$TA/keys/rotate"
check "every dataset key was re-wrapped with the jobs' keys" test "$(jb .rewrapped)" -ge "$before"
check_eq "each now under the new key version" "$(jb .version)" \
	"$(q "SELECT DISTINCT key_version FROM dataset_keys WHERE tenant_id = '$TA_ID'")"
submit_ds "$ALICE" "$TA" "corpus"
attempt "$(jb .id)" rotated
check_eq "a job after the rotation still unseals the dataset and trains" 0 "$WRC"
summary
