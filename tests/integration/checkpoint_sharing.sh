#!/usr/bin/env bash
# tests/integration/checkpoint_sharing.sh - starting jobs from checkpoints,
# and sharing checkpoints between tenants (docs/datasets.md, "Sharing
# checkpoints"). A job names training.init_from: a checkpoint of its own
# tenant that does not exist, of a job still running, or of another model
# is refused; one of an ended job is pinned, the worker copies it sealed
# through the API and the trainer starts from its weights (a lower first
# loss than a fresh start), and the lineage says so. Another tenant sees
# nothing without a grant; the owner grants it (an editor may not), a
# restricted checkpoint's grant waits for a platform admin and never
# allows downloads; the grantee lists it, downloads it only with
# download, starts a job from it (the key release audited in both
# tenants' data-access reports, the copy gone afterwards), and the
# dataset's derived checkpoints follow the chain. After a revocation no
# job names it and an attempt that starts is refused the key; after the
# owner's keys are shredded nothing of the checkpoint opens, while the
# grantee's own checkpoints, sealed under its own key, still do. yardctl's
# checkpoint grant, shared, lineage, revoke and grants, and the same for
# a dataset.
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
TA=cs-a-$SFX TB=cs-b-$SFX
TA_ID=$(tenant_new "$TA")
TB_ID=$(tenant_new "$TB")
ALICE=$(member_new "$TA" "cs-alice-$SFX" editor)
OLGA=$(member_new "$TA" "cs-olga-$SFX" owner)
BOB=$(member_new "$TB" "cs-bob-$SFX" editor)
BEA=$(member_new "$TB" "cs-bea-$SFX" owner)
JSON=(-H 'Content-Type: application/json')
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; } # jb FILTER: the filter over the last answer
in_days() { date -u -d "+$1 days" +%Y-%m-%dT%H:%M:%SZ; }

# the owner's dataset
TOKEN=$ALICE
check_status "a dataset of token shards" 201 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "corpus", "classification": "internal"}'
cat "$DATA"/train_*.bin >"$TY_TMP/shards.bin"
check_status "its version" 201 POST "/v1/tenants/$TA/datasets/corpus/versions?format=tokens" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$TY_TMP/shards.bin"

TOKEN=$BOB
check_status "the grantee's own dataset" 201 POST "/v1/tenants/$TB/datasets" "${JSON[@]}" \
	-d '{"name": "corpus", "classification": "public"}'
check_status "and its version" 201 POST "/v1/tenants/$TB/datasets/corpus/versions?format=tokens" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$TY_TMP/shards.bin"

spec() { # spec DATASET [INIT_FROM]: the tiny one-rank job, from a checkpoint when named
	jq -n --arg ds "$1" --arg init "${2:-}" '{"name": "cs", "model": {"preset": "tiny"},
		"data": {"dataset": $ds},
		"parallel": {"data_parallel": 1, "micro_batch": 4, "global_batch": 8},
		"resources": {"nodes": 1, "ranks_per_node": 1, "time_limit_minutes": 30},
		"training": ({"steps": 6, "lr": 0.002, "seed": 7}
			+ (if $init == "" then {} else {"init_from": $init} end)),
		"checkpoint": {"every_steps": 3}}'
}
submit() { # submit TOKEN TENANT DATASET [INIT_FROM]
	TOKEN=$1
	api POST "/v1/tenants/$2/jobs" "${JSON[@]}" -d "$(spec "$3" "${4:-}")"
}
attempt() { # attempt JOB NAME: start an attempt and run the worker; WRC, ATT
	TOKEN=$ADMIN
	api POST "/v1/jobs/$1/attempts"
	ATT=$(jb .id)
	WRC=0
	TRAINYARD_ATTEMPT=$ATT TRAINYARD_ATTEMPT_TOKEN=$(jb .credential) TRAINYARD_HEARTBEAT_S=2 \
		"$WORKER_BIN" attempt --url "$TRAINYARD_URL" >"$TY_TMP/$2.out" 2>"$TY_TMP/$2.err" || WRC=$?
}
first_loss() { # first_loss JOB: the loss of its first step
	TOKEN=$ADMIN
	api GET "/v1/jobs/$1/metrics"
	jb '.items[0].data.loss'
}
checkpoint_of() { # checkpoint_of JOB STEP: its id
	q "SELECT id FROM checkpoints WHERE job_id = '$1' AND step = $2"
}

# ---- a job of the same tenant ------------------------------------------------------
submit "$ALICE" "$TA" corpus
JA=$(jb .id)
attempt "$JA" source
check_eq "the source job trains" 0 "$WRC"
CA=$(checkpoint_of "$JA" 6)
check "and leaves a checkpoint at step 6" test -n "$CA"

