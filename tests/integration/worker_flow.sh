#!/usr/bin/env bash
# tests/integration/worker_flow.sh - trainyard-worker's attempt mode against
# the stack, with the trainer under mpirun on this machine: the admin
# submits a dp2 job on a data path and starts an attempt, the worker runs
# it with the credential from its environment. The job succeeds; every step's
# metrics and each checkpoint (world 2, shard hashes) are in the API; the
# files on disk are sealed (no plaintext manifest), and so is the log; the
# credential stops working at the end. Then a job with a fallback ladder
# (dp2 -> dp1) loses a rank after its checkpoint of step 5: the worker
# reports the fallback, the job succeeds, and the metrics continue from the
# checkpoint. Another tenant's user sees none of it.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/../trainer/lib.sh disable=SC1091
. "$HERE/../trainer/lib.sh"

WORKER_BIN=$(dirname "$TRAIN_BIN")/trainyard-worker
needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_STORAGE_ROOT "$WORKER_BIN"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
make_corpus

ADMIN=$(admin_token)
SFX=$$
TA=wrk-a-$SFX TB=wrk-b-$SFX
TA_ID=$(tenant_new "$TA")
tenant_data "$TA_ID" "$DATA"/train_*.bin
tenant_new "$TB" >/dev/null
ALICE=$(member_new "$TA" "alice-$SFX" editor)
BOB=$(member_new "$TB" "bob-$SFX" owner)
TOKEN=$ADMIN

# submit JQ DESC: the tiny dp2 job on the corpus (in tenant A's data root),
# changed by JQ; a data path, so the platform admin submits it
# (docs/datasets.md); J is its id
submit() {
	local job
	job=$(jq -n --arg data "train_*.bin" '{"name": "wrk", "model": {"preset": "tiny"},
		"data": {"train": $data},
		"parallel": {"data_parallel": 2, "micro_batch": 4, "global_batch": 8},
		"resources": {"nodes": 1, "ranks_per_node": 2, "time_limit_minutes": 30},
		"training": {"steps": 10, "lr": 0.002, "warmup_steps": 2, "seed": 7},
		"checkpoint": {"every_steps": 5, "keep": 3}}' | jq "$1")
	TOKEN=$ADMIN
	check_status "a job is submitted ($2)" 201 POST "/v1/tenants/$TA/jobs" \
		-H 'Content-Type: application/json' -d "$job"
	J=$(printf '%s' "$BODY" | jq -r .id)
	check_status "the admin starts its attempt" 201 POST "/v1/jobs/$J/attempts"
	A=$(printf '%s' "$BODY" | jq -r .id)
	CRED=$(printf '%s' "$BODY" | jq -r .credential)
}

# worker NAME: the worker for attempt $A, its credential only in its environment
worker() {
	TRAINYARD_ATTEMPT=$A TRAINYARD_ATTEMPT_TOKEN=$CRED TRAINYARD_HEARTBEAT_S=2 \
		"$WORKER_BIN" attempt --url "$TRAINYARD_URL" >"$TY_TMP/$1.out" 2>"$TY_TMP/$1.err"
}

# ---- a dp2 job to the end ----------------------------------------------
submit . "dp2, 10 steps, a checkpoint every 5"
start=$SECONDS
check "the worker runs the attempt to the end (exit 0)" worker ok
echo "# the dp2 attempt took $((SECONDS - start)) s"
TOKEN=$ALICE
check_status "alice reads the job" 200 GET "/v1/jobs/$J"
check_json "it succeeded" succeeded .state
check_status "alice reads the metrics" 200 GET "/v1/jobs/$J/metrics?limit=100"
check_eq "every step, once" "$(seq 1 10 | xargs)" "$(printf '%s' "$BODY" | jq -r '.items[].step' | xargs)"
check_json "with the trainer's loss" true '[.items[].data.loss | type == "number"] | all'
check_status "alice reads where its time went" 200 GET "/v1/jobs/$J/goodput"
check_json "ten steps kept, none lost" "10 0" '"\(.steps.kept) \(.steps.lost)"'
check_json "goodput and badput add up to the wall time" true \
	'((.goodput_seconds + ([.badput_seconds[]] | add)) - .wall_seconds) | fabs < 0.001'
