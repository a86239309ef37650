#!/usr/bin/env bash
# tests/integration/cli_flow.sh - yardctl from end to end against a stack.
#
# Walks the admin CLI through a tenant's life: bootstrap, tenants, quotas,
# users, tokens, members and jobs, and checks the exit status of each kind
# of failure (cli/README.md lists them). Needs TRAINYARD_URL and
# TRAINYARD_DB (tests/run exports its stack's) and $BUILD/bin/yardctl
# (BUILD defaults to build). Tenant and user names end in the shell's pid,
# so a reused database does no harm; bootstrap alone needs a fresh one.
#
# Tokens travel in TRAINYARD_TOKEN, never on a command line.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB "$YARDCTL"

UUID_RE='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
ADMIN=

# ---------------------------------------------------------------- bootstrap
# tests/run gives each run a fresh database, but every script of the run
# shares it, and lib.sh's admin_token keeps the one bootstrap's token in
# $TRAINYARD_VAR/admin.token. Bootstrap here under the same lock; only when
# an earlier script of this run already did is its token taken instead.
bootstrap_first() {
	local shared=${TRAINYARD_VAR:+$TRAINYARD_VAR/admin.token}
	if [[ -n $shared ]]; then
		exec 9>"$shared.lock"
		flock 9
	fi
	if [[ -n $shared && -s $shared ]]; then
		ADMIN=$(<"$shared")
		ok "bootstrap: done by an earlier script of this run; its token is used"
	else
		y "" bootstrap --name admin
		expect_rc "bootstrap creates the first platform admin" 0
		check_match "bootstrap prints the token alone" '^ty_[A-Za-z0-9_-]{43}$' "$OUT"
		ADMIN=$OUT
		if [[ -n $shared && $RC == 0 ]]; then
			(umask 077 && printf '%s\n' "$ADMIN" >"$shared.tmp" && mv "$shared.tmp" "$shared")
		fi
	fi
	[[ -n $shared ]] && exec 9>&-
}
bootstrap_first

y "" bootstrap
expect_rc "a second bootstrap is refused (exit 1)" 1
check_match "the refusal says why" 'bootstrap refused: a platform admin already exists' "$ERR"

y "$ADMIN" whoami -o json
expect_rc "whoami with the admin token" 0
check_eq "whoami names the admin" "admin admin" "$(jq_out '"\(.user.name) \(.platform_role)"')"

# ---------------------------------------------------------------- tenants
T=cli-t$$
y "$ADMIN" tenant create "$T" --display-name "CLI flow $$" -o json
expect_rc "tenant create" 0
TID=$(jq_out .id)
check_match "tenant create returns an id" "$UUID_RE" "$TID"

y "$ADMIN" tenant create "$T"
expect_rc "a duplicate tenant is refused (exit 1)" 1
check_match "the refusal carries the code" '\(tenant_exists\)' "$ERR"

y "$ADMIN" tenant list
expect_rc "tenant list" 0
check_match "tenant list has a header and the tenant" "^ID +NAME +DISPLAY_NAME +CREATED.*$TID +$T " \
	"$(printf '%s' "$OUT" | tr '\n' ' ')"

y "$ADMIN" tenant show "$T" -o json
check_eq "tenant show by name" "$TID" "$(jq_out .id)"
y "$ADMIN" tenant show "$TID" -o json
check_eq "tenant show by id" "$T" "$(jq_out .name)"

# ---------------------------------------------------------------- quota
y "$ADMIN" quota set "$T" --max-gpus 8 --max-running-jobs 3 --gpu-hours-per-month 500 \
	--max-storage-bytes 1073741824 --weight 2.5
expect_rc "quota set" 0
y "$ADMIN" quota get "$T" -o json
check_eq "quota values round-trip" "8 3 500 1073741824 2.5" \
	"$(jq_out '"\(.max_gpus) \(.max_running_jobs) \(.gpu_hours_per_month) \(.max_storage_bytes) \(.weight)"')"