submit "$ALICE" "$TA" corpus 0b9e0c52-0000-4000-8000-00000000cccc
check_eq "a checkpoint that does not exist: 422 unknown_checkpoint at /training/init_from" \
	"422 /training/init_from unknown_checkpoint" "$STATUS $(jb '.errors[0] | "\(.pointer) \(.code)"')"
submit "$ALICE" "$TA" corpus not-an-id
check_eq "an init_from that is not an id: 422 invalid_value" "422 invalid_value" \
	"$STATUS $(jb '.errors[0].code')"
TOKEN=$ALICE
api POST "/v1/tenants/$TA/jobs" "${JSON[@]}" \
	-d "$(spec corpus "$CA" | jq '.model = {"preset": "tiny", "seq_len": 32}')"
check_eq "a checkpoint of another model: 422 init_model_mismatch" "422 init_model_mismatch" \
	"$STATUS $(jb '.errors[0].code')"
q "UPDATE jobs SET state = 'running' WHERE id = '$JA'" >/dev/null
submit "$ALICE" "$TA" corpus "$CA"
check_eq "a checkpoint of a job that has not ended: 422" "422 invalid_value" \
	"$STATUS $(jb '.errors[0].code')"
TOKEN=$OLGA
check_status "nor is it granted: 409" 409 POST "/v1/checkpoints/$CA/grants" "${JSON[@]}" \
	-d "{\"tenant\": \"$TB\", \"expires_at\": \"$(in_days 7)\"}"
check_json "checkpoint_not_final" checkpoint_not_final .code
q "UPDATE jobs SET state = 'succeeded' WHERE id = '$JA'" >/dev/null

submit "$ALICE" "$TA" corpus "$CA"
check_eq "a checkpoint of an ended job of the tenant: pinned" "201 $CA" \
	"$STATUS $(jb .spec.training.init_from)"
JI=$(jb .id)
attempt "$JI" own
check_eq "the job trains from it" 0 "$WRC"
check_match "the worker copied it" "starting from checkpoint $CA \\(step 6\\)" "$(cat "$TY_TMP/own.err")"
TOKEN=$ALICE
check_status "the job's log" 200 GET "/v1/jobs/$JI/logs"
check_match "shows the trainer's --init-ckpt without a path" \
	"--init-ckpt <the checkpoint started from> --init-encrypt $TA_ID:$JA" "$BODY"
fresh=$(first_loss "$JA") init=$(first_loss "$JI")
check "its first loss ($init) is below a fresh start's ($fresh)" \
	awk -v a="$init" -v b="$fresh" 'BEGIN { exit !(a < b) }'
CI=$(checkpoint_of "$JI" 3)
TOKEN=$ALICE
check_status "the lineage of its first checkpoint" 200 GET "/v1/checkpoints/$CI/lineage"
check_json "names the checkpoint it started from" "$CA $JA 6" \
	'"\(.init_from.checkpoint_id) \(.init_from.job_id) \(.init_from.step)"'
check_json "and follows no checkpoint of its own job" null .follows
check "the copy went with the attempt" test ! -e "$TRAINYARD_DATA_ROOT/tenants/$TA_ID/attempts/$ATT"

# ---- another tenant ------------------------------------------------------------------
submit "$BOB" "$TB" corpus "$CA"
check_eq "without a grant another tenant's checkpoint is not there" "422" "$STATUS"
check_json "unknown_checkpoint" unknown_checkpoint '.errors[] | select(.pointer == "/training/init_from") | .code'
grant() { # grant TOKEN CHECKPOINT GRANTEE EXPIRES [DOWNLOAD]
	TOKEN=$1
	api POST "/v1/checkpoints/$2/grants" "${JSON[@]}" \
		-d "{\"tenant\": \"$3\", \"expires_at\": \"$4\", \"download\": ${5:-false}}"
}
grant "$ALICE" "$CA" "$TB" "$(in_days 7)"
check_eq "an editor may not grant: 403" 403 "$STATUS"
grant "$BOB" "$CA" "$TB" "$(in_days 7)"
check_eq "another tenant's member sees no such checkpoint: 404" 404 "$STATUS"
grant "$OLGA" "$CA" "$TA" "$(in_days 7)"
check_eq "nor is the checkpoint's own tenant granted" "422 /tenant" "$STATUS $(jb '.errors[0].pointer')"
grant "$OLGA" "$CA" "$TB" "2020-01-01T00:00:00Z"
check_eq "nor with an expiry in the past" "422 /expires_at" "$STATUS $(jb '.errors[0].pointer')"
grant "$OLGA" "$CA" "$TB" "$(in_days 7)" '"yes"'
check_eq "download must be true or false" "422 /download" "$STATUS $(jb '.errors[0].pointer')"
grant "$OLGA" "$CA" "$TB" "$(in_days 7)"
check_eq "the owner grants an internal checkpoint: in force at once" "201 active false" \
	"$STATUS $(jb '"\(.state) \(.download)"')"
