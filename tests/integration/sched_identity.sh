#!/usr/bin/env bash
# tests/integration/sched_identity.sh - one Unix user per tenant
# (docs/identity.md), on the local Slurm cluster:
#   - two new tenants get users of their own from the pool, and their
#     directories in the storage root and the data root are those users',
#     0700, under shared levels of root's at 0711;
#   - tenant A runs a job (its checkpoints and sealed log in A's storage,
#     its token shards in A's data root), then a dispatch of A's is cut
#     short after its credential was written, so that the credential waits
#     in A's directory of the spool (0600, A's user's);
#   - tenant B's attempt runs as B's user and, before its worker starts,
#     tries to read A's storage, data root, spool and credential: each is
#     refused (Permission denied), as is listing the tenants, while B's own
#     directories, shards and credential read; then B's job succeeds;
#   - A's cut-short dispatch, cancelled, goes with its credential file;
#   - a tenant without a user (none left in the pool) is held: its job
#     waits with an "identity:" reason and never reaches Slurm;
#   - a platform admin maps a tenant without one to a user of the host
#     (not root, not another tenant's; for good), its directories become
#     that user's, and its owner sees it; an owner may not map it.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/lib_sched.sh disable=SC1091
. "$HERE/lib_sched.sh"

needs SLURM_CONF "$SCHED_BIN" TRAINYARD_TENANT_UID_MIN TRAINYARD_TENANT_UID_MAX \
	TRAINYARD_STORAGE_ROOT TRAINYARD_DATA_ROOT
make_corpus
sched_quiet
sched_stop
ADMIN=$(admin_token)
SPOOL=$TRAINYARD_VAR/spool
STORE=$TRAINYARD_STORAGE_ROOT
DROOT=$TRAINYARD_DATA_ROOT
SMALL='.resources.nodes = 1 | .parallel.data_parallel = 1 | .parallel.global_batch = 4
	| .training.steps = 3 | .checkpoint.every_steps = 3'
TA=ida-$$ TB=idb-$$ TC=idc-$$
for t in "$TA" "$TB" "$TC"; do
	tenant_new "$t" >/dev/null
done
A=$(q "SELECT id FROM tenants WHERE name = '$TA'")
B=$(q "SELECT id FROM tenants WHERE name = '$TB'")
C=$(q "SELECT id FROM tenants WHERE name = '$TC'")
uid_of() { q "SELECT uid FROM tenant_identities WHERE tenant_id = '$1'"; }
UA=$(uid_of "$A") UB=$(uid_of "$B")
own() { stat -c '%u %a' "$1" 2>&1; }
sched_kill() { [[ -n ${SCHED_PID:-} ]] && kill "$SCHED_PID" 2>/dev/null && wait "$SCHED_PID" 2>/dev/null; }
trap 'sched_kill' EXIT

# ---- identities and directories --------------------------------------------
in_pool() { (($1 >= TRAINYARD_TENANT_UID_MIN && $1 <= TRAINYARD_TENANT_UID_MAX)); }
check "A and B have users of the pool" in_pool "${UA:-0}"
check "two different ones" test -n "$UA" -a -n "$UB" -a "$UA" != "$UB"
check_eq "given with an audit record" "tenant.identity $UA" \
	"$(q "SELECT action || ' ' || (detail->>'uid') FROM audit_log
	    WHERE action = 'tenant.identity' AND tenant_id = '$A'")"
check_eq "A's storage directory is A's user's, 0700" "$UA 700" "$(own "$STORE/tenants/$A")"
check_eq "and its data directory" "$UA 700" "$(own "$DROOT/tenants/$A")"
check_eq "the levels above are root's, search only" "0 711 0 711" \
	"$(own "$STORE/tenants") $(own "$DROOT/tenants")"

# ---- A's files: a job, then a credential left waiting -----------------------
sched_run plain
JA=$(submit "$TA" "$ADMIN" ida-1 "$SMALL")
check "A's job runs as A and succeeds" wait_state "$JA" 120 succeeded failed
check_eq "it succeeded" succeeded "$(job_state "$JA")"
sched_kill
A_LOG=$(find "$STORE/tenants/$A" -name 'attempt-1.log' | head -n 1)
A_MANIFEST=$(find "$STORE/tenants/$A" -name manifest.json | head -n 1)
check_eq "its sealed log is A's user's" "$UA 600" "$(own "$A_LOG")"
check_eq "and its checkpoints" "$UA" "$(stat -c %u "$A_MANIFEST" 2>&1)"
check_eq "the scheduler gave A's user an association in A's account" "ty-tenant-" \
	"$(sacctmgr -n -P show assoc account="ty-$TA" format=user 2>/dev/null | grep -o '^ty-tenant-' | head -n 1)"

