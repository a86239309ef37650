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
# /healthz and a /v1/whoami, each timed; then waits for the read. Prints
# "other STATUS SECONDS" per request, then "blocked STATUS SECONDS".
cat >"$TY_TMP/conns.py" <<'EOF'
import http.client, os, ssl, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
token, job = sys.argv[2], sys.argv[3]
tls = ssl.create_default_context(cafile=os.environ.get("TRAINYARD_CA_FILE") or None)
def conn():
    if u.scheme == "https":
        return http.client.HTTPSConnection(u.hostname, u.port, context=tls, timeout=30)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=30)
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
        print("other", r.status, "%.3f" % (time.monotonic() - t))
r = cs[0].getresponse()
r.read()
print("blocked", r.status, "%.3f" % (time.monotonic() - t0))
EOF

# the lock: held 4 s from a second session, the read waits for it
q "BEGIN; LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(8); COMMIT" >/dev/null &
locker=$!
wait_until 30 test "$(q "SELECT count(*) FROM pg_locks WHERE relation = 'jobs'::regclass
	AND mode = 'AccessExclusiveLock' AND granted")" = 1
out=$(python3 "$TY_TMP/conns.py" "$TRAINYARD_URL" "$ADMIN" "$JOB" 2>&1)
wait "$locker"
others=$(awk '$1 == "other"' <<<"$out" | wc -l)
slow=$(awk '$1 == "other" && ($2 != 200 || $3 > 1.0)' <<<"$out")
check_eq "14 requests on the 7 other connections" 14 "$others"
check_eq "each answered 200 within a second while the read waited" "" "$slow"
check_match "the blocked read answered 200 once the lock went, seconds later" \
	'^blocked 200 [1-9][0-9]*\.' "$(grep '^blocked' <<<"$out")"

check "the API restarts with the stack's settings" stack api-restart
summary
