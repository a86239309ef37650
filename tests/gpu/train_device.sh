#!/usr/bin/env bash
# train_device.sh - trainyard-train --device cuda against the CPU, on a
# machine with a GPU (tests/gpu/run runs it after the op and model
# checks): 10 steps of the tiny model on both, a CPU checkpoint resumed on
# the GPU and a GPU checkpoint on the CPU (one format), and a GPU run
# stopped and resumed giving the same losses as one run straight through;
# then bf16 on the GPU within 1% of fp32, an fp32 CPU checkpoint resumed
# in bf16 on the GPU and back, and a bf16 resume bit for bit; and two
# data-parallel ranks sharing the GPU (their gradients summed through
# host memory, comm_staged.h) against two on the CPU, with ZeRO 0, 1 (in
# bf16 too, whose 16-bit weights must follow the all-gather), 2 and 3 (in
# bf16 too); then two tensor-parallel ranks sharing the GPU (their partial
# sums added inside the model) against one CPU rank, 2 x 2 ranks with
# ZeRO 3 against two data-parallel CPU ranks, and two pipeline stages
# sharing the GPU (activations and their gradients between them through
# host memory) against two CPU stages.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/../trainer/lib.sh
. "$(dirname "$0")/../trainer/lib.sh"

spec "$TY_TMP/spec.json"
sed -i 's/"steps": 20/"steps": 10/' "$TY_TMP/spec.json"
check "make the corpus" make_corpus
run() { # run NAME DEVICE CKPT_DIR ARGS...: metrics in $TY_TMP/NAME.jsonl
	local name=$1 device=$2 dir=$3
	shift 3
	train1 --spec "$TY_TMP/spec.json" --device "$device" --ckpt-dir "$TY_TMP/$dir" \
		--metrics "$TY_TMP/$name.jsonl" "$@"
}

check "10 steps on the CPU" run cpu cpu cpu-ckpt
check "10 steps on the GPU" run gpu cuda gpu-ckpt
check_match "the run names its device" 'cuda' \
	"$(jq -r 'select(.event == "device") | .kind' "$TY_TMP/gpu.jsonl")"
check_eq "ten GPU steps" 10 "$(losses "$TY_TMP/gpu.jsonl" | wc -l)"
d=$(max_rel_diff "$TY_TMP/cpu.jsonl" "$TY_TMP/gpu.jsonl")
check "GPU losses within 1e-4 of the CPU's (worst $d)" within "$d" 1e-4

check "5 steps on the CPU" run cpu5 cpu to-gpu --stop-after 5
check "the rest on the GPU, from the CPU's checkpoint" run gpu-rest cuda to-gpu
check_eq "it resumed at step 5" 5 \
	"$(jq -r 'select(.event == "resumed") | .step' "$TY_TMP/gpu-rest.jsonl")"
d=$(max_rel_diff "$TY_TMP/cpu.jsonl" "$TY_TMP/gpu-rest.jsonl")
check "and went on as the CPU run did (worst $d)" within "$d" 1e-4

check "5 steps on the GPU" run gpu5 cuda to-cpu --stop-after 5
check "the rest on the CPU, from the GPU's checkpoint" run cpu-rest cpu to-cpu
d=$(max_rel_diff "$TY_TMP/cpu.jsonl" "$TY_TMP/cpu-rest.jsonl")
check "and went on as the CPU run did (worst $d)" within "$d" 1e-4

# bf16 on the GPU: the tiny model's losses (about 5.5) within 1% of fp32's,
# and checkpoints cross between an fp32 CPU run and a bf16 GPU run
bf16=(--set training.precision=bf16)
check "10 steps on the GPU in bf16" run gpub cuda gpub-ckpt "${bf16[@]}"
d=$(max_rel_diff "$TY_TMP/cpu.jsonl" "$TY_TMP/gpub.jsonl")
check "bf16 losses within 1e-2 of the CPU's fp32 (worst $d)" within "$d" 1e-2
check "5 steps on the CPU in fp32" run cpub5 cpu to-bf16 --stop-after 5
check "the rest on the GPU in bf16, from the CPU's checkpoint" \
	run gpub-rest cuda to-bf16 "${bf16[@]}"
