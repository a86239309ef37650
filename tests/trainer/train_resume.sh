#!/usr/bin/env bash
# train_resume.sh - checkpoints: resume is exact (the losses after a resume
# are bit-identical to an uninterrupted run), a corrupt shard is refused and
# the previous checkpoint used, SIGTERM writes a final checkpoint and exits
# 16, old checkpoints are pruned, and a 2-rank ZeRO-1 checkpoint resumes on
# one rank.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

make_corpus
spec "$TY_TMP/spec.json"
S=$TY_TMP/spec.json

check "an uninterrupted run of 20 steps" train1 --spec "$S" --metrics "$TY_TMP/full.jsonl"
check "the same run stopped after 10 steps" train1 --spec "$S" --ckpt-dir "$TY_TMP/ck" \
	--stop-after 10 --metrics "$TY_TMP/part.jsonl"
check "a manifest exists for step 10" test -s "$TY_TMP/ck/step_00000010/manifest.json"
check "and resumed to the end" train1 --spec "$S" --ckpt-dir "$TY_TMP/ck" \
	--metrics "$TY_TMP/rest.jsonl"
check_eq "the resumed run starts at step 11" 11 \
	"$(losses "$TY_TMP/rest.jsonl" | head -n 1 | cut -d' ' -f1)"
check_eq "steps 11-20 are bit-identical to the uninterrupted run" \
	"$(losses "$TY_TMP/full.jsonl" | tail -n 10)" "$(losses "$TY_TMP/rest.jsonl")"
kept=$(find "$TY_TMP/ck" -maxdepth 1 -name 'step_*' | wc -l)
check_eq "keep 3: only the last 3 checkpoints remain" 3 "$kept"

# Flip one byte in the newest shard: it is refused, the one before is used.
shard=$TY_TMP/ck/step_00000020/shard_00000_of_00001.bin
printf '\x55' | dd of="$shard" bs=1 seek=2000 conv=notrunc status=none
check "a run over a corrupt newest checkpoint still starts" train1 --spec "$S" \
	--ckpt-dir "$TY_TMP/ck" --metrics "$TY_TMP/after.jsonl"
check_eq "the corrupt checkpoint is refused" 20 \
	"$(jq -r 'select(.event == "checkpoint_refused") | .step' "$TY_TMP/after.jsonl")"
check_eq "and the previous one (step 15) is resumed" 15 \
	"$(jq -r 'select(.event == "resumed") | .step' "$TY_TMP/after.jsonl")"
check_eq "the steps after it repeat the uninterrupted run" \
	"$(losses "$TY_TMP/full.jsonl" | sed -n '16,20p')" \
	"$(losses "$TY_TMP/after.jsonl" | head -n 5)"

# Every checkpoint corrupt: refused with the checkpoint-corrupt status.
for f in "$TY_TMP"/ck/step_*/shard_*.bin; do
	printf '\x55' | dd of="$f" bs=1 seek=3000 conv=notrunc status=none
done
check_fails "no checkpoint verifies: exit status 15" 15 train1 --spec "$S" \
	--set training.steps=30 --ckpt-dir "$TY_TMP/ck"

# SIGTERM: a final checkpoint at the step in progress, then status 16.
(OMP_NUM_THREADS=1 exec "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --set training.steps=100000 \
	--ckpt-dir "$TY_TMP/sig" --metrics "$TY_TMP/sig.jsonl") &
pid=$!
wait_until 30 grep -q '"step":3,' "$TY_TMP/sig.jsonl"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
check_eq "SIGTERM ends the run with status 16" 16 "$rc"
stopped=$(jq -r 'select(.event == "stopped") | .step' "$TY_TMP/sig.jsonl")
check_match "a stopped event names the last step" '^[0-9]+$' "$stopped"
check "its checkpoint is complete" test -s "$TY_TMP/sig/step_$(printf '%08d' "$stopped")/manifest.json"
check_fails "checkpoints of another model are an invalid configuration (10)" 10 \
	train1 --spec "$S" --set model.d_model=128 --ckpt-dir "$TY_TMP/sig"

# Two ranks with ZeRO 1 write two shards; one rank resumes from them.
two=(--set parallel.data_parallel=2 --set resources.ranks_per_node=2 --set parallel.zero_stage=1)
check "2 ranks, ZeRO 1, stop after 10" trainN 2 --spec "$S" "${two[@]}" \
	--ckpt-dir "$TY_TMP/ck2" --stop-after 10 --metrics "$TY_TMP/two.jsonl"
check "two shards in the checkpoint" test -s "$TY_TMP/ck2/step_00000010/shard_00001_of_00002.bin"
check "2 ranks resume exactly" trainN 2 --spec "$S" "${two[@]}" --ckpt-dir "$TY_TMP/ck2" \
	--metrics "$TY_TMP/two-rest.jsonl"
check "2-rank ZeRO-1 resume stays within 2e-5 of the 1-rank run" \
	within "$(max_rel_diff "$TY_TMP/full.jsonl" "$TY_TMP/two-rest.jsonl")" 2e-5
check "an uninterrupted 2-rank ZeRO-1 run" trainN 2 --spec "$S" "${two[@]}" \
	--metrics "$TY_TMP/two-full.jsonl"
check_eq "2-rank steps 11-20 after the resume are bit-identical to it" \
	"$(losses "$TY_TMP/two-full.jsonl" | tail -n 10)" "$(losses "$TY_TMP/two-rest.jsonl")"
three=(--set parallel.data_parallel=2 --set resources.ranks_per_node=2 --set parallel.zero_stage=3)
check "2 ranks, ZeRO 3, stop after 10" trainN 2 --spec "$S" "${three[@]}" \
	--ckpt-dir "$TY_TMP/ck3" --stop-after 10 --metrics /dev/null
check "and resume" trainN 2 --spec "$S" "${three[@]}" --ckpt-dir "$TY_TMP/ck3" \
	--metrics "$TY_TMP/z3-rest.jsonl"
check "an uninterrupted 2-rank ZeRO-3 run" trainN 2 --spec "$S" "${three[@]}" \
	--metrics "$TY_TMP/z3-full.jsonl"
check_eq "ZeRO-3 resume is bit-identical too" \
	"$(losses "$TY_TMP/z3-full.jsonl" | tail -n 10)" "$(losses "$TY_TMP/z3-rest.jsonl")"
rm -rf "$TY_TMP/ck2/step_00000015" "$TY_TMP/ck2/step_00000020"
check "1 rank resumes the 2-rank checkpoint of step 10" train1 --spec "$S" \
	--ckpt-dir "$TY_TMP/ck2" --metrics "$TY_TMP/one-rest.jsonl"
check_eq "from step 11" 11 "$(losses "$TY_TMP/one-rest.jsonl" | head -n 1 | cut -d' ' -f1)"
check "and its loss curve continues within 2e-5" \
	within "$(max_rel_diff "$TY_TMP/full.jsonl" "$TY_TMP/one-rest.jsonl")" 2e-5
summary
