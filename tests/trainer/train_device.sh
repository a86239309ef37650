#!/usr/bin/env bash
# train_device.sh - trainyard-train --device: what a machine without a GPU
# can check of the GPU path. The run is refused, with a clear message and
# its class's exit status, when the backend library is missing (10), for
# a layout the GPU path does not train yet (10: tensor or pipeline
# parallel in 16 bits), and, where the backend
# is built (make GPU=1) but no device is visible, for heads the 16-bit
# path's fused attention does not take (10, before any device is asked)
# and for the missing device (1, which the scheduler retries). Then the
# device path itself through a CPU stand-in for the backend
# (host_device.c): one rank and two data-parallel ranks (their gradients
# summed on the staged comm, with ZeRO 0, 1 (the moments the shard's
# alone), 2 (no whole gradient either) and 3 (nor whole parameters)),
# tensor parallel (two ranks, 2 x 2 with ZeRO 1 and 3) and pipeline
# parallel (two stages, with two tensor ranks each, and with two
# data-parallel ranks under ZeRO 3) train as the CPU does, within 1e-6,
# and runs checkpointed on the "device" resume on the CPU, under another
# layout and under ZeRO 0. Training on a GPU is checked by tests/gpu/run
# on a machine with one.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

spec "$TY_TMP/spec.json"
check "make the corpus" make_corpus
HOSTDEV=$(dirname "$TRAIN_BIN")/../tests/libty-hostdevice.so
on_hostdev() { TRAINYARD_GPU_BACKEND=$HOSTDEV "$@"; } # on_hostdev CMD...: with the CPU stand-in

# refused RC PATTERN DESC ARGS...: the run exits RC and says PATTERN on stderr
refused() {
	local rc=$1 pattern=$2 desc=$3
	shift 3
	"$@" 2>"$TY_TMP/err" >/dev/null
	local got=$?
	check_eq "$desc: exit status $rc" "$rc" "$got"
	check_match "$desc: says why" "$pattern" "$(cat "$TY_TMP/err")"
}

refused 2 'usage' "an unknown device" train1 --spec "$TY_TMP/spec.json" --device tpu
refused 10 'built without it' "no backend library" \
	env TRAINYARD_GPU_BACKEND="$TY_TMP/none.so" "$TRAIN_BIN" train --data-root "$DATA" \
	--spec "$TY_TMP/spec.json" --device cuda
printf 'not a library' >"$TY_TMP/bad.so"
refused 10 'could not load the GPU backend' "a file that is not a library" \
	env TRAINYARD_GPU_BACKEND="$TY_TMP/bad.so" "$TRAIN_BIN" train --data-root "$DATA" \
	--spec "$TY_TMP/spec.json" --device cuda
refused 10 'bf16 and fp16 data parallel only.*not 1x1x2' "two pipeline stages in fp16" \
	on_hostdev trainN 2 --spec "$TY_TMP/spec.json" --device cuda --set training.precision=fp16 \
	--set parallel.pipeline_parallel=2 --set resources.ranks_per_node=2
refused 10 'bf16 and fp16 data parallel only.*not 1x2x1' "two tensor ranks in bf16" \
	on_hostdev trainN 2 --spec "$TY_TMP/spec.json" --device cuda --set training.precision=bf16 \
	--set parallel.tensor_parallel=2 --set resources.ranks_per_node=2

backend=$(dirname "$TRAIN_BIN")/../lib/libtytrain-cuda.so
if [[ ! -e $backend ]]; then
	echo "# the GPU backend is not built here (make GPU=1): its device check is skipped"
elif [[ -e /dev/nvidiactl ]]; then
	echo "# a GPU is here: tests/gpu/run checks training on it"
else
	refused 10 'attention heads of 16, 32' "bf16 with heads of 8 channels" \
		train1 --spec "$TY_TMP/spec.json" --device cuda --set training.precision=bf16 \
		--set model.heads=8
	refused 1 'no CUDA device is visible' "bf16, the backend built, no device" \
		train1 --spec "$TY_TMP/spec.json" --device cuda --set training.precision=bf16
	refused 1 'no CUDA device is visible' "the backend built, no device" \
		train1 --spec "$TY_TMP/spec.json" --device cuda --metrics "$TY_TMP/m.jsonl"
	check_eq "the end event says internal" internal \
		"$(jq -r 'select(.event == "end") | .status' "$TY_TMP/m.jsonl")"
