#!/usr/bin/env bash
# train_scaling.sh - the data-parallel layer on one GPU (tests/gpu/run runs
# it on a machine with one): GPT-2 124M in bf16, 8 sequences of 1024
# tokens a step, on one rank against two ranks sharing the GPU (their
# gradients, and under ZeRO 3 their parameters, through host memory), with
# ZeRO 0 and 3. Prints the rows of bench/README.md "Trainer scaling on
# GPUs": tokens/s (the median of steps 3 to 6), their ratio to one rank
# (the overhead of the layer, not a speed-up) and the device memory each
# rank holds; checks that the curves agree and that ZeRO 3 holds less.
# On a machine with several GPUs, GPUS=N runs N ranks of a GPU each (over
# NCCL) as well, with the scaling efficiency against one GPU.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/../trainer/lib.sh
. "$(dirname "$0")/../trainer/lib.sh"

check "make the corpus" make_corpus
jq -n '{"name": "scaling", "model": {"preset": "gpt2-124m"}, "data": {"train": "train_*.bin"},
	"parallel": {"data_parallel": 1, "micro_batch": 4, "global_batch": 8},
	"resources": {"nodes": 1, "ranks_per_node": 1},
	"training": {"steps": 6, "lr": 0.0006, "warmup_steps": 2, "seed": 7,
		"precision": "bf16"}}' >"$TY_TMP/spec.json"
# run NAME N ARGS...: N ranks on the GPU(s), metrics in $TY_TMP/NAME.jsonl
run() {
	local name=$1 n=$2
	shift 2
	trainN "$n" --spec "$TY_TMP/spec.json" --device cuda --ckpt-dir "$TY_TMP/$name.ck" \
		--set parallel.data_parallel="$n" --set resources.ranks_per_node="$n" \
		--metrics "$TY_TMP/$name.jsonl" "$@"
}
tps() { # the median tokens/s of steps 3 to 6
	jq -r 'select(.type == "step" and .step >= 3) | .tokens_per_s' "$TY_TMP/$1.jsonl" |
		sort -g | awk '{ v[NR] = $1 } END { print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 }'
}
bytes() { jq -r 'select(.event == "device_model") | .bytes' "$TY_TMP/$1.jsonl" | head -n 1; }
row() { # row NAME LABEL
	awk -v l="$2" -v t="$(tps "$1")" -v o="$(tps one)" -v b="$(bytes "$1")" \
		'BEGIN { printf "# | %s | %.0f | %.2f | %.2f GiB |\n", l, t, t / o, b / 2^30 }'
}

check "one rank, 6 steps" run one 1
check "two ranks sharing the GPU, ZeRO 0" run dp2z0 2
check "two ranks sharing the GPU, ZeRO 3" run dp2z3 2 --set parallel.zero_stage=3
for r in dp2z0 dp2z3; do
	d=$(max_rel_diff "$TY_TMP/one.jsonl" "$TY_TMP/$r.jsonl")
	check "$r's losses within 1e-2 of one rank's (worst $d)" within "$d" 1e-2
done
check "ZeRO 3 holds less on the device than ZeRO 0 ($(bytes dp2z3) < $(bytes dp2z0))" \
	test "$(bytes dp2z3)" -lt "$(bytes dp2z0)"
echo "# | layout | tokens/s | against one rank | device memory a rank |"
row one "1 rank"
row dp2z0 "dp2 sharing the GPU, ZeRO 0"
row dp2z3 "dp2 sharing the GPU, ZeRO 3"
if [[ ${GPUS:-1} -gt 1 ]]; then
	check "$GPUS ranks of a GPU each, ZeRO 0" run dpn "$GPUS" \
		--set parallel.global_batch=$((4 * GPUS))
	check_eq "they talk over NCCL" nccl \
		"$(jq -r 'select(.event == "device") | .comm' "$TY_TMP/dpn.jsonl" | head -n 1)"
	awk -v n="$GPUS" -v t="$(tps dpn)" -v o="$(tps one)" 'BEGIN {
		printf "# | dp%d over NCCL | %.0f | scaling efficiency %.2f |\n", n, t, t / (n * o) }'
fi
summary
