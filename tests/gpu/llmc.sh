#!/usr/bin/env bash
# llmc.sh - llm.c's train_gpt2.cu beside trainyard's trainer: the same
# model and batch (GPT-2 124M, B 16, T 1024, bf16), random init and random
# tokens, timed on the GPU. tests/gpu/run runs it after PyTorch's row.
#
# It builds third_party/llm.c/train_gpt2.cu (tests/gpu/fetch_llmc.sh puts
# it there) into $BUILD/llmc/ with the flags of llm.c's own train_gpt2cu
# target, for one GPU: bf16, no MPI, no NCCL, no cuDNN. It writes random
# tokens in llm.c's data-file format, runs STEPS steps from llm.c's d12
# descriptor (GPT-2 124M from random weights) with validation cut to one
# batch (llm.c always validates at the first and last step), no sampling
# and no checkpoints, and reports the steps after the first WARMUP from
# llm.c's own per-step timing: tokens/s, and MFU by bench/torch_gpt2.py's
# formula ((6N + 6LCT) FLOPs a token, N = 124,439,808, over PEAK_TFLOPS).
#
# Without the source, or without nvcc, it says so and exits 0; without a
# GPU it builds and stops there (exit 0). A build that fails, a run that
# fails or a step whose loss is not finite: exit 1.
#
#   tests/gpu/llmc.sh                     # NVCC_ARCH=sm_90 (H100, H200)
#   NVCC_ARCH=sm_80 PEAK_TFLOPS=312 tests/gpu/llmc.sh   # A100
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
NVCC=${NVCC:-nvcc}
NVCC_ARCH=${NVCC_ARCH:-sm_90}
PEAK_TFLOPS=${PEAK_TFLOPS:-989}
SRC=third_party/llm.c
OUT=$(mkdir -p "$BUILD/llmc" && cd "$BUILD/llmc" && pwd) || exit 1
BIN=$OUT/train_gpt2cu
B=16 T=1024 STEPS=20 WARMUP=5

if [[ ! -f $SRC/train_gpt2.cu ]]; then
	echo "# skipped: llm.c (no third_party/llm.c: tests/gpu/fetch_llmc.sh, then carry third_party/llm.c)"
	exit 0
fi
if ! command -v "$NVCC" >/dev/null; then
	echo "# skipped: llm.c (no $NVCC: install the CUDA toolkit)"
	exit 0
fi
commit=$(cat "$SRC/COMMIT" 2>/dev/null || echo "unknown commit")

# llm.c's Makefile, target train_gpt2cu, with PRECISION=BF16, USE_CUDNN=0,
# NO_MULTI_GPU=1 and NO_USE_MPI=1: MULTI_GPU, USE_MPI and ENABLE_CUDNN
# stay undefined (llmc/zero.cuh then runs one process on device 0). The
# arch is ours (NVCC_ARCH) rather than nvidia-smi's answer. The toolkit's
# libraries are found at run time through an rpath, as trainyard's own
# GPU build does. llmc/mfu.h reads the GPU's clocks through NVML where
# <nvml.h> is found, and then needs -lnvidia-ml (llm.c links it always).
# tests/gpu/llmc_compat.h, included first, is what CUDA 13 asks of llm.c's
# code at that commit (cudaMemAdvise's new signature).
libdirs=$("$NVCC" --dryrun -x cu -c /dev/null -o /dev/null 2>&1 |
	sed -n 's/^#\$ LIBRARIES=//p' | tr -d '"' | tr ' ' '\n' |
	sed -n 's/^-L//p' | grep -v '/stubs$' | xargs -r readlink -f)
libs=(-lcublas -lcublasLt)
printf '#include <nvml.h>\n' >"$OUT/nvml_probe.cu"
if "$NVCC" -E "$OUT/nvml_probe.cu" -o /dev/null 2>/dev/null; then
	libs+=(-lnvidia-ml)
fi
for d in $libdirs; do
	libs+=(-Xlinker -rpath -Xlinker "$d")
done
cmd=("$NVCC" --threads=0 --use_fast_math -std=c++17 -O3 -arch="$NVCC_ARCH")
if [[ -n ${NVCC_CCBIN:-} ]]; then
	cmd+=(-ccbin "$NVCC_CCBIN")
fi
cmd+=(-DENABLE_BF16 -include tests/gpu/llmc_compat.h "$SRC/train_gpt2.cu" -o "$BIN" "${libs[@]}")
printf '%q ' "${cmd[@]}" >"$OUT/build.cmd.new"
if [[ -x $BIN ]] && cmp -s "$OUT/build.cmd.new" "$OUT/build.cmd" &&
	[[ -z $(find "$SRC" tests/gpu/llmc_compat.h -newer "$BIN" -print -quit) ]]; then
	echo "# llm.c train_gpt2.cu ($commit): built already, $BIN"