y "$ADMIN" quota set "$T" --max-running-jobs 4
y "$ADMIN" quota get "$T" -o json
check_eq "quota set keeps the fields it is not given" "8 4" "$(jq_out '"\(.max_gpus) \(.max_running_jobs)"')"
y "$ADMIN" quota set "$T"
expect_rc "quota set without a field is a usage error (exit 2)" 2

# ---------------------------------------------------------------- priority classes
CL=cls-$$
y "$ADMIN" class set "$CL" --value 50 --description "release week"
expect_rc "class set" 0
y "$ADMIN" class list -o json
check_eq "class list has it, with its value" "50" "$(jq_out ".items[] | select(.name == \"$CL\") | .value")"
y "$ADMIN" class set "$CL"
expect_rc "class set without --value is a usage error" 2
y "$ADMIN" quota set "$T" --borrow-gpus 4 --priority-classes "$CL"
expect_rc "quota set --borrow-gpus --priority-classes" 0
y "$ADMIN" quota get "$T" -o json
check_eq "borrowing and classes round-trip" "4 $CL" "$(jq_out '"\(.borrow_gpus) \(.priority_classes | join(","))"')"
y "$ADMIN" class delete "$CL"
expect_rc "a class a quota allows is not removed (409: exit 1)" 1
y "$ADMIN" quota set "$T" --priority-classes ""
y "$ADMIN" class delete "$CL"
expect_rc "once no quota names it, it is" 0

