#!/usr/bin/env bash
# tests/integration/sched_own_code.sh - a team's own training code as a
# command job (docs/own-code.md), end to end on the test stack's 2-node
# Slurm cluster: own_code/train.py, a small language model trained with
# PyTorch's DistributedDataParallel (CPU, gloo), uploaded as a code bundle
# and submitted through the API by a tenant's member on a registered
# dataset.
#   1. bad submissions (a shell string, an env name not allowed, an unknown
#      code, another tenant's code, a command that is not in the bundle)
#      are refused with stable codes and store nothing;
#   2. rank 1's process is killed mid-run: the same 2-node layout runs
#      again in the same attempt from the sealed checkpoint, and every
#      step's loss equals an uninterrupted run's within 1e-6;
#   3. node n2 is lost: the attempt ends, the retry runs on the one node
#      left (min_nodes 1) from the last checkpoint, no step before it is
#      repeated; goodput shows the lost steps and the recovery; the
#      checkpoint's files are ciphertext; the audit log has the code and
#      dataset reads; lineage names the code;
#   4. a cancelled job: every rank gets SIGTERM, the program checkpoints
#      the step it is at and exits 16, the job ends cancelled.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

needs SLURM_CONF "$SCHED_BIN"
PY=/usr/bin/python3
if ! "$PY" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
	not_ok "PyTorch with gloo for $PY (Debian's python3-torch; deploy/deps installs it)"
	summary
	exit 1
fi
WORKER_BIN=$(dirname "$TRAIN_BIN")/trainyard-worker
TOL=1e-6
make_corpus
sched_quiet
SFX=$$
T=own-$SFX TO=own-other-$SFX
T_ID=$(tenant_new "$T")
tenant_new "$TO" >/dev/null
ALICE=$(member_new "$T" "own-alice-$SFX" editor)
OSCAR=$(member_new "$TO" "own-oscar-$SFX" editor)
JSON=(-H 'Content-Type: application/json')
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; }

# ---- the code and the data ----------------------------------------------------
SRC=$TY_TMP/src
mkdir -p "$SRC"
cp "$HERE/own_code/train.py" "$SRC/"
cp "$TY_ROOT/sdk/python/trainyard.py" "$SRC/" # a copy in the bundle, as docs/own-code.md says
tar -cf "$TY_TMP/code.tar" -C "$SRC" .
TOKEN=$ALICE
check_status "alice registers the code bundle" 201 POST "/v1/tenants/$T/code" "${JSON[@]}" \
	-d '{"name": "lm", "classification": "internal"}'
check_status "and uploads version 1" 201 POST "/v1/tenants/$T/code/lm/versions" \
	-H 'Content-Type: application/x-tar' --data-binary "@$TY_TMP/code.tar"
cat "$DATA"/train_*.bin >"$TY_TMP/shards.bin"
check_status "she registers the dataset" 201 POST "/v1/tenants/$T/datasets" "${JSON[@]}" \
	-d '{"name": "corpus", "classification": "internal"}'
check_status "and its token shards" 201 POST "/v1/tenants/$T/datasets/corpus/versions?format=tokens" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$TY_TMP/shards.bin"
TOKEN=$OSCAR
check_status "another tenant has a bundle of its own" 201 POST "/v1/tenants/$TO/code" "${JSON[@]}" \
	-d '{"name": "theirs", "classification": "internal"}'
check_status "with a version" 201 POST "/v1/tenants/$TO/code/theirs/versions" \
	-H 'Content-Type: application/x-tar' --data-binary "@$TY_TMP/code.tar"

# spec NAME JQ: the program on 2 nodes x 1 rank (down to 1 node), changed by JQ
spec() {
	jq -n --arg name "$1" '{name: $name, kind: "command", code: "lm@1",
		command: ["python3", "train.py", "--every", "4", "--step-sleep", "0.25"],
		env: {GLOO_SOCKET_IFNAME: "lo", PYTHONHASHSEED: "0"},
		data: {dataset: "corpus"},
		resources: {nodes: 2, min_nodes: 1, ranks_per_node: 1, time_limit_minutes: 10},
		training: {steps: 24}, checkpoint: {keep: 2},
		fault_tolerance: {max_restarts: 2, heartbeat_timeout_s: 60}}' | jq "$2"
}
jobs_of() { q "SELECT count(*) FROM jobs WHERE tenant_id = '$T_ID'"; }