else
	rm -f "$BIN" "$OUT/build.cmd"
	start=$SECONDS
	if ! "${cmd[@]}" >"$OUT/build.log" 2>&1; then
		echo "FAIL: llm.c's train_gpt2.cu did not compile ($commit; $OUT/build.log):" >&2
		tail -n 20 "$OUT/build.log" >&2
		echo "  the command: $(cat "$OUT/build.cmd.new")" >&2
		exit 1
	fi
	mv "$OUT/build.cmd.new" "$OUT/build.cmd"
	echo "# llm.c train_gpt2.cu ($commit): built in $((SECONDS - start)) s, $BIN"
fi
rm -f "$OUT/build.cmd.new" "$OUT/nvml_probe.cu"
if [[ ! -e /dev/nvidiactl ]]; then
	echo "# llm.c's train_gpt2.cu built, not run: no GPU here"
	exit 0
fi
if ! command -v python3 >/dev/null; then
	echo "FAIL: llm.c's row needs python3 (its tokens, its figures)" >&2
	exit 1
fi

# Random tokens in llm.c's data-file format (llmc/dataloader.h): 256
# int32 (magic 20240520, version 1, the token count, zeros), then the
# tokens as uint16, little-endian; every value below GPT-2's 50257. Each
# file holds whole batches of B*T tokens and one more (the last target).
mkdir -p "$OUT/data" "$OUT/run"
python3 - "$OUT/data" "$((B * T))" <<'EOF' || exit 1
import random, struct, sys
out, bt = sys.argv[1], int(sys.argv[2])
rng = random.Random(1234)
for name, batches in (("train", 32), ("val", 1)):
    n = batches * bt + 1
    header = [20240520, 1, n] + [0] * 253
    with open(f"{out}/{name}.bin", "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack(f"<{n}H", *(rng.randrange(50257) for _ in range(n))))
EOF

# -e d12: GPT-2 124M, random weights (gpt_build_from_descriptor); -d B*T:
# no gradient accumulation; -v/-m: validation on one batch, at the first
# and last step only; -s 0: no sampling; -n 0, no -o: no checkpoints, no
# log files; -r 0, -c 0.1, -l 3e-4: no recomputation (llm.c's own GPT-2
# 124M recipe) and PyTorch's row's AdamW. It runs in $OUT/run, where the
# files it looks for by relative path (the tokenizer, HellaSwag) are not.
args=(-e d12 -i "$OUT/data/train.bin" -j "$OUT/data/val.bin"
	-b "$B" -t "$T" -d "$((B * T))" -x "$STEPS" -v 1000000 -m 1 -s 0 -n 0
	-r 0 -c 0.1 -l 3e-4)
echo "# llm.c: train_gpt2cu ${args[*]}"
if ! (cd "$OUT/run" && timeout 300 "$BIN" "${args[@]}") >"$OUT/run.log" 2>&1; then
	echo "FAIL: llm.c's train_gpt2cu failed ($OUT/run.log):" >&2
	tail -n 20 "$OUT/run.log" >&2
	exit 1
fi

# Its step line (train_gpt2.cu, printf0 in main's training loop):
# "step %4d/%d | loss %7.6f (%+.2fz)| norm %6.4f (%+.2fz)| lr %.2e |
#  %.2f ms | %.1f%% bf16 MFU | %.0f tok/s": the ms is the step's own time
# between two CUDA events; the tok/s is a moving average, not used here.
python3 - "$OUT/run.log" "$B" "$T" "$STEPS" "$WARMUP" "$PEAK_TFLOPS" <<'EOF'
import math, re, sys
log, B, T, steps, warmup, peak = sys.argv[1], *map(int, sys.argv[2:6]), float(sys.argv[6])
line = re.compile(r"^step\s+(\d+)/(\d+) \| loss\s+(\S+) .* \| ([0-9.]+) ms \| ")
seen = {}
with open(log) as f:
    for text in f:
        m = line.match(text)
        if m:
            seen[int(m[1])] = (float(m[3]), float(m[4]))
if sorted(seen) != list(range(1, steps + 1)):
    sys.exit(f"FAIL: llm.c printed steps {sorted(seen)}, not 1 to {steps} ({log})")
losses = [seen[s][0] for s in sorted(seen)]
if not all(math.isfinite(v) for v in losses):
    sys.exit(f"FAIL: llm.c's losses are not all finite: {losses} ({log})")
ms = [seen[s][1] for s in range(warmup + 1, steps + 1)]
L, C, V = 12, 768, 50257
N = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C  # as PyTorch counts GPT-2 124M
tokens_per_s = B * T * len(ms) / (sum(ms) / 1000)
mfu = tokens_per_s * (6 * N + 6 * L * C * T) / (peak * 1e12)
print(f"# llm.c train_gpt2.cu, GPT-2 124M, B={B}, T={T}, bf16: {tokens_per_s:.0f} tokens/s, "
      f"MFU {100 * mfu:.1f}% of {peak:g} TFLOP/s (6N+6LCT FLOPs per token)")
print(f"#   steps {warmup + 1} to {steps}: {sum(ms) / len(ms):.2f} ms a step; "
      f"loss {losses[0]:.4f} at step 1, {losses[-1]:.4f} at step {steps}; {log}")
EOF
