#!/usr/bin/env bash
# tests/integration/webview.sh - the web view (GET /ui) in headless
# Chromium (Debian's): its files and their Content-Security-Policy; signed
# in as a viewer of tenant A, the jobs page lists A's job with its state
# and a queued job's position and estimated start, the job page draws the
# seeded loss curve (one point a step) and throughput, the goodput bar and
# the events; the tenant page shows the quota and usage; B's job never
# appears, and asking for it by id shows nothing of it. Screenshots of
# each page go to $TY_TMP (docs/webview-*.png are made this way).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)

ADMIN=$(admin_token)
SFX=$$
TA=wv-a-$SFX TB=wv-b-$SFX
tenant_new "$TA" >/dev/null
tenant_new "$TB" >/dev/null
VIEW=$(member_new "$TA" "wv-view-$SFX" viewer)
JSON=(-H 'Content-Type: application/json')

# ---- the files ----------------------------------------------------------------------
TOKEN=''
check_status "the page is public" 200 GET /ui
check_match "HTML" '^text/html' "$(header Content-Type)"
check_match "which may load its own script and talk to this API only" \
	"script-src 'self'; style-src 'self'; connect-src 'self'" "$(header Content-Security-Policy)"
check_match "and no one may frame it" "frame-ancestors 'none'" "$(header Content-Security-Policy)"
check_status "its script" 200 GET /ui/app.js
check_match "as JavaScript" '^text/javascript' "$(header Content-Type)"
check_status "its style" 200 GET /ui/app.css
check_status "the API's answers keep their own policy" 200 GET /healthz
check_eq "nothing may load from them" "default-src 'none'; frame-ancestors 'none'" \
	"$(header Content-Security-Policy)"

# ---- the seeded jobs ----------------------------------------------------------------
JOB=$(tiny_job NAME 30 30)
TOKEN=$ADMIN
check_status "A's job" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "${JOB/NAME/curve-a}"
J=$(printf '%s' "$BODY" | jq -r .id)
check_status "A's queued job" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "${JOB/NAME/waiting-a}"
check_status "B's job" 201 POST "/v1/tenants/$TB/jobs" "${JSON[@]}" -d "${JOB/NAME/secret-b-job}"
JB=$(printf '%s' "$BODY" | jq -r .id)
check_status "A's job runs" 201 POST "/v1/jobs/$J/attempts"
A=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
check_status "it reports" 200 POST "/internal/v1/attempts/$A/heartbeat"
steps=$(jq -nc '[range(1; 21) | {step: ., loss: (5.5 / (1 + . / 10)), tokens_per_s: (900 + . * 5),
	step_s: 0.2, data_wait_s: 0.01, time_ms: (now * 1000 | floor)}]')
check_status "twenty steps of falling loss" 200 POST "/internal/v1/attempts/$A/metrics" \
	"${JSON[@]}" -d "{\"steps\": $steps}"

# ---- in the browser ---------------------------------------------------------------------
if [[ -z $CHROMIUM ]]; then
	not_ok "chromium" "Debian's chromium is not installed (deploy/deps installs it)"
	summary
	exit 1
fi
PROFILE=$TY_TMP/chromium
# the API's certificate, pinned by its key (the stack's CA is not the browser's)
SPKI=$(openssl x509 -in "$TRAINYARD_VAR/tls/server.pem" -pubkey -noout |
	openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
# page VIEW NAME: the DOM of the web view at VIEW, signed in as the viewer; a screenshot too
page() {
	local url="$TRAINYARD_URL/ui#token=$VIEW&view=$1"
	local flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
		--disable-background-networking --disable-component-update --disable-sync
		--user-data-dir="$PROFILE" --virtual-time-budget=15000 --window-size=1200,1400
		--ignore-certificate-errors-spki-list="$SPKI")
	timeout 60 "$CHROMIUM" "${flags[@]}" --dump-dom "$url" 2>/dev/null >"$TY_TMP/$2.html"
	timeout 60 "$CHROMIUM" "${flags[@]}" --screenshot="$TY_TMP/webview-$2.png" "$url" \
		>/dev/null 2>&1
}
page "/jobs/$TA" jobs
check_match "the jobs page is drawn" 'data-ready="true"' "$(cat "$TY_TMP/jobs.html")"
check_match "it lists A's job" '>curve-a<' "$(cat "$TY_TMP/jobs.html")"
check_match "and its state" 'state-running">running<' "$(cat "$TY_TMP/jobs.html")"
check_match "the queued one, first in line, with its estimated start" \
	'>waiting-a<.*state-queued">queued<.*<td>1</td>.*[0-9]{4}-[0-9]{2}-[0-9]{2}T' \
	"$(tr -d '\n' <"$TY_TMP/jobs.html")"
check_eq "never B's job" 0 "$(grep -c 'secret-b-job' "$TY_TMP/jobs.html")"

page "/job/$J" job
check_match "the job page is drawn" 'data-ready="true"' "$(cat "$TY_TMP/job.html")"
check_match "with the loss curve, one point a step" 'id="loss"[^>]*data-points="20"' \
	"$(cat "$TY_TMP/job.html")"
check_match "drawn as a line" '<polyline points="[0-9.,]+( [0-9.,]+){19}"' \
	"$(cat "$TY_TMP/job.html")"
check_match "and the throughput" 'id="throughput"[^>]*data-points="20"' "$(cat "$TY_TMP/job.html")"
check_match "where the time went" 'class="goodput"' "$(cat "$TY_TMP/job.html")"
check_match "its events" 'attempt running' "$(cat "$TY_TMP/job.html")"
check_match "its attempts, the first running with its 20 steps" \
	'<td>1</td><td><span class="class">running</span></td><td>1</td>.*<td>20</td>' \
	"$(tr -d '\n' <"$TY_TMP/job.html")"

page "/tenant/$TA" tenant
check_match "the tenant page: quota and usage" 'devices \(max_gpus\).*Usage, last 30 days' \
	"$(tr -d '\n' <"$TY_TMP/tenant.html")"

page "/job/$JB" other
check_match "B's job by its id shows nothing" 'No such thing, or none you may see' \
	"$(cat "$TY_TMP/other.html")"
check_eq "not even its name" 0 "$(grep -c 'secret-b-job' "$TY_TMP/other.html")"
page "/jobs/$TB" otherjobs
check_eq "nor B's job list" 0 "$(grep -c 'secret-b-job' "$TY_TMP/otherjobs.html")"
for p in jobs job tenant; do
	check "a screenshot of the $p page" test -s "$TY_TMP/webview-$p.png"
done
if [[ -n ${WEBVIEW_SCREENSHOTS:-} ]]; then
	cp "$TY_TMP"/webview-{jobs,job,tenant}.png "$WEBVIEW_SCREENSHOTS"/
fi
summary
