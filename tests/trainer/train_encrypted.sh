#!/usr/bin/env bash
# train_encrypted.sh - checkpoints sealed for a tenant and job (--encrypt):
# nothing of them is readable on disk, a resume with the job's key is
# bit-identical to an uninterrupted run, also across a change of layout,
# and the wrong key or another job's identity finds no checkpoint it can
# trust (status 15). With a key ring of two generations (after a data-key
# rotation) a run resumes from a checkpoint of the first and seals its own
# under the second, which the first generation alone does not open.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

make_corpus
spec "$TY_TMP/spec.json"
S=$TY_TMP/spec.json
TENANT=11111111-2222-4333-8444-555555555555
JOB=aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee
OTHER=aaaaaaaa-bbbb-4ccc-8ddd-ffffffffffff
KEY=$(openssl rand -hex 32)
WRONG=$(openssl rand -hex 32)

check "an uninterrupted plain run of 20 steps" train1 --spec "$S" --metrics "$TY_TMP/full.jsonl"
check "an encrypted run stopped after 10 steps" env TRAINYARD_DATA_KEY="$KEY" \
	OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --encrypt "$TENANT:$JOB" \
	--ckpt-dir "$TY_TMP/ck" --stop-after 10 --metrics "$TY_TMP/part.jsonl"
M=$TY_TMP/ck/step_00000010/manifest.json
check "its manifest exists" test -s "$M"
check_eq "the manifest is sealed (magic TYEC)" TYEC "$(head -c 4 "$M")"
check_eq "no JSON of it is readable" 0 "$(grep -c '"step"' "$M")"
check_eq "every shard is sealed" TYEC "$(head -c 4 "$TY_TMP"/ck/step_00000010/shard_00000_of_00001.bin)"

cp -a "$TY_TMP/ck" "$TY_TMP/ck-2"
cp -a "$TY_TMP/ck" "$TY_TMP/ck-init"
cp -a "$TY_TMP/ck" "$TY_TMP/ck-wrong"
cp -a "$TY_TMP/ck" "$TY_TMP/ck-other"
cp -a "$TY_TMP/ck" "$TY_TMP/ck-rot"
check "resumed with the job's key" env TRAINYARD_DATA_KEY="$KEY" OMP_NUM_THREADS=1 \
	"$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --encrypt "$TENANT:$JOB" --ckpt-dir "$TY_TMP/ck" \
	--metrics "$TY_TMP/rest.jsonl"
check_eq "steps 11-20 are bit-identical to the uninterrupted run" \
	"$(losses "$TY_TMP/full.jsonl" | tail -n 10)" "$(losses "$TY_TMP/rest.jsonl")"

# after a data-key rotation the job's ring has two generations: the run
# resumes from the checkpoint of generation 1 and seals under generation 2
NEW=$(openssl rand -hex 32)
gen() { xxd -p -s 10 -l 4 "$1"; } # the header's generation, u32 little-endian
check "resumed with a ring of two generations" env TRAINYARD_DATA_KEY="$KEY,$NEW" \
	OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --encrypt "$TENANT:$JOB" \
	--ckpt-dir "$TY_TMP/ck-rot" --metrics "$TY_TMP/rot.jsonl"
check_eq "from step 10, bit-identical to the uninterrupted run" \
	"10 $(losses "$TY_TMP/full.jsonl" | tail -n 10 | xargs)" \
	"$(jq -r 'select(.event == "resumed") | .step' "$TY_TMP/rot.jsonl") $(losses "$TY_TMP/rot.jsonl" | xargs)"
LAST=$(find "$TY_TMP/ck-rot" -name 'step_*' -newer "$M" | sort | tail -n 1)
check_eq "its new checkpoint is sealed under generation 2" "02000000 02000000" \
	"$(gen "$LAST/manifest.json") $(gen "$LAST/shard_00000_of_00001.bin")"
check_eq "the one it resumed from keeps generation 1" 01000000 \
	"$(gen "$TY_TMP/ck-rot/step_00000010/shard_00000_of_00001.bin")"
check "the first generation alone trusts only the older checkpoint" env TRAINYARD_DATA_KEY="$KEY" \
	OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --encrypt "$TENANT:$JOB" \
	--ckpt-dir "$TY_TMP/ck-rot" --stop-after 1 --metrics "$TY_TMP/rot1.jsonl"
check_eq "and resumes at step 10" 10 "$(jq -r 'select(.event == "resumed") | .step' "$TY_TMP/rot1.jsonl")"

