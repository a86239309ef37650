#!/usr/bin/env bash
# tests/integration/cli_help.sh - yardctl when it is misused, and its
# commands for alerts, webhooks and keys, against a stack: the hint when no
# token is set, --limit checked against TRAINYARD_PAGE_MAX before any
# request, the nearest command or option for a typo, a job with no log
# yet, state refusals that read as English, metrics paged with --after and
# --all, a job's spec indented, a webhook's secret shown once.
#
# Tokens travel in TRAINYARD_TOKEN, never on a command line. The one
# webhook points at loopback (a platform admin's waiver).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB "$YARDCTL"

ADMIN=$(admin_token)
SFX=$$
T=help-$SFX
tenant_new "$T" >/dev/null
OWNER=$(member_new "$T" "help-owner-$SFX" owner)
PAGE_MAX=${TRAINYARD_PAGE_MAX:-200}

# first_line TEXT: its first line
first_line() { printf '%s\n' "$1" | head -n 1; }
# rows TEXT: the lines of a table after its header
rows() { printf '%s\n' "$1" | tail -n +2 | grep -c .; }

# ---------------------------------------------------------------- no token
y "" whoami
expect_rc "without a token: authentication failed (exit 3)" 3
check_eq "and yardctl says how to give one" \
	"yardctl: no API token: set TRAINYARD_TOKEN or pass --token" "$ERR"
y "ty_not-a-real-token" whoami
expect_rc "a bad token is still refused (exit 3)" 3
check_eq "with the server's reason, not the hint" "yardctl: the token is not valid (unauthenticated)" "$ERR"

# ---------------------------------------------------------------- --limit
y "$OWNER" job list --tenant "$T" --limit 0
expect_rc "--limit 0 is a usage error (exit 2)" 2
check_eq "naming the range" \
	"yardctl: --limit must be a whole number from 1 to $PAGE_MAX (TRAINYARD_PAGE_MAX)" \
	"$(first_line "$ERR")"
y "$OWNER" job list --tenant "$T" --limit $((PAGE_MAX + 300))
expect_rc "--limit past TRAINYARD_PAGE_MAX is a usage error too, not a server refusal" 2
check_eq "with the same message" \
	"yardctl: --limit must be a whole number from 1 to $PAGE_MAX (TRAINYARD_PAGE_MAX)" \
	"$(first_line "$ERR")"
y "$OWNER" job list --tenant "$T" --limit "$PAGE_MAX"
expect_rc "--limit TRAINYARD_PAGE_MAX is taken" 0

# ---------------------------------------------------------------- typos
y "$OWNER" jbo list --tenant "$T"
expect_rc "a mistyped command is a usage error (exit 2)" 2
check_eq "that names the nearest command" \
	$'yardctl: unknown command "jbo"; did you mean "job"?\nRun \'yardctl --help\' for the list of commands.' \
	"$ERR"
y "$OWNER" job lsit --tenant "$T"
expect_rc "a mistyped subcommand (exit 2)" 2
check_eq "names the nearest subcommand" \
	$'yardctl: unknown command "lsit"; did you mean "list"?\nRun \'yardctl job --help\' for the list of commands.' \
	"$ERR"
y "$OWNER" job list --tenant "$T" --limti 5
expect_rc "a mistyped option (exit 2)" 2
check_eq "names the nearest option" 'yardctl: unknown option "--limti"; did you mean --limit?' \
	"$(first_line "$ERR")"
y "$OWNER" frobnicate
expect_rc "a word like no command (exit 2)" 2
check_eq "says so without the whole command list" \
	$'yardctl: unknown command "frobnicate"\nRun \'yardctl --help\' for the list of commands.' "$ERR"

# ---------------------------------------------------------------- jobs
y "$ADMIN" job submit - --tenant "$T" < <(tiny_job cli-help 300 30)
expect_rc "a job to run" 0
J=$OUT
y "$ADMIN" job submit - --tenant "$T" < <(tiny_job cli-idle 10)
expect_rc "and one that stays queued" 0
Q=$OUT

y "$OWNER" job logs "$Q"
expect_rc "the log of a queued job: nothing went wrong (exit 0)" 0
check_eq "nothing on stdout" "" "$OUT"
check_eq "and stderr says why" "yardctl: job $Q has no log yet: it is queued" "$ERR"

