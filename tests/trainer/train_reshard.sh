#!/usr/bin/env bash
# train_reshard.sh - a checkpoint moves between parallel layouts: 10 steps
# in dp2 x tp2 with ZeRO 1, then the run resumes as 1 rank, as pp2 and as
# dp2 with ZeRO 3, and each continuation's steps 11-20 match the
# uninterrupted 1-rank run; offline `trainyard-train reshard` writes a
# checkpoint that a pp2 run resumes bit-identically to the online reshard.
# `--layout` (the worker runtime's way to run a fallback) trains the same
# as a spec that says that layout. Invalid grids and layouts are refused
# with the invalid-configuration status (10).
#
# Tolerance: relative 1e-6 per step, for the reasons in
# train_model_parallel.sh (the runs differ in how float sums are cut;
# observed: at most 1e-7). A
# lost data position repeats or skips batches, and a mis-assembled tensor
# or optimizer moment restarts the optimizer: either moves the loss by
# 1e-2 or more at once.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

TOL=1e-6
make_corpus
spec "$TY_TMP/spec.json"
S=$TY_TMP/spec.json
base=(--spec "$S" --set parallel.micro_batch=2)

grid() {
	echo --set parallel.data_parallel="$1" --set parallel.tensor_parallel="$2" \
		--set parallel.pipeline_parallel="$3" --set resources.ranks_per_node=$(($1 * $2 * $3))
}

# tail_diff A B: max relative loss difference over steps 11-20 (both files)
tail_diff() {
	jq -c 'select(.type != "step" or .step > 10)' "$1" >"$TY_TMP/tail-a.jsonl"
	jq -c 'select(.type != "step" or .step > 10)' "$2" >"$TY_TMP/tail-b.jsonl"
	max_rel_diff "$TY_TMP/tail-a.jsonl" "$TY_TMP/tail-b.jsonl"
}

check "uninterrupted: 1 rank, 20 steps" train1 "${base[@]}" --metrics "$TY_TMP/one.jsonl"
# shellcheck disable=SC2046
check "dp2 x tp2, ZeRO 1: 10 steps and a checkpoint" trainN 4 "${base[@]}" $(grid 2 2 1) \
	--set parallel.zero_stage=1 --ckpt-dir "$TY_TMP/ck" --stop-after 10 \
	--metrics "$TY_TMP/first.jsonl"
check "the checkpoint of step 10 has 4 shards" \
	test "$(jq '.shards | length' "$TY_TMP/ck/step_00000010/manifest.json")" = 4
d=$(max_rel_diff "$TY_TMP/one.jsonl" "$TY_TMP/first.jsonl")
check "steps 1-10 match the 1-rank run (max rel diff $d <= $TOL)" within "$d" "$TOL"

# resume NAME N GRID-ARGS...: a copy of the checkpoint resumed under another layout
resume() {
	local name=$1 n=$2
	shift 2
	rm -rf "$TY_TMP/ck-$name"
	cp -a "$TY_TMP/ck" "$TY_TMP/ck-$name"
	if ((n == 1)); then
		check "resume as $name" train1 "${base[@]}" "$@" --ckpt-dir "$TY_TMP/ck-$name" \
			--metrics "$TY_TMP/$name.jsonl"
	else
		check "resume as $name" trainN "$n" "${base[@]}" "$@" --ckpt-dir "$TY_TMP/ck-$name" \
			--metrics "$TY_TMP/$name.jsonl"
	fi
	check_eq "$name: resumed at step 10" 10 \
		"$(jq -r 'select(.event == "resumed") | .step' "$TY_TMP/$name.jsonl")"
	check_eq "$name: steps 11-20 ran" "11 20" \
		"$(losses "$TY_TMP/$name.jsonl" | sed -n '1p;$p' | cut -d' ' -f1 | xargs)"
	local d
	d=$(tail_diff "$TY_TMP/one.jsonl" "$TY_TMP/$name.jsonl")
	check "$name: steps 11-20 match the uninterrupted run (max rel diff $d <= $TOL)" \
		within "$d" "$TOL"
}

# shellcheck disable=SC2046
resume dp1 1 $(grid 1 1 1)
check_eq "dp1: it says the layout it resumed from, by the layout's names" \
	'{"data_parallel":2,"tensor_parallel":2,"pipeline_parallel":1,"zero_stage":1}' \
	"$(jq -c 'select(.event == "resumed") | .from_grid' "$TY_TMP/dp1.jsonl")"
# shellcheck disable=SC2046
resume pp2 2 $(grid 1 1 2)
# shellcheck disable=SC2046
resume dp2-z3 2 $(grid 2 1 1) --set parallel.zero_stage=3

