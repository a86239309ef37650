#!/usr/bin/env bash
# train_basic.sh - trainyard-train on one rank: tokenizing, a run whose
# loss falls, the metrics stream, llm.c import/export round trip, and the
# exit statuses of bad configurations and bad data.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

check "tokenize a text corpus into shards" make_corpus
n=$(find "$DATA" -name 'train_*.bin' | wc -l)
check_match "the corpus spans several shards" '^[3-9]$' "$n"
check_eq "no temporary files are left behind" 0 "$(find "$DATA" -name '*.tmp*' | wc -l)"
bytes=$(stat -c %s "$DATA/train_000000.bin")
check_eq "a full shard is the 1024-byte header plus 2 bytes a token" $((1024 + 2 * 40000)) "$bytes"

spec "$TY_TMP/spec.json"
check "train 20 steps of the tiny model" train1 --spec "$TY_TMP/spec.json" \
	--metrics "$TY_TMP/m.jsonl" --peak-flops 1e11
steps=$(jq -s '[.[] | select(.type == "step")] | length' "$TY_TMP/m.jsonl")
check_eq "one metrics line per step" 20 "$steps"
first=$(losses "$TY_TMP/m.jsonl" | head -n 1 | cut -d' ' -f2)
last=$(losses "$TY_TMP/m.jsonl" | tail -n 1 | cut -d' ' -f2)
check "the first loss is near ln(256) = 5.55" within "$(awk -v a="$first" 'BEGIN { d = a - 5.545; print (d < 0 ? -d : d) }')" 0.5
check "the loss falls by more than a third in 20 steps" \
	awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a * 0.67) }'
fields=$(jq -r 'select(.type == "step" and .step == 5) | [has("lr"), has("grad_norm"),
	has("tokens_per_s"), has("flops_per_s"), has("mfu"), has("comm_s"), has("data_wait_s"),
	has("compute_s"), has("loss_scale"), has("skipped_steps")] | all' "$TY_TMP/m.jsonl")
check_eq "step lines carry lr, norm, throughput, MFU, time split, scale, skips" true "$fields"
lr2=$(jq -r 'select(.type == "step" and .step == 2) | .lr' "$TY_TMP/m.jsonl")
check "warmup reaches the peak learning rate (0.002) at its last step" \
	within "$(awk -v a="$lr2" 'BEGIN { d = a - 0.002; print (d < 0 ? -d : d) }')" 1e-9
check_eq "the run ends with an end event of status ok" ok \
	"$(jq -r 'select(.event == "end") | .status' "$TY_TMP/m.jsonl")"

# The optimizer's settings in the spec reach the optimizer: from the same
# first loss (no update yet), each of AdamW's beta2 and epsilon and the
# clip rule's epsilon changes the losses after it; the defaults are those
# of a spec that does not name them.
opt_run() { # opt_run NAME JQ_FILTER: 3 steps with the spec so changed; prints its losses
	jq "$2" "$TY_TMP/spec.json" >"$TY_TMP/opt-$1.json" &&
		train1 --spec "$TY_TMP/opt-$1.json" --stop-after 3 --metrics "$TY_TMP/opt-$1.jsonl" &&
		losses "$TY_TMP/opt-$1.jsonl" | cut -d' ' -f2 | paste -sd' '
}
base=$(opt_run base .)
check_match "3 steps with the default optimizer" '^[0-9.]+ [0-9.]+ [0-9.]+$' "$base"
check_eq "the defaults named in the spec train the same" "$base" \
	"$(opt_run named '.training += {adam_beta1: 0.9, adam_beta2: 0.95, adam_eps: 1e-8,
		grad_clip_eps: 1e-6}')"
for v in "beta2 .training.adam_beta2=0.999" "eps .training.adam_eps=0.01" \
	"clip .training.grad_clip_eps=1"; do
	got=$(opt_run "${v%% *}" "${v#* }")
	check_eq "${v#* }: the same first loss" "${base%% *}" "${got%% *}"
	check "${v#* }: other losses after it ($got)" test "${got#* }" != "${base#* }"
done

# llm.c format: export at init, import and export again: identical bytes.
check "export the initial weights (no step)" train1 --spec "$TY_TMP/spec.json" --stop-after 0 \
	--export "$TY_TMP/a.bin"
check "import them, take no step, export again" train1 --spec "$TY_TMP/spec.json" \
	--stop-after 0 --init-from "$TY_TMP/a.bin" --export "$TY_TMP/b.bin"
check "the llm.c model file round-trips bit for bit" cmp "$TY_TMP/a.bin" "$TY_TMP/b.bin"
magic=$(od -An -t d4 -N 8 "$TY_TMP/a.bin" | awk '{print $1, $2}')
check_eq "the file starts with magic 20240326, version 3" "20240326 3" "$magic"
check "imported weights train on" train1 --spec "$TY_TMP/spec.json" --stop-after 2 \
	--init-from "$TY_TMP/a.bin" --metrics "$TY_TMP/imp.jsonl"