check_json "some of it is goodput, from the trainer's step times" true \
	'.goodput_seconds > 0 and .goodput_fraction > 0 and .goodput_fraction < 1'
check_json "checkpoints at steps 5 and 10 took time" true '.badput_seconds.checkpoint > 0'
check_json "no failure: nothing lost, no recovery" "0 0" \
	'"\(.badput_seconds.lost) \(.badput_seconds.recovery)"'
check_json "the trainer's throughput" true '.tokens_per_s > 0'
check_status "alice lists the checkpoints" 200 GET "/v1/jobs/$J/checkpoints"
check_eq "steps 5 and 10, world 2, two shards with their SHA-256" "5 2 2 true,10 2 2 true" \
	"$(printf '%s' "$BODY" | jq -r '[.items | sort_by(.step)[] | "\(.step) \(.world) \(.shards | length) \([.shards[].sha256 | test("^[0-9a-f]{64}$")] | all)"] | join(",")')"
JOB_DIR=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/jobs/$J
M10=$JOB_DIR/checkpoints/step_00000010/manifest.json
check "the manifest of step 10 is on disk" test -s "$M10"
check_eq "sealed: every checkpoint file starts with TYEC" "" \
	"$(find "$JOB_DIR/checkpoints" -type f -print0 | while IFS= read -r -d '' f; do
		[[ $(head -c 4 "$f") == TYEC ]] || echo "$f"; done)"
check "no plaintext manifest" bash -c "! grep -rqs '\"shards\"' '$JOB_DIR/checkpoints'"
LOG=$JOB_DIR/logs/attempt-1.log
check_eq "the sealed log exists, private" 600 "$(stat -c %a "$LOG" 2>/dev/null)"
check_eq "and starts with TYEC" TYEC "$(head -c 4 "$LOG")"
check "with no trainer line in the clear" bash -c "! grep -qs 'step' '$LOG'"
check_status "the job's log" 200 GET "/v1/jobs/$J/logs"
check_match "holds the trainer's step lines" '"type":"step","time_ms":[0-9]+,"step":10,' "$BODY"
check_match "and the worker's launch line" 'trainyard-worker: launch 1: mpirun .* -x TRAINYARD_DATA_KEY .*--encrypt' "$BODY"
check_match "naming the trainer, the spec and the checkpoints, not their paths" \
	" trainyard-train train --spec <the job's spec> --ckpt-dir <the job's checkpoint store> " "$BODY"
# server_paths TEXT: the lines of TEXT naming a path of the server: the
# checkout (its programs, var/, the storage root and the spool below it),
# the storage root wherever it is, or a temporary file of the worker
server_paths() {
	grep -n -F -e "$TY_ROOT/" -e "$TRAINYARD_STORAGE_ROOT" -e "${TRAINYARD_SCHED_SPOOL:-$TY_ROOT/}" \
		-e "${TMPDIR:-/tmp}/" -e "trainyard-spec-" <<<"$1"
}
check_eq "the job's log names no path of the server" "" "$(server_paths "$BODY")"
check "the worker's stderr, the operator's, does: the launch as it ran" \
	test -n "$(server_paths "$(cat "$TY_TMP/ok.err")")"
check_status "follow=1 ends at once: the log is closed and the job final" 200 GET \
	"/v1/jobs/$J/logs?follow=1" --max-time 10
KEY_RE='[0-9a-f]{64}'
check "the data key is in no output of the worker" bash -c \
	"! grep -Eqs '$KEY_RE' '$TY_TMP/ok.out' '$TY_TMP/ok.err'"
check "nor the credential" bash -c "! grep -Fqs '$CRED' '$TY_TMP/ok.out' '$TY_TMP/ok.err'"
check "nor the job's log" bash -c "! grep -Fqs '$CRED' <<<\"\$1\"" _ "$BODY"
check_eq "the private spec file is gone" "" "$(grep -o '/[^ ]*trainyard-spec-[A-Za-z0-9]*' \
	"$TY_TMP/ok.err" | sort -u | while read -r f; do [[ -e $f ]] && echo "$f"; done)"
TOKEN=$CRED
check_status "after the finish the credential stops working" 401 POST \
	"/internal/v1/attempts/$A/heartbeat"