fi
check "the CPU still trains with --device cpu" train1 --spec "$TY_TMP/spec.json" \
	--device cpu --stop-after 1

# ---- the device path through the CPU stand-in -----------------------------------
# run NAME N ARGS...: N ranks of the spec for 8 steps, metrics in $TY_TMP/NAME.m
run() {
	local name=$1 n=$2
	shift 2
	rm -rf "$TY_TMP/$name.ck"
	on_hostdev trainN "$n" --spec "$TY_TMP/spec.json" \
		--set training.steps=8 --ckpt-dir "$TY_TMP/$name.ck" --metrics "$TY_TMP/$name.m" "$@" \
		>/dev/null 2>"$TY_TMP/$name.err"
}
within() { awk -v d="$1" 'BEGIN { exit !(d != "none" && d + 0 <= 1e-6) }'; }
# trains_as DESC A B: runs A and B's losses within 1e-6 of each other, step by step
trains_as() {
	local d
	d=$(max_rel_diff "$TY_TMP/$2.m" "$TY_TMP/$3.m")
	check "$1 (max relative $d)" within "$d"
}
DP2=(--set parallel.data_parallel=2 --set resources.ranks_per_node=2)
check "one rank on the stand-in" run dev1 1 --device cuda
check_match "it says which device it trained on, with no comm between devices" 'CPU stand-in.* none' \
	"$(jq -r 'select(.event == "device") | "\(.name) \(.comm)"' "$TY_TMP/dev1.m")"
check "one rank on the CPU" run cpu1 1 --device cpu
check_eq "8 steps each" "8 8" "$(losses "$TY_TMP/dev1.m" | wc -l) $(losses "$TY_TMP/cpu1.m" | wc -l)"
trains_as "the device path trains as the CPU does" dev1 cpu1
check "two data-parallel ranks on the stand-in (the staged comm)" run dev2 2 --device cuda "${DP2[@]}"
check_eq "ranks that share a device sum through host memory" staged \
	"$(jq -r 'select(.event == "device") | .comm' "$TY_TMP/dev2.m")"
check "two on the CPU" run cpu2 2 --device cpu "${DP2[@]}"
# comm_time NAME FIELD: whether every step of run NAME spent time in FIELD's transfers
comm_time() { jq -se "[.[] | select(.type == \"step\") | .$2 > 0] | length > 0 and all" "$TY_TMP/$1.m"; }
check "every step says the time its gradients' sums took (dp_comm_s)" comm_time dev2 dp_comm_s
trains_as "data parallel on the device path trains as on the CPU" dev2 cpu2
# ZeRO 1: the moments of the owned shard alone on each "device"
model_bytes() { jq -r 'select(.event == "device_model") | .bytes' "$TY_TMP/$1.m"; }
check "two ranks with ZeRO 1 on the stand-in" run dev2z1 2 --device cuda "${DP2[@]}" \
	--set parallel.zero_stage=1
trains_as "they train as the CPU does" dev2z1 cpu2
check "each holds less on its device than under ZeRO 0 ($(model_bytes dev2z1) < $(model_bytes dev2))" \
	test "$(model_bytes dev2z1)" -lt "$(model_bytes dev2)"
# ZeRO 2: each unit's gradients in a buffer of the run's, reduce-scattered in
# every backward (two a step here, so the shard sums them); four layers, so
# that three buffers are less than the whole gradient
L4=(--set model.layers=4 --set parallel.micro_batch=2)
check "two ranks with ZeRO 2 on the stand-in, two micro-batches a step" run dev2z2 2 \
	--device cuda "${DP2[@]}" "${L4[@]}" --set parallel.zero_stage=2