# the dispatch of a second job of A stops right after its credential is written;
# a long lease keeps any other scheduler from taking it over meanwhile
JA2=$(submit "$TA" "$ADMIN" ida-2 "$SMALL")
sched_run crash TRAINYARD_SCHED_CRASH_AT=after_prepare TRAINYARD_SCHED_LEASE_S=600
gone() { ! kill -0 "$SCHED_PID" 2>/dev/null; }
check "a scheduler stops right after preparing A's dispatch" wait_until 60 gone
wait "$SCHED_PID" 2>/dev/null
A_CRED=$(find "$SPOOL/tenants/$A" -name '*.credential' 2>/dev/null | head -n 1)
check "A's credential waits in A's directory of the spool" test -n "$A_CRED"
check_eq "0600, A's user's" "$UA 600" "$(own "$A_CRED")"
check_eq "in a directory of A's user, 0700" "$UA 700" "$(own "$SPOOL/tenants/$A")"
check_eq "under the spool's shared levels" "0 711 0 711" "$(own "$SPOOL") $(own "$SPOOL/tenants")"

# ---- B's attempt reaches for A's files --------------------------------------
PROBE=$TY_TMP/probe-worker
cat >"$PROBE" <<EOF
#!/bin/sh
# the attempt's own processes, as Slurm starts them: first the reads, then the worker
try() { # try NAME CMD...: "probe NAME: ok", or the error
	name=\$1; shift
	if err=\$("\$@" 2>&1 >/dev/null); then echo "probe \$name: ok"; else echo "probe \$name: \$err"; fi
}
echo "probe user: \$(id -u) \$(id -g)"
try tenants ls '$STORE/tenants'
try a-storage ls '$STORE/tenants/$A'
try a-log cat '$A_LOG'
try a-checkpoint cat '$A_MANIFEST'
try a-data ls '$DROOT/tenants/$A'
try a-shard cat '$DROOT/tenants/$A/train_000000.bin'
try a-spool ls '$SPOOL/tenants/$A'
try a-credential cat '$A_CRED'
try own-storage ls '$STORE/tenants/$B'
try own-shard cat '$DROOT/tenants/$B/train_000000.bin'
try own-credential cat "\$TRAINYARD_ATTEMPT_TOKEN_FILE"
exec '$(dirname "$TRAIN_BIN")/trainyard-worker' "\$@"
EOF
chmod 755 "$PROBE"
JB=$(submit "$TB" "$ADMIN" idb-1 "$SMALL")
sched_run probe TRAINYARD_SCHED_WORKER_BIN="$PROBE"
check "B's job runs and succeeds" wait_state "$JB" 120 succeeded failed
check_eq "it succeeded" succeeded "$(job_state "$JB")"
OUT=$(cat "$SPOOL/tenants/$B/$JB-1.out" 2>&1)
probe() { printf '%s\n' "$OUT" | sed -n "s/^probe $1: //p"; }
check_eq "B's attempt ran as B's user" "$UB $UB" "$(probe user)"
denied() { # denied NAME WHAT
	check_match "B cannot read $2" 'Permission denied' "$(probe "$1")"
}
denied tenants "the list of tenants"
denied a-storage "A's storage directory"
denied a-log "A's sealed log"
denied a-checkpoint "A's checkpoint manifest"
denied a-data "A's data directory"
denied a-shard "A's token shards"
denied a-spool "A's directory of the spool"
denied a-credential "A's credential"
check_eq "B reads its own storage directory" ok "$(probe own-storage)"
check_eq "and its own token shards" ok "$(probe own-shard)"
check_eq "and its own credential" ok "$(probe own-credential)"
check "A's credential is still there: it was refused, not gone" test -f "$A_CRED"
check_eq "B's job's files are B's user's" "$UB" \
	"$(stat -c %u "$(find "$STORE/tenants/$B/jobs/$JB" -name 'attempt-1.log')" 2>&1)"
check "B's credential file is gone: its worker took it" \
	test -z "$(find "$SPOOL/tenants/$B" -name '*.credential' 2>/dev/null)"

# ---- A's cut-short dispatch, cancelled ---------------------------------------
TOKEN=$ADMIN api POST "/v1/jobs/$JA2/cancel"
q "UPDATE jobs SET dispatch_lease_until = now() WHERE id = '$JA2'" >/dev/null
check "A's cut-short dispatch ends cancelled" wait_state "$JA2" 60 cancelled
check "its credential file with it" test ! -e "$A_CRED"
sched_kill