# ---------------------------------------------------------------- users, tokens
A=alice-$$
B=bob-$$
y "$ADMIN" user create "$A" --email "alice@example.org"
expect_rc "user create alice" 0
y "$ADMIN" user create "$B"
expect_rc "user create bob" 0
y "$ADMIN" user list -o json
check_eq "user list has both" "2" "$(jq_out "[.items[] | select(.name == \"$A\" or .name == \"$B\")] | length")"

y "$ADMIN" token create "$A"
expect_rc "token create for alice" 0
ALICE=$OUT
check_match "token create prints the secret alone" '^ty_[A-Za-z0-9_-]{43}$' "$ALICE"
y "$ADMIN" token create "$B"
BOB=$OUT
check_match "token create for bob" '^ty_[A-Za-z0-9_-]{43}$' "$BOB"

# ---------------------------------------------------------------- members
y "$ADMIN" member grant "$T" "$A" editor
expect_rc "member grant alice editor" 0
y "$ADMIN" member grant "$T" "$B" viewer
expect_rc "member grant bob viewer" 0
y "$ADMIN" member list "$T" -o json
check_eq "member list shows both roles" "$A=editor $B=viewer" \
	"$(jq_out "[.items[] | select(.user == \"$A\" or .user == \"$B\") | \"\(.user)=\(.role)\"] | sort | join(\" \")")"

# ---------------------------------------------------------------- jobs
# A member's job names a registered dataset (data paths are a platform
# admin's, docs/datasets.md): alice registers one and uploads some text.
printf 'The quick brown fox jumps over the lazy dog.\n' >"$TY_TMP/corpus.txt"
y "$ALICE" dataset create "$T" cli-text --classification internal
expect_rc "alice (editor) registers a dataset" 0
y "$ALICE" dataset upload "$T" cli-text "$TY_TMP/corpus.txt" --format text
expect_rc "and uploads its first version" 0
SPEC=$TY_TMP/spec.json
cat >"$SPEC" <<'JSON'
{
  "name": "cli-flow",
  "model": {"preset": "tiny"},
  "data": {"dataset": "cli-text"},
  "parallel": {"data_parallel": 2, "micro_batch": 4, "global_batch": 8},
  "resources": {"nodes": 2, "gpus_per_node": 0, "ranks_per_node": 1},
  "training": {"steps": 10}
}
JSON

y "$ALICE" job submit "$SPEC" --tenant "$T"
expect_rc "alice (editor) submits a job" 0
J=$OUT
check_match "job submit prints the id alone" "$UUID_RE" "$J"

y "$ALICE" job list --tenant "$T"
check_match "job list shows it queued" "^ID +NAME +STATE +DEVICES +CREATED.*$J +cli-flow +queued +2 " \
	"$(printf '%s' "$OUT" | tr '\n' ' ')"
y "$ALICE" job show "$J" -o json
check_eq "job show: queued" "queued" "$(jq_out .state)"

y "$BOB" job submit "$SPEC" --tenant "$T"
expect_rc "bob (viewer) cannot submit (exit 3)" 3
y "$BOB" job cancel "$J"
expect_rc "bob (viewer) cannot cancel (exit 3)" 3
y "$BOB" job list --tenant "$T" -o json
expect_rc "bob (viewer) can list" 0
check_eq "bob sees the job" "$J" "$(jq_out '.items[0].id')"

y "$ALICE" job submit - --tenant "$T" < <(jq '.parallel.global_batch = 7' "$SPEC")
expect_rc "an invalid spec is refused (exit 1)" 1
check_match "the refusal points at the field" '/parallel/global_batch: .*\(batch_mismatch\)' "$ERR"

y "$ALICE" job submit "$SPEC" --tenant "$T" --idempotency-key "k-$$"
K1=$OUT
y "$ALICE" job submit "$SPEC" --tenant "$T" --idempotency-key "k-$$"
check_eq "a retry with the idempotency key returns the same job" "$K1" "$OUT"
check_eq "and that job is a new one" "new" "$([[ $K1 =~ $UUID_RE && $K1 != "$J" ]] && echo new)"

y "$ALICE" job events "$J"
expect_rc "job events" 0
check_match "job events lists the queued event" 'TO .*queued' "$(printf '%s' "$OUT" | tr '\n' ' ')"

y "$ALICE" job cancel "$J"
expect_rc "alice cancels the job" 0
y "$ALICE" job show "$J" -o json
check_eq "the job is cancelled" "cancelled" "$(jq_out .state)"
y "$ALICE" job cancel "$J"
expect_rc "cancelling it again is refused (exit 1)" 1
check_match "the refusal carries the code" '\(job_not_cancellable\)' "$ERR"

y "$ADMIN" job show 00000000-0000-4000-8000-000000000000
expect_rc "an unknown job id is not found (exit 4)" 4

# ---------------------------------------------------------------- revocation
y "$ADMIN" token create "$A" --name spare -o json
SPARE=$(jq_out .token)
SPARE_ID=$(jq_out .id)
y "$SPARE" whoami
expect_rc "a new token works" 0
y "$ADMIN" token revoke "$SPARE_ID"
expect_rc "token revoke" 0
y "$SPARE" whoami
expect_rc "a revoked token is refused (exit 3)" 3

y "$ADMIN" member revoke "$T" "$B"
expect_rc "member revoke bob" 0
y "$BOB" job list --tenant "$T"
expect_rc "bob no longer sees the tenant (exit 4)" 4

# ---------------------------------------------------------------- usage, transport
y "" --help
expect_rc "--help exits 0" 0
check_match "--help prints usage on stdout" '^usage: yardctl' "$OUT"
y "" job submit --help
expect_rc "job submit --help exits 0" 0
check_match "job submit --help prints its usage" '^usage: yardctl job submit FILE' "$OUT"
y "$ADMIN" tenant list --bogus
expect_rc "an unknown flag is a usage error (exit 2)" 2
check_match "the usage goes to stderr" 'usage: yardctl tenant list' "$ERR"
y "$ADMIN" frobnicate
expect_rc "an unknown command is a usage error (exit 2)" 2
y "$ADMIN" --url http://127.0.0.1:1 whoami
expect_rc "a URL nothing answers on is a connection error (exit 5)" 5

summary
