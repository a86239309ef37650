#!/usr/bin/env bash
# train_fallback.sh - the worker runtime's fallback ladder on a GPU
# (tests/gpu/run runs it on a machine with one): a job of two
# data-parallel ranks with ZeRO 3 that asks for GPUs (both share the one
# GPU here; their gradients and gathered parameters pass through host
# memory), a rank killed after step 6, and the worker's next layout, one
# rank on the GPU, resuming from the sharded checkpoint of step 5 and
# finishing as an uninterrupted one-rank GPU run does (within 1e-4).
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/../trainer/lib.sh
. "$(dirname "$0")/../trainer/lib.sh"

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
check "make the corpus" make_corpus
spec "$TY_TMP/base.json"
S=$TY_TMP/kill.json
jq '.parallel = {data_parallel: 2, zero_stage: 3, micro_batch: 4, global_batch: 64}
	| .resources = {nodes: 1, ranks_per_node: 2, gpus_per_node: 2} | .training.steps = 12' \
	"$TY_TMP/base.json" >"$S"

(job kill "$S" >/dev/null 2>&1; echo $? >"$TY_TMP/kill.rc") &
runner=$!
rank=$(kill_rank_at 6 "$TY_TMP/kill.log" "$S")
check_match "a trainer rank is found by its spec path, and killed" '^[0-9]+$' "$rank"
wait "$runner"
check_eq "the job finishes (exit 0)" 0 "$(cat "$TY_TMP/kill.rc")"
check_match "both launches ran on the GPU" '^cuda cuda$' \
	"$(events kill 'select(.event == "device") | .kind' | xargs)"
check_eq "launch 1 ended with a rank lost" "rank_lost" \
	"$(events kill 'select(.kind == "launch_end" and .launch == 1) | .class')"
check_match "a fallback event: rank_lost, 2 ranks -> 1" '^rank_lost 2 1$' \
	"$(events kill 'select(.kind == "fallback") | "\(.reason) \(.from.ranks) \(.to.ranks)"')"
check_eq "launch 2 resumed at step 5" 5 \
	"$(events kill 'select(.kind == "trainer" and .event == "resumed") | .step')"
launch_losses kill 2 "$TY_TMP/kill-2.jsonl"
check_eq "its steps are 6 to 12" "$(seq 6 12 | xargs)" \
	"$(losses "$TY_TMP/kill-2.jsonl" | cut -d' ' -f1 | xargs)"
check "uninterrupted: 1 rank on the GPU, 12 steps" train1 --spec "$S" --device cuda \
	--set parallel.data_parallel=1 --set resources.ranks_per_node=1 \
	--set resources.gpus_per_node=1 --metrics "$TY_TMP/one.jsonl"
d=$(max_rel_diff "$TY_TMP/one.jsonl" "$TY_TMP/kill-2.jsonl")
check "steps 6-12 match it (worst $d)" within "$d" 1e-4
summary
