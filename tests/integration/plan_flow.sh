#!/usr/bin/env bash
# tests/integration/plan_flow.sh - the capacity planner against a stack.
#
# POST /v1/plan (ranking, one fixed layout, strict validation, the fallback
# ladder), `yardctl plan` (flags, a file, stdin, tables, exit statuses),
# and job submission refusing a layout that cannot fit its devices
# (does_not_fit). Expected byte counts are the worked examples of
# docs/plan.md. Needs TRAINYARD_URL and TRAINYARD_DB (tests/run exports
# its stack's) and $BUILD/bin/yardctl; the stack runs with the default
# TRAINYARD_GPU_MEMORY_MIB (80 GiB) and TRAINYARD_CPU_RANK_MEMORY_MIB (8 GiB).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB "$YARDCTL"

ADMIN=$(admin_token) || {
	not_ok "the admin token" "admin_token failed"
	summary
	exit 1
}
U=planner-$$
USER_TOKEN=$(user_token "$U") || not_ok "a token for $U"
TOKEN=$USER_TOKEN

# The founding example's model and batch on 64 devices of 80 GiB.
FOUNDING='{"model": {"preset": "gpt2-350m"}, "global_batch": 256, "micro_batch": 4,
  "precision": "bf16", "devices": 64, "device_memory_bytes": 85899345920,
  "peak_flops": 1e15, "link_bytes_per_s": 1e11}'
with() { jq -c "$1" <<<"$FOUNDING"; } # with FILTER: FOUNDING changed by FILTER

# ---------------------------------------------------------------- the route
TOKEN=
check_status "POST /v1/plan needs a token" 401 POST /v1/plan --json "$FOUNDING"
TOKEN=$USER_TOKEN
check_status "GET /v1/plan is not a method of it" 405 GET /v1/plan

check_status "any user may plan" 200 POST /v1/plan --json "$FOUNDING"
check_json "layouts that fit are listed" "true" '(.configs | length) > 1 and (.configs | length) <= 20'
check_json "feasible counts at least the listed ones" "true" '.feasible >= (.configs | length)'
check_json "every listed layout fits and uses the 64 devices" "true" \
	'all(.configs[]; .fits and .reason == null and .data_parallel * .tensor_parallel * .pipeline_parallel == 64)'
check_json "ranked by tokens/s, fastest first" "true" \
	'[.configs[].tokens_per_s] | . == (sort | reverse)'
check_json "the fallback ladder shrinks" "true" \
	'[.fallback[] | .data_parallel * .tensor_parallel * .pipeline_parallel] | . == (sort | reverse) and (. | unique | length) == length'

check_status "max_configs cuts the list" 200 POST /v1/plan --json "$(with '.max_configs = 3')"
check_json "three layouts" "3" '.configs | length'

FIXED=$(with '.parallel = {"data_parallel": 8, "tensor_parallel": 4, "pipeline_parallel": 2, "zero_stage": 3}')
check_status "one fixed layout" 200 POST /v1/plan --json "$FIXED"
check_json "it alone is answered" "1" '.configs | length'
# docs/plan.md: 22,600,960 + 22,600,960 + 135,605,760 + 2,868,903,936 bytes
check_json "its memory is the worked example's" "22600960 22600960 135605760 2868903936 3049711616" \
	'.configs[0].memory | "\(.params) \(.grads) \(.optimizer) \(.activations) \(.total)"'
check_json "grad_accum and bubble" "8 0.111" '.configs[0] | "\(.grad_accum) \(.bubble * 1000 | floor / 1000)"'
check_json "its ladder: dp 4, 2, 1, then pp, then tp" "4x4x2 2x4x2 1x4x2 1x4x1 1x2x1 1x1x1" \
	'[.fallback[] | "\(.data_parallel)x\(.tensor_parallel)x\(.pipeline_parallel)"] | join(" ")'

BIG='{"model": {"preset": "gpt2-1558m"}, "global_batch": 8, "micro_batch": 8, "devices": 1,
  "peak_flops": 1e15, "link_bytes_per_s": 1e11, "parallel": {}}'
check_status "a layout that does not fit is still answered" 200 POST /v1/plan --json "$BIG"
check_json "it does not fit, and says so" "false" '.configs[0].fits'
check_match "the reason names both sizes; the default is the server's 80 GiB" \
	'^needs [0-9.]+ GiB per device \(.*\), devices have 80 GiB$' "$(printf '%s' "$BODY" | jq -r '.configs[0].reason')"

