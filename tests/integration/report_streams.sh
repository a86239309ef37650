#!/usr/bin/env bash
# tests/integration/report_streams.sh - the cap on reports and audit
# exports streamed at once, each of which reads from a database connection
# of its own: with a tenant's TRAINYARD_REPORT_STREAMS_PER_TENANT reports
# streaming (to clients that read slowly), one more of that tenant answers
# 429 rate_limited with Retry-After; with TRAINYARD_REPORT_STREAMS of them
# streaming over several tenants, one more of yet another tenant does too;
# the same for the platform's audit exports; every stream let in completes,
# and once they have, the refused request is let in.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB
command -v python3 >/dev/null || needs python3

ADMIN=$(admin_token)
SFX=$$
TOTAL=${TRAINYARD_REPORT_STREAMS:-8}
PER=${TRAINYARD_REPORT_STREAMS_PER_TENANT:-2}
NT=$(((TOTAL + PER - 1) / PER))

# Tenants whose data-access reports are each twice as large as the most
# the kernel buffers for a connection (tcp_wmem's maximum): a client that
# does not read keeps such a report streaming, and its slot taken.
WMAX=$(awk '{print $3}' /proc/sys/net/ipv4/tcp_wmem 2>/dev/null)
ROWS=$((2 * ${WMAX:-4194304} / 5000 + 200))
TENANTS=()
for ((i = 0; i < NT; i++)); do
	name=rs-$i-$SFX
	id=$(tenant_new "$name")
	TENANTS+=("$name")
	q "INSERT INTO audit_log (actor_name, tenant_id, action, resource, outcome, status, detail)
	   SELECT 'rs-reader', '$id', 'log.read', 'job/' || gen_random_uuid(), 'success', 200,
	          jsonb_build_object('file', repeat('f', 5000), 'n', g)
	   FROM generate_series(1, $ROWS) g" >/dev/null
done
EXTRA=rs-x-$SFX
tenant_new "$EXTRA" >/dev/null

# streams.py PATH...: opens each PATH in turn as the admin, reading only the
# answer's head, and keeps the connections that answer 200 open and unread;
# then reads each of them to its end; then asks for the last PATH again and
# reads that to its end. Prints "N STATUS RETRY-AFTER COMPLETE [CODE]" a
# request (COMPLETE: 1 for a chunked answer of over 1 MB that ended as it
# should; CODE: a refusal's problem code).
cat >"$TY_TMP/streams.py" <<'EOF'
import os, re, socket, ssl, sys, threading, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
# https verified against the stack's CA (TRAINYARD_CA_FILE), as every client does
tls = ssl.create_default_context(cafile=os.environ.get("TRAINYARD_CA_FILE") or None) \
    if u.scheme == "https" else None
token, paths = sys.argv[2], sys.argv[3:]

def ask(path):
    s = socket.socket()
    # before connect: a window well below the answer, which then waits on the client
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 262144)
    s.settimeout(60)
    s.connect((u.hostname, u.port))
    if tls:
        s = tls.wrap_socket(s, server_hostname=u.hostname)
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
               "Connection: close\r\n\r\n" % (path, u.netloc, token)).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        more = s.recv(1024)
        if not more:
            break
        data += more
    head = data.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    status = head[0].split()[1] if head and len(head[0].split()) > 1 else "000"
    retry = "-"
    for h in head[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "retry-after":
            retry = v.strip()
    return s, status, retry, data

def drain(s, data):
    # the length and the last bytes only: the platform's audit export grows
    # with every test before this one, and keeping it all costs quadratic time
    size, tail = len(data), data[-16:]
    while True:
        more = s.recv(65536)
        if not more:
            break
        size += len(more)
        tail = (tail + more)[-16:]
    s.close()
    # a chunked answer that ended as it should; the first line after the head is data
    return 1 if tail.endswith(b"\r\n0\r\n\r\n") and size > 1000000 else 0

held = []
for n, path in enumerate(paths, 1):
    s, status, retry, data = ask(path)
    if status == "200":
        held.append((n, status, retry, s, data))
    else:
        while True:
            more = s.recv(65536)
            if not more:
                break
            data += more
        s.close()
        code = re.search(rb'"code":"([a-z_]+)"', data)
        print(n, status, retry, 0, code.group(1).decode() if code else "-", flush=True)
# all at once, so none waits unread for longer than the server's idle timeout
done = {}
readers = [threading.Thread(target=lambda h=h: done.__setitem__(h[0], drain(h[3], h[4])))
           for h in held]
for t in readers:
    t.start()
for t in readers:
    t.join()
for n, status, retry, s, data in held:
    print(n, status, retry, done.get(n, 0), flush=True)
s, status, retry, data = ask(paths[-1])
print("again", status, retry, drain(s, data) if status == "200" else 0, flush=True)
EOF

streams() { python3 "$TY_TMP/streams.py" "$TRAINYARD_URL" "$ADMIN" "$@" 2>&1; }
line() { printf '%s\n' "$OUT" | awk -v n="$1" '$1 == n'; }
report_of() { printf '/v1/tenants/%s/reports/data-access?format=csv' "$1"; }

# ---- one tenant's share -----------------------------------------------------
paths=()
for ((i = 0; i < PER; i++)); do paths+=("$(report_of "${TENANTS[0]}")"); done
paths+=("$(report_of "${TENANTS[0]}")")
OUT=$(streams "${paths[@]}")
printf '%s\n' "$OUT" | sed 's/^/# /'
for ((i = 1; i <= PER; i++)); do
	check_eq "report $i of $PER of one tenant streams to its end" "$i 200 - 1" "$(line "$i")"
done
check_match "one more of that tenant answers 429 rate_limited with Retry-After" "^$((PER + 1)) 429 [0-9]+ 0 rate_limited\$" \
	"$(line $((PER + 1)))"
check_eq "and is let in once the others have ended" "again 200 - 1" "$(line again)"

# ---- the server's share, over several tenants ----------------------------------
paths=()
for ((i = 0; i < TOTAL; i++)); do paths+=("$(report_of "${TENANTS[$((i / PER))]}")"); done
paths+=("$(report_of "$EXTRA")")
OUT=$(streams "${paths[@]}")
printf '%s\n' "$OUT" | sed 's/^/# /'
ended=0
for ((i = 1; i <= TOTAL; i++)); do
	[[ $(line "$i") == "$i 200 - 1" ]] && ended=$((ended + 1))
done
check_eq "$TOTAL reports of $NT tenants stream to their ends" "$TOTAL" "$ended"
check_match "one more, of another tenant, answers 429 with Retry-After" \
	"^$((TOTAL + 1)) 429 [0-9]+ 0 rate_limited\$" "$(line $((TOTAL + 1)))"

# ---- the platform's audit exports ------------------------------------------------
paths=()
for ((i = 0; i <= PER; i++)); do paths+=(/v1/audit/export); done
OUT=$(streams "${paths[@]}")
printf '%s\n' "$OUT" | sed 's/^/# /'
ended=0
for ((i = 1; i <= PER; i++)); do
	[[ $(line "$i") == "$i 200 - 1" ]] && ended=$((ended + 1))
done
check_eq "$PER audit exports stream to their ends" "$PER" "$ended"
check_match "one more answers 429 with Retry-After" "^$((PER + 1)) 429 [0-9]+ 0 rate_limited\$" \
	"$(line $((PER + 1)))"
summary