check_json "as attempt_ended" attempt_ended .code
TOKEN=$BOB
check_status "another tenant's owner does not see the metrics" 404 GET "/v1/jobs/$J/metrics"
check_status "nor the checkpoints" 404 GET "/v1/jobs/$J/checkpoints"
check_status "nor the log" 404 GET "/v1/jobs/$J/logs"

# ---- a rank lost: the ladder's dp1 finishes from the checkpoint ---------
# grad_accum 32 makes a step about 0.2 s here: the kill, right after the
# checkpoint of step 5 is registered, lands before the one of step 10. If
# it comes later, launch 2 resumes from that checkpoint instead.
submit '.parallel.global_batch = 256 | .training.steps = 20
	| .fault_tolerance.fallback = [{"data_parallel": 1, "tensor_parallel": 1, "pipeline_parallel": 1, "micro_batch": 4}]' "with a dp1 fallback"
J_FB=$J
start=$SECONDS
(worker fb; echo $? >"$TY_TMP/fb.rc") &
runner=$!
TOKEN=$ALICE
registered() {
	api GET "/v1/jobs/$J_FB/checkpoints"
	[[ $(printf '%s' "$BODY" | jq '[.items[].step] | max // 0') -ge 5 ]]
}
check "the checkpoint of step 5 is registered" wait_until 120 registered
rank=$(pgrep -f "^[^ ]*trainyard-train train .*--encrypt $TA_ID:$J_FB" | tail -n 1)
check_match "a trainer rank is found by its job" '^[0-9]+$' "$rank"
[[ -n $rank ]] && kill -KILL "$rank"
wait "$runner"
check_eq "the worker finishes (exit 0)" 0 "$(cat "$TY_TMP/fb.rc")"
check_status "alice reads the job" 200 GET "/v1/jobs/$J_FB"
check_json "it succeeded" succeeded .state
check_status "its events" 200 GET "/v1/jobs/$J_FB/events?limit=100"
FB=$(printf '%s' "$BODY" | jq -c '[.items[] | select(.reason | startswith("fallback"))][0]')
echo "# the fallback attempt took $((SECONDS - start)) s"
check_match "a fallback event: rank_lost, 2 ranks -> 1, steps lost" \
	'^"fallback: rank_lost" 2 1 [0-9]+$' \
	"$(printf '%s' "$FB" | jq -r '"\(.reason | tojson) \(.detail.from.ranks) \(.detail.to.ranks) \(.detail.steps_lost)"')"
check_eq "its layouts by the layout's names: dp2 -> dp1, micro_batch 4" "2 1 1 0 4 | 1 1 1 0 4" \
	"$(printf '%s' "$FB" | jq -r '[.detail.from, .detail.to] | map("\(.data_parallel) \(.tensor_parallel)
		\(.pipeline_parallel) \(.zero_stage) \(.micro_batch)") | join(" | ")' | xargs)"
check_status "the metrics" 200 GET "/v1/jobs/$J_FB/metrics?limit=100"
check_eq "every step of 20, once" "$(seq 1 20 | xargs)" \
	"$(printf '%s' "$BODY" | jq -r '.items[].step' | xargs)"
first2=$(printf '%s' "$BODY" | jq '[.items[] | select(.data.launch == 2) | .step] | min')
check_match "launch 2 continues after a checkpoint step (first step $first2)" '^(6|11|16)$' "$first2"
check_eq "the steps before it are launch 1's" "$(seq 1 $((first2 - 1)) | xargs)" \
	"$(printf '%s' "$BODY" | jq -r '.items[] | select(.data.launch == 1) | .step' | xargs)"
check_status "the checkpoints" 200 GET "/v1/jobs/$J_FB/checkpoints"
check_json "the last, step 20, has world 1" "20 1" '.items | max_by(.step) | "\(.step) \(.world)"'
check "no trainer rank of this job is left" bash -c \
	"! pgrep -f '^[^ ]*trainyard-train train .*--encrypt $TA_ID:$J_FB'"
check_status "its log" 200 GET "/v1/jobs/$J_FB/logs"
check_match "tells of the fallback" "trainyard-worker: falling back after rank_lost" "$BODY"
check_eq "and names no path of the server" "" "$(server_paths "$BODY")"
TOKEN=$BOB
check_status "another tenant's owner does not see its metrics" 404 GET "/v1/jobs/$J_FB/metrics"
check_status "nor its checkpoints" 404 GET "/v1/jobs/$J_FB/checkpoints"