check_status "unknown fields and bad values are refused at once" 422 POST /v1/plan \
	--json "$(with '.bogus = 1 | .precision = "fp8" | .model.heads = 0 | .peak_flops = 0 | del(.devices)')"
check_json "one row per problem" "/bogus=unknown_field /devices=required /model/heads=out_of_range /peak_flops=out_of_range /precision=invalid_value" \
	'[.errors[] | "\(.pointer)=\(.code)"] | sort | join(" ")'

check_status "rules between fields" 422 POST /v1/plan \
	--json "$(with '.global_batch = 250 | .parallel = {"data_parallel": 2, "tensor_parallel": 3, "pipeline_parallel": 5}')"
check_json "ranks, heads, layers and batch" "/global_batch=batch_mismatch /parallel/data_parallel=ranks_mismatch /parallel/pipeline_parallel=layers_not_divisible_by_pp /parallel/tensor_parallel=heads_not_divisible_by_tp" \
	'[.errors[] | "\(.pointer)=\(.code)"] | sort | join(" ")'

check_status "the parallel section is strict too" 422 POST /v1/plan \
	--json "$(with '.parallel = {"data_parallel": 64, "grad_accum": 1}')"
check_json "grad_accum is not a plan field" "/parallel/grad_accum=unknown_field" \
	'[.errors[] | "\(.pointer)=\(.code)"] | join(" ")'

# ---------------------------------------------------------------- yardctl plan
FLAGS=(--preset gpt2-350m --global-batch 256 --micro-batch 4 --precision bf16 --devices 64
	--device-memory 80GiB --peak-flops 1e15 --link-bandwidth 1e11)
y "$USER_TOKEN" plan "${FLAGS[@]}"
expect_rc "yardctl plan with flags" 0
check_match "it prints a table" '^DP +TP +PP +ZERO +MICRO +ACCUM +GIB/DEVICE +STEP_S +TOKENS/S +BUBBLE +FITS' "$OUT"
check_match "with the fallback ladder below" 'fallback, smaller layouts that fit' "$OUT"

y "$USER_TOKEN" plan "${FLAGS[@]}" --data-parallel 8 --tensor-parallel 4 --pipeline-parallel 2 \
	--zero-stage 3 -o json
expect_rc "yardctl plan of one layout, as JSON" 0
check_eq "the same worked example" "3049711616" "$(jq_out '.configs[0].memory.total')"

PLANFILE=$TY_TMP/plan.json
printf '%s\n' "$FOUNDING" >"$PLANFILE"
y "$USER_TOKEN" plan "$PLANFILE" --devices 8 --max-configs 100 -o json
expect_rc "yardctl plan FILE with a flag over it" 0
check_eq "the flag wins: 8 devices" "true" \
	"$(jq_out 'all(.configs[]; .data_parallel * .tensor_parallel * .pipeline_parallel == 8)')"

y "$USER_TOKEN" plan - -o json < <(jq -c '.devices = 2' "$PLANFILE")
expect_rc "yardctl plan - reads stdin" 0
check_eq "2 devices" "true" "$(jq_out 'all(.configs[]; .data_parallel * .tensor_parallel * .pipeline_parallel == 2)')"

y "$USER_TOKEN" plan - < <(printf '%s' "$BIG")
expect_rc "a layout that does not fit is an answer (exit 0)" 0
check_match "the table says why" 'does not fit: needs [0-9.]+ GiB per device' "$OUT"

y "$USER_TOKEN" plan "${FLAGS[@]}" --devices many
expect_rc "a flag that is not a number is a usage error (exit 2)" 2
y "$USER_TOKEN" plan "${FLAGS[@]}" --device-memory 80GB
expect_rc "memory takes KiB, MiB, GiB or TiB (exit 2)" 2
y "$USER_TOKEN" plan "${FLAGS[@]}" --gpus 8
expect_rc "an unknown flag is a usage error (exit 2)" 2
y "$USER_TOKEN" plan "$TY_TMP/no-such-file.json"
expect_rc "an unreadable file is a usage error (exit 2)" 2
y "$USER_TOKEN" plan "${FLAGS[@]}" --precision fp8
expect_rc "the server's validation refuses (exit 1)" 1
check_match "with the field named" '/precision: precision must be one of fp32, bf16, fp16 \(invalid_value\)' "$ERR"
y "" plan "${FLAGS[@]}"
expect_rc "without a token (exit 3)" 3

