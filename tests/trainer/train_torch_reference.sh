#!/usr/bin/env bash
# train_torch_reference.sh - bench/torch_gpt2.py, the PyTorch run the GPU check
# times trainyard against (tests/gpu/run), on the CPU at a tiny size so
# that it cannot rot: its parameter count is GPT-2's formula, its FLOPs a
# token and MFU are the formula it prints, its first loss is ln(vocab),
# and its loss falls (fp32 and bf16 autocast). Debian's python3-torch
# (deploy/deps) is 1.13: no torch.compile nor scaled_dot_product_attention
# there, which the script then reports as not used.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"

PY=${TORCH_PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import torch' 2>/dev/null; then
	not_ok "PyTorch importable by $PY" "install python3-torch (deploy/deps)"
	summary
	exit 1
fi
V=256 T=32 L=2 C=64 H=4
run() { # run DTYPE: the script's JSON line
	"$PY" "$TY_ROOT/bench/torch_gpt2.py" --device cpu --dtype "$1" --vocab $V --seq $T \
		--layers $L --channels $C --heads $H --batch 4 --warmup 2 --steps 10 --lr 1e-3 \
		--peak-tflops 1
}
for dt in fp32 bf16; do
	out=$(run $dt 2>&1)
	check "$dt: one JSON line" jq -e . <<<"$out"
	n=$((V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C))
	check_eq "$dt: GPT-2's parameters (tied classifier): VC + TC + L(12C^2 + 13C) + 2C" \
		"$n" "$(jq -r .params <<<"$out")"
	check_eq "$dt: FLOPs a token 6N + 6LCT" $((6 * n + 6 * L * C * T)) \
		"$(jq -r .flops_per_token <<<"$out")"
	check "$dt: MFU is tokens/s x FLOPs a token over the peak" jq -e \
		'(.mfu - .tokens_per_s * .flops_per_token / (.peak_tflops * 1e12)) | fabs < 1e-12' <<<"$out"
	check "$dt: tokens/s is the batch's tokens over the timed seconds" jq -e \
		'.tokens_per_s > 0 and ((.tokens_per_s - 4 * 32 * .steps / .seconds) | fabs) < 1e-6' \
		<<<"$out"
	check "$dt: 12 losses, the first near ln($V) = 5.55" jq -e \
		'(.losses | length) == 12 and ((.losses[0] - 5.545) | fabs) < 0.3' <<<"$out"
	check "$dt: the loss falls by a tenth in 12 steps ($(jq -c '[.losses[0], .losses[-1]]' <<<"$out"))" \
		jq -e '.losses[-1] < .losses[0] * 0.9' <<<"$out"
	check_eq "$dt: the device and dtype it says" "cpu $dt" "$(jq -r '"\(.device) \(.dtype)"' <<<"$out")"
done
summary