# ---- the API away for a while: reports wait, the training goes on ------
submit '.parallel.global_batch = 256 | .training.steps = 30' "30 slower steps"
J_OUT=$J
start=$SECONDS
(worker out; echo $? >"$TY_TMP/out.rc") &
runner=$!
TOKEN=$ALICE
has_metrics() {
	api GET "/v1/jobs/$J_OUT/metrics"
	[[ $(printf '%s' "$BODY" | jq '.items | length') -gt 0 ]]
}
check "the first metrics arrive" wait_until 120 has_metrics
check "the API stops" stack api-stop
sleep 4
check "and starts again" stack api-start
wait "$runner"
echo "# the attempt with the API away for 4 s took $((SECONDS - start)) s"
check_eq "the worker finishes (exit 0)" 0 "$(cat "$TY_TMP/out.rc")"
check_match "it said it would try again" "not taken, again in" "$(cat "$TY_TMP/out.err")"
check_status "alice reads the job" 200 GET "/v1/jobs/$J_OUT"
check_json "it succeeded" succeeded .state
check_status "the metrics" 200 GET "/v1/jobs/$J_OUT/metrics?limit=100"
check_eq "every step of 30, once, from one launch" "$(seq 1 30 | xargs) 1" \
	"$(printf '%s' "$BODY" | jq -r '.items[].step' | xargs) $(printf '%s' "$BODY" |
		jq '[.items[].data.launch] | unique | length')"

# ---- cancelled while it runs: the trainer checkpoints and stops ---------
submit '.training.steps = 100000 | .checkpoint.every_steps = 1000' "a long one"
J_CX=$J
(worker cancel; echo $? >"$TY_TMP/cancel.rc") &
runner=$!
TOKEN=$ALICE
running() {
	api GET "/v1/jobs/$J_CX"
	[[ $(printf '%s' "$BODY" | jq -r .state) == running ]]
}
check "the job is running" wait_until 120 running
rank_up() { pgrep -n -f "^[^ ]*trainyard-train train .*--encrypt $TA_ID:$J_CX"; }
wait_until 60 rank_up # the job runs from the first report; its ranks start a little later
wpid=$(pgrep -n -f "^[^ ]*trainyard-worker attempt --url $TRAINYARD_URL")
rank=$(rank_up)
check_match "the worker and a rank are found" '^[0-9]+ [0-9]+$' "$wpid $rank"
check_eq "the worker's environment has lost the credential" 0 \
	"$(tr '\0' '\n' <"/proc/$wpid/environ" | grep -c -F "$CRED")"
check_eq "a rank's environment has lost the data key" 0 \
	"$(tr '\0' '\n' <"/proc/$rank/environ" | grep -c -E '^TRAINYARD_DATA_KEY=[0-9a-f]{64}')"
check_eq "and the key is on no command line" "" \
	"$(for p in $(pgrep -f "trainyard-train train .*$J_CX"); do tr '\0' ' ' <"/proc/$p/cmdline"; done |
		grep -E -o '[0-9a-f]{64}')"
check_status "alice cancels it" 200 POST "/v1/jobs/$J_CX/cancel"
check_json "it is cancelling" cancelling .state
wait "$runner"
check_eq "the worker stops (16) at its next report" 16 "$(cat "$TY_TMP/cancel.rc")"
check_match "saying why" "the job is being cancelled: stopping the training" \
	"$(cat "$TY_TMP/cancel.err")"
check_status "alice reads the job" 200 GET "/v1/jobs/$J_CX"
check_json "it is cancelled" cancelled .state
check_status "its checkpoints" 200 GET "/v1/jobs/$J_CX/checkpoints"
check_json "hold the one the stop wrote" 1 '.items | length'
check_status "its log" 200 GET "/v1/jobs/$J_CX/logs"
check_eq "names no path of the server" "" "$(server_paths "$BODY")"

# ---- no credential, no run ---------------------------------------------
check_fails "without TRAINYARD_ATTEMPT_TOKEN the worker refuses (2)" 2 \
	env -u TRAINYARD_ATTEMPT_TOKEN TRAINYARD_ATTEMPT="$A" "$WORKER_BIN" attempt --url "$TRAINYARD_URL"
summary