check_eq "it resumed at step 5" 5 \
	"$(jq -r 'select(.event == "resumed") | .step' "$TY_TMP/gpub-rest.jsonl")"
d=$(max_rel_diff "$TY_TMP/cpu.jsonl" "$TY_TMP/gpub-rest.jsonl")
check "and went on within 1e-2 of the CPU run (worst $d)" within "$d" 1e-2
check "5 steps on the GPU in bf16" run gpub5 cuda from-bf16 --stop-after 5 "${bf16[@]}"
check "the rest on the CPU in fp32, from the GPU's checkpoint" run cpub-rest cpu from-bf16
d=$(max_rel_diff "$TY_TMP/cpu.jsonl" "$TY_TMP/cpub-rest.jsonl")
check "and went on within 1e-2 of the CPU run (worst $d)" within "$d" 1e-2
check "5 bf16 steps on the GPU, stopped" run gb5 cuda gpub-resume --stop-after 5 "${bf16[@]}"
check "5 more, resumed" run gb10 cuda gpub-resume "${bf16[@]}"
check_eq "the same losses as the bf16 GPU run straight through" \
	"$(losses "$TY_TMP/gpub.jsonl" | tail -n 5)" "$(losses "$TY_TMP/gb10.jsonl")"

check "5 steps on the GPU, stopped" run g5 cuda gpu-resume --stop-after 5
check "5 more, resumed" run g10 cuda gpu-resume
check_eq "the same losses as the GPU run straight through" \
	"$(losses "$TY_TMP/gpu.jsonl" | tail -n 5)" "$(losses "$TY_TMP/g10.jsonl")"

# two data-parallel ranks on the one GPU: ZeRO 0, gradients summed through host memory
dp2() { # dp2 NAME DEVICE ARGS...: 2 ranks, metrics in $TY_TMP/NAME.jsonl
	local name=$1 device=$2
	shift 2
	trainN 2 --spec "$TY_TMP/spec.json" --device "$device" --ckpt-dir "$TY_TMP/$name-ckpt" \
		--set parallel.data_parallel=2 --set resources.ranks_per_node=2 \
		--metrics "$TY_TMP/$name.jsonl" "$@"
}
check "10 steps on 2 CPU ranks" dp2 cpu2 cpu
check "10 steps on 2 ranks sharing the GPU" dp2 gpu2 cuda
d=$(max_rel_diff "$TY_TMP/cpu2.jsonl" "$TY_TMP/gpu2.jsonl")
check "their losses within 1e-4 of the CPU's (worst $d)" within "$d" 1e-4
# ZeRO 1: each rank's moments are its shard's; the parameters all-gathered in place
check "10 steps on 2 ranks sharing the GPU, ZeRO 1" dp2 gpu2z1 cuda --set parallel.zero_stage=1
d=$(max_rel_diff "$TY_TMP/cpu2.jsonl" "$TY_TMP/gpu2z1.jsonl")
check "their losses within 1e-4 of the CPU's (worst $d)" within "$d" 1e-4
bytes() { jq -r 'select(.event == "device_model") | .bytes' "$TY_TMP/$1.jsonl" | head -n 1; }
check "ZeRO 1 holds less on the device ($(bytes gpu2z1) < $(bytes gpu2))" \
	test "$(bytes gpu2z1)" -lt "$(bytes gpu2)"
check "10 steps on 2 ranks sharing the GPU, ZeRO 2, two micro-batches a step" dp2 gpu2z2 cuda \
	--set parallel.zero_stage=2 --set parallel.micro_batch=2