# The worker runtime's way: the spec as it is (its layout one rank) and the
# layout to train in as --layout. The same run as dp2-z3 above, so the same
# losses, bit for bit.
L_DP2_Z3=data_parallel=2,tensor_parallel=1,pipeline_parallel=1,zero_stage=3,micro_batch=2
rm -rf "$TY_TMP/ck-layout"
cp -a "$TY_TMP/ck" "$TY_TMP/ck-layout"
check "resume as dp2-z3 by --layout, the spec untouched" trainN 2 --spec "$S" \
	--layout "$L_DP2_Z3" --ckpt-dir "$TY_TMP/ck-layout" --metrics "$TY_TMP/layout.jsonl"
check_eq "it trains exactly as the run whose spec says dp2-z3" \
	"$(losses "$TY_TMP/dp2-z3.jsonl")" "$(losses "$TY_TMP/layout.jsonl")"

# offline: reshard to pp2, then resume from it
# shellcheck disable=SC2046
check "reshard offline to pp2" "$TRAIN_BIN" reshard "${base[@]}" $(grid 1 1 2) \
	--from "$TY_TMP/ck" --to "$TY_TMP/ck-off"
check "the resharded checkpoint has 2 shards" \
	test "$(jq '.shards | length' "$TY_TMP/ck-off/step_00000010/manifest.json")" = 2
# shellcheck disable=SC2046
check "resume pp2 from the offline reshard" trainN 2 "${base[@]}" $(grid 1 1 2) \
	--ckpt-dir "$TY_TMP/ck-off" --metrics "$TY_TMP/off.jsonl"
check_eq "it continues bit-identically to the online reshard" \
	"$(losses "$TY_TMP/pp2.jsonl")" "$(losses "$TY_TMP/off.jsonl")"
check_eq "and says the layout the reshard wrote" \
	'{"data_parallel":1,"tensor_parallel":1,"pipeline_parallel":2,"zero_stage":0}' \
	"$(jq -c 'select(.event == "resumed") | .from_grid' "$TY_TMP/off.jsonl")"
check_fails "reshard onto its own directory is refused (usage, 2)" 2 "$TRAIN_BIN" reshard \
	"${base[@]}" --from "$TY_TMP/ck" --to "$TY_TMP/ck"
check_fails "reshard of another model is refused (10)" 10 "$TRAIN_BIN" reshard \
	"${base[@]}" --set model.d_model=32 --from "$TY_TMP/ck" --to "$TY_TMP/ck-other"

# invalid grids: status 10 and a message naming the problem
# refused LABEL REGEX N ARGS...: the run exits 10 and stderr matches REGEX
refused() {
	local label=$1 re=$2 n=$3
	shift 3
	local rc=0
	if ((n == 1)); then
		train1 "${base[@]}" "$@" >/dev/null 2>"$TY_TMP/err" || rc=$?
	else
		trainN "$n" "${base[@]}" "$@" >/dev/null 2>"$TY_TMP/err" || rc=$?
	fi
	check_eq "$label: exit status 10" 10 "$rc"
	check_match "$label: the message says why" "$re" "$(cat "$TY_TMP/err")"
}
# shellcheck disable=SC2046
refused "tp 3 with 4 heads" "not divisible by tensor_parallel" 1 $(grid 1 3 1)
# shellcheck disable=SC2046
refused "pp 3 of 2 layers" "not divisible by pipeline_parallel" 1 $(grid 1 1 3)
# shellcheck disable=SC2046
refused "a 2 x 2 grid on 2 ranks" "is 2 x 2 x 1 = 4 but the world has 2 ranks" 2 $(grid 2 2 1)
refused "--layout with tp 3 of 4 heads" "not divisible by tensor_parallel" 1 \
	--layout data_parallel=1,tensor_parallel=3,pipeline_parallel=1,zero_stage=0,micro_batch=2
refused "--layout whose batch is no whole accumulation" "is not micro_batch \\(3\\)" 1 \
	--layout data_parallel=1,tensor_parallel=1,pipeline_parallel=1,zero_stage=0,micro_batch=3
refused "--layout missing a field" "micro_batch is missing" 1 \
	--layout data_parallel=1,tensor_parallel=1,pipeline_parallel=1,zero_stage=0
refused "--layout on a world of another size" "is 1 x 1 x 1 = 1 but the world has 2 ranks" 2 \
	--layout data_parallel=1,tensor_parallel=1,pipeline_parallel=1,zero_stage=0,micro_batch=2
summary
