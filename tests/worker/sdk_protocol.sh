#!/usr/bin/env bash
# sdk_protocol.sh - the report protocol's clients (sdk/README.md) against
# the protocol: the Python module (sdk/python/trainyard.py) and the C
# header (sdk/c/trainyard.h, with sdk/c/example.c), each run as a rank
# whose report descriptor is a file. Checks the lines they write (jq),
# rank 0 only for steps and checkpoints, NaN losses as null, the line
# limit, the checkpoint directory, resume, the exit statuses of running
# out of memory and of a stop on SIGTERM, and silence outside the
# platform. Needs python3 (PY, default /usr/bin/python3), a C compiler
# (CC, default gcc) and jq; no services.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"

PY=${PY:-/usr/bin/python3}
CC=${CC:-gcc}
SDK=$TY_ROOT/sdk
CFLAGS=(-std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic)

# The programs run as the platform would start them, with only what each
# check sets: none of the protocol's variables come from the caller.
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT \
	TRAINYARD_REPORT_FD TRAINYARD_CHECKPOINT_DIR TRAINYARD_RESUME_DIR TRAINYARD_RESUME_STEP \
	TRAINYARD_DATA_DIR TRAINYARD_JOB_ID TRAINYARD_ATTEMPT TRAINYARD_STEPS
CKPT=$TY_TMP/ckpt
mkdir -m 0700 "$CKPT"
export TRAINYARD_CHECKPOINT_DIR=$CKPT

# lines FILE: its lines as compact JSON (jq -c), or "(not JSON)".
lines() { jq -c . "$1" 2>/dev/null || echo "(not JSON)"; }

# ---- the Python module --------------------------------------------------

cat >"$TY_TMP/prog.py" <<'PY'
import math, os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import trainyard

case = sys.argv[2]
if case == "rank0" or case == "rank1":
    trainyard.progress()
    trainyard.report_step(1, loss=2.5, tokens=4096, lr=0.001, grad_norm=0.75,
                          acc=0.5, **{"val/loss": 2.75, "skip": math.inf})
    trainyard.report_step(2, loss=math.nan, lr=math.inf)
    trainyard.progress(step=2)
    d = trainyard.checkpoint_dir(5)
    with open(os.path.join(d, "model.bin"), "wb") as f:
        f.write(b"weights")
    trainyard.checkpoint_done(5)
elif case == "limit":
    # metrics that make the line exactly LINE_MAX bytes, then one byte more
    def size(m):
        return len(trainyard._line({"type": "step", "step": 3, "metrics": m}))
    m = {}
    while size(m) + 62 <= trainyard.LINE_MAX:  # ,"m00000xxx...":1
        m["m%05d%s" % (len(m), "x" * 50)] = 1
    left = trainyard.LINE_MAX - size(m)
    names = list(m)
    m = {}
    for n in names:
        m[n + "y" * min(8, left)] = 1
        left -= min(8, left)
    assert size(m) == trainyard.LINE_MAX, size(m)
    trainyard.report_step(3, **m)
    del m[n]
    m[n + "z"] = 1
    try:
        trainyard.report_step(4, **m)
        print("not refused")
    except ValueError:
        print("refused")
elif case == "errors":
    def err(f, *a, **k):
        try:
            f(*a, **k)
            return "none"
        except Exception as e:
            return type(e).__name__
    print(err(trainyard.report_step, 0), err(trainyard.report_step, 1, tokens=-1),
          err(trainyard.report_step, 1, **{"a b": 1}), err(trainyard.report_step, 1, **{"x" * 65: 1}),
          err(trainyard.report_step, 1, loss="1"), err(trainyard.report_step, True),
          err(trainyard.checkpoint_done, 0), err(trainyard.progress, -1),
          err(trainyard.checkpoint_dir, 0))
elif case == "env":
    print(trainyard.rank(), trainyard.world_size(), trainyard.local_rank(),
          trainyard.local_world_size(), trainyard.resume(), trainyard.data_dir(), trainyard.steps())
elif case == "oom":
    def main():
        raise MemoryError("pretend")
    trainyard.run(main)
