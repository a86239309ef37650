#!/usr/bin/env bash
# train_parallel.sh - data parallel equivalence: for the same global batch
# and seed, 2 ranks under mpirun with ZeRO 0, 1, 2 and 3 each reproduce the
# 1-rank loss curve over 20 steps, and gradient accumulation reproduces a
# bigger micro-batch.
#
# Tolerance: relative 2e-5 on every step's loss. The runs see the same
# sequences and the same initial weights; only the order in which float
# gradients are summed differs (two partial sums added by the reduction
# instead of one running sum), which perturbs the update by about one
# float ulp (1e-7 relative) per step; AdamW's division by sqrt(v) can
# amplify that a little over 20 steps. A wrong split of the data, a
# missing 1/world or a lost shard shows up as 1e-2 or more.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

TOL=2e-5
make_corpus
spec "$TY_TMP/spec.json"
two=(--set parallel.data_parallel=2 --set resources.ranks_per_node=2)

check "1 rank, micro-batch 4, accumulation 2" train1 --spec "$TY_TMP/spec.json" \
	--metrics "$TY_TMP/one.jsonl"
for z in 0 1 2 3; do
	check "2 ranks, ZeRO $z, micro-batch 4" trainN 2 --spec "$TY_TMP/spec.json" "${two[@]}" \
		--set parallel.zero_stage=$z --metrics "$TY_TMP/z$z.jsonl"
	d=$(max_rel_diff "$TY_TMP/one.jsonl" "$TY_TMP/z$z.jsonl")
	check "ZeRO $z on 2 ranks matches 1 rank over 20 steps (max rel diff $d <= $TOL)" \
		within "$d" "$TOL"
	n=$(losses "$TY_TMP/z$z.jsonl" | wc -l)
	check_eq "ZeRO $z: 20 steps reported" 20 "$n"
done
norm1=$(jq -r 'select(.type == "step" and .step == 1) | .grad_norm' "$TY_TMP/one.jsonl")
norm3=$(jq -r 'select(.type == "step" and .step == 1) | .grad_norm' "$TY_TMP/z3.jsonl")
check "the global gradient norm of ZeRO 3 shards equals the 1-rank norm" \
	within "$(awk -v a="$norm1" -v b="$norm3" 'BEGIN { d = (a - b) / a; print (d < 0 ? -d : d) }')" "$TOL"

check "1 rank, micro-batch 8, no accumulation" train1 --spec "$TY_TMP/spec.json" \
	--set parallel.micro_batch=8 --metrics "$TY_TMP/big.jsonl"
check "1 rank, micro-batch 2, accumulation 4" train1 --spec "$TY_TMP/spec.json" \
	--set parallel.micro_batch=2 --metrics "$TY_TMP/acc.jsonl"
d=$(max_rel_diff "$TY_TMP/big.jsonl" "$TY_TMP/acc.jsonl")
check "gradient accumulation matches the bigger micro-batch (max rel diff $d <= $TOL)" \
	within "$d" "$TOL"
d=$(max_rel_diff "$TY_TMP/one.jsonl" "$TY_TMP/big.jsonl")
check "and both match accumulation 2 (max rel diff $d <= $TOL)" within "$d" "$TOL"
summary