check "the same on 2 CPU ranks" dp2 cpu2z2 cpu --set parallel.zero_stage=2 \
	--set parallel.micro_batch=2
d=$(max_rel_diff "$TY_TMP/cpu2z2.jsonl" "$TY_TMP/gpu2z2.jsonl")
check "their losses within 1e-4 of the CPU's (worst $d)" within "$d" 1e-4
check "10 steps on 2 ranks sharing the GPU, ZeRO 3" dp2 gpu2z3 cuda --set parallel.zero_stage=3 \
	--set parallel.micro_batch=2
d=$(max_rel_diff "$TY_TMP/cpu2z2.jsonl" "$TY_TMP/gpu2z3.jsonl")
check "their losses within 1e-4 of the CPU's (worst $d)" within "$d" 1e-4
check "10 steps in bf16 under ZeRO 3 (the 16-bit copy of each gathered unit)" dp2 gpu2z3b cuda \
	--set parallel.zero_stage=3 --set parallel.micro_batch=2 --set training.precision=bf16
d=$(max_rel_diff "$TY_TMP/cpu2z2.jsonl" "$TY_TMP/gpu2z3b.jsonl")
check "within 1e-2 of the CPU's fp32 (worst $d)" within "$d" 1e-2
check "5 steps in bf16 under ZeRO 1" dp2 z1b cuda --set parallel.zero_stage=1 \
	--set training.precision=bf16 --stop-after 5
check "the rest in bf16 under ZeRO 0, from its checkpoint" dp2 z1b cuda \
	--set training.precision=bf16 --metrics "$TY_TMP/z1b-rest.jsonl"
d=$(max_rel_diff "$TY_TMP/cpu2.jsonl" "$TY_TMP/z1b-rest.jsonl")
check "within 1e-2 of the CPU's fp32 (worst $d; the 16-bit weights follow the gather)" \
	within "$d" 1e-2

# tensor parallel: each rank its heads and slices of every layer, the tensor
# group summing the partial results inside the model (fp32)
check "10 steps on 2 tensor-parallel ranks sharing the GPU" dp2 gputp2 cuda \
	--set parallel.data_parallel=1 --set parallel.tensor_parallel=2
d=$(max_rel_diff "$TY_TMP/cpu.jsonl" "$TY_TMP/gputp2.jsonl")
check "their losses within 1e-4 of one CPU rank's (worst $d)" within "$d" 1e-4
check "each holds less on the device than one rank ($(bytes gputp2) < $(bytes gpu))" \
	test "$(bytes gputp2)" -lt "$(bytes gpu)"
check "10 steps on 2 x 2 ranks sharing the GPU, ZeRO 3" trainN 4 --spec "$TY_TMP/spec.json" \
	--device cuda --ckpt-dir "$TY_TMP/gpu22-ckpt" --set parallel.data_parallel=2 \
	--set parallel.tensor_parallel=2 --set parallel.zero_stage=3 \
	--set resources.ranks_per_node=4 --metrics "$TY_TMP/gpu22.jsonl"
d=$(max_rel_diff "$TY_TMP/cpu2.jsonl" "$TY_TMP/gpu22.jsonl")
check "their losses within 1e-4 of two data-parallel CPU ranks' (worst $d)" within "$d" 1e-4

# pipeline: the CPU's 1F1B schedule over the device model's slots
PP2=(--set parallel.data_parallel=1 --set parallel.pipeline_parallel=2
	--set parallel.micro_batch=2)
check "10 steps on 2 pipeline stages sharing the GPU" dp2 gpupp2 cuda "${PP2[@]}"
check "the same on 2 CPU stages" dp2 cpupp2 cpu "${PP2[@]}"
d=$(max_rel_diff "$TY_TMP/cpupp2.jsonl" "$TY_TMP/gpupp2.jsonl")
check "their losses within 1e-4 of the CPU's (worst $d)" within "$d" 1e-4
summary