elif case == "stop":
    def main():
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not trainyard.should_stop() and time.monotonic() < deadline:
            time.sleep(0.01)
        trainyard.checkpoint_done(7)
    trainyard.run(main)
    print("run returned")
elif case == "ok":
    print(trainyard.run(lambda: 42), trainyard.should_stop())
PY

# py OUT CASE [VAR=VALUE...]: run CASE of prog.py with its reports into OUT.
py() {
	local out=$1 case=$2
	shift 2
	env "$@" TRAINYARD_REPORT_FD=7 "$PY" "$TY_TMP/prog.py" "$SDK/python" "$case" 7>"$out"
}

check "python: rank 0 reports" py "$TY_TMP/py0.jsonl" rank0
check_eq "python: rank 0's lines are the expected objects, in order" \
	'{"type":"progress"}
{"type":"step","step":1,"loss":2.5,"tokens":4096,"lr":0.001,"grad_norm":0.75,"metrics":{"acc":0.5,"val/loss":2.75}}
{"type":"step","step":2,"loss":null}
{"type":"progress","step":2}
{"type":"checkpoint","step":5}' "$(lines "$TY_TMP/py0.jsonl")"
check_eq "python: the lines are compact and end in a newline" \
	'{"type":"step","step":2,"loss":null}' "$(sed -n 3p "$TY_TMP/py0.jsonl")"
check_eq "python: the checkpoint directory of step 5 is made, mode 0700" 700 \
	"$(stat -c %a "$CKPT/5" 2>&1)"
check_eq "python: and the program's file is in it" weights "$(cat "$CKPT/5/model.bin" 2>&1)"

check "python: rank 1 reports" py "$TY_TMP/py1.jsonl" rank1 RANK=1 WORLD_SIZE=2
check_eq "python: rank 1 sends its heartbeats only" \
	'{"type":"progress"}
{"type":"progress","step":2}' "$(lines "$TY_TMP/py1.jsonl")"

check_eq "python: a line of exactly 65536 bytes is sent, one byte more refused" refused \
	"$(py "$TY_TMP/pylimit.jsonl" limit 2>&1)"
check_eq "python: the 65536-byte line is the only one written" "1 65536" \
	"$(wc -l <"$TY_TMP/pylimit.jsonl") $(wc -c <"$TY_TMP/pylimit.jsonl")"
check_eq "python: bad arguments are refused (ValueError, TypeError)" \
	"ValueError ValueError ValueError ValueError TypeError TypeError ValueError ValueError ValueError" \
	"$(py "$TY_TMP/pyerr.jsonl" errors 2>&1)"
check_eq "python: and send nothing" 0 "$(wc -c <"$TY_TMP/pyerr.jsonl")"

check_eq "python: the environment's defaults outside the platform" "0 1 0 1 None None None" \
	"$(py /dev/null env 2>&1)"
check_eq "python: the environment as the platform sets it" \
	"3 4 1 2 (12, '$CKPT/5') /data 100" \
	"$(py /dev/null env RANK=3 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 \
		TRAINYARD_RESUME_DIR="$CKPT/5" TRAINYARD_RESUME_STEP=12 TRAINYARD_DATA_DIR=/data \
		TRAINYARD_STEPS=100 2>&1)"
check_fails "python: a malformed RANK is an error" 1 py /dev/null env RANK=x

check_fails "python: run() exits 11 on MemoryError" 11 py "$TY_TMP/pyoom.jsonl" oom
check_fails "python: run() exits 16 when main returns after SIGTERM" 16 py "$TY_TMP/pystop.jsonl" stop
check_eq "python: the stopping program's checkpoint report was sent" '{"type":"checkpoint","step":7}' \
	"$(lines "$TY_TMP/pystop.jsonl")"
check_eq "python: run() returns main's value when no stop came" "42 False" \
	"$(py /dev/null ok 2>&1)"

# Outside the platform: no descriptor; checkpoints go to ./checkpoints.
mkdir -p "$TY_TMP/pylocal"
out=$(cd "$TY_TMP/pylocal" && env -u TRAINYARD_CHECKPOINT_DIR "$PY" "$TY_TMP/prog.py" \
	"$SDK/python" rank0 7>"$TY_TMP/pylocal.jsonl" 2>&1)