check_eq "and start from the same loss as a fresh run" "$first" \
	"$(losses "$TY_TMP/imp.jsonl" | head -n 1 | cut -d' ' -f2)"

# An llm.c file made for longer sequences (GPT-2's have 1024 positions)
# trains at the spec's seq_len: wpe keeps its first rows, the rest is equal.
check "export weights made for 128 positions" train1 --spec "$TY_TMP/spec.json" \
	--set model.seq_len=128 --stop-after 0 --export "$TY_TMP/long.bin"
check "import them for the spec's 64 positions" train1 --spec "$TY_TMP/spec.json" \
	--stop-after 0 --init-from "$TY_TMP/long.bin" --export "$TY_TMP/short.bin"
check_eq "the export says 64 positions" 64 "$(od -An -t d4 -j 8 -N 4 "$TY_TMP/short.bin" | tr -d ' ')"
# tiny: C 64, Vp 256; header 1024 bytes, wte 256 rows and wpe rows of 256 bytes
check "wte and wpe's first 64 rows are the file's" \
	cmp -n $((256 * 256 + 64 * 256)) -i 1024:1024 "$TY_TMP/long.bin" "$TY_TMP/short.bin"
check "every layer after them is the file's" \
	cmp -i $((1024 + 256 * 256 + 128 * 256)):$((1024 + 256 * 256 + 64 * 256)) \
	"$TY_TMP/long.bin" "$TY_TMP/short.bin"
check "and they train on" train1 --spec "$TY_TMP/spec.json" --stop-after 2 \
	--init-from "$TY_TMP/long.bin" --metrics "$TY_TMP/long.jsonl"
check_eq "two steps" 2 "$(losses "$TY_TMP/long.jsonl" | wc -l)"
check_fails "a file for fewer positions than the spec is refused (10)" 10 \
	train1 --spec "$TY_TMP/spec.json" --set model.seq_len=256 --init-from "$TY_TMP/long.bin"

# data.shuffle false reads sequences in stream order: two corpora that
# share their beginning give the same first loss; shuffled, they do not.
head -c 3000 "$DATA/corpus.txt" >"$DATA/other.txt"
awk 'BEGIN { for (i = 1; i <= 2000; i++) printf "an entirely different line number %d\n", i }' \
	>>"$DATA/other.txt"
check "tokenize a corpus that shares only its beginning" \
	"$TRAIN_BIN" tokenize --out "$DATA/other" --shard-tokens 40000 "$DATA/other.txt"
for order in true false; do
	for set in train other; do
		check "one step on $set, shuffle $order" train1 --spec "$TY_TMP/spec.json" \
			--set "data.train=${set}_*.bin" --set "data.shuffle=$order" --stop-after 1 \
			--metrics "$TY_TMP/order-$set-$order.jsonl"
	done
done
first_loss() { losses "$TY_TMP/order-$1-$2.jsonl" | head -n 1 | cut -d' ' -f2; }
check_match "each run recorded its loss" '^([0-9.]+ ){3}[0-9.]+$' \
	"$(first_loss train false) $(first_loss other false) $(first_loss train true) $(first_loss other true)"
check_eq "in stream order the first batch is the same" "$(first_loss train false)" \
	"$(first_loss other false)"
check "shuffled, it is not" test "$(first_loss train true)" != "$(first_loss other true)"

# Failure classes come out as distinct exit statuses.
check_fails "data_parallel 2 on one process is an invalid configuration (10)" 10 \
	train1 --spec "$TY_TMP/spec.json" --set parallel.data_parallel=2 \
	--set resources.ranks_per_node=2 --set parallel.global_batch=8
check_fails "tensor parallel is refused as a configuration this trainer cannot run (10)" 10 \
	train1 --spec "$TY_TMP/spec.json" --set parallel.tensor_parallel=2 \
	--set resources.ranks_per_node=2
check_fails "a spec the API would refuse is refused (10)" 10 \
	train1 --spec "$TY_TMP/spec.json" --set parallel.global_batch=7
check_fails "shards that match nothing are a data error (13)" 13 \
	train1 --spec "$TY_TMP/spec.json" --set "data.train=none_*.bin"
printf 'not a shard' >"$DATA/bad_000.bin"
check_fails "a shard with a bad header is a data error (13)" 13 \
	train1 --spec "$TY_TMP/spec.json" --set "data.train=bad_*.bin"
if ((SANITIZED)); then
	# ASan reserves terabytes of address space at start: a limit stops it first
	echo "# skipped under a sanitizer build: out of memory from an address-space limit"
else
	check_fails "too little address space is out of memory (11)" 11 \
		bash -c "ulimit -v 200000; OMP_NUM_THREADS=1 '$TRAIN_BIN' train --data-root '$DATA' \
		--spec '$TY_TMP/spec.json' --set model.preset=gpt2-124m --set model.vocab_size=256 \
		--set model.seq_len=64"
fi
check_fails "an unknown option is a usage error (2)" 2 "$TRAIN_BIN" train --bogus
summary
