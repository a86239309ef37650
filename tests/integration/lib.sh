# tests/integration/lib.sh - assertions for the shell integration tests.
# shellcheck shell=bash
#
# A test script sources this file, makes its checks, and ends with
# `summary`, which prints "N passed, N failed" (the line tests/run reads)
# and returns non-zero when a check failed:
#
#   . "$(dirname "$0")/lib.sh"
#   TOKEN=$(admin_token)
#   check_status "list tenants as admin" 200 GET /v1/tenants
#   check_json "no tenants yet" 0 '.items | length'
#   check_status "create a tenant" 201 POST /v1/tenants --json '{"name":"t1"}'
#   summary
#
# tests/run runs each script from the repository root with the test
# stack's stack.env exported (TRAINYARD_URL, TRAINYARD_DB, PGHOST...) and
# $BUILD/bin first in PATH. Every check prints "ok - DESC" or
# "not ok - DESC" followed by "#" lines that explain the failure.
#
# HTTP: `api` and `check_status` run curl against $TRAINYARD_URL (a PATH
# starting with / is appended to it), send "Authorization: Bearer $TOKEN"
# when TOKEN is set, and leave the response in STATUS (e.g. 201, or 000
# when nothing answered), BODY and HEADERS; `header NAME` reads one header
# of the last response. Extra arguments go to curl unchanged (--json BODY,
# -H 'Idempotency-Key: k', ...).

TY_PASSED=0
TY_FAILED=0
STATUS=
BODY=
HEADERS=
TOKEN=${TOKEN:-}

TY_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Temporary files live in the test var dir, which the next run wipes.
TY_TMP=${TRAINYARD_VAR:-${TMPDIR:-/tmp}}/tmp/$(basename "$0" .sh).$$
mkdir -p "$TY_TMP"

ok() { # ok DESC
	TY_PASSED=$((TY_PASSED + 1))
	echo "ok - $1"
}

not_ok() { # not_ok DESC [DETAIL...]: each DETAIL is printed as a "#" line
	TY_FAILED=$((TY_FAILED + 1))
	echo "not ok - $1"
	shift
	local d
	for d in "$@"; do
		[[ -n $d ]] && printf '%s\n' "$d" | sed 's/^/#   /'
	done
	return 0
}

check() { # check DESC CMD...: passes when CMD exits 0
	local desc=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if ((rc == 0)); then
		ok "$desc"
	else
		not_ok "$desc" "command failed with exit status $rc: $*" "$out"
	fi
}

check_fails() { # check_fails DESC EXPECTED_RC CMD...: CMD must exit EXPECTED_RC
	local desc=$1 want=$2 out rc=0
	shift 2
	out=$("$@" 2>&1) || rc=$?
	if ((rc == want)); then
		ok "$desc"
	else
		not_ok "$desc" "expected exit status $want, got $rc: $*" "$out"
	fi
}

check_eq() { # check_eq DESC EXPECTED ACTUAL
	if [[ $2 == "$3" ]]; then
		ok "$1"
	else
		not_ok "$1" "expected: $2" "got:      $3"
	fi
}

check_match() { # check_match DESC REGEX ACTUAL
	if [[ $3 =~ $2 ]]; then
		ok "$1"
	else
		not_ok "$1" "expected to match: $2" "got: $3"
	fi
}