check "the same with ZeRO 1" run dev2z1b 2 --device cuda "${DP2[@]}" "${L4[@]}" \
	--set parallel.zero_stage=1
check "the same on the CPU with ZeRO 2" run cpu2z2 2 --device cpu "${DP2[@]}" "${L4[@]}" \
	--set parallel.zero_stage=2
trains_as "ZeRO 2 on the device path trains as on the CPU" dev2z2 cpu2z2
trains_as "and ZeRO 1 with two micro-batches too" dev2z1b cpu2z2
check "ZeRO 2 holds less on its device than ZeRO 1 ($(model_bytes dev2z2) < $(model_bytes dev2z1b))" \
	test "$(model_bytes dev2z2)" -lt "$(model_bytes dev2z1b)"
# ZeRO 3: each rank keeps its shard of the parameters, gathering a unit as the model asks
check "two ranks with ZeRO 3 on the stand-in" run dev2z3 2 --device cuda "${DP2[@]}" "${L4[@]}" \
	--set parallel.zero_stage=3
trains_as "ZeRO 3 on the device path trains as on the CPU" dev2z3 cpu2z2
# its three gather buffers are less than half the parameters from eight layers on
L8=(--set model.layers=8 --stop-after 1)
check "ZeRO 2 with eight layers, one step" run z2l8 2 --device cuda "${DP2[@]}" "${L8[@]}" \
	--set parallel.zero_stage=2
check "ZeRO 3 with eight layers, one step" run z3l8 2 --device cuda "${DP2[@]}" "${L8[@]}" \
	--set parallel.zero_stage=3
check "ZeRO 3 holds less on its device than ZeRO 2 ($(model_bytes z3l8) < $(model_bytes z2l8))" \
	test "$(model_bytes z3l8)" -lt "$(model_bytes z2l8)"
check "a ZeRO 3 run on the device path stopped after 5 steps" run stopz3 2 --device cuda \
	"${DP2[@]}" "${L4[@]}" --set parallel.zero_stage=3 --stop-after 5
check "its checkpoint resumes on the CPU under ZeRO 1" trainN 2 --spec "$TY_TMP/spec.json" \
	--device cpu "${DP2[@]}" "${L4[@]}" --set parallel.zero_stage=1 --set training.steps=8 \
	--ckpt-dir "$TY_TMP/stopz3.ck" --metrics "$TY_TMP/backz3.m"
trains_as "as an uninterrupted run" backz3 cpu2z2
check "the device path stopped after 6 steps" run stop 2 --device cuda "${DP2[@]}" --stop-after 6
check "its checkpoint resumes on the CPU" trainN 2 --spec "$TY_TMP/spec.json" --device cpu \
	"${DP2[@]}" --set training.steps=8 --ckpt-dir "$TY_TMP/stop.ck" --metrics "$TY_TMP/back.m"
check_match "from a step past the first, to the last" '^[2-8]( [0-9]+)* 8$' \
	"$(losses "$TY_TMP/back.m" | cut -d' ' -f1 | xargs)"
trains_as "as an uninterrupted run on the CPU" back cpu2
# tensor parallel: each rank its heads and slices, the group summing inside the model
TP2=(--set parallel.tensor_parallel=2 --set resources.ranks_per_node=2)
check "two tensor-parallel ranks on the stand-in" run devtp2 2 --device cuda "${TP2[@]}"
check "two on the CPU" run cputp2 2 --device cpu "${TP2[@]}"
trains_as "tensor parallel on the device path trains as on the CPU" devtp2 cputp2
check "every step says the time the tensor group's sums took (tp_comm_s)" comm_time devtp2 tp_comm_s
trains_as "and as one rank" devtp2 cpu1
check "each holds less on its device than one rank ($(model_bytes devtp2) < $(model_bytes dev1))" \
	test "$(model_bytes devtp2)" -lt "$(model_bytes dev1)"
DP2TP2=(--set parallel.data_parallel=2 --set parallel.tensor_parallel=2
	--set resources.ranks_per_node=4)
check "2 x 2 ranks on the CPU with ZeRO 1" run cpu22 4 --device cpu "${DP2TP2[@]}" "${L4[@]}" \
	--set parallel.zero_stage=1