check "resumed on 2 ranks with ZeRO 1" mpirun --allow-run-as-root --oversubscribe \
	--bind-to none -np 2 -x OMP_NUM_THREADS=1 -x TRAINYARD_DATA_KEY="$KEY" -x ASAN_OPTIONS \
	"$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --set parallel.data_parallel=2 \
	--set resources.ranks_per_node=2 --set parallel.zero_stage=1 --encrypt "$TENANT:$JOB" \
	--ckpt-dir "$TY_TMP/ck-2" --metrics "$TY_TMP/two.jsonl"
check_eq "it resumed at step 10" 10 "$(jq -r 'select(.event == "resumed") | .step' "$TY_TMP/two.jsonl")"
d=$(max_rel_diff "$TY_TMP/full.jsonl" "$TY_TMP/two.jsonl")
check "and continues the loss curve (max rel diff $d <= 2e-5)" within "$d" 2e-5

check_fails "the wrong key trusts no checkpoint: status 15" 15 env TRAINYARD_DATA_KEY="$WRONG" \
	OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --encrypt "$TENANT:$JOB" \
	--ckpt-dir "$TY_TMP/ck-wrong"
check_fails "nor does another job's identity" 15 env TRAINYARD_DATA_KEY="$KEY" \
	OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --encrypt "$TENANT:$OTHER" \
	--ckpt-dir "$TY_TMP/ck-other"
check_fails "--encrypt without a key is a usage error" 2 env -u TRAINYARD_DATA_KEY \
	"$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --encrypt "$TENANT:$JOB" --ckpt-dir "$TY_TMP/ck-x"
# Another job starts from the sealed checkpoint's weights (--init-ckpt), with
# the source job's identity and key, its own checkpoints elsewhere.
cp -a "$TY_TMP/ck-init" "$TY_TMP/ck-exp"
check "the step-10 weights, exported by a resume that takes no step" env \
	TRAINYARD_DATA_KEY="$KEY" OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" \
	--encrypt "$TENANT:$JOB" --ckpt-dir "$TY_TMP/ck-exp" --stop-after 0 --export "$TY_TMP/step10.bin"
check "a run started from the sealed checkpoint of another job" env TRAINYARD_INIT_KEY="$KEY" \
	OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --init-ckpt "$TY_TMP/ck-init" \
	--init-encrypt "$TENANT:$JOB" --ckpt-dir "$TY_TMP/ck-new" --stop-after 2 \
	--metrics "$TY_TMP/init.jsonl" --export "$TY_TMP/init2.bin"
check_eq "it took the weights of step 10" 10 \
	"$(jq -r 'select(.event == "initialized") | .from_step' "$TY_TMP/init.jsonl")"
check_eq "and counts its own steps from 1" "1 2" \
	"$(jq -r 'select(.type == "step") | .step' "$TY_TMP/init.jsonl" | xargs)"
first_fresh=$(losses "$TY_TMP/full.jsonl" | head -n 1 | cut -d' ' -f2)
first_init=$(losses "$TY_TMP/init.jsonl" | head -n 1 | cut -d' ' -f2)
check "its first loss ($first_init) is below a fresh start's ($first_fresh)" \
	awk -v a="$first_init" -v b="$first_fresh" 'BEGIN { exit !(a < b) }'
check "its own checkpoints are plain, in its own store" test -s "$TY_TMP/ck-new/step_00000002/manifest.json"
check "a run that takes no step from it exports its weights" env TRAINYARD_INIT_KEY="$KEY" \
	OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --init-ckpt "$TY_TMP/ck-init" \
	--init-encrypt "$TENANT:$JOB" --stop-after 0 --export "$TY_TMP/init0.bin"
check "the weights it started from are the checkpoint's, bit for bit" cmp "$TY_TMP/step10.bin" "$TY_TMP/init0.bin"
check_fails "the wrong key trusts no checkpoint to start from: status 15" 15 env \
	TRAINYARD_INIT_KEY="$WRONG" OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" \
	--init-ckpt "$TY_TMP/ck-init" --init-encrypt "$TENANT:$JOB" --stop-after 0
check_fails "a checkpoint of another model is an invalid configuration: status 10" 10 env \
	TRAINYARD_INIT_KEY="$KEY" OMP_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" --spec "$S" \
	--set model.seq_len=32 --init-ckpt "$TY_TMP/ck-init" --init-encrypt "$TENANT:$JOB" --stop-after 0
check_fails "--init-encrypt without its key is a usage error" 2 env -u TRAINYARD_INIT_KEY \
	"$TRAIN_BIN" train --data-root "$DATA" --spec "$S" --init-ckpt "$TY_TMP/ck-init" \
	--init-encrypt "$TENANT:$JOB"
summary