# ---------------------------------------------------------------- submission
T=plan-t$$
y "$ADMIN" tenant create "$T"
expect_rc "a tenant for the submissions" 0
y "$ADMIN" quota set "$T" --max-gpus 64
y "$ADMIN" member grant "$T" "$U" editor
expect_rc "the planner may submit there" 0
# a member's jobs name a registered dataset (docs/datasets.md)
printf 'Some text to train on.\n' >"$TY_TMP/owt.txt"
y "$USER_TOKEN" dataset create "$T" owt --classification internal
expect_rc "the planner registers a dataset" 0
y "$USER_TOKEN" dataset upload "$T" owt "$TY_TMP/owt.txt" --format text
expect_rc "with a version" 0

JOB='{"name": "gpt2-350m dp8 tp4 pp2", "model": {"preset": "gpt2-350m"},
  "data": {"dataset": "owt"},
  "parallel": {"data_parallel": 8, "tensor_parallel": 4, "pipeline_parallel": 2,
               "zero_stage": 3, "micro_batch": 4, "global_batch": 256},
  "resources": {"nodes": 8, "gpus_per_node": 8},
  "training": {"steps": 10000, "precision": "bf16"}}'
job() { jq -c "$1" <<<"$JOB"; }
JOBS=/v1/tenants/$T/jobs

check_status "the founding example fits its GPUs" 201 POST "$JOBS" --json "$JOB"

ONE_GPU='.name = "too big" | .model.preset = "gpt2-1558m" | .parallel = {"micro_batch": 8, "global_batch": 8}
  | .resources = {"nodes": 1, "gpus_per_node": 1} | .training.precision = "fp32"'
check_status "gpt2-1558m in fp32 on one GPU is refused" 422 POST "$JOBS" --json "$(job "$ONE_GPU")"
check_json "at /parallel, as does_not_fit" "/parallel does_not_fit" '.errors[0] | "\(.pointer) \(.code)"'
check_match "naming the estimate and the GPU's memory" \
	'^needs [0-9.]+ GiB per device \(model states 23.2 GiB, activations [0-9.]+ GiB\), devices have 80 GiB$' \
	"$(printf '%s' "$BODY" | jq -r '.errors[0].message')"

CPU='.name = "cpu" | .parallel = {"micro_batch": 4, "global_batch": 4} | .resources = {"nodes": 1}
  | .training.precision = "fp32"'
check_status "a CPU rank is held to TRAINYARD_CPU_RANK_MEMORY_MIB" 422 POST "$JOBS" --json "$(job "$CPU")"
check_match "8 GiB" 'devices have 8 GiB$' "$(printf '%s' "$BODY" | jq -r '.errors[0].message')"

check_status "a fallback that cannot fit is refused at its pointer" 422 POST "$JOBS" \
	--json "$(job '.fault_tolerance = {"fallback": [{"data_parallel": 1, "tensor_parallel": 1, "pipeline_parallel": 1, "micro_batch": 256, "zero_stage": 0}]}')"
check_json "at the entry" "/fault_tolerance/fallback/0 does_not_fit" '.errors[0] | "\(.pointer) \(.code)"'

# The planner's ladder is a valid fallback list for the same job.
api POST /v1/plan --json "$FIXED"
LADDER=$(printf '%s' "$BODY" | jq -c '[.fallback[] | {data_parallel, tensor_parallel, pipeline_parallel, zero_stage, micro_batch}]')
check_status "the job with the planner's ladder as its fallbacks" 201 POST "$JOBS" \
	--json "$(job ".fault_tolerance = {\"fallback\": $LADDER}")"
check_json "keeps all six rungs" "6" '.spec.fault_tolerance.fallback | length'

TOKEN=$USER_TOKEN
y "$USER_TOKEN" job submit - --tenant "$T" < <(job "$ONE_GPU")
expect_rc "yardctl job submit of a job that cannot fit (exit 1)" 1
check_match "the refusal is printed with its pointer and code" '/parallel: needs .* \(does_not_fit\)' "$ERR"

summary