y "$OWNER" job show "$Q"
expect_rc "job show" 0
check_match "prints the spec after the fields, indented" $'\n\nspec:\n  \\{\n    "[a-z_]+": ' "$OUT"
check_match "a member a line" $'\n    "name": "cli-idle",\n' "$OUT"

y "$OWNER" job cancel "$Q"
expect_rc "the owner cancels the queued job" 0
y "$OWNER" job cancel "$Q"
expect_rc "a second cancel is refused (exit 1)" 1
check_eq "in plain English" "yardctl: the job has already been cancelled (job_not_cancellable)" \
	"$ERR"
y "$ADMIN" job attempt "$Q"
expect_rc "no attempt starts from it (exit 1)" 1
check_eq "and that reads right too" \
	"yardctl: an attempt starts from a queued job; this one has been cancelled (job_state_conflict)" \
	"$ERR"
y "$OWNER" job logs "$Q"
expect_rc "the log of a job cancelled while queued (exit 0)" 0
check_eq "has none, for good" "yardctl: job $Q has no log: it has been cancelled" "$ERR"

# ---------------------------------------------------------------- metrics, alerts
N=$((PAGE_MAX + 50))
y "$ADMIN" job attempt "$J" -o json
expect_rc "the job's attempt" 0
A=$(jq_out .id)
CRED=$(jq_out .credential)
TOKEN=$CRED check_status "it runs" 200 POST "/internal/v1/attempts/$A/heartbeat"
# 25 ordinary steps, a loss spike at step 26 (an alert), then more than a page
report() { # report DESC FROM TO LOSS
	local steps
	steps=$(jq -nc --argjson a "$2" --argjson b "$3" --argjson loss "$4" \
		'[range($a; $b + 1) | {step: ., loss: ($loss + (. % 3) * 0.01), tokens_per_s: 1000}]')
	TOKEN=$CRED check_status "$1" 200 POST "/internal/v1/attempts/$A/metrics" \
		-H 'Content-Type: application/json' -d "{\"steps\": $steps}"
}
report "25 steps reported" 1 25 5
report "then a loss spike" 26 26 100
report "then the rest, $N in all" 27 "$N" 5

y "$OWNER" job metrics "$J"
expect_rc "job metrics" 0
check_eq "one page: TRAINYARD_PAGE_MAX steps" "$PAGE_MAX" "$(rows "$OUT")"
y "$OWNER" job metrics "$J" --all
expect_rc "job metrics --all" 0
check_eq "every step" "$N" "$(rows "$OUT")"
y "$OWNER" job metrics "$J" --all -o json
check_eq "every step once, in order" "$N 1 $N" \
	"$(jq_out '"\(.items | map(.step) | unique | length) \(.items[0].step) \(.items[-1].step)"')"
y "$OWNER" job metrics "$J" --after $((N - 5))
expect_rc "job metrics --after" 0
check_eq "the steps after it" "$((N - 4)) $N 5" \
	"$(printf '%s\n' "$OUT" | awk 'NR == 2 { f = $1 } NR > 1 { l = $1; n++ } END { print f, l, n }')"
# a second attempt, resumed from a checkpoint, reports three steps again: the
# first page ends between the two lines of step PAGE_MAX, and none is lost
requeue "$A" "$J"
y "$ADMIN" job attempt "$J" -o json
expect_rc "the job's second attempt" 0
A=$(jq_out .id)
CRED=$(jq_out .credential)
TOKEN=$CRED check_status "it runs" 200 POST "/internal/v1/attempts/$A/heartbeat"
report "it reports steps $PAGE_MAX to $((PAGE_MAX + 2)) again" "$PAGE_MAX" $((PAGE_MAX + 2)) 4
y "$OWNER" job metrics "$J" -o json
check_eq "a page holds TRAINYARD_PAGE_MAX steps, and both lines of the last" \
	"$PAGE_MAX $((PAGE_MAX + 1)) 1 2" \
	"$(jq_out "\"\\(.items | map(.step) | unique | length) \\(.items | length) \\([.items[] | select(.step == $PAGE_MAX) | .attempt | tostring] | join(\" \"))\"")"
y "$OWNER" job metrics "$J" --all -o json
check_eq "--all: every line of both attempts" "$((N + 3)) $N" \
	"$(jq_out '"\(.items | length) \(.items | map(.step) | unique | length)"')"
