#!/usr/bin/env bash
# train_device.sh - trainyard-train --device: what a machine without a GPU
# can check of the GPU path. The run is refused, with a clear message and
# its class's exit status, when the backend library is missing (10), for
# a layout the GPU path does not train yet (10), and, where the backend
# is built (make GPU=1) but no device is visible, for heads the 16-bit
# path's fused attention does not take (10, before any device is asked)
# and for the missing device (1, which the scheduler retries). Training on a GPU is
# checked by tests/gpu/run on a machine with one.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

spec "$TY_TMP/spec.json"
check "make the corpus" make_corpus

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
refused 10 'one GPU for now' "two data-parallel ranks" \
	trainN 2 --spec "$TY_TMP/spec.json" --device cuda --set parallel.data_parallel=2 \
	--set resources.ranks_per_node=2

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
summary