# ---- 1. bad submissions ------------------------------------------------------
TOKEN=$ALICE
# refused JQ CODE POINTER DESC: the changed spec is refused: 422, CODE at POINTER
refused() {
	check_status "$4: 422" 422 POST "/v1/tenants/$T/jobs" "${JSON[@]}" -d "$(spec bad "$1")"
	check_json "$4: $2 at $3" "$2 $3" '[.errors[] | "\(.code) \(.pointer)"] | first'
}
refused '.command = "python3 train.py; rm -rf /"' command_not_argv /command "a shell string"
refused '.command = ["bash", "-c", "python3 train.py"]' command_not_argv /command/1 "a program string"
refused '.env.LD_PRELOAD = "/tmp/x.so"' env_not_allowed /env/LD_PRELOAD "an env name not allowed"
refused '.code = "nosuch"' unknown_code /code "an unknown code"
refused '.code = "theirs@1"' unknown_code /code "another tenant's code"
refused '.code = "lm@2"' unknown_code /code "a version that does not exist"
refused '.command = ["python3", "eval.py"]' command_not_in_bundle /command/1 "a script not in the bundle"
refused '.command = ["train.py"]' command_not_in_bundle /command/0 "a file of the bundle that is not executable"
check_eq "nothing of them is stored" 0 "$(jobs_of)"
check_eq "no code pinned" 0 "$(q "SELECT count(*) FROM job_code c JOIN jobs j ON j.id = c.job_id
	WHERE j.tenant_id = '$T_ID'")"

# ---- the reference: the program uninterrupted on 2 ranks, no services -------
mkdir -p "$TY_TMP/ref.data/train"
i=0
for f in "$DATA"/train_*.bin; do
	cp "$f" "$(printf '%s/ref.data/train/shard_%06d.bin' "$TY_TMP" "$i")"
	i=$((i + 1))
done
spec ref '.command = ["python3", "train.py", "--every", "4"] | .resources = {nodes: 1, ranks_per_node: 2}
	| del(.data)' >"$TY_TMP/ref.json"
check "the uninterrupted reference run (mpirun, 2 ranks)" env PATH="/usr/bin:$PATH" \
	"$WORKER_BIN" run --spec "$TY_TMP/ref.json" --code-dir "$SRC" --data-root "$TY_TMP/ref.data" \
	--ckpt-dir "$TY_TMP/ref.ck" --metrics-out "$TY_TMP/ref.metrics" --log-out "$TY_TMP/ref.log"
jq -r 'select(.type == "step") | "\(.step) \(.loss)"' "$TY_TMP/ref.metrics" >"$TY_TMP/ref.losses"
check_eq "it ran 24 steps" 24 "$(wc -l <"$TY_TMP/ref.losses")"

