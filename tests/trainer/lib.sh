# tests/trainer/lib.sh - shared set-up of the trainer tests.
# shellcheck shell=bash
#
# Sourced after tests/integration/lib.sh. Provides a small corpus of token
# shards in the data root $DATA, a job spec for the tiny model (its data
# path relative to that root), and helpers to run the trainer on one rank
# or several (mpirun on this machine, --data-root $DATA) and to read its
# metrics.

TRAIN_BIN=${TRAIN_BIN:-${BUILD:-build}/bin/trainyard-train}
case $TRAIN_BIN in /*) ;; *) TRAIN_BIN=$TY_ROOT/$TRAIN_BIN ;; esac
# Under a sanitizer build (make SANITIZE=...), ASan and UBSan stay on, but
# leak reports are off for the trainer program: OpenMPI and OpenBLAS keep
# allocations until exit that LeakSanitizer cannot tell from leaks. The
# trainer's own code is leak-checked by its unit tests (test_train_*).
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
# SANITIZED is read by the scripts that source this file.
# shellcheck disable=SC2034
if ldd "$TRAIN_BIN" 2>/dev/null | grep -q -E 'lib(asan|ubsan)'; then SANITIZED=1; else SANITIZED=0; fi

DATA=$TY_TMP/data
mkdir -p "$DATA"

# make_corpus: a deterministic text of about 120 KB, tokenized into shards.
make_corpus() {
	awk 'BEGIN { for (i = 1; i <= 2500; i++)
		printf "the quick brown fox %d jumps over the lazy dog %d and runs home\n",
			(i * 7919) % 1000, i }' >"$DATA/corpus.txt"
	"$TRAIN_BIN" tokenize --out "$DATA/train" --shard-tokens 40000 "$DATA/corpus.txt" >/dev/null
}

# spec FILE: the tiny model on the corpus; one rank, global batch 8.
spec() {
	cat >"$1" <<JSON
{"name": "train-test", "model": {"preset": "tiny"},
 "data": {"train": "train_*.bin"},
 "parallel": {"data_parallel": 1, "micro_batch": 4, "global_batch": 8},
 "resources": {"nodes": 1, "ranks_per_node": 1},
 "training": {"steps": 20, "lr": 0.002, "warmup_steps": 2, "seed": 7, "weight_decay": 0.1},
 "checkpoint": {"every_steps": 5, "keep": 3}}
JSON
}

# train1 ARGS...: one process, one OpenMP thread, the data root $DATA.
train1() { OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$DATA" "$@"; }

# trainN N ARGS...: N ranks under mpirun, one thread each, the data root $DATA.
trainN() {
	local n=$1
	shift
	mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" \
		-x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 -x ASAN_OPTIONS "$TRAIN_BIN" train \
		--data-root "$DATA" "$@"
}

# losses FILE: "step loss" per line from a metrics file.
losses() { jq -r 'select(.type == "step") | "\(.step) \(.loss)"' "$1"; }

# max_rel_diff A B: the largest relative difference of the losses of two runs.
max_rel_diff() {
	awk 'NR == FNR { a[$1] = $2; next }
		($1 in a) { d = a[$1] - $2; if (d < 0) d = -d; b = a[$1] < 0 ? -a[$1] : a[$1]
			r = d / b; if (r > m) m = r; n++ }
		END { if (n == 0) print "none"; else printf "%.3g\n", m }' <(losses "$1") <(losses "$2")
}

# within X LIMIT: X is a number no larger than LIMIT.
within() { awk -v x="$1" -v l="$2" 'BEGIN { exit !(x != "none" && x + 0 <= l + 0) }'; }

WORKER_BIN=$(dirname "$TRAIN_BIN")/trainyard-worker

# job NAME SPEC-FILE ARGS...: trainyard-worker run on the data root $DATA,
# with its checkpoints and sinks in $TY_TMP/NAME.*
job() {
	local name=$1 spec=$2
	shift 2
	"$WORKER_BIN" run --spec "$spec" --ckpt-dir "$TY_TMP/$name.ck" --data-root "$DATA" \
		--metrics-out "$TY_TMP/$name.metrics" --log-out "$TY_TMP/$name.log" \
		--events-out "$TY_TMP/$name.events" "$@"
}

# events NAME JQ: the filter over the events of job NAME, one result a line
events() { jq -r "$2" "$TY_TMP/$1.events"; }

# launch_losses NAME N FILE: the "step loss" lines of job NAME's launch N, as a metrics file
launch_losses() { jq -c "select(.launch == $2)" "$TY_TMP/$1.metrics" >"$3"; }

# kill_rank_at STEP LOG SPEC: once LOG has step STEP's metrics line (within
# 120 s), SIGKILL the last trainyard-train rank started with --spec SPEC;
# prints its pid ("" when none was found).
kill_rank_at() {
	local i rank
	for ((i = 0; i < 6000; i++)); do
		grep -q "\"step\":$1," "$2" 2>/dev/null && break
		sleep 0.02
	done
	rank=$(pgrep -f "^[^ ]*trainyard-train train --spec $3" | tail -n 1)
	[[ -n $rank ]] && kill -KILL "$rank"
	echo "$rank"
}