# api METHOD PATH [CURL_ARGS...]: one request; sets STATUS, BODY, HEADERS.
api() {
	local method=$1 path=$2 url auth=()
	shift 2
	case $path in
	/*) url=${TRAINYARD_URL:?TRAINYARD_URL is not set}$path ;;
	*) url=$path ;;
	esac
	[[ -n $TOKEN ]] && auth=(-H "Authorization: Bearer $TOKEN")
	STATUS=$(curl -sS --max-time "${TY_CURL_TIMEOUT:-30}" -X "$method" "${auth[@]}" \
		-D "$TY_TMP/headers" -o "$TY_TMP/body" -w '%{http_code}' "$@" "$url" 2>"$TY_TMP/curl.err") ||
		true
	[[ -n $STATUS ]] || STATUS=000
	BODY=$(cat "$TY_TMP/body" 2>/dev/null || true)
	HEADERS=$(tr -d '\r' <"$TY_TMP/headers" 2>/dev/null || true)
	rm -f "$TY_TMP/body" "$TY_TMP/headers"
}

header() { # header NAME: value of a header of the last response
	printf '%s\n' "$HEADERS" | awk -v n="$1" 'BEGIN { n = tolower(n) ":" }
		tolower(substr($0, 1, length(n))) == n { v = substr($0, length(n) + 1); sub(/^[ \t]+/, "", v) }
		END { if (v != "") print v }'
}

# check_status DESC EXPECTED METHOD PATH [CURL_ARGS...]
check_status() {
	local desc=$1 want=$2
	shift 2
	api "$@"
	if [[ $STATUS == "$want" ]]; then
		ok "$desc"
	else
		not_ok "$desc" "$1 $2: expected HTTP $want, got $STATUS" \
			"${BODY:0:2000}" "$(cat "$TY_TMP/curl.err" 2>/dev/null)"
	fi
}

# check_json DESC EXPECTED JQ_FILTER: the filter applied to BODY (jq -r).
check_json() {
	local got
	got=$(printf '%s' "$BODY" | jq -r "$3" 2>&1) || got="(jq failed: $got)"
	check_eq "$1" "$2" "$got"
}

# wait_until SECONDS CMD...: poll CMD every 0.2s until it succeeds.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

api_healthy() { curl -fsS --max-time 2 -o /dev/null "$TRAINYARD_URL/healthz"; }

# stack ARGS...: deploy/stack for the stack under test (pg-stop, pg-start...).
stack() { "$TY_ROOT/deploy/stack" "$@"; }

# admin_token: the platform admin's token, bootstrapping the admin on first
# use. Every test of one run shares it through $TRAINYARD_VAR/admin.token,
# since only one bootstrap can succeed per database.
admin_token() {
	local file=${TRAINYARD_VAR:?TRAINYARD_VAR is not set}/admin.token
	(
		flock 9
		if [[ ! -s $file ]]; then
			umask 077
			yardctl bootstrap --name admin >"$file.tmp" && mv "$file.tmp" "$file"
		fi
	) 9>"$file.lock" || return 1
	cat "$file"
}

# user_token NAME: create user NAME (if needed) and print a fresh token of it.
user_token() {
	local admin rc=0
	admin=$(admin_token) || return 1
	TRAINYARD_TOKEN=$admin yardctl user create "$1" >/dev/null 2>&1 || rc=$?
	((rc == 0 || rc == 1)) || return 1
	TRAINYARD_TOKEN=$admin yardctl token create "$1"
}

# tenant_new NAME: the admin creates tenant NAME with room for the tests'
# jobs; prints its id.
tenant_new() {
	local admin
	admin=$(admin_token) || return 1
	TOKEN=$admin api POST /v1/tenants -H 'Content-Type: application/json' \
		-d "{\"name\": \"$1\"}"
	printf '%s' "$BODY" | jq -r .id
	TOKEN=$admin api PUT "/v1/tenants/$1/quota" -H 'Content-Type: application/json' \
		-d '{"max_gpus": 64, "max_running_jobs": 4, "gpu_hours_per_month": 1000,
		     "max_storage_bytes": 1000000000, "weight": 1}'
}

# tenant_data TENANT_ID FILE...: copy the FILEs into the tenant's directory of
# the data root ($TRAINYARD_DATA_ROOT/tenants/TENANT_ID, 0700 and the
# tenant's Unix user's, as the API made it with the tenant), where its
# jobs' data paths resolve; the copies are that user's too. A file already
# there with the same bytes is left alone, and a new one appears whole (a
# rename): a job of the tenant may be reading the old one.
tenant_data() {
	local root=${TRAINYARD_DATA_ROOT:?TRAINYARD_DATA_ROOT is not set} id=$1 f dir tmp
	shift
	dir=$root/tenants/$id
	mkdir -p -m 0700 "$root" "$root/tenants" "$dir" || return 1
	for f in "$@"; do
		cmp -s "$f" "$dir/$(basename "$f")" && continue
		tmp=$dir/.$(basename "$f").$$
		cp "$f" "$tmp" && chown --reference="$dir" "$tmp" && mv -f "$tmp" "$dir/$(basename "$f")" ||
			return 1
	done
}

# member_new TENANT USER ROLE: create USER with ROLE in TENANT; prints a token of USER.
member_new() {
	local token
	token=$(user_token "$2") || return 1
	TOKEN=$(admin_token) api PUT "/v1/tenants/$1/members/$2" \
		-H 'Content-Type: application/json' -d "{\"role\": \"$3\"}"
	printf '%s\n' "$token"
}

# The yardctl under test ($BUILD/bin/yardctl, BUILD defaulting to build),
# and tool_seal, which writes a job's sealed files as its attempt would.
case ${BUILD:-build} in
/*) YARDCTL=${BUILD}/bin/yardctl SEAL=${BUILD}/tests/tool_seal ;;
*) YARDCTL=$TY_ROOT/${BUILD:-build}/bin/yardctl SEAL=$TY_ROOT/${BUILD:-build}/tests/tool_seal ;;
esac
OUT='' ERR='' RC=0

# y TOKEN ARGS...: run yardctl with TOKEN ("" for none); sets OUT, ERR, RC.
y() {
	local token=$1
	shift
	RC=0
	OUT=$(TRAINYARD_TOKEN=$token "$YARDCTL" "$@" 2>"$TY_TMP/stderr") || RC=$?
	ERR=$(cat "$TY_TMP/stderr")
}

# expect_rc DESC WANT: the last y exited with WANT.
expect_rc() {
	if ((RC == $2)); then
		ok "$1"
	else
		not_ok "$1" "expected exit status $2, got $RC" "stdout: $OUT" "stderr: $ERR"
	fi
}

# jq_out FILTER: FILTER applied to the last y's stdout (jq -r).
jq_out() { printf '%s' "$OUT" | jq -r "$1" 2>&1; }

# q SQL: one statement against the stack's database (TRAINYARD_DB); rows
# unaligned, columns split by '|'; fails on an SQL error.
q() { psql "$TRAINYARD_DB" -X -qtA -v ON_ERROR_STOP=1 -c "$1"; }

# requeue ATTEMPT JOB: the scheduler's requeue after a lost attempt, done
# by hand for the scripts that drive attempts themselves (no route does it):
# the attempt ends and its job waits for the next one.
requeue() {
	q "UPDATE job_attempts SET state = 'ended', ended_at = now() WHERE id = '$1'" >/dev/null &&
		q "UPDATE jobs SET state = 'queued' WHERE id = '$2'" >/dev/null
}

# needs NAME...: what the script cannot run without, each an environment
# variable that must be set or (a NAME with a /) an executable; when one is
# missing, "not ok - environment" naming them, the tally, and exit 1.
needs() {
	local n missing=()
	for n in "$@"; do
		if [[ $n == */* ]]; then
			[[ -x $n ]] || missing+=("$n")
		else
			[[ -n ${!n:-} ]] || missing+=("$n")
		fi
	done
	((${#missing[@]} == 0)) && return 0
	not_ok "environment" "needs ${missing[*]}"
	summary
	exit 1
}

# tiny_job NAME STEPS [MINUTES]: the JSON of a job of the tiny model on
# one rank of one node, reading x_*.bin, for STEPS steps (a time limit of
# MINUTES when given). The scripts that start attempts by hand submit it.
tiny_job() {
	local limit=${3:+, \"time_limit_minutes\": $3}
	printf '{"name": "%s", "model": {"preset": "tiny"}, "data": {"train": "x_*.bin"},
 "parallel": {"data_parallel": 1, "micro_batch": 4, "global_batch": 8},
 "resources": {"nodes": 1, "ranks_per_node": 1%s}, "training": {"steps": %d}}\n' \
		"$1" "$limit" "$2"
}

# check_process_metrics FILE PROGRAM PID: the process_* metrics and
# trainyard_build_info of a scrape (FILE) agree with process PID as the
# kernel and ps see it, and with this checkout's release and commit.
check_process_metrics() {
	local file=$1 program=$2 pid=$3 v
	m() { grep -E "^$1 " "$file" | head -n 1 | awk '{print $2}'; }
	v=$(m process_resident_memory_bytes)
	local rss_kb
	rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
	check "$program: resident memory within a factor two of the kernel's" \
		awk -v a="${v:-0}" -v b="$((rss_kb * 1024))" 'BEGIN { exit !(a > b / 2 && a < b * 2) }'
	check "$program: virtual memory above resident" \
		awk -v a="$(m process_virtual_memory_bytes)" -v b="${v:-0}" 'BEGIN { exit !(a + 0 >= b + 0 && b > 0) }'
	local fds
	fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
	check "$program: open descriptors near the kernel's count ($fds)" \
		awk -v a="$(m process_open_fds)" -v b="$fds" 'BEGIN { exit !(a > 0 && a - b < 16 && b - a < 16) }'
	check_eq "$program: the descriptor limit" "$(awk '/^Max open files/ {print $4}' "/proc/$pid/limits")" \
		"$(m process_max_fds)"
	local started
	started=$(($(date +%s) - $(ps -o etimes= -p "$pid")))
	check "$program: started when ps says (about $started)" \
		awk -v a="$(m process_start_time_seconds)" -v b="$started" 'BEGIN { exit !(a - b < 3 && b - a < 3) }'
	check_match "$program: CPU time counted" '^[0-9.e+-]+$' "$(m process_cpu_seconds_total)"
	local root=$TY_ROOT rev
	rev=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
	check_match "$program: its build, release and commit" \
		"^trainyard_build_info\\{program=\"$program\",version=\"$(tr -d ' \n' <"$root/VERSION")\",revision=\"$rev(-dirty)?\"\\} 1\$" \
		"$(grep '^trainyard_build_info' "$file")"
}

summary() { # the last call of a script: prints the tally, false on failures
	rm -rf "$TY_TMP"
	echo "$TY_PASSED passed, $TY_FAILED failed"
	((TY_FAILED == 0))
}