sched_start
trap 'sched_stop; stack_slurm start-node n2 >/dev/null 2>&1' EXIT
ckpt_at() { (($(q "SELECT count(*) FROM checkpoints WHERE job_id = '$1' AND step >= $2") > 0)); }
# job_losses JOB: "step loss" of every step, the last report of each
job_losses() {
	q "SELECT DISTINCT ON (m.step) m.step || ' ' || (m.data->>'loss') FROM job_metrics m
	    JOIN job_attempts a ON a.id = m.attempt_id WHERE m.job_id = '$1'
	    ORDER BY m.step, a.number DESC, m.at DESC"
}
# rank_pid JOB RANK: the program's process of that rank
rank_pid() {
	local p
	for p in $(pgrep -f 'python3 train.py'); do
		if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "TRAINYARD_JOB_ID=$1" &&
			tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$2"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}
# max_rel_diff A B: the largest relative difference of two "step loss" lists
# of the same steps, and where it is ("2.2e-06 at step 13: 4.51 4.51001")
max_rel_diff() {
	join <(sort -k1,1 "$1") <(sort -k1,1 "$2") | awk -v n="$(wc -l <"$1")" '
		{ d = $2 - $3; if (d < 0) d = -d; r = d / ($2 < 0 ? -$2 : $2)
		  if (r > m || c == 0) { m = r; at = $1 ": " $2 " " $3 }; c++ }
		END { if (c != n) print "steps differ"; else printf "%.3g at step %s\n", m, at }'
}

# ---- 2. a rank killed: the same layout again ---------------------------------
TOKEN=$ALICE
check_status "alice submits the command job" 201 POST "/v1/tenants/$T/jobs" "${JSON[@]}" \
	-d "$(spec kill-rank .)"
J=$(jb .id)
check_eq "its code is pinned at submission" "lm 1" \
	"$(q "SELECT b.name || ' ' || v.version FROM job_code c JOIN code_versions v ON v.id = c.version_id
		JOIN code_bundles b ON b.id = v.bundle_id WHERE c.job_id = '$J'")"
check "it runs on both nodes" wait_state "$J" 90 running
check "it passes its checkpoint of step 8" wait_until 90 ckpt_at "$J" 8
PID=$(rank_pid "$J" 1)
check "rank 1's process is found" test -n "$PID"
check_eq "it runs as the tenant's user, not root" "$(q "SELECT uid FROM tenant_identities WHERE tenant_id = '$T_ID'")" \
	"$(stat -c %u "/proc/$PID" 2>/dev/null)"
kill -KILL "$PID" 2>/dev/null
check "the job succeeds" wait_state "$J" 180 succeeded failed
check_eq "it succeeded" succeeded "$(job_state "$J")"
check_eq "in one attempt on 2 nodes" "1|2|succeeded" \
	"$(q "SELECT string_agg(concat_ws('|', number, nodes, outcome), ';') FROM job_attempts WHERE job_id = '$J'")"
check_eq "the worker ran the same 2 ranks again after rank_lost" "fallback: rank_lost 2 2" \
	"$(q "SELECT reason || ' ' || (detail->'from'->>'ranks') || ' ' || (detail->'to'->>'ranks')
		FROM job_events WHERE job_id = '$J' AND reason LIKE 'fallback:%'")"
job_losses "$J" >"$TY_TMP/kill.losses"
check_eq "every step's loss, from 1 to 24" "$(seq 1 24 | xargs)" "$(cut -d' ' -f1 "$TY_TMP/kill.losses" | xargs)"
d=$(max_rel_diff "$TY_TMP/ref.losses" "$TY_TMP/kill.losses")
check "losses equal the uninterrupted run's within $TOL (max relative $d)" \
	awk -v d="${d%% *}" -v t="$TOL" 'BEGIN { exit !(d != "steps" && d + 0 <= t + 0) }'

# ---- 3. a node lost: on one node from the checkpoint ---------------------------
check_status "alice submits it again, longer" 201 POST "/v1/tenants/$T/jobs" "${JSON[@]}" \
	-d "$(spec lose-node '.training.steps = 40')"
N=$(jb .id)
check "it runs on both nodes" wait_state "$N" 90 running
check "it passes its checkpoint of step 8" wait_until 90 ckpt_at "$N" 8
stack_slurm kill-node n2 >/dev/null
check "it fails over and succeeds" wait_state "$N" 240 succeeded failed
check_eq "it succeeded" succeeded "$(job_state "$N")"
check_match "attempt 1 on 2 nodes ended by the loss, attempt 2 on 1 node completed" \
	'^1\|2\|(node_failure|rank_lost);2\|1\|$' \
	"$(q "SELECT string_agg(concat_ws('|', number, nodes, failure_class), ';' ORDER BY number)
		FROM job_attempts WHERE job_id = '$N'")"
CKPT=$(q "SELECT steps_done - steps_lost FROM job_attempts WHERE job_id = '$N' AND number = 1")
check "attempt 1 ended past a checkpoint (every 4 steps)" test "$CKPT" -ge 8 -a "$((CKPT % 4))" -eq 0
check_eq "attempt 2 ran steps $((CKPT + 1))-40, nothing before" "$((CKPT + 1)) 40 $((40 - CKPT))" \
	"$(q "SELECT min(m.step) || ' ' || max(m.step) || ' ' || count(*) FROM job_metrics m
		JOIN job_attempts a ON a.id = m.attempt_id WHERE a.job_id = '$N' AND a.number = 2")"
check_eq "on one rank" 1 "$(q "SELECT DISTINCT m.data->'metrics'->>'world' FROM job_metrics m
	JOIN job_attempts a ON a.id = m.attempt_id WHERE a.job_id = '$N' AND a.number = 2")"
TOKEN=$ALICE
check_status "the job's goodput" 200 GET "/v1/jobs/$N/goodput"
LOST=$(q "SELECT steps_done - $CKPT FROM job_attempts WHERE job_id = '$N' AND number = 1")
check_json "two attempts, all 40 steps kept, attempt 1's past its checkpoint lost" "2 40 $LOST" \
	'"\(.attempts) \(.steps.kept) \(.steps.lost)"'
check_json "the failover cost recovery time" true '.badput_seconds.recovery > 0'
check_json "and it adds up to the wall time" true \
	'((.goodput_seconds + ([.badput_seconds[]] | add)) - .wall_seconds) | fabs < 0.01'
check_status "its checkpoints" 200 GET "/v1/jobs/$N/checkpoints"
check_json "the newest 2 (checkpoint.keep), the last at step 40" "2 40" \
	'"\(.items | length) \([.items[].step] | max)"'
CK=$(find "$TRAINYARD_STORAGE_ROOT/tenants/$T_ID/jobs/$N/checkpoints" -name 'shard_*.bin' | sort | tail -n 1)
check "a checkpoint file is stored" test -s "$CK"
check_eq "sealed: it begins with the platform's envelope" TYEC "$(head -c 4 "$CK")"
# (a zip archive's local header is "PK\3\4": two bytes alone turn up in 4 KiB of
# ciphertext one time in sixteen)
check "no plaintext of torch.save's archive in it" \
	bash -c "! LC_ALL=C grep -a -q -P 'data\\.pkl|PK\\x03\\x04' <(head -c 4096 '$CK' | tail -c +65)"
check_eq "the audit log has each attempt's code read" "3" \
	"$(q "SELECT count(*) FROM audit_log WHERE action = 'code.read' AND outcome = 'success'
		AND tenant_id = '$T_ID' AND resource = 'code/lm@1'")"
check "and its dataset reads" test "$(q "SELECT count(*) FROM audit_log WHERE action = 'dataset.read'
	AND outcome = 'success' AND tenant_id = '$T_ID'")" -ge 3
CID=$(q "SELECT id FROM checkpoints WHERE job_id = '$N' AND step = 40")
check_status "the last checkpoint's lineage" 200 GET "/v1/checkpoints/$CID/lineage"
check_json "names the code and the dataset" "lm 1 corpus" \
	'"\(.code.bundle) \(.code.version) \(.datasets[0].dataset)"'
y "$ALICE" job show "$N"
expect_rc "yardctl job show" 0
check_match "shows the command job and its goodput" 'goodput_s +[0-9.]+' "$OUT"
y "$ALICE" job metrics "$N" -o json
expect_rc "yardctl job metrics" 0
check_eq "every step's metrics, the last at 40" "40" "$(jq_out '[.. | objects | select(has("step")) | .step] | max')"
y "$ALICE" job logs "$N"
expect_rc "yardctl job logs" 0
check_match "the log has the program's resume, labelled with its rank" "0: rank 0: resumed from step $CKPT" "$OUT"
stack_slurm start-node n2 >/dev/null

# ---- 4. cancelled: every rank stops, the program's last checkpoint kept --------
check_status "alice submits a long one on one node" 201 POST "/v1/tenants/$T/jobs" "${JSON[@]}" \
	-d "$(spec cancel '.training.steps = 2000 | .resources.nodes = 1 | .resources.min_nodes = 1
		| .resources.ranks_per_node = 2 | .command[3] = "1000"')"
C=$(jb .id)
check "it reports steps" wait_steps "$C" 3 90
check_status "alice cancels it" 200 POST "/v1/jobs/$C/cancel"
check "it ends cancelled" wait_state "$C" 60 cancelled
no_rank() { ! rank_pid "$C" 0 >/dev/null && ! rank_pid "$C" 1 >/dev/null; }
check "no rank of it is left" wait_until 30 no_rank
LAST=$(q "SELECT max(step) FROM job_metrics WHERE job_id = '$C'")
check_eq "the program checkpointed the step it stopped at (SIGTERM, exit 16)" "$LAST" \
	"$(q "SELECT max(step) FROM checkpoints WHERE job_id = '$C'")"

summary
