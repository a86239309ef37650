#!/usr/bin/env bash
# tests/integration/data_paths.sh - data paths are a platform admin's, and
# a job reads only its own tenant's data.
# Who: a tenant member's job naming data.train or data.val as a path (an
# editor's, an owner's; train, val, both, or val beside a dataset) is
# refused 422 validation_failed with data_path_admin_only at each path's
# pointer, saying to name a registered dataset; nothing of it is stored
# and each refusal is on record. The same member's job on a registered
# dataset is accepted, and so is the platform admin's job on a path.
# Where, for the admin's paths at submit: absolute paths (/etc/shadow,
# /proc/self/environ), ".." (../../etc/passwd, a/../../b), a pattern into
# another tenant's directory of the data root, "." and empty components,
# in data.train and in data.val, are each refused 422 validation_failed
# with path_not_allowed at the field's pointer; a relative path is
# accepted. Then the worker runs attempts (mpirun, one rank): a link in
# the tenant's directory to another tenant's shard, submitted as a plain
# relative path, ends the job failed as data_error without reading it; a
# tenant without a directory gets one (0700) and a data error; the same
# job on its own shards succeeds.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/../trainer/lib.sh disable=SC1091
. "$HERE/../trainer/lib.sh"

WORKER_BIN=$(dirname "$TRAIN_BIN")/trainyard-worker
needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_DATA_ROOT "$WORKER_BIN"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
make_corpus

ADMIN=$(admin_token)
SFX=$$
TA=dat-a-$SFX TB=dat-b-$SFX TC=dat-c-$SFX
TA_ID=$(tenant_new "$TA")
TB_ID=$(tenant_new "$TB")
TC_ID=$(tenant_new "$TC")
ALICE=$(member_new "$TA" "dat-alice-$SFX" editor)
OLGA=$(member_new "$TA" "dat-olga-$SFX" owner)
tenant_data "$TA_ID" "$DATA"/train_*.bin
tenant_data "$TB_ID" "$DATA"/train_*.bin

# spec TRAIN [VAL]: the tiny one-rank job on those data paths
spec() {
	jq -n --arg train "$1" --arg val "${2:-}" '{"name": "dat", "model": {"preset": "tiny"},
		"data": ({"train": $train} + (if $val == "" then {} else {"val": $val} end)),
		"parallel": {"data_parallel": 1, "micro_batch": 4, "global_batch": 8},
		"resources": {"nodes": 1, "ranks_per_node": 1, "time_limit_minutes": 30},
		"training": {"steps": 10, "lr": 0.002, "seed": 7},
		"checkpoint": {"every_steps": 5}}'
}

jobs_of_a() { q "SELECT count(*) FROM jobs j JOIN tenants t ON t.id = j.tenant_id WHERE t.name = '$TA'"; }
# codes: the last answer's field errors, "pointer code" joined by ","
codes() { printf '%s' "$BODY" | jq -r '[.errors[] | "\(.pointer) \(.code)"] | join(",")'; }

# ---- who: data paths are a platform admin's ---------------------------------
# member_refused DESC TOKEN BODY WANT: a member's job is refused 422 with
# exactly the field errors WANT
member_refused() {
	TOKEN=$2
	check_status "$1: refused" 422 POST "/v1/tenants/$TA/jobs" \
		-H 'Content-Type: application/json' -d "$3"
	check_json "$1: validation_failed" validation_failed .code
	check_eq "$1: $4" "$4" "$(codes)"
}
member_refused "an editor's data.train" "$ALICE" "$(spec "train_*.bin")" \
	"/data/train data_path_admin_only"
check_match "which says to name a registered dataset" "only a platform admin may name a data path; name a registered dataset" \
	"$(printf '%s' "$BODY" | jq -r '.errors[0].message')"
member_refused "an editor's data.train and data.val" "$ALICE" \
	"$(spec "train_*.bin" train_000000.bin)" \
	"/data/train data_path_admin_only,/data/val data_path_admin_only"
member_refused "an owner's data.train" "$OLGA" "$(spec "train_*.bin")" \
	"/data/train data_path_admin_only"
TOKEN=$ALICE
check_status "alice registers a dataset" 201 POST "/v1/tenants/$TA/datasets" \
	-H 'Content-Type: application/json' -d '{"name": "notes", "classification": "internal"}'
printf 'the quick brown fox jumps over the lazy dog\n%.0s' {1..50} >"$TY_TMP/notes.txt"
check_status "with a version" 201 POST "/v1/tenants/$TA/datasets/notes/versions?format=text" \
	-H 'Content-Type: text/plain' --data-binary "@$TY_TMP/notes.txt"
member_refused "an editor's data.val beside a dataset" "$ALICE" \
	"$(spec x | jq '.data = {"dataset": "notes", "val": "train_000000.bin"}')" \
	"/data/val data_path_admin_only"
check_eq "nothing of the refused jobs is stored" 0 "$(jobs_of_a)"
check_eq "each refusal is on record" 4 \
	"$(q "SELECT count(*) FROM audit_log a JOIN tenants t ON t.id = a.tenant_id
		WHERE t.name = '$TA' AND a.action = 'job.submit' AND a.outcome = 'failure'")"
TOKEN=$ALICE
check_status "the editor's job on the registered dataset is accepted" 201 POST \
	"/v1/tenants/$TA/jobs" -H 'Content-Type: application/json' \
	-d "$(spec x | jq '.data = {"dataset": "notes"}')"