GA=$(jb .id)

# a restricted checkpoint: never downloaded by another tenant, started from once approved
CR=$(checkpoint_of "$JA" 3)
q "UPDATE checkpoints SET classification = 'restricted' WHERE id = '$CR'" >/dev/null
grant "$OLGA" "$CR" "$TB" "$(in_days 7)" true
check_eq "a restricted checkpoint's grant with download: 422 at /download" "422 /download" \
	"$STATUS $(jb '.errors[0].pointer')"
grant "$OLGA" "$CR" "$TB" "$(in_days 7)"
check_eq "without download it waits for a platform admin" "201 pending" "$STATUS $(jb .state)"
GR=$(jb .id)
TOKEN=$OLGA
check_status "the owner may not approve it" 403 POST "/v1/checkpoints/$CR/grants/$GR/approve"
TOKEN=$ADMIN
check_status "a platform admin approves it" 200 POST "/v1/checkpoints/$CR/grants/$GR/approve"
check_json "in force" active .state
check_status "approving again: 409" 409 POST "/v1/checkpoints/$CR/grants/$GR/approve"
check_json "grant_state_conflict" grant_state_conflict .code
TOKEN=$OLGA
check_status "the owner lists the checkpoint's grants" 200 GET "/v1/checkpoints/$CR/grants"
check_json "with the grantee and state" "$TB active false" '.items[0] | "\(.tenant) \(.state) \(.download)"'

TOKEN=$BOB
check_status "the grantee lists its shared checkpoints" 200 GET "/v1/tenants/$TB/shared-checkpoints"
check_json "both, with their owner and step" "$TA 3 restricted false,$TA 6 internal false" \
	'[.items[] | "\(.owner) \(.step) \(.classification) \(.download)"] | join(",")'
check_status "a grant without download lets nothing be downloaded" 404 \
	GET "/v1/tenants/$TB/shared-checkpoints/$CA/download"
grant "$OLGA" "$CA" "$TB" "$(in_days 7)" true
GD=$(jb .id)
TOKEN=$BOB
check_status "with download the grantee reads the manifest" 200 \
	GET "/v1/tenants/$TB/shared-checkpoints/$CA/download"
check_json "decrypted, of step 6" 6 .step
check_status "the restricted one never" 404 GET "/v1/tenants/$TB/shared-checkpoints/$CR/download"
check_status "nor through the owner's route" 404 GET "/v1/checkpoints/$CA/download"

submit "$BOB" "$TB" corpus "$CA"
check_eq "the grantee's job starts from it" "201 $CA" "$STATUS $(jb .spec.training.init_from)"
JB=$(jb .id)
submit "$BOB" "$TB" corpus "$CA"
JB2=$(jb .id)
submit "$BOB" "$TB" corpus "$CA"
JB3=$(jb .id)
attempt "$JB" shared
check_eq "and trains" 0 "$WRC"
check_eq "the key release is on record, naming the owner, with its key version" "$TA 1" \
	"$(q "SELECT (detail->>'checkpoint_tenant') || ' ' || (detail->>'tenant_key_version')
		FROM audit_log WHERE action = 'checkpoint.read' AND detail->>'attempt_id' = '$ATT'")"
check "the copy went with the attempt" test ! -e "$TRAINYARD_DATA_ROOT/tenants/$TB_ID/attempts/$ATT"
CB=$(checkpoint_of "$JB" 6)
TOKEN=$BOB
check_status "the lineage of the grantee's checkpoint" 200 GET "/v1/checkpoints/$CB/lineage"
check_json "goes back to the owner's" "$CA $TA" '"\(.init_from.checkpoint_id) \(.init_from.tenant)"'
TOKEN=$OLGA
api GET "/v1/tenants/$TA/reports/data-access?format=json"
check_json "the owner's data-access report lists the grantee's start and download" \
	"checkpoint.download checkpoint.read" \
	"[.sections[0].rows[] | select(.tenant == \"$TB\") | .action] | unique | join(\" \")"
api GET "/v1/tenants/$TA/datasets/corpus/derived?limit=100"
check_json "the dataset's derived checkpoints follow the chain into the grantee" \
	"$CB init_from $TB" "[.items[] | select(.checkpoint_id == \"$CB\") | \"\\(.checkpoint_id) \\(.role) \\(.tenant)\"] | first"
check_json "a job pinned to the dataset that also started from one is listed as pinned" train \
	"[.items[] | select(.checkpoint_id == \"$CI\") | .role] | first"
