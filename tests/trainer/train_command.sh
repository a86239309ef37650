#!/usr/bin/env bash
# train_command.sh - trainyard-worker runs a command job (a team's own
# program, docs/own-code.md) on this machine under mpirun, with no service:
# a bash program that speaks the report protocol by hand on two ranks, and
# sdk/c/example.c on one. Checked: the variables each rank gets, step
# reports as metrics, checkpoints taken from the program's directory into
# the store (manifests, keep), a rank killed mid-run and the same layout
# again from the newest checkpoint with the same losses as an uninterrupted
# run, a program that goes silent stopped as a hang, a report from another
# rank or of a bad shape ignored, exit statuses as failure classes.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"

WORKER_BIN=${BUILD:-build}/bin/trainyard-worker
case $WORKER_BIN in /*) ;; *) WORKER_BIN=$TY_ROOT/$WORKER_BIN ;; esac
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

CODE=$TY_TMP/code
mkdir -p "$CODE"
# The bash program. State: one integer w that each step moves a quarter of
# the way to 1000; the loss is (1000 - w) / 1000. Every rank keeps its own w
# (the same on every rank), writes it at each checkpoint, and rank 0 waits
# for every rank's file before it reports the checkpoint (the barrier).
cat >"$CODE/prog.sh" <<'SH'
#!/bin/bash
set -eu
report() { printf '%s\n' "$1" >&"$TRAINYARD_REPORT_FD"; }
env | grep -E '^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|TRAINYARD_[A-Z_]+|APP_[A-Z_]+)=' |
	sort >"$APP_OUT/env.$RANK.${TRAINYARD_RESUME_STEP:-0}"
steps=${TRAINYARD_STEPS:-12} start=1 w=0
if [[ -n ${TRAINYARD_RESUME_DIR:-} ]]; then
	read -r saved w <"$TRAINYARD_RESUME_DIR/rank$RANK.txt"
	[[ $saved == "$TRAINYARD_RESUME_STEP" ]] || exit 13
	start=$((saved + 1))
fi
report '{"type":"progress"}'
for ((step = start; step <= steps; step++)); do
	w=$((w + (1000 - w) / 4))
	if [[ ${APP_MODE:-} == die && $RANK == 1 && $step == 7 && -z ${TRAINYARD_RESUME_DIR:-} ]]; then
		kill -KILL $$
	fi
	if [[ ${APP_MODE:-} == hang && $step == 4 ]]; then
		sleep 60
	fi
	if [[ $RANK == 0 ]]; then
		loss=$(printf '0.%03d' $((1000 - w)))
		report "{\"type\":\"step\",\"step\":$step,\"loss\":$loss,\"tokens\":256,\"metrics\":{\"w\":$w}}"
	else
		# not rank 0's: logged and ignored
		report "{\"type\":\"step\",\"step\":$((step + 1000)),\"loss\":9}"
	fi
	if [[ ${APP_MODE:-} == bad && $RANK == 0 && $step == 2 ]]; then
		report '{"type":"step","step":"two"}'
		report 'not json'
	fi
	if ((step % 3 == 0)); then
		dir=$TRAINYARD_CHECKPOINT_DIR/$step
		mkdir -p -m 0700 "$dir/sub"
		printf '%s %s\n' "$step" "$w" >"$dir/rank$RANK.tmp"
		mv "$dir/rank$RANK.tmp" "$dir/rank$RANK.txt"
		if [[ $RANK == 0 ]]; then
			echo "rank 0 of $WORLD_SIZE" >"$dir/sub/meta"
			for ((r = 0; r < WORLD_SIZE; r++)); do
				until [[ -e $dir/rank$r.txt ]]; do sleep 0.05; done
			done
			report "{\"type\":\"checkpoint\",\"step\":$step}"
		fi
	fi
done
exit "${APP_EXIT:-0}"
SH
chmod 0755 "$CODE/prog.sh"

# spec FILE JQ: a command job of the bash program, changed by the jq filter
spec() {
	jq "$2" >"$1" <<'JSON'
{"name": "own", "kind": "command", "code": "prog@1", "command": ["bash", "prog.sh"],
 "env": {"APP_OUT": "", "APP_MODE": ""},
 "resources": {"nodes": 1, "ranks_per_node": 2},
 "training": {"steps": 12}, "checkpoint": {"keep": 2},
 "fault_tolerance": {"max_restarts": 2, "heartbeat_timeout_s": 30}}
JSON
}

# job NAME SPEC-FILE: the worker, its sinks and directories in $TY_TMP/NAME.*
job() {
	mkdir -p "$TY_TMP/$1.out"
	"$WORKER_BIN" run --spec "$2" --code-dir "$CODE" --work-dir "$(mkdir -p "$TY_TMP/$1.work" &&
		echo "$TY_TMP/$1.work")" --ckpt-dir "$TY_TMP/$1.ck" \
		--metrics-out "$TY_TMP/$1.metrics" --log-out "$TY_TMP/$1.log" \
		--events-out "$TY_TMP/$1.events" --set "env.APP_OUT=$TY_TMP/$1.out"
}
events() { jq -r "$2" "$TY_TMP/$1.events"; }
losses() { jq -r 'select(.type == "step") | "\(.step) \(.loss)"' "$TY_TMP/$1.metrics"; }

# ---- an uninterrupted run: 2 ranks, 12 steps, a checkpoint every 3 ---------
spec "$TY_TMP/ok.json" '.'
check "the program runs to the end (exit 0)" job ok "$TY_TMP/ok.json"
check_eq "every step reported, once, from rank 0 only" "$(seq 1 12 | xargs)" \
	"$(jq -r 'select(.type == "step") | .step' "$TY_TMP/ok.metrics" | xargs)"
check_eq "the loss as the program reported it" "1 0.75 2 0.563 12 0.033" \
	"$(losses ok | sed -n '1p;2p;12p' | xargs)"
check_eq "its named metric and tokens" "437 256" \
	"$(jq -r 'select(.type == "step" and .step == 2) | "\(.metrics.w) \(.tokens)"' \
		"$TY_TMP/ok.metrics" 2>/dev/null || true)"
check_eq "checkpoint_done at each reported step" "3 6 9 12" \
	"$(events ok 'select(.kind == "checkpoint_done") | .step' | xargs)"
check_eq "the newest 2 (checkpoint.keep) in the store" "9 12" "$(for s in 3 6 9 12; do
	test -s "$(printf '%s/ok.ck/step_%08d/manifest.json' "$TY_TMP" "$s")" && echo "$s"; done | xargs)"
m=$(printf '%s/ok.ck/step_%08d/manifest.json' "$TY_TMP" 12)
check_eq "the manifest lists the program's files" '["rank0.txt","rank1.txt","sub/meta"]' \
	"$(jq -c '.config.files' "$m" 2>/dev/null || true)"
check_eq "the manifest says a command job's" command "$(jq -r '.config.kind' "$m" 2>/dev/null || true)"
check_eq "the checkpoint directory is emptied once stored" "" \
	"$(find "$TY_TMP/ok.work" -mindepth 2 -type f 2>/dev/null | grep -v '/resume/' || true)"
check_eq "the outcome: succeeded, one launch" "succeeded 0 1" \
	"$(events ok 'select(.kind == "finish") | "\(.result) \(.exit) \(.launches)"')"
check_match "rank 1's step reports are refused, in the log" \
	'report of rank 1 is refused: steps and checkpoints count from rank 0 only' "$(cat "$TY_TMP/ok.log")"
e0=$TY_TMP/ok.out/env.0.0 e1=$TY_TMP/ok.out/env.1.0
check_eq "rank variables of rank 0" "RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2" \
	"$(grep -E '^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE)=' "$e0" | sort -t= -k1,1 |
		awk -F= '{v[$1]=$0} END {print v["RANK"], v["WORLD_SIZE"], v["LOCAL_RANK"], v["LOCAL_WORLD_SIZE"]}')"
check_eq "rank variables of rank 1" "RANK=1 LOCAL_RANK=1" \
	"$(awk -F= '$1 == "RANK" || $1 == "LOCAL_RANK"' "$e1" | sort | sed -n '2p;1p' | tac | xargs)"
check_eq "both ranks have one MASTER_ADDR:MASTER_PORT" 1 \
	"$(cat "$e0" "$e1" | grep -E '^MASTER_(ADDR|PORT)=' | sort -u | wc -l | awk '{print $1 / 2}')"
check_match "MASTER_PORT is a port" '^MASTER_PORT=[0-9]+$' "$(grep '^MASTER_PORT=' "$e0")"
check_eq "TRAINYARD_CODE_DIR is the code, TRAINYARD_STEPS the job's" \
	"TRAINYARD_CODE_DIR=$CODE TRAINYARD_STEPS=12" \
	"$(grep -E '^TRAINYARD_(CODE_DIR|STEPS)=' "$e0" | xargs)"
check_eq "no resume variables on a first launch" "" "$(grep '^TRAINYARD_RESUME' "$e0")"
check_eq "the report channel is set, the job's env passed" "1 1" \
	"$(grep -c '^TRAINYARD_REPORT_FD=[0-9]' "$e0") $(grep -c '^APP_MODE=$' "$e0")"

# ---- a rank killed at step 7: the same layout again from step 6 ------------
spec "$TY_TMP/die.json" '.env.APP_MODE = "die"'
check "after a lost rank the job still succeeds" job die "$TY_TMP/die.json"
check_eq "two launches: rank_lost, then the end" "launch_end:rank_lost launch_end:ok" \
	"$(events die 'select(.kind == "launch_end") | "launch_end:\(.class)"' | xargs)"
check_eq "the same layout again" "2 2" \
	"$(events die 'select(.kind == "fallback") | "\(.from.ranks) \(.to.ranks)"' 2>/dev/null |
		head -1 || true)"
check_eq "the second launch resumed at the checkpoint of step 6" \
	"TRAINYARD_RESUME_STEP=6" "$(grep '^TRAINYARD_RESUME_STEP=' "$TY_TMP/die.out/env.0.6" 2>/dev/null)"
# rank 0 may get to step 9 before the launch ends; its checkpoint waits for rank 1's file
check_match "the first launch got past step 6, not past 9" '^1 2 3 4 5 6( 7)?( 8)?( 9)?$' \
	"$(jq -r 'select(.type == "step" and .launch == 1) | .step' "$TY_TMP/die.metrics" | xargs)"
check_eq "the second launch did steps 7-12" "$(seq 7 12 | xargs)" \
	"$(jq -r 'select(.type == "step" and .launch == 2) | .step' "$TY_TMP/die.metrics" | xargs)"
check_eq "losses equal the uninterrupted run's" "$(losses ok)" \
	"$(jq -r 'select(.type == "step" and (.launch == 2 or .step <= 6)) | "\(.step) \(.loss)"' \
		"$TY_TMP/die.metrics")"
check_match "the log names the rank that died" 'rank 1 ended by a signal' "$(cat "$TY_TMP/die.log")"

# ---- silence: no report for heartbeat_timeout_s -----------------------------
spec "$TY_TMP/hang.json" '.env.APP_MODE = "hang" | .fault_tolerance = {max_restarts: 0, heartbeat_timeout_s: 10}'
check_fails "a silent program is stopped (exit 12, as comm_failure)" 12 job hang "$TY_TMP/hang.json"
check_eq "its launch ended as a hang" "hang" \
	"$(events hang 'select(.kind == "launch_end") | .class' | xargs)"

# ---- bad reports are logged and skipped -------------------------------------
spec "$TY_TMP/bad.json" '.env.APP_MODE = "bad" | .training.steps = 3'
check "a program with bad reports still succeeds" job bad "$TY_TMP/bad.json"
check_eq "the good reports count" "1 2 3" \
	"$(jq -r 'select(.type == "step") | .step' "$TY_TMP/bad.metrics" | xargs)"
check_eq "the log names both bad reports" 2 \
	"$(grep -c 'a report of rank 0 is refused' "$TY_TMP/bad.log")"

# ---- exit statuses ----------------------------------------------------------
spec "$TY_TMP/oom.json" '.env.APP_EXIT = "11" | .training.steps = 2 | .fault_tolerance.max_restarts = 0'
job oom "$TY_TMP/oom.json"
check_eq "exit 11 is out_of_memory" "out_of_memory" \
	"$(events oom 'select(.kind == "launch_end") | .class' | head -1)"
spec "$TY_TMP/data.json" '.env.APP_EXIT = "13" | .training.steps = 2'
check_fails "exit 13 is a data error, not retried" 13 job data "$TY_TMP/data.json"
check_eq "one launch only" 1 "$(events data 'select(.kind == "launch_end") | .class' | wc -l)"

# ---- a C program: sdk/c/example.c, one rank, resumed after SIGTERM ----------
mkdir -p "$TY_TMP/ccode"
check "sdk/c/example.c compiles warning-free" cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall \
	-Wextra -Werror -I "$TY_ROOT/sdk/c" -o "$TY_TMP/ccode/example" "$TY_ROOT/sdk/c/example.c"
jq -n '{name: "c", kind: "command", code: "c@1", command: ["example"],
	env: {APP_UNUSED: ""}, resources: {nodes: 1, ranks_per_node: 1},
	training: {steps: 10}, checkpoint: {keep: 3}}' >"$TY_TMP/c.json"
check "the C program runs to the end" "$WORKER_BIN" run --spec "$TY_TMP/c.json" \
	--code-dir "$TY_TMP/ccode" --ckpt-dir "$TY_TMP/c.ck" --metrics-out "$TY_TMP/c.metrics" \
	--log-out "$TY_TMP/c.log" --events-out "$TY_TMP/c.events"
check_eq "its steps" "$(seq 1 10 | xargs)" \
	"$(jq -r 'select(.type == "step") | .step' "$TY_TMP/c.metrics" | xargs)"
check_eq "its checkpoints: every 5 and the last" "5 10" \
	"$(events c 'select(.kind == "checkpoint_done") | .step' | xargs)"
check_match "its loss, lr and grad norm" '"loss":0.75,.*"lr":0.001' \
	"$(jq -c 'select(.type == "step" and .step == 1)' "$TY_TMP/c.metrics")"

summary
