#!/usr/bin/env bash
# request_workers.sh - a request that waits for the database holds one of
# the API's request threads (api/workers.h), never the other connections
# of its polling thread. With 2 polling threads and 2 request threads, a
# job's read blocked on a lock of the jobs table leaves /healthz and
# /v1/whoami answering at once on 7 other keep-alive connections opened
# before it (some of them on its polling thread, whichever it is); the
# blocked read answers once the lock goes.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB
command -v python3 >/dev/null || needs python3

ADMIN=$(admin_token)
T=rw-$$
tenant_new "$T" >/dev/null
TOKEN=$ADMIN api POST "/v1/tenants/$T/jobs" --json "$(tiny_job rw 1)"
JOB=$(jq -r '.id // empty' <<<"$BODY")
check_match "a job to read" '^[0-9a-f-]{36}$' "$JOB"
check "the API with 2 polling threads and 2 request threads" \
	env TRAINYARD_THREADS=2 TRAINYARD_IO_THREADS=2 "$TY_ROOT/deploy/stack" api-restart

# conns.py URL TOKEN JOB: opens 8 connections (a /healthz each), sends the
# job's read on the first without waiting, then on each of the 7 others a
# /healthz and a /v1/whoami, each timed (printed as it comes); then waits
# for the read. Prints
# "other STATUS SECONDS" per request, then "blocked STATUS SECONDS".
cat >"$TY_TMP/conns.py" <<'EOF'
import http.client, os, ssl, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
token, job = sys.argv[2], sys.argv[3]
tls = ssl.create_default_context(cafile=os.environ.get("TRAINYARD_CA_FILE") or None)
def conn():
    if u.scheme == "https":
        return http.client.HTTPSConnection(u.hostname, u.port, context=tls, timeout=300)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=300)
auth = {"Authorization": "Bearer " + token}
cs = [conn() for _ in range(8)]
for c in cs:
    c.request("GET", "/healthz")
    r = c.getresponse()
    r.read()
t0 = time.monotonic()
cs[0].request("GET", "/v1/jobs/" + job, headers=auth)
time.sleep(0.5)
for c in cs[1:]:
    for path in ("/healthz", "/v1/whoami"):
        t = time.monotonic()
        c.request("GET", path, headers=auth)
        r = c.getresponse()
        r.read()
        print("other", r.status, "%.3f" % (time.monotonic() - t), flush=True)
r = cs[0].getresponse()
r.read()
print("blocked", r.status, "%.3f" % (time.monotonic() - t0), flush=True)
EOF

# the lock: held from a second session until the script ends it, so that
# the read waits for it however slow the machine is
q "BEGIN; LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(120); COMMIT" \
	>/dev/null 2>&1 &
locker=$!
locked() {
	[[ $(q "SELECT count(*) FROM pg_locks WHERE relation = 'jobs'::regclass
		AND mode = 'AccessExclusiveLock' AND granted") == 1 ]]
}
check "a second session holds the jobs table's lock" wait_until 30 locked
answers=$TY_TMP/conns.out
python3 "$TY_TMP/conns.py" "$TRAINYARD_URL" "$ADMIN" "$JOB" >"$answers" 2>&1 &
client=$!
others_in() { [[ $(grep -c '^other' "$answers") -ge 14 ]]; }
check "14 requests on the 7 other connections answered while the read waits" \
	wait_until 30 others_in
check_eq "the read still waits for the lock" "" "$(grep -v '^other' "$answers")"
slow=$(awk '$1 == "other" && ($2 != 200 || $3 > 1.0)' "$answers")
check_eq "each answered 200 within a second" "" "$slow"
q "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE relation = 'jobs'::regclass
	AND mode = 'AccessExclusiveLock' AND granted" >/dev/null
wait "$locker"
wait "$client"
check_match "the blocked read answers 200 once the lock goes" '^blocked 200 ' \
	"$(grep '^blocked' "$answers")"

check "the API restarts with the stack's settings" stack api-restart
summary
