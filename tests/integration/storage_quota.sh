#!/usr/bin/env bash
# tests/integration/storage_quota.sh - a tenant's max_storage_bytes,
# enforced on what it stores sealed (migrations/0014_storage_quota.sql):
# a dataset upload past the quota refused with storage_quota_exceeded,
# before its body with a 1-byte quota and half-way through with a little
# room, leaving no version row and no directory; one that fits stored
# with its sealed size, which is the bytes of its shards on disk; a
# checkpoint's registration past the quota refused, its record gone and
# the trainer's kept ones staying; the log's size a report carries
# counted, the room left answered; the usage route and the metrics
# showing storage used against the quota; and the worker under a small
# quota: its checkpoint refused and removed from disk, its log ending in
# one marker, the job failed with the quota as its reason.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/../trainer/lib.sh disable=SC1091
. "$HERE/../trainer/lib.sh"

WORKER_BIN=$(dirname "$TRAIN_BIN")/trainyard-worker
needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_STORAGE_ROOT "$WORKER_BIN"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

ADMIN=$(admin_token)
SFX=$$
TA=sq-a-$SFX
TA_ID=$(tenant_new "$TA")
ALICE=$(member_new "$TA" "sq-alice-$SFX" editor)
JSON=(-H 'Content-Type: application/json')
I=/internal/v1/attempts
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; }
quota() { # quota BYTES: the admin sets the tenant's max_storage_bytes
	TOKEN=$ADMIN api PUT "/v1/tenants/$TA/quota" "${JSON[@]}" -d "{\"max_storage_bytes\": $1}"
	[[ $STATUS == 200 ]] || echo "# quota $1: HTTP $STATUS $BODY" >&2
}
upload() { # upload FILE: a text version of the dataset corpus, as alice
	TOKEN=$ALICE api POST "/v1/tenants/$TA/datasets/corpus/versions?format=text&mask=off" \
		-H 'Content-Type: text/plain' --data-binary "@$1"
}
versions() { q "SELECT count(*) FROM dataset_versions v JOIN datasets d ON d.id = v.dataset_id
	WHERE d.tenant_id = '$TA_ID'"; }
# the directories under the tenant's datasets: the dataset's own, and one per version
dirs() { find "$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/datasets" -mindepth 2 -type d 2>/dev/null | wc -l; }
usage() { TOKEN=$ALICE api GET "/v1/tenants/$TA/usage"; }
sample() { # sample NAME: the value of the tenant's sample of a metric
	TOKEN=$ADMIN api GET /metrics
	printf '%s\n' "$BODY" | grep -E "^$1\\{tenant=\"$TA\"\\} " | awk '{print $2}'
}

# 38,000 bytes of text, one token a byte unmasked: 76,000 token bytes in
# one shard, sealed as a 42-byte header, the bytes and a 16-byte tag for
# each of its two chunks (docs/storage.md): 76,074 bytes
awk 'BEGIN { for (i = 0; i < 38000 / 38; i++) printf "line %05d of the storage quota text.\n", i }' \
	>"$TY_TMP/text.txt"
check_eq "the text is 38,000 bytes" 38000 "$(stat -c %s "$TY_TMP/text.txt")"
SEALED=76074

TOKEN=$ALICE
check_status "a dataset is registered" 201 POST "/v1/tenants/$TA/datasets" "${JSON[@]}" \
	-d '{"name": "corpus", "classification": "internal"}'

# ---- a 1-byte quota ------------------------------------------------------------
quota 1
upload "$TY_TMP/text.txt"
check_eq "an upload under a 1-byte quota: 409 storage_quota_exceeded" \
	"409 storage_quota_exceeded" "$STATUS $(jb .code)"
check_match "the detail says what is left" "storage quota has 1 bytes left" "$(jb .detail)"
check_eq "no version row" 0 "$(versions)"
check_eq "no directory under the storage root" 0 "$(dirs)"
usage
check_json "usage: the quota" 1 .quota.max_storage_bytes
check_json "usage: nothing stored" 0 .quota.storage_bytes_used

# ---- room for one version ----------------------------------------------------
quota $((SEALED + 50000))
upload "$TY_TMP/text.txt"
check_eq "with room, the version is stored" "201 1" "$STATUS $(jb .version)"
check_json "with its sealed size" "$SEALED" .sealed_bytes
VDIR=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/datasets/$(q "SELECT id FROM datasets
	WHERE tenant_id = '$TA_ID'")/$(jb .id)
check_eq "which is the bytes of its shards on disk" "$SEALED" \
	"$(find "$VDIR" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')"
upload "$TY_TMP/text.txt"
check_eq "a second one passes the 50,000 bytes left: 409 storage_quota_exceeded" \
	"409 storage_quota_exceeded" "$STATUS $(jb .code)"
check_match "refused as it passed them" "50000 bytes the tenant's storage quota had left" \
	"$(jb .detail)"
check_eq "still one version row" 1 "$(versions)"
check_eq "and one version directory, no partial one" 1 "$(dirs)"
usage
check_json "usage: the version's sealed bytes" "$SEALED" .quota.storage_bytes_used
check_json "counted as datasets" "$SEALED 0 0" \
	'.quota.storage | "\(.datasets) \(.checkpoints) \(.logs)"'

# ---- checkpoints and logs, as an attempt reports them --------------------------
quota $((SEALED + 1000))
TOKEN=$ADMIN
check_status "the admin submits a job that keeps two checkpoints" 201 POST "/v1/tenants/$TA/jobs" \
	"${JSON[@]}" -d "$(tiny_job sq 10 30 | jq -c '.checkpoint = {"every_steps": 1, "keep": 2}')"
J=$(jb .id)
check_status "and starts its attempt" 201 POST "/v1/jobs/$J/attempts"
ATT=$(jb .id)
TOKEN=$(jb .credential)
ckpt() { # ckpt STEP BYTES: register a one-shard checkpoint
	api POST "$I/$ATT/checkpoints" "${JSON[@]}" -d "{\"step\": $1, \"world\": 1, \"shards\":
		[{\"name\": \"shard_00000_of_00001.bin\", \"bytes\": $2, \"sha256\": \"$(printf '%064d' 0)\"}]}"
}
ckpt 1 500
check_eq "a checkpoint of 500 bytes is registered" 201 "$STATUS"
check_json "with the room left" 500 .storage_left
ckpt 2 5000
check_eq "one of 5,000 bytes passes the quota: 409 storage_quota_exceeded" \
	"409 storage_quota_exceeded" "$STATUS $(jb .code)"
check_eq "it has no record; step 1, which the trainer keeps, stays" 1 \
	"$(q "SELECT string_agg(step::text, ',') FROM checkpoints WHERE job_id = '$J'")"
check_eq "the refusal is on record" 1 \
	"$(q "SELECT count(*) FROM audit_log WHERE resource = 'job/$J/checkpoint/step/2'
		AND outcome <> 'success'")"
check_status "a heartbeat carries the log's size" 200 POST "$I/$ATT/heartbeat" "${JSON[@]}" \
	-d '{"log_bytes": 300}'
check_json "and is answered the room left" 200 .storage_left
check_status "a metrics report may carry it too" 200 POST "$I/$ATT/metrics" "${JSON[@]}" \
	-d '{"steps": [{"step": 1, "loss": 5.5}], "log_bytes": 400}'
check_json "the room left after it" 100 .storage_left
check_status "a heartbeat without a body still answers" 200 POST "$I/$ATT/heartbeat"
check_json "the same room" 100 .storage_left
usage
check_json "usage: the quota" $((SEALED + 1000)) .quota.max_storage_bytes
check_json "usage: datasets, checkpoints and logs" "$SEALED 500 400" \
	'.quota.storage | "\(.datasets) \(.checkpoints) \(.logs)"'
check_json "usage: their sum" $((SEALED + 900)) .quota.storage_bytes_used
y "$ALICE" tenant usage "$TA"
check_match "yardctl tenant usage shows the storage used" "storage_bytes_used +$((SEALED + 900))" "$OUT"
check_eq "the metric of storage used" $((SEALED + 900)) "$(sample trainyard_tenant_storage_bytes)"
check_eq "the metric of the quota" $((SEALED + 1000)) "$(sample trainyard_tenant_storage_quota_bytes)"

# ---- the worker under a small quota ------------------------------------------
TOKEN=$ADMIN
check_status "a second job" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "$(jq -n '{"name": "sqw",
	"model": {"preset": "tiny"}, "data": {"dataset": "corpus"},
	"parallel": {"data_parallel": 1, "micro_batch": 4, "global_batch": 8},
	"resources": {"nodes": 1, "ranks_per_node": 1, "time_limit_minutes": 30},
	"training": {"steps": 6, "lr": 0.002, "seed": 7}, "checkpoint": {"every_steps": 6}}')"
J2=$(jb .id)
# what the first attempt holds goes, so that 1,500 bytes are left for the second
q "DELETE FROM checkpoints WHERE job_id = '$J'; UPDATE job_attempts SET log_bytes = 0 WHERE id = '$ATT'" >/dev/null
quota $((SEALED + 1500))
check_status "its attempt starts" 201 POST "/v1/jobs/$J2/attempts"
ATT2=$(jb .id)
WRC=0
TRAINYARD_ATTEMPT=$ATT2 TRAINYARD_ATTEMPT_TOKEN=$(jb .credential) TRAINYARD_HEARTBEAT_S=1 \
	timeout 300 "$WORKER_BIN" attempt --url "$TRAINYARD_URL" >"$TY_TMP/w.out" 2>"$TY_TMP/w.err" || WRC=$?
# the only checkpoint is the last step's: the refusal comes after the training
# ended well, and still fails the run, exit status included (16: stopped)
check_eq "the worker ends failed, with the status of a stopped run" 16 "$WRC"
check_match "saying the checkpoint was refused for the quota" \
	"checkpoint of step 6 refused: .*storage_quota_exceeded" "$(cat "$TY_TMP/w.err")"
TOKEN=$ALICE
api GET "/v1/jobs/$J2"
check_eq "the job failed, the quota its reason" "failed storage_quota_exceeded" \
	"$(jb '"\(.state) \(.state_reason)"')"
check_eq "no checkpoint of it is registered" 0 "$(q "SELECT count(*) FROM checkpoints WHERE job_id = '$J2'")"
check_eq "and none is left on disk" 0 \
	"$(find "$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/jobs/$J2/checkpoints" -name 'step_*' 2>/dev/null | wc -l)"
api GET "/v1/jobs/$J2/logs"
check_eq "the log ends its lines with one marker" 1 \
	"$(printf '%s\n' "$BODY" | grep -c "storage quota is used up: the log keeps no more lines")"
LOG=$(find "$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/jobs/$J2/logs" -name 'attempt-*.log' -printf '%s\n')
check_eq "after it, only the worker's own closing lines" 0 \
	"$(printf '%s\n' "$BODY" | sed -n '/keeps no more lines/,$p' | grep -vc '^trainyard-worker: ')"
check "the sealed log stays within the 1,500 bytes and those lines" \
	test "${LOG:-0}" -gt 0 -a "${LOG:-0}" -le 2500
check_eq "its size as the worker last reported it is counted" "${LOG:-x}" \
	"$(q "SELECT log_bytes FROM job_attempts WHERE id = '$ATT2'")"

summary