check_eq "python: without TRAINYARD_REPORT_FD the reports are silent no-ops" "0 ''" \
	"$? '$out'"
check_eq "python: nothing reaches an open descriptor the variable does not name" 0 \
	"$(wc -c <"$TY_TMP/pylocal.jsonl")"
check_eq "python: the checkpoint went to checkpoints/5 in the working directory, 0700" 700 \
	"$(stat -c %a "$TY_TMP/pylocal/checkpoints/5" 2>&1)"

# ---- the C header --------------------------------------------------------

cat >"$TY_TMP/edges.c" <<'C'
#include "trainyard.h"

#include <string.h>

static char name[1100][66];
static ty_metric m[1100];

int main(int argc, char **argv)
{
	ty_metric two[] = {{"acc", 0.5}, {"val/loss", 2.75}, {"skip", INFINITY}};
	ty_step s = TY_STEP_INIT(1);
	size_t n = 0, len;
	int rc;
	char dir[64];

	if (argc > 1 && strcmp(argv[1], "stop") == 0) {
		if (ty_should_stop())
			return 1;
		kill(getpid(), SIGTERM);
		return ty_should_stop() ? TY_EXIT_STOPPED : 2;
	}
	ty_report_progress(-1);
	s.has_loss = 1;
	s.loss = 2.5;
	s.tokens = 4096;
	s.lr = 0.001;
	s.grad_norm = 0.75;
	s.metrics = two;
	s.n_metrics = 3;
	printf("%d", ty_report_step_ex(&s));
	printf(" %d", ty_report_step(2, NAN, -1, NAN, NAN));
	printf(" %d", ty_report_progress(2));
	printf(" %d", ty_checkpoint_dir(6, dir, sizeof(dir)));
	printf(" %d", ty_report_checkpoint(6));
	/* metrics that make the line exactly TY_LINE_MAX bytes, then one byte more */
	len = strlen("{\"type\":\"step\",\"step\":3,\"metrics\":{}}\n");
	while (len < TY_LINE_MAX) {
		size_t room = TY_LINE_MAX - len - (n ? 1 : 0) - 4; /* ,"":1 */
		size_t k = room < 60 ? room : 60;
		char id[8];

		snprintf(id, sizeof(id), "m%05zu", n); /* k is never below 6 here */
		memset(name[n], 'x', k);
		memcpy(name[n], id, 6);
		m[n].name = name[n];
		m[n].value = 1;
		len += (n ? 1 : 0) + 4 + k;
		n++;
	}
	s = (ty_step)TY_STEP_INIT(3);
	s.metrics = m;
	s.n_metrics = n;
	rc = ty_report_step_ex(&s);
	printf(" %d", rc);
	strcat(name[n - 1], "y");
	s.step = 4;
	rc = ty_report_step_ex(&s);
	printf(" %d:%s", rc, errno == EMSGSIZE ? "EMSGSIZE" : strerror(errno));
	/* refused arguments */
	errno = 0;
	rc = ty_report_step(0, 1, 1, 1, 1);
	printf(" %d:%d", rc, errno == EINVAL);
	two[1].name = "a b";
	s = (ty_step)TY_STEP_INIT(1);
	s.metrics = two;
	s.n_metrics = 2;
	rc = ty_report_step_ex(&s);
	printf(" %d:%d", rc, errno == EINVAL);
	two[1].name = "acc";
	rc = ty_report_step_ex(&s);
	printf(" %d:%d", rc, errno == EINVAL);
	rc = ty_report_checkpoint(0);
	printf(" %d:%d", rc, errno == EINVAL);
	rc = ty_checkpoint_dir(7, dir, 4);
	printf(" %d:%d", rc, errno == ERANGE);
	printf(" rank=%d/%d local=%d/%d steps=%ld resume=%ld:%s data=%s\n", ty_rank(),
	       ty_world_size(), ty_local_rank(), ty_local_world_size(), ty_steps(),
	       ty_resume_step(), ty_resume_dir() ? ty_resume_dir() : "-",
	       ty_data_dir() ? ty_data_dir() : "-");
	return 0;
}
C

