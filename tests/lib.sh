# tests/lib.sh - shared bash functions of tests/run and tests/run-unit.
# shellcheck shell=bash
#
# Runs test programs and tallies their results. Two kinds are understood:
#   check programs (unit and C integration tests), which print one or more
#     "NN%: Checks: C, Failures: F, Errors: E" lines;
#   shell scripts (tests/integration/*.sh), which print "ok - ..." and
#     "not ok - ..." lines and end with "N passed, N failed".
# A program that crashes, times out, exits non-zero without reporting a
# failure, or prints no summary line counts as one more failure.
#
# Counters: SUITE_PASSED/SUITE_FAILED for the suite being run,
# TOTAL_PASSED/TOTAL_FAILED over every suite. The output of a failed
# program is printed; all output is kept under TEST_LOG_DIR.
#
# Settings: TEST_TIMEOUT (seconds per program, default 600),
# TEST_LOG_DIR (where logs go; set by the caller).

TOTAL_PASSED=0
TOTAL_FAILED=0
SUITE_NAME=
SUITE_PASSED=0
SUITE_FAILED=0
SUITE_LINES=()

: "${UBSAN_OPTIONS:=print_stacktrace=1}"
export UBSAN_OPTIONS

suite_begin() { # suite_begin NAME
	SUITE_NAME=$1
	SUITE_PASSED=0
	SUITE_FAILED=0
	echo "== $SUITE_NAME"
}

suite_end() {
	local line="$SUITE_NAME: $SUITE_PASSED passed, $SUITE_FAILED failed"
	SUITE_LINES+=("$line")
	echo "== $line"
	TOTAL_PASSED=$((TOTAL_PASSED + SUITE_PASSED))
	TOTAL_FAILED=$((TOTAL_FAILED + SUITE_FAILED))
}

# suite_fail WHY: count one failure that is not a program's (a stack that
# would not start, say).
suite_fail() {
	echo "FAIL $1"
	SUITE_FAILED=$((SUITE_FAILED + 1))
}

# Print every suite's line, then the overall line; false on any failure.
totals_print() {
	local line
	if ((${#SUITE_LINES[@]} > 1)); then
		for line in "${SUITE_LINES[@]}"; do
			echo "$line"
		done
	fi
	echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
	((TOTAL_FAILED == 0))
}

# _run_logged LOG PROGRAM...: run with the timeout, output to LOG; sets RUN_RC.
_run_logged() {
	local log=$1
	shift
	RUN_RC=0
	# The braces keep bash's own "Aborted" notices out of the output.
	{ timeout -k 10 "${TEST_TIMEOUT:-600}" "$@" </dev/null >"$log" 2>&1; } 2>/dev/null || RUN_RC=$?
}

_log_path() { # _log_path PROGRAM
	local dir=${TEST_LOG_DIR:-${TMPDIR:-/tmp}}
	mkdir -p "$dir"
	printf '%s/%s.log\n' "$dir" "$(basename "$1")"
}

# _report NAME PASSED FAILED LOG WHY: add to the suite and say how it went.
_report() {
	local name=$1 passed=$2 failed=$3 log=$4 why=$5
	SUITE_PASSED=$((SUITE_PASSED + passed))
	SUITE_FAILED=$((SUITE_FAILED + failed))
	if ((failed == 0)); then
		echo "PASS $name ($passed passed)"
		return 0
	fi
	echo "FAIL $name ($passed passed, $failed failed${why:+; $why})"
	echo "---- output of $name (last 200 lines; all of it in $log)"
	tail -n 200 "$log"
	echo "----"
	return 1
}

_rc_reason() { # _rc_reason RC
	case $1 in
	0) ;;
	124 | 137) echo "timed out after ${TEST_TIMEOUT:-600}s" ;;
	*) if (($1 > 128)); then echo "killed by signal $(($1 - 128))"; else echo "exit status $1"; fi ;;
	esac
}

# run_check PROGRAM: run one check program and add its cases to the suite.
run_check() { # run_check PROGRAM [COMMAND...]: COMMAND (default PROGRAM) runs it
	local prog=$1 name log line re checks=0 failed=0 seen=0 why=
	shift
	(($#)) || set -- "$prog"
	name=$(basename "$prog")
	log=$(_log_path "$prog")
	_run_logged "$log" "$@"
	re='([0-9]+)%: Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+)'
	while IFS= read -r line; do
		if [[ $line =~ $re ]]; then
			seen=1
			checks=$((checks + BASH_REMATCH[2]))
			failed=$((failed + BASH_REMATCH[3] + BASH_REMATCH[4]))
		fi
	done <"$log"
	why=$(_rc_reason "$RUN_RC")
	if ((!seen)); then
		failed=$((failed + 1))
		why="no check summary line${why:+, $why}"
	elif ((RUN_RC != 0 && failed == 0)); then
		failed=1
	fi
	_report "$name" $((checks - failed > 0 ? checks - failed : 0)) "$failed" "$log" "$why"
}

# run_script SCRIPT: run one shell integration test and add its results.
run_script() {
	local script=$1 name log line re passed=0 failed=0 seen=0 why=
	name=$(basename "$script")
	log=$(_log_path "$script")
	_run_logged "$log" bash "$script"
	re='^([0-9]+) passed, ([0-9]+) failed$'
	while IFS= read -r line; do
		if [[ $line =~ $re ]]; then
			seen=1
			passed=${BASH_REMATCH[1]}
			failed=${BASH_REMATCH[2]}
		fi
	done <"$log"
	why=$(_rc_reason "$RUN_RC")
	if ((!seen)); then
		failed=$((failed + 1))
		why="no final 'N passed, N failed' line${why:+, $why}"
	elif ((RUN_RC != 0 && failed == 0)); then
		failed=1
	fi
	_report "$name" "$passed" "$failed" "$log" "$why"
}
