#!/usr/bin/env bash
# tests/integration/request_path.sh - what the server answers around every
# handler, as api/openapi.json promises it: a body on a route that takes
# none is empty or valid JSON, else 400 and nothing is done (a tenant's
# key rotation, a job's cancel); a known path with another method answers
# 405 with Allow; every GET route answers HEAD with GET's status and
# headers and no body; timestamps carry milliseconds (a queued job's ETA,
# a new token's expiry).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
SFX=$$
TA=rp-a-$SFX
TA_ID=$(tenant_new "$TA")
JSON=(-H 'Content-Type: application/json')
MS='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$'
keys() { q "SELECT max(version) FROM tenant_keys WHERE tenant_id = '$TA_ID'"; }

# ---- a body on a route that takes none ---------------------------------------------
TOKEN=$ADMIN
check_status "the tenant's key rotates" 200 POST "/v1/tenants/$TA/keys/rotate"
before=$(keys)
check_status "a malformed body on the rotation is refused" 400 \
	POST "/v1/tenants/$TA/keys/rotate" "${JSON[@]}" -d '[1,2'
check_json "as invalid JSON" invalid_json .code
check_eq "and the key is not rotated" "$before" "$(keys)"
check_status "a body with a repeated key too" 400 \
	POST "/v1/tenants/$TA/keys/rotate" "${JSON[@]}" -d '{"a": 1, "a": 2}'
check_json "named as such" duplicate_key .code
check_status "a body that is not JSON at all is refused for its type" 415 \
	POST "/v1/tenants/$TA/keys/rotate" -H 'Content-Type: text/plain' -d '[1,2'
check_eq "still not rotated" "$before" "$(keys)"
check_status "valid JSON is taken (and ignored)" 200 \
	POST "/v1/tenants/$TA/keys/rotate" "${JSON[@]}" -d '{}'
check_eq "and rotates" "$((before + 1))" "$(keys)"

check_status "a job" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "$(tiny_job rp 10 30)"
J=$(printf '%s' "$BODY" | jq -r .id)
check_status "a truncated body on its cancel is refused" 400 \
	POST "/v1/jobs/$J/cancel" "${JSON[@]}" -d '{"reason": "x"'
check_eq "and the job is not cancelled" queued "$(q "SELECT state FROM jobs WHERE id = '$J'")"
check_status "a malformed body on a read is refused too" 400 GET "/v1/jobs/$J" "${JSON[@]}" -d '{'

# ---- methods ---------------------------------------------------------------------------
check_status "another method on a job" 405 PUT "/v1/jobs/$J"
check_eq "lists the methods the path answers" "GET, HEAD" "$(header Allow)"
check_status "on the tenant's jobs" 405 DELETE "/v1/tenants/$TA/jobs"
check_eq "GET, HEAD and POST" "GET, HEAD, POST" "$(header Allow)"
check_status "on a public route" 405 POST /healthz
check_eq "GET and HEAD" "GET, HEAD" "$(header Allow)"
check_status "no route: 404, no Allow" 404 PUT /v1/nothing-here
check_eq "(none)" "" "$(header Allow)"

check_status "GET a job" 200 GET "/v1/jobs/$J"
get_type=$(header Content-Type) get_len=$(header Content-Length)
check_status "HEAD the same job" 200 HEAD "/v1/jobs/$J" -I
check_eq "the same type" "$get_type" "$(header Content-Type)"
check_eq "the same length" "$get_len" "$(header Content-Length)"
sent=$(curl -sS --max-time 10 -I -H "Authorization: Bearer $TOKEN" -o /dev/null \
	-w '%{size_download}' "$TRAINYARD_URL/v1/jobs/$J")
check_eq "and no body" 0 "$sent"
check_status "HEAD of a public route" 200 HEAD /healthz -I
check_status "HEAD of the OpenAPI document" 200 HEAD /v1/openapi.json -I
TOKEN=
check_status "HEAD without a token is refused as GET is" 401 HEAD "/v1/jobs/$J" -I
TOKEN=$ADMIN
check_status "HEAD of another tenant's job answers as GET does" 404 \
	HEAD /v1/jobs/00000000-0000-4000-8000-000000000000 -I

# ---- timestamps ------------------------------------------------------------------------
check_status "the queued job's ETA" 200 GET "/v1/jobs/$J/eta"
check_match "its estimated start carries milliseconds" "$MS" "$(printf '%s' "$BODY" | jq -r .eta)"
check_status "who the admin is" 200 GET /v1/whoami
ME=$(printf '%s' "$BODY" | jq -r .user.name)
check_status "a token" 201 POST "/v1/users/$ME/tokens" "${JSON[@]}" -d '{"name": "rp", "expires_in_days": 1}'
check_match "expires at a time with milliseconds" "$MS" "$(printf '%s' "$BODY" | jq -r .expires_at)"
summary
