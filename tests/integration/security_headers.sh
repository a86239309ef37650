#!/usr/bin/env bash
# tests/integration/security_headers.sh - every answer of the API carries
# the security headers (api/server.c): no caching, no type sniffing, no
# framing, no active content, no referrer. Checked with curl against the
# real server on every class of route and answer: the public probes and
# the OpenAPI document, JSON answers of each method and status (201, 204),
# problems (400, 401, 403, 404, 405, 413, 415, 422, 409), the worker
# runtime's routes, and the streamed answers (a job's log, followed or
# not, and a checkpoint's files).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_STORAGE_ROOT "$SEAL"

WANT="Cache-Control: no-store
X-Content-Type-Options: nosniff
X-Frame-Options: DENY
Content-Security-Policy: default-src 'none'; frame-ancestors 'none'
Referrer-Policy: no-referrer"
# secured DESC: the last answer carries every security header, once each
secured() {
	local got="" h n
	for h in Cache-Control X-Content-Type-Options X-Frame-Options Content-Security-Policy \
		Referrer-Policy; do
		n=$(printf '%s\n' "$HEADERS" | grep -c -i "^$h:")
		got+="$h: $(header "$h")"
		[[ $n == 1 ]] || got+=" (sent $n times)"
		got+=$'\n'
	done
	check_eq "$1 carries the security headers" "$WANT" "${got%$'\n'}"
}
# answer DESC STATUS METHOD PATH [CURL_ARGS...]: the status, and the headers
answer() {
	local desc=$1
	check_status "$@"
	secured "$desc"
}

ADMIN=$(admin_token)
SFX=$$
TA=hdr-a-$SFX
TA_ID=$(tenant_new "$TA")
ALICE=$(member_new "$TA" "alice-$SFX" editor)
VIC=$(member_new "$TA" "vic-$SFX" viewer)
JOB='{"name": "hdr", "model": {"preset": "tiny"}, "data": {"train": "data/x_*.bin"},
 "parallel": {"data_parallel": 1, "micro_batch": 4, "global_batch": 8},
 "resources": {"nodes": 1, "ranks_per_node": 1, "time_limit_minutes": 30},
 "training": {"steps": 10}}'
JSON=(-H 'Content-Type: application/json')

TOKEN=
answer "GET /healthz" 200 GET /healthz
answer "GET /readyz" 200 GET /readyz
answer "the OpenAPI document" 200 GET /v1/openapi.json
answer "401 without a token" 401 GET /v1/whoami
answer "404 for no route" 404 GET /v1/nothing-here
answer "405 for another method" 405 DELETE /v1/whoami
head -c 1100000 /dev/zero | tr '\0' 'x' >"$TY_TMP/big"
answer "413 for a body too large" 413 POST /v1/tenants "${JSON[@]}" --data-binary "@$TY_TMP/big"

# the job reads a data path, so the platform admin submits it (docs/datasets.md)
TOKEN=$ADMIN
answer "201 for a job" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "$JOB"
J=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$ALICE
answer "GET /v1/whoami" 200 GET /v1/whoami
answer "a list" 200 GET "/v1/tenants/$TA/jobs"
answer "400 for a bad body" 400 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d '{"name": '
answer "415 for a body that is not JSON" 415 POST "/v1/tenants/$TA/jobs" -H 'Content-Type: text/plain' -d x
answer "422 for invalid fields" 422 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d '{"name": 1}'
answer "404 for another tenant's or no job" 404 GET /v1/jobs/00000000-0000-4000-8000-000000000000
answer "403 for a missing permission" 403 POST "/v1/jobs/$J/attempts"
answer "201 for a token, with its secret" 201 POST "/v1/users/alice-$SFX/tokens"
T=$(printf '%s' "$BODY" | jq -r .id)
answer "204 for a revocation" 204 DELETE "/v1/tokens/$T"

TOKEN=$ADMIN
answer "201 for an attempt, with its credential" 201 POST "/v1/jobs/$J/attempts"
A=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
I=/internal/v1/attempts/$A
answer "the runtime's data key" 200 POST "$I/key"
KEY=$(printf '%s' "$BODY" | jq -r .keys)
answer "a heartbeat" 200 POST "$I/heartbeat"
seal() { printf '%s\n' "$KEY" | "$SEAL" "$1" "$TRAINYARD_STORAGE_ROOT" "$TA_ID" "$J" "${@:2}"; }
check "the attempt writes a sealed log" seal log 1 1 2 close
read -r BYTES SHA < <(seal checkpoint 2 1000)
answer "201 for a checkpoint" 201 POST "$I/checkpoints" "${JSON[@]}" \
	-d "{\"step\": 2, \"world\": 1, \"shards\": [{\"name\": \"shard_00000_of_00001.bin\", \"bytes\": $BYTES, \"sha256\": \"$SHA\"}]}"
C=$(printf '%s' "$BODY" | jq -r .id)
answer "the attempt's end" 200 POST "$I/finish" "${JSON[@]}" -d '{"outcome": "succeeded"}'
answer "401 for an ended attempt" 401 POST "$I/heartbeat"

TOKEN=$ALICE
answer "409 for a final job's cancel" 409 POST "/v1/jobs/$J/cancel"
answer "the streamed log" 200 GET "/v1/jobs/$J/logs"
check_eq "with its lines" "attempt 1 line 1 attempt 1 line 2" "$(xargs <<<"$BODY")"
answer "the followed log" 200 GET "/v1/jobs/$J/logs?follow=1"
answer "the streamed manifest" 200 GET "/v1/checkpoints/$C/download"
answer "the streamed shard" 200 GET "/v1/checkpoints/$C/download?file=shard_00000_of_00001.bin"
answer "404 for a file the checkpoint lacks" 404 GET "/v1/checkpoints/$C/download?file=x.bin"
TOKEN=$VIC
answer "403 for a viewer's download" 403 GET "/v1/checkpoints/$C/download"
summary