y "$OWNER" job metrics "$J" --after -3
expect_rc "a negative --after is a usage error (exit 2)" 2
check_eq "that says what it takes" "yardctl: --after needs a step number, 0 to 999999999" \
	"$(first_line "$ERR")"

y "$OWNER" alert list "$T" --job "$J"
expect_rc "alert list" 0
check_match "shows the loss spike" "^ID +KIND +JOB +CREATED +DETAIL .* loss_spike +$J " \
	"$(printf '%s' "$OUT" | tr '\n' ' ')"
y "$OWNER" alert list "$T" --job "$J" -o json
check_eq "at step 26" "26" "$(jq_out '.items[] | select(.kind == "loss_spike") | .detail.step')"

# ---------------------------------------------------------------- webhooks
PORT=$((${TRAINYARD_API_PORT:-28080} + 301))
HOOK_URL=http://127.0.0.1:$PORT/hook
y "$OWNER" webhook create "$T" "$HOOK_URL"
expect_rc "a loopback receiver is refused to the owner (exit 1)" 1
check_match "at the url" '/url: .*\(webhook_address_not_allowed\)' "$ERR"
y "$OWNER" webhook create "$T" "https://example.org/h" --kind bored
expect_rc "an unknown kind is refused (exit 1)" 1
check_match "at its field" '/kinds: .*\(invalid_value\)' "$ERR"
y "$OWNER" webhook create "$T"
expect_rc "a webhook needs a URL (exit 2)" 2

y "$ADMIN" webhook create "$T" "$HOOK_URL" --allow-private --kind stalled --kind restarts
expect_rc "the admin allows the loopback receiver" 0
W=$(printf '%s\n' "$OUT" | awk '$1 == "id" { print $2 }')
SECRET=$(printf '%s\n' "$OUT" | awk '$1 == "secret" { print $2 }')
check_match "its id" '^[0-9a-f-]{36}$' "$W"
check_match "and its secret, printed" '^whsec_[0-9a-f]{64}$' "$SECRET"
check_eq "once" 1 "$(printf '%s\n' "$OUT" | grep -c "${SECRET:-none}")"
check_match "with its kinds" 'kinds +\["stalled","restarts"\]' "$OUT"
check_eq "stderr says it is shown this once" \
	"yardctl: the secret is shown this once: keep it with the receiver" "$ERR"

y "$OWNER" webhook list "$T"
expect_rc "the owner lists the webhooks" 0
check_match "the webhook" "^ID +URL +KINDS +PRIVATE +CREATED .*$W +$HOOK_URL " \
	"$(printf '%s' "$OUT" | tr '\n' ' ')"
y "$OWNER" webhook list "$T" -o json
check_eq "never its secret" 0 "$(printf '%s' "$OUT" | grep -c "${SECRET#whsec_}")"

y "$OWNER" webhook deliveries "$T" "$W"
expect_rc "its deliveries" 0
check_match "as a table" '^ID +ALERT +KIND +STATE +TRIES +LAST_STATUS +LAST_ERROR +NEXT +DELIVERED' "$OUT"
y "$OWNER" webhook delete "$T" "$W"
expect_rc "the owner deletes it" 0
check_eq "and is told" "webhook deleted" "$OUT"
y "$OWNER" webhook delete "$T" "$W"
expect_rc "a second delete finds none (exit 4)" 4
check_match "naming the code" '\(webhook_not_found\)' "$ERR"

# ---------------------------------------------------------------- keys
TS=help-shred-$SFX
tenant_new "$TS" >/dev/null
y "$ADMIN" keys shred "$TS"
expect_rc "keys shred without --yes is a usage error (exit 2)" 2
check_eq "that says what is at stake" \
	"yardctl: keys shred makes everything the tenant's jobs encrypted unreadable, for good: add --yes to go on" \
	"$(first_line "$ERR")"
y "$OWNER" keys shred "$T" --yes
expect_rc "an owner may not shred (exit 3)" 3
y "$ADMIN" keys shred "$TS" --yes
expect_rc "the admin shreds a tenant's keys" 0
check_eq "and is told" "the tenant's keys are destroyed" "$OUT"
y "$ADMIN" keys status -o json
expect_rc "keys status" 0
check_match "names the master key" '^[0-9a-f]{16}$' "$(jq_out .master_key_id)"

summary