for z in 1 3; do
	check "2 x 2 ranks with ZeRO $z on the stand-in" run dev22z$z 4 --device cuda \
		"${DP2TP2[@]}" "${L4[@]}" --set parallel.zero_stage=$z
	trains_as "they train as on the CPU" "dev22z$z" cpu22
done
check "a 2 x 2 run on the device path stopped after 5 steps" run stop22 4 --device cuda \
	"${DP2TP2[@]}" "${L4[@]}" --set parallel.zero_stage=3 --stop-after 5
check "its checkpoint resumes on the CPU on two data-parallel ranks" trainN 2 \
	--spec "$TY_TMP/spec.json" --device cpu "${DP2[@]}" "${L4[@]}" --set training.steps=8 \
	--ckpt-dir "$TY_TMP/stop22.ck" --metrics "$TY_TMP/back22.m"
trains_as "as an uninterrupted run" back22 cpu22
# pipeline: the stages run the CPU's 1F1B schedule over the device model's slots,
# activations and their gradients moving between "devices" on the staged comm
PP2=(--set parallel.pipeline_parallel=2 --set resources.ranks_per_node=2
	--set parallel.micro_batch=2)
check "two pipeline stages on the stand-in, two micro-batches a step" run devpp2 2 --device cuda \
	"${PP2[@]}"
check_eq "the stages talk on the staged comm" staged \
	"$(jq -r 'select(.event == "device") | .pp_comm' "$TY_TMP/devpp2.m")"
check "the same on the CPU" run cpupp2 2 --device cpu "${PP2[@]}"
trains_as "pipeline parallel on the device path trains as on the CPU" devpp2 cpupp2
check "every step says the time the stages waited for each other (pp_bubble_s)" \
	comm_time devpp2 pp_bubble_s
check "a tensor-parallel pair of each of two stages on the stand-in" run devtppp 4 --device cuda \
	--set parallel.pipeline_parallel=2 --set parallel.tensor_parallel=2 \
	--set resources.ranks_per_node=4 --set parallel.micro_batch=2
trains_as "as on the CPU" devtppp cpupp2
DP2PP2=(--set parallel.pipeline_parallel=2 --set parallel.data_parallel=2
	--set resources.ranks_per_node=4 --set parallel.micro_batch=2 --set model.layers=4)
check "2 x 2 ranks on the CPU with ZeRO 1, two stages" run cpudp22 4 --device cpu \
	"${DP2PP2[@]}" --set parallel.zero_stage=1
check "two data-parallel ranks of each of two stages with ZeRO 3 on the stand-in" \
	run devdp22 4 --device cuda "${DP2PP2[@]}" --set parallel.zero_stage=3
trains_as "they train as on the CPU (the tied embedding summed over the stages)" devdp22 cpudp22
check "that run stopped after 5 steps" run stopdp22 4 --device cuda "${DP2PP2[@]}" \
	--set parallel.zero_stage=3 --stop-after 5
check "its checkpoint resumes on two data-parallel CPU ranks" trainN 2 \
	--spec "$TY_TMP/spec.json" --device cpu "${DP2[@]}" --set model.layers=4 \
	--set parallel.micro_batch=2 --set training.steps=8 --ckpt-dir "$TY_TMP/stopdp22.ck" \
	--metrics "$TY_TMP/backdp22.m"
trains_as "as an uninterrupted run" backdp22 cpudp22
check "a ZeRO 1 run on the device path stopped after 5 steps" run stopz1 2 --device cuda \
	"${DP2[@]}" --set parallel.zero_stage=1 --stop-after 5
check "its checkpoint resumes on the device path under ZeRO 0" on_hostdev trainN 2 \
	--spec "$TY_TMP/spec.json" --device cuda "${DP2[@]}" --set training.steps=8 \
	--ckpt-dir "$TY_TMP/stopz1.ck" --metrics "$TY_TMP/backz1.m"
trains_as "as an uninterrupted run on the CPU" backz1 cpu2
summary