# ---- a tenant without a user --------------------------------------------------
# as if C had been made before there was a pool; and there is none now
q "DELETE FROM tenant_identities WHERE tenant_id = '$C'" >/dev/null
JC=$(submit "$TC" "$ADMIN" idc-1 "$SMALL")
sched_run nopool TRAINYARD_TENANT_UID_MIN=1 TRAINYARD_TENANT_UID_MAX=0
reason_is_identity() { [[ $(q "SELECT state_reason FROM jobs WHERE id = '$JC'") == identity:* ]]; }
check "C's job waits, held for its identity" wait_until 30 reason_is_identity
check_match "saying why" 'no Unix user to run as' "$(q "SELECT state_reason FROM jobs WHERE id = '$JC'")"
check_eq "it stays queued, with no attempt" "queued 0" \
	"$(q "SELECT state || ' ' || (SELECT count(*) FROM job_attempts WHERE job_id = '$JC') FROM jobs WHERE id = '$JC'")"
check_eq "and C still has no user" "" "$(uid_of "$C")"
TOKEN=$ADMIN api POST "/v1/jobs/$JC/cancel"
sched_kill

# ---- a platform admin maps a tenant to a user ----------------------------------
# D, as a tenant made before there was a pool: no user, no directories
TD=idd-$$
D=$(q "INSERT INTO tenants (name) VALUES ('$TD') RETURNING id")
TC=$TD C=$D
TOKEN=$ADMIN
check_status "D has no identity to show" 404 GET "/v1/tenants/$TC/identity"
check_json "identity_not_found" identity_not_found .code
FREE=$(q "SELECT u FROM generate_series($TRAINYARD_TENANT_UID_MAX, $TRAINYARD_TENANT_UID_MIN, -1) u
	WHERE u NOT IN (SELECT uid FROM tenant_identities) LIMIT 1")
FREE_USER=$(getent passwd "$FREE" | cut -d: -f1)
OWNER_C=$(member_new "$TC" "idc-owner-$$" owner)
TOKEN=$OWNER_C
check_status "a tenant owner may not map it" 403 PUT "/v1/tenants/$TC/identity" \
	-H 'Content-Type: application/json' -d "{\"user\": \"$FREE_USER\"}"
TOKEN=$ADMIN
check_status "nor root" 422 PUT "/v1/tenants/$TC/identity" -H 'Content-Type: application/json' \
	-d '{"user": "root"}'
check_status "nor a user this host does not have" 422 PUT "/v1/tenants/$TC/identity" \
	-H 'Content-Type: application/json' -d '{"user": "no-such-user-here"}'
check_status "nor another tenant's user" 409 PUT "/v1/tenants/$TC/identity" \
	-H 'Content-Type: application/json' -d "{\"user\": \"$(getent passwd "$UA" | cut -d: -f1)\"}"
check_json "identity_taken" identity_taken .code
y "$ADMIN" -o json tenant set-identity "$TC" "$FREE_USER"
expect_rc "a platform admin maps D to a user of its choice (yardctl tenant set-identity)" 0
check_eq "recorded as the admin's" "$FREE $FREE_USER admin true" \
	"$(jq_out '"\(.uid) \(.user) \(.source) \(.usable)"')"
check_eq "with an audit record" "tenant.identity admin $FREE" \
	"$(q "SELECT action || ' ' || (detail->>'source') || ' ' || (detail->>'uid') FROM audit_log
		WHERE tenant_id = '$C' AND action = 'tenant.identity' ORDER BY at DESC LIMIT 1")"
check_eq "D's storage directory is that user's now, 0700" "$FREE 700" "$(own "$STORE/tenants/$C")"
check_status "the same user again changes nothing" 200 PUT "/v1/tenants/$TC/identity" \
	-H 'Content-Type: application/json' -d "{\"user\": \"$FREE_USER\"}"
check_status "another user is refused: a tenant's user is for good" 409 PUT "/v1/tenants/$TC/identity" \
	-H 'Content-Type: application/json' -d "{\"user\": \"$(getent passwd "$UB" | cut -d: -f1)\"}"
check_json "identity_exists" identity_exists .code
y "$OWNER_C" -o json tenant identity "$TC"
check_eq "the tenant's owner sees it (yardctl tenant identity)" "$FREE_USER" "$(jq_out .user)"
summary
