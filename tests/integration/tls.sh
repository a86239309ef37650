#!/usr/bin/env bash
# tests/integration/tls.sh - every connection to the API is TLS
# (README.md, "Security"). The stack's API serves HTTPS with a certificate
# of the stack's own CA: curl and yardctl verify it against that CA and
# refuse it without; TLS below 1.2 and plain HTTP to the port get nothing.
# The API itself refuses to start without a certificate, unless plain
# HTTP is allowed and it listens on loopback; with a certificate but no
# key, or a key others may read, it does not start either.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

API_BIN=$(dirname "$YARDCTL")/trainyard-api
needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_CA_FILE TRAINYARD_VAR "$API_BIN"
TLS=$TRAINYARD_VAR/tls
host=${TRAINYARD_URL#https://}
host=${host%%/*}

check_match "the stack's API is https" '^https://' "$TRAINYARD_URL"
check "curl verifies it against the stack's CA" \
	curl -fsS --max-time 5 --cacert "$TRAINYARD_CA_FILE" -o /dev/null "$TRAINYARD_URL/healthz"
check_fails "and refuses it against the system's CAs (exit 60)" 60 \
	env -u CURL_CA_BUNDLE curl -sS --max-time 5 --cacert /etc/ssl/certs/ca-certificates.crt \
	-o /dev/null "$TRAINYARD_URL/healthz"
check "TLS 1.3 is spoken" bash -c "curl -sS --max-time 5 --cacert '$TRAINYARD_CA_FILE' \
	--tlsv1.3 -o /dev/null -w '%{http_code}' '$TRAINYARD_URL/healthz' | grep -qx 200"
check "and TLS 1.2" bash -c "curl -sS --max-time 5 --cacert '$TRAINYARD_CA_FILE' \
	--tls-max 1.2 -o /dev/null -w '%{http_code}' '$TRAINYARD_URL/healthz' | grep -qx 200"
check_fails "TLS 1.1 is not" 1 bash -c "openssl s_client -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' -connect '$host' \
	</dev/null >/dev/null 2>&1 && exit 0 || exit 1"
code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://$host/healthz" 2>/dev/null)
check_eq "plain HTTP to the port gets no answer" 000 "${code:-000}"

ADMIN=$(admin_token)
check "yardctl verifies the API with TRAINYARD_CA_FILE" \
	env TRAINYARD_TOKEN="$ADMIN" "$YARDCTL" whoami
rc=0
env -u TRAINYARD_CA_FILE TRAINYARD_TOKEN="$ADMIN" "$YARDCTL" whoami >/dev/null 2>"$TY_TMP/y.err" || rc=$?
check "and without it refuses the stack's certificate" test "$rc" -ne 0
check_match "saying why" 'certificate|SSL|verify' "$(cat "$TY_TMP/y.err")"

# The API's own refusals. A port of its own, never the stack's.
PORT=$((TRAINYARD_API_PORT + 40))
# with the stack's keys, which the database belongs with (api/keys_record.h)
start_api() { # start_api OUT [VAR=VALUE...]: run the API for at most 3 s; exit status in $RC
	local out=$1
	shift
	RC=0
	env -u TRAINYARD_TLS_CERT_FILE -u TRAINYARD_TLS_KEY_FILE -u TRAINYARD_PLAIN_HTTP \
		TRAINYARD_DB="$TRAINYARD_DB" TRAINYARD_LISTEN="127.0.0.1:$PORT" \
		TRAINYARD_MASTER_KEY_FILE="$MASTER_KEY" TRAINYARD_AUDIT_KEY_FILE="$AUDIT_KEY" "$@" \
		timeout 3 "$API_BIN" >"$out" 2>&1 || RC=$?
}
MASTER_KEY=${TRAINYARD_MASTER_KEY_FILE:-$TRAINYARD_VAR/master.key}
AUDIT_KEY=${TRAINYARD_AUDIT_KEY_FILE:-$TRAINYARD_VAR/audit.key}
start_api "$TY_TMP/none.log"
check_eq "without a certificate the API does not start" 1 "$RC"
check_match "saying it serves HTTPS" 'serves HTTPS' "$(cat "$TY_TMP/none.log")"
start_api "$TY_TMP/wide.log" TRAINYARD_PLAIN_HTTP=1 TRAINYARD_LISTEN="0.0.0.0:$PORT"
check_eq "plain HTTP beyond loopback: not even when allowed" 1 "$RC"
check_match "never served beyond loopback" 'beyond loopback' "$(cat "$TY_TMP/wide.log")"
start_api "$TY_TMP/half.log" TRAINYARD_TLS_CERT_FILE="$TLS/server.pem"
check_eq "a certificate without its key: no start" 1 "$RC"
cp "$TLS/server.key" "$TY_TMP/open.key"
chmod 644 "$TY_TMP/open.key"
start_api "$TY_TMP/open.log" TRAINYARD_TLS_CERT_FILE="$TLS/server.pem" \
	TRAINYARD_TLS_KEY_FILE="$TY_TMP/open.key"
check_eq "a key others may read: no start" 1 "$RC"
check_match "naming its mode" '0644' "$(cat "$TY_TMP/open.log")"
start_api "$TY_TMP/plain.log" TRAINYARD_PLAIN_HTTP=1 &
PLAIN=$!
plain_up() { curl -fsS --max-time 1 -o /dev/null "http://127.0.0.1:$PORT/healthz"; }
check "plain HTTP on loopback, where allowed, answers" wait_until 3 plain_up
wait "$PLAIN"

summary
