#!/usr/bin/env bash
# tests/integration/webview.sh - the web view (GET /ui) in headless
# Chromium (Debian's): its files and their Content-Security-Policy; signed
# in as a viewer of tenant A, the jobs page lists A's jobs with their state
# and a queued job's position and estimated start; the tenant page shows
# the quota with what is in use (running jobs, storage in binary units);
# B's job never appears, and asking for it by id shows nothing of it.
# tests/js/webview.mjs then drives the running job's page with Playwright:
# its curves, alert marker, checkpoints, config and log as text, updated
# live as new steps and log lines arrive; and two of A's runs compared.
# Screenshots of each page go to $TY_TMP (docs/webview-*.png are made this
# way: WEBVIEW_SCREENSHOTS=DIR copies them there).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_STORAGE_ROOT "$SEAL"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)

ADMIN=$(admin_token)
SFX=$$
TA=wv-a-$SFX TB=wv-b-$SFX
TA_ID=$(tenant_new "$TA")
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
# run_steps FROM TO LOSS0 SLOPE [SCALE]: the step lines of a run, as the
# trainer writes them: a falling loss (a validation loss every tenth step), a
# warming learning rate, a loss scale halved at step 20, and a throughput
# that swings from 291 to 98,500 tokens/s (learning rate and throughput times
# SCALE, 1 unless given)
run_steps() {
	jq -nc --argjson from "$1" --argjson to "$2" --argjson l0 "$3" --argjson k "$4" \
		--argjson f "${5:-1}" '
	[range($from; $to + 1) | . as $s | {step: $s, loss: ($l0 - ($s - 1) * $k),
	 lr: (0.0001 * ([$s, 10] | min) * $f), grad_norm: (1 + 0.1 / $s / $f),
	 tokens_per_s: ($f * (if $s % 7 == 0 then 291 elif $s % 5 == 0 then 98500
	                      else 9000 + ($s % 3) * 1000 end)),
	 loss_scale: (if $s < 20 then 65536 else 32768 end), step_s: 0.2, data_wait_s: 0.01}
	 + (if $s % 10 == 0 then {val_loss: ($l0 - ($s - 1) * $k + 0.1)} else {} end)]'
}
# log_lines STEPS: the log's records of those step lines
log_lines() { printf '%s' "$1" | jq -c '.[] | {type: "step"} + .'; }

JOB=$(tiny_job NAME 30 30)
TOKEN=$ADMIN
check_status "a storage quota of 2^40 bytes" 200 PUT "/v1/tenants/$TA/quota" "${JSON[@]}" \
	-d '{"max_storage_bytes": 1099511627776}'
check_status "A's job" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "${JOB/NAME/curve-a}"
J=$(printf '%s' "$BODY" | jq -r .id)
check_status "A's second run" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "${JOB/NAME/curve-b}"
J2=$(printf '%s' "$BODY" | jq -r .id)
check_status "A's queued job" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" -d "${JOB/NAME/waiting-a}"
check_status "B's job" 201 POST "/v1/tenants/$TB/jobs" "${JSON[@]}" -d "${JOB/NAME/secret-b-job}"
JB=$(printf '%s' "$BODY" | jq -r .id)
check_status "A's job runs" 201 POST "/v1/jobs/$J/attempts"
A=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
CRED=$TOKEN
check_status "it reports" 200 POST "/internal/v1/attempts/$A/heartbeat"
steps=$(run_steps 1 30 5 0.05)
check_status "thirty steps of falling loss" 200 POST "/internal/v1/attempts/$A/metrics" \
	"${JSON[@]}" -d "{\"steps\": $steps}"
check_status "a loss spike at step 31" 200 POST "/internal/v1/attempts/$A/metrics" "${JSON[@]}" \
	-d '{"steps": [{"step": 31, "loss": 50, "lr": 0.001, "grad_norm": 9, "tokens_per_s": 9000,
	"loss_scale": 32768}]}'
SHA=$(printf 'x' | sha256sum | cut -d' ' -f1)
check_status "a checkpoint at step 30" 201 POST "/internal/v1/attempts/$A/checkpoints" "${JSON[@]}" \
	-d "{\"step\": 30, \"world\": 1, \"shards\": [{\"name\": \"shard_00000_of_00001.bin\", \"bytes\": 4096, \"sha256\": \"$SHA\"}]}"
check_status "its runtime fetches the job's data key" 200 POST "/internal/v1/attempts/$A/key"
KEY=$(printf '%s' "$BODY" | jq -r .keys)
# seal_lines: stdin's lines appended to the attempt's sealed log, left open
seal_lines() { { printf '%s\n' "$KEY"; cat; } | "$SEAL" lines "$TRAINYARD_STORAGE_ROOT" "$TA_ID" "$J" 1 open; }
check "its log: the runtime's line, the trainer's step and event records" seal_lines < <(
	echo 'trainyard-worker: started the trainer on 1 rank'
	log_lines "$steps"
	echo '{"type":"event","event":"checkpoint","step":30}'
	echo '{"type":"step","step":31,"loss":50,"lr":0.001,"grad_norm":9,"tokens_per_s":9000}')