check "c: trainyard.h and example.c compile warning-free (-Werror -pedantic)" \
	"$CC" "${CFLAGS[@]}" -I "$SDK/c" -o "$TY_TMP/example" "$SDK/c/example.c"
check "c: a program of the header's edge cases compiles likewise" \
	"$CC" "${CFLAGS[@]}" -I "$SDK/c" -o "$TY_TMP/edges" "$TY_TMP/edges.c"
check "c: and so does the header in a C11 file without _POSIX_C_SOURCE" \
	"$CC" -std=c11 -Wall -Wextra -Werror -pedantic -I "$SDK/c" -fsyntax-only "$TY_TMP/edges.c"

# c OUT PROGRAM [VAR=VALUE...]: run PROGRAM (in $TY_TMP) with its reports into OUT.
c() {
	local out=$1 prog=$2
	shift 2
	env "$@" TRAINYARD_REPORT_FD=7 "$TY_TMP/$prog" 7>"$out"
}

edges_want="0 0 0 0 0 0 -1:EMSGSIZE -1:1 -1:1 -1:1 -1:1 -1:1"
check_eq "c: every call answers as documented (rank 0)" \
	"$edges_want rank=0/1 local=0/1 steps=-1 resume=-1:- data=-" \
	"$(c "$TY_TMP/c0.jsonl" edges 2>&1)"
check_eq "c: rank 0's lines are the expected objects, in order" \
	'{"type":"progress"}
{"type":"step","step":1,"loss":2.5,"tokens":4096,"lr":0.001,"grad_norm":0.75,"metrics":{"acc":0.5,"val/loss":2.75}}
{"type":"step","step":2,"loss":null}
{"type":"progress","step":2}
{"type":"checkpoint","step":6}
{"type":"step","step":3}' "$(lines "$TY_TMP/c0.jsonl" | jq -c 'del(.metrics | select(length > 100))')"
check_eq "c: the 65536-byte line was sent whole" 65536 "$(sed -n 6p "$TY_TMP/c0.jsonl" | wc -c)"
check_eq "c: a NaN loss is null on the wire" '{"type":"step","step":2,"loss":null}' \
	"$(sed -n 3p "$TY_TMP/c0.jsonl")"
check_eq "c: the checkpoint directory of step 6 is made, mode 0700" 700 "$(stat -c %a "$CKPT/6" 2>&1)"

check_eq "c: on rank 1 steps and checkpoints succeed and the environment reads back" \
	"$edges_want rank=1/2 local=1/2 steps=9 resume=5:$CKPT/5 data=/data" \
	"$(c "$TY_TMP/c1.jsonl" edges RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 \
		TRAINYARD_STEPS=9 TRAINYARD_RESUME_DIR="$CKPT/5" TRAINYARD_RESUME_STEP=5 \
		TRAINYARD_DATA_DIR=/data 2>&1)"
check_eq "c: rank 1 sends its heartbeats only" '{"type":"progress"}
{"type":"progress","step":2}' "$(lines "$TY_TMP/c1.jsonl")"

check_eq "c: a malformed RANK refuses step and checkpoint reports, not heartbeats" \
	"-1 -1 0 0 -1 -1 -1:Invalid" "$(c /dev/null edges RANK=x 2>&1 | cut -d' ' -f1-7)"

# The example: 12 steps, checkpoints at 5, 10 and the last.
check "c: the example trains 12 steps" c "$TY_TMP/ex1.jsonl" example TRAINYARD_STEPS=12
check_eq "c: a heartbeat, then steps 1-12 with checkpoints after 5, 10 and 12" \
	"progress 1 2 3 4 5 ckpt5 6 7 8 9 10 ckpt10 11 12 ckpt12" \
	"$(jq -r 'if .type == "step" then .step elif .type == "checkpoint" then "ckpt\(.step)"
		else .type end' "$TY_TMP/ex1.jsonl" 2>&1 | paste -sd' ')"