TOKEN=$BEA
api GET "/v1/tenants/$TB/reports/permission-changes?format=json"
check_json "the grantee's permission-changes report lists the grants to it and the approval" \
	"checkpoint.grant checkpoint.grant.approve" "[.sections[] | select(.name == \"checkpoints\") | .rows[].action] | unique | join(\" \")"

# ---- revocation ----------------------------------------------------------------------
TOKEN=$ALICE
check_status "an editor may not revoke" 403 DELETE "/v1/checkpoints/$CA/grants/$GA"
TOKEN=$OLGA
check_status "the owner revokes both grants of it" 204 DELETE "/v1/checkpoints/$CA/grants/$GA"
check_status "" 204 DELETE "/v1/checkpoints/$CA/grants/$GD"
check_status "a second revocation: 409" 409 DELETE "/v1/checkpoints/$CA/grants/$GA"
TOKEN=$BOB
check_status "the grantee no longer downloads it" 404 GET "/v1/tenants/$TB/shared-checkpoints/$CA/download"
submit "$BOB" "$TB" corpus "$CA"
check_eq "nor does a new job name it" "422" "$STATUS"
attempt "$JB2" revoked
check "an attempt that starts after the revocation does not run" test "$WRC" -ne 0
check_match "it was refused the key" "/init/key: HTTP 403 grant_not_in_force" "$(cat "$TY_TMP/revoked.err")"
check_eq "it ends as a data error, which is not retried (13)" 13 "$WRC"
check_eq "and the refusal is on record" 1 \
	"$(q "SELECT count(*) FROM audit_log WHERE action = 'checkpoint.read' AND status = 403
		AND resource LIKE '%/$ATT/%'")"
TOKEN=$ADMIN
api GET "/v1/jobs/$JB2"
check_json "its job failed" failed .state
check "nothing was copied for it" test ! -e "$TRAINYARD_DATA_ROOT/tenants/$TB_ID/attempts/$ATT"

# ---- yardctl -------------------------------------------------------------------------------
y "$OLGA" -o json checkpoint grant "$CA" "$TB" --expires "$(in_days 7)" --download
expect_rc "yardctl checkpoint grant" 0
check_eq "an active grant with download" "active true" "$(jq_out '"\(.state) \(.download)"')"
GY=$(jq_out .id)
y "$BOB" -o json checkpoint shared "$TB"
expect_rc "yardctl checkpoint shared" 0
check_eq "lists it for the grantee" "$CA $TA true" \
	"$(jq_out ".items[] | select(.checkpoint_id == \"$CA\") | \"\\(.checkpoint_id) \\(.owner) \\(.download)\"")"
y "$BOB" -o json checkpoint lineage "$CB"
expect_rc "yardctl checkpoint lineage" 0
check_eq "names the checkpoint started from" "$CA" "$(jq_out .init_from.checkpoint_id)"
y "$OLGA" checkpoint revoke "$CA" "$GY"
expect_rc "yardctl checkpoint revoke" 0
y "$OLGA" -o json checkpoint grants "$CA"
check_eq "every grant of it now revoked" "revoked" "$(jq_out '[.items[].state] | unique | join(" ")')"
y "$OLGA" -o json dataset grant "$TA" corpus "$TB" --expires "$(in_days 3)"
expect_rc "yardctl dataset grant" 0
check_eq "an internal dataset's grant: active" active "$(jq_out .state)"
GDS=$(jq_out .id)
y "$BOB" -o json dataset shared "$TB"
check_eq "yardctl dataset shared lists it for the grantee" "$TA corpus" \
	"$(jq_out '.items[] | "\(.owner) \(.name)"')"
y "$OLGA" dataset revoke "$TA" corpus "$GDS"
expect_rc "yardctl dataset revoke" 0
y "$OLGA" -o json dataset grants "$TA" corpus
check_eq "yardctl dataset grants shows it revoked" revoked "$(jq_out '.items[0].state')"

# ---- crypto-shredding the owner ---------------------------------------------------------
grant "$OLGA" "$CA" "$TB" "$(in_days 7)"
TOKEN=$ADMIN
check_status "the owner tenant's keys are shredded" 204 DELETE "/v1/tenants/$TA/keys"
attempt "$JB3" shredded
check "the checkpoint no longer opens for the grantee's next attempt" test "$WRC" -ne 0
check_match "its key is gone" "/init/key: HTTP 503 keys_unavailable" "$(cat "$TY_TMP/shredded.err")"
check_eq "a data error too (13)" 13 "$WRC"
TOKEN=$ADMIN
api GET "/v1/jobs/$JB3/events"
check_match "its end says why" "data_error: the checkpoint to start from cannot be read any more \\(keys_unavailable\\)" "$BODY"
TOKEN=$BOB
check_status "the grantee's own checkpoints, sealed under its key, still open" 200 \
	GET "/v1/checkpoints/$CB/download"
summary