# more.sh: what the page, left open, sees next: nine steps and their log records
run_steps 32 40 3.5 0.05 >"$TY_TMP/more.json"
(umask 077 && printf '%s\n' "$KEY" >"$TY_TMP/key")
MORE=$TY_TMP/more.sh
cat >"$MORE" <<MORE_END
#!/usr/bin/env bash
set -euo pipefail
jq -c '{steps: .}' '$TY_TMP/more.json' |
	curl -fsS -o /dev/null -H 'Authorization: Bearer $CRED' -H 'Content-Type: application/json' \
		--data-binary @- '$TRAINYARD_URL/internal/v1/attempts/$A/metrics'
{ cat '$TY_TMP/key'; jq -c '.[] | {type: "step"} + .' '$TY_TMP/more.json'; } |
	'$SEAL' lines '$TRAINYARD_STORAGE_ROOT' '$TA_ID' '$J' 1 open
MORE_END
chmod +x "$MORE"

TOKEN=$ADMIN
check_status "the second run runs" 201 POST "/v1/jobs/$J2/attempts"
A2=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
check_status "and reports" 200 POST "/internal/v1/attempts/$A2/heartbeat"
check_status "thirty steps of its own" 200 POST "/internal/v1/attempts/$A2/metrics" \
	"${JSON[@]}" -d "{\"steps\": $(run_steps 1 30 5.4 0.03 0.5)}"
# then a second attempt, resumed from step 20, runs steps 21-30 again: the
# charts draw its lines for them, one point a step
requeue "$A2" "$J2"
TOKEN=$ADMIN
check_status "the second run's second attempt" 201 POST "/v1/jobs/$J2/attempts"
A2=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
check_status "reports" 200 POST "/internal/v1/attempts/$A2/heartbeat"
check_status "steps 21-30 again" 200 POST "/internal/v1/attempts/$A2/metrics" \
	"${JSON[@]}" -d "{\"steps\": $(run_steps 21 30 4.8 0.03 0.5)}"

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

page "/tenant/$TA" tenant
TENANT_PAGE=$(tr -d '\n' <"$TY_TMP/tenant.html")
check_match "the tenant page: quota and usage" 'devices \(max_gpus\).*Usage, last 30 days' \
	"$TENANT_PAGE"
check_match "the running jobs in use: A's two" '<td>running jobs</td><td>[0-9]+</td><td>2</td>' \
	"$TENANT_PAGE"
check_match "storage in binary units: the limit and the checkpoint's bytes" \
	'<td>storage</td><td>1 TiB</td><td><span[^>]*>4 KiB' "$TENANT_PAGE"
check_eq "never a byte count in full" 0 "$(grep -c '1099511627776' "$TY_TMP/tenant.html")"

page "/job/$JB" other
check_match "B's job by its id shows nothing" 'No such thing, or none you may see' \
	"$(cat "$TY_TMP/other.html")"
check_eq "not even its name" 0 "$(grep -c 'secret-b-job' "$TY_TMP/other.html")"
page "/jobs/$TB" otherjobs
check_eq "nor B's job list" 0 "$(grep -c 'secret-b-job' "$TY_TMP/otherjobs.html")"
for p in jobs tenant; do
	check "a screenshot of the $p page" test -s "$TY_TMP/webview-$p.png"
done

# ---- the job page and compare, driven by Playwright ------------------------------------
PW_OUT=$TY_TMP/playwright.out
WV_URL=$TRAINYARD_URL WV_TOKEN=$VIEW WV_TENANT=$TA WV_JOB=$J WV_JOB2=$J2 WV_NAME=curve-a \
	WV_NAME2=curve-b WV_MORE=$MORE WV_SHOTS=$TY_TMP WV_CHROMIUM=$CHROMIUM \
	timeout 240 node "$TY_ROOT/tests/js/webview.mjs" >"$PW_OUT" 2>"$TY_TMP/playwright.err"
# each of its checks counted here, and their number against the count it printed
ran=0
while IFS= read -r line; do
	case $line in
	'ok - '*) ok "${line#ok - }" && ran=$((ran + 1)) ;;
	'not ok - '*) not_ok "${line#not ok - }" && ran=$((ran + 1)) ;;
	'#'*) printf '%s\n' "$line" ;;
	esac
done <"$PW_OUT"
check_eq "every check of the browser session ran and reported" "checks $ran" \
	"$(grep '^checks ' "$PW_OUT" || tail -5 "$TY_TMP/playwright.err")"
for p in job compare; do
	check "a screenshot of the $p page" test -s "$TY_TMP/webview-$p.png"
done
if [[ -n ${WEBVIEW_SCREENSHOTS:-} ]]; then
	cp "$TY_TMP"/webview-{jobs,job,compare,tenant}.png "$WEBVIEW_SCREENSHOTS"/
fi
summary