check_eq "c: step lines carry loss, tokens, lr and grad_norm" true \
	"$(jq -s '[.[] | select(.type == "step") | (.loss | type) == "number" and .tokens == 4096
		and .lr == 0.001 and (.grad_norm | type) == "number"] | length == 12 and all' \
		"$TY_TMP/ex1.jsonl" 2>&1)"
check_eq "c: each checkpoint's file was written and closed before its report" \
	"5 10 12" "$(cut -d' ' -f1 "$CKPT/5/state.txt" "$CKPT/10/state.txt" "$CKPT/12/state.txt" \
		2>&1 | paste -sd' ')"

check "c: the example resumes from the checkpoint of step 10" c "$TY_TMP/ex2.jsonl" example \
	TRAINYARD_STEPS=12 TRAINYARD_RESUME_DIR="$CKPT/10" TRAINYARD_RESUME_STEP=10
check_eq "c: it continues with step 11, and its steps 11 and 12 are the first run's" \
	"$(jq -c 'select(.type != "progress" and (.step // 0) > 10)' "$TY_TMP/ex1.jsonl")" \
	"$(jq -c 'select(.type != "progress")' "$TY_TMP/ex2.jsonl" 2>&1)"

# SIGTERM while it trains: it checkpoints the step it finished and exits 16.
TRAINYARD_STEPS=100000 EXAMPLE_STEP_MS=20 TRAINYARD_REPORT_FD=7 "$TY_TMP/example" \
	7>"$TY_TMP/ex3.jsonl" >"$TY_TMP/ex3.log" 2>&1 &
pid=$!
if wait_until 5 grep -q '"step":3,' "$TY_TMP/ex3.jsonl"; then
	kill -TERM "$pid"
else
	kill -KILL "$pid"
fi
rc=0
wait "$pid" || rc=$?
check_eq "c: the example exits 16 after SIGTERM" 16 "$rc"
last=$(tail -n 2 "$TY_TMP/ex3.jsonl" | jq -r '"\(.type) \(.step)"' 2>&1 | paste -sd' ')
check_match "c: its last lines are a step and that step's checkpoint" \
	'^step ([0-9]+) checkpoint ([0-9]+)$' "$last"
step=${last##* }
check_eq "c: and the checkpoint's state is on disk" "$step" \
	"$(cut -d' ' -f1 "$CKPT/$step/state.txt" 2>&1)"
check_fails "c: ty_should_stop() is 0, then 1 after a SIGTERM sent to itself" 16 "$TY_TMP/edges" stop

# One write() a line, seen by strace where there is one.
if command -v strace >/dev/null && strace -o /dev/null true 2>/dev/null; then
	for prog in py c; do
		if [[ $prog == py ]]; then
			run=("$PY" "$TY_TMP/prog.py" "$SDK/python" rank0)
		else
			run=("$TY_TMP/example")
		fi
		TRAINYARD_STEPS=6 TRAINYARD_REPORT_FD=7 strace -f -e trace=write -o "$TY_TMP/$prog.strace" \
			"${run[@]}" 7>"$TY_TMP/$prog-strace.jsonl" >/dev/null 2>&1
		check_eq "$prog: each line is one write() (strace)" \
			"$(wc -l <"$TY_TMP/$prog-strace.jsonl") lines" \
			"$(grep -c 'write(7, ' "$TY_TMP/$prog.strace") lines"
	done
else
	echo "# skipped: no strace to count the write() calls"
fi

# Outside the platform: silent, checkpoints in ./checkpoints.
mkdir -p "$TY_TMP/clocal"
out=$(cd "$TY_TMP/clocal" && env -u TRAINYARD_CHECKPOINT_DIR TRAINYARD_STEPS=6 \
	"$TY_TMP/example" 7>"$TY_TMP/clocal.jsonl" 2>&1)
check_eq "c: without TRAINYARD_REPORT_FD the example runs, reports nothing" \
	"0 'finished 6 steps' 0" "$? '$out' $(wc -c <"$TY_TMP/clocal.jsonl")"
check_eq "c: its checkpoints went to checkpoints/ in the working directory, 0700" "700 700" \
	"$(stat -c %a "$TY_TMP/clocal/checkpoints/5" "$TY_TMP/clocal/checkpoints/6" 2>&1 | paste -sd' ')"

summary