check_json "pinned to its version" notes@1 .spec.data.dataset
check_json "and on no path" "null null" '"\(.spec.data.train) \(.spec.data.val)"'
TOKEN=$ADMIN
check_status "the platform admin's job on data paths is accepted" 201 POST \
	"/v1/tenants/$TA/jobs" -H 'Content-Type: application/json' \
	-d "$(spec "train_*.bin" train_000000.bin)"
check_json "with its paths" "train_*.bin train_000000.bin" '"\(.spec.data.train) \(.spec.data.val)"'
check_eq "those two are stored" 2 "$(jobs_of_a)"

# ---- where: the admin's paths stay inside the tenant's data root ------------
# refused DESC TRAIN [VAL]: the admin's job is refused at /data/train (or
# /data/val when VAL is given), path_not_allowed, and nothing is queued
refused() {
	local desc=$1 ptr=/data/train
	[[ -n ${3:-} ]] && ptr=/data/val
	TOKEN=$ADMIN
	check_status "$desc: refused" 422 POST "/v1/tenants/$TA/jobs" \
		-H 'Content-Type: application/json' -d "$(spec "$2" "${3:-}")"
	check_json "$desc: validation_failed" validation_failed .code
	check_json "$desc: path_not_allowed at $ptr" "$ptr path_not_allowed" \
		"[.errors[] | select(.pointer == \"$ptr\") | \"\\(.pointer) \\(.code)\"] | join(\",\")"
}

refused "/etc/shadow" /etc/shadow
refused "/proc/self/environ" /proc/self/environ
refused "../../etc/passwd" ../../etc/passwd
refused "a/../../b" a/../../b
refused "a pattern into another tenant's directory" "../$TB_ID/train_*.bin"
refused "the data root's other tenants" "../../tenants/$TB_ID/*.bin"
refused "a pattern in a directory component" "*/train_*.bin"
refused "a . component" ./train_000000.bin
refused "an empty component" "a//train_*.bin"
refused "val /etc/shadow" "train_*.bin" /etc/shadow
refused "val climbing out" "train_*.bin" "../$TB_ID/train_000000.bin"
refused "val /proc/self/environ" "train_*.bin" /proc/self/environ
check_eq "none of them was stored: still the two accepted" 2 "$(jobs_of_a)"

# run TOKEN TENANT TRAIN NAME: submit, start an attempt, run the worker;
# J the job, WRC the worker's exit status, its output in $TY_TMP/NAME.err,
# the job's log in $TY_TMP/NAME.log, the job in BODY
run() {
	TOKEN=$1
	check_status "$4: the job is accepted" 201 POST "/v1/tenants/$2/jobs" \
		-H 'Content-Type: application/json' -d "$(spec "$3")"
	J=$(printf '%s' "$BODY" | jq -r .id)
	TOKEN=$ADMIN
	api POST "/v1/jobs/$J/attempts"
	WRC=0
	TRAINYARD_ATTEMPT=$(printf '%s' "$BODY" | jq -r .id) \
		TRAINYARD_ATTEMPT_TOKEN=$(printf '%s' "$BODY" | jq -r .credential) \
		TRAINYARD_HEARTBEAT_S=2 "$WORKER_BIN" attempt --url "$TRAINYARD_URL" \
		>"$TY_TMP/$4.out" 2>"$TY_TMP/$4.err" || WRC=$?
	TOKEN=$ADMIN
	api GET "/v1/jobs/$J/logs"
	printf '%s' "$BODY" >"$TY_TMP/$4.log"
	api GET "/v1/jobs/$J"
}

# a link inside A's directory to B's shard: the path itself is plain
ln -s "../$TB_ID/train_000000.bin" "$TRAINYARD_DATA_ROOT/tenants/$TA_ID/peer_000.bin"
run "$ADMIN" "$TA" "peer_*.bin" link
check_eq "a link to another tenant's shard: the worker exits 13 (data_error)" 13 "$WRC"
check_json "the job failed" failed .state
check_match "as data_error" data_error "$(printf '%s' "$BODY" | jq -r .state_reason)"
check_match "the trainer said why" 'data path "peer_000.bin" is or passes through a symbolic link' \
	"$(cat "$TY_TMP/link.log")"
check "and read nothing of it" bash -c "! grep -q 'is not a token shard\|\"type\":\"step\"' '$TY_TMP/link.log'"

run "$ADMIN" "$TC" "train_*.bin" empty
check_eq "a tenant without data: a data error (13)" 13 "$WRC"
check_match "no data files match in its own directory" \
	"no data files match \"train_\*.bin\" in the data root \"[^\"]*/tenants/$TC_ID\"" \
	"$(cat "$TY_TMP/empty.log")"
check_eq "the worker made the directory, private" 700 \
	"$(stat -c %a "$TRAINYARD_DATA_ROOT/tenants/$TC_ID" 2>/dev/null)"

run "$ADMIN" "$TA" "train_*.bin" own
check_eq "the tenant's own shards: the worker exits 0" 0 "$WRC"
check_json "the job succeeded" succeeded .state
check_match "the trainer got the tenant's directory as its root" \
	"--data-root [^ ]*/tenants/$TA_ID " "$(cat "$TY_TMP/own.err")"
summary
