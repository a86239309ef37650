#!/usr/bin/env bash
# tests/integration/code_grants.sh - another tenant's leave to run a code
# bundle (docs/own-code.md, "Sharing code"), from outside. Granting: only
# the bundle's tenant owner grants (an editor is refused), a grant names
# another tenant and an expiry in time, an internal bundle's grant is in
# force at once, a confidential one's only once a platform admin approves
# it; the grantee lists what it was granted. Running: the grantee's command
# job names the bundle as owner/name, pinned at submission; its attempt
# (the worker, run here without Slurm) gets the bundle's key under the
# grant, a copy of the sealed archive in the grantee's own tree (the
# grantee's user's, still ciphertext), unpacks it and runs it; the read is
# audited with the owner; the checkpoint's lineage names the owner's code
# and a confidential bundle makes its checkpoints confidential. Revoking:
# no new job names the bundle, an attempt that starts after it is refused
# the key (grant_not_in_force) and its job fails with nothing unpacked.
# yardctl grants, lists and revokes the same way.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"
# shellcheck source=SCRIPTDIR/../trainer/lib.sh disable=SC1091
. "$HERE/../trainer/lib.sh"

WORKER_BIN=$(dirname "$TRAIN_BIN")/trainyard-worker
needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_DATA_ROOT TRAINYARD_STORAGE_ROOT "$WORKER_BIN"

ADMIN=$(admin_token)
SFX=$$
TA=cg-a-$SFX TB=cg-b-$SFX
TA_ID=$(tenant_new "$TA")
TB_ID=$(tenant_new "$TB")
OLGA=$(member_new "$TA" "cg-olga-$SFX" owner)
ALICE=$(member_new "$TA" "cg-alice-$SFX" editor)
BOB=$(member_new "$TB" "cg-bob-$SFX" editor)
JSON=(-H 'Content-Type: application/json')
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; } # jb FILTER: the filter over the last answer
SOON=$(date -u -d '+30 days' +%Y-%m-%dT%H:%M:%SZ)

# ---- the owner's bundles: a program that reports 6 steps, a checkpoint at 3 and 6
SRC=$TY_TMP/src
mkdir -p "$SRC"
cat >"$SRC/prog.sh" <<'SH'
#!/bin/bash
set -eu
report() { printf '%s\n' "$1" >&"$TRAINYARD_REPORT_FD"; }
echo "prog.sh of the owner, rank $RANK"
for ((step = ${TRAINYARD_RESUME_STEP:-0} + 1; step <= 6; step++)); do
	report "{\"type\":\"step\",\"step\":$step,\"loss\":0.$((9 - step)),\"tokens\":64}"
	if ((step % 3 == 0)); then
		mkdir -p -m 0700 "$TRAINYARD_CHECKPOINT_DIR/$step"
		echo "$step" >"$TRAINYARD_CHECKPOINT_DIR/$step/state"
		report "{\"type\":\"checkpoint\",\"step\":$step}"
	fi
done
SH
chmod 0755 "$SRC/prog.sh"
tar -cf "$TY_TMP/code.tar" -C "$SRC" .
TOKEN=$ALICE
for b in prog:internal secret:confidential; do
	check_status "alice registers ${b%%:*} (${b#*:})" 201 POST "/v1/tenants/$TA/code" "${JSON[@]}" \
		-d "{\"name\": \"${b%%:*}\", \"classification\": \"${b#*:}\"}"
	check_status "and its version 1" 201 POST "/v1/tenants/$TA/code/${b%%:*}/versions" \
		-H 'Content-Type: application/x-tar' --data-binary "@$TY_TMP/code.tar"
done
BUNDLE=$(q "SELECT id FROM code_bundles WHERE tenant_id = '$TA_ID' AND name = 'prog'")
VERSION=$(q "SELECT v.id FROM code_versions v WHERE v.bundle_id = '$BUNDLE' AND v.version = 1")

# spec CODE: the grantee's command job on one rank
spec() {
	jq -n --arg code "$1" '{name: "granted", kind: "command", code: $code,
		command: ["bash", "prog.sh"], resources: {nodes: 1, ranks_per_node: 1},
		training: {steps: 6}, checkpoint: {keep: 2}}'
}
submit() { # submit CODE: BOB submits; STATUS, BODY
	TOKEN=$BOB
	api POST "/v1/tenants/$TB/jobs" "${JSON[@]}" -d "$(spec "$1")"
}
attempt() { # attempt JOB NAME: start an attempt and run the worker; WRC, ATT
	TOKEN=$ADMIN
	api POST "/v1/jobs/$1/attempts"
	ATT=$(jb .id)
	WRC=0
	TRAINYARD_ATTEMPT=$ATT TRAINYARD_ATTEMPT_TOKEN=$(jb .credential) TRAINYARD_HEARTBEAT_S=2 \
		"$WORKER_BIN" attempt --url "$TRAINYARD_URL" >"$TY_TMP/$2.out" 2>"$TY_TMP/$2.err" || WRC=$?
}

# ---- before any grant ------------------------------------------------------------
submit "$TA/prog"
check_eq "without a grant another tenant's bundle is unknown" "422 unknown_code /code" \
	"$STATUS $(jb '.errors[0] | "\(.code) \(.pointer)"')"
submit "prog"
check_eq "and a name without its owner is the grantee's own (none)" "422 unknown_code" \
	"$STATUS $(jb '.errors[0].code')"

# ---- granting ------------------------------------------------------------------
TOKEN=$ALICE
check_status "an editor does not grant: 403" 403 POST "/v1/tenants/$TA/code/prog/grants" \
	"${JSON[@]}" -d "{\"tenant\": \"$TB\", \"expires_at\": \"$SOON\"}"
TOKEN=$OLGA
check_status "nor does the owner grant to its own tenant" 422 POST "/v1/tenants/$TA/code/prog/grants" \
	"${JSON[@]}" -d "{\"tenant\": \"$TA\", \"expires_at\": \"$SOON\"}"
check_json "at /tenant" /tenant '.errors[0].pointer'
check_status "or with an expiry past" 422 POST "/v1/tenants/$TA/code/prog/grants" \
	"${JSON[@]}" -d "{\"tenant\": \"$TB\", \"expires_at\": \"2020-01-01T00:00:00Z\"}"
check_json "at /expires_at" /expires_at '.errors[0].pointer'
check_status "a bundle that does not exist: 404" 404 POST "/v1/tenants/$TA/code/nosuch/grants" \
	"${JSON[@]}" -d "{\"tenant\": \"$TB\", \"expires_at\": \"$SOON\"}"
check_json "code_not_found" code_not_found .code
check_status "the owner grants prog to $TB" 201 POST "/v1/tenants/$TA/code/prog/grants" \
	"${JSON[@]}" -d "{\"tenant\": \"$TB\", \"expires_at\": \"$SOON\"}"
check_json "an internal bundle's grant is in force at once" "prog $TB active" \
	'"\(.code) \(.tenant) \(.state)"'
PROG_GRANT=$(jb .id)
check_status "and grants secret" 201 POST "/v1/tenants/$TA/code/secret/grants" \
	"${JSON[@]}" -d "{\"tenant\": \"$TB\", \"expires_at\": \"$SOON\"}"
check_json "a confidential bundle's grant waits" pending .state
SECRET_GRANT=$(jb .id)
check_status "the owner does not approve it: 403" 403 \
	POST "/v1/tenants/$TA/code/secret/grants/$SECRET_GRANT/approve"
check_eq "both are on record" 2 "$(q "SELECT count(*) FROM audit_log WHERE action = 'code.grant'
	AND outcome = 'success' AND tenant_id = '$TA_ID'")"
TOKEN=$ALICE
check_status "a member lists the bundle's grants" 200 GET "/v1/tenants/$TA/code/prog/grants"
check_json "one, active" "1 active" '"\(.items | length) \(.items[0].state)"'
TOKEN=$BOB
check_status "the grantee does not see the owner's grants" 404 GET "/v1/tenants/$TA/code/prog/grants"
check_status "it lists what it was granted" 200 GET "/v1/tenants/$TB/shared-code"
check_json "prog, in force; secret not yet" "$TA/prog@1" \
	'[.items[] | "\(.owner)/\(.name)@\(.latest_version)"] | join(" ")'
submit "$TA/secret"
check_eq "a pending grant runs nothing" "422 unknown_code" "$STATUS $(jb '.errors[0].code')"
TOKEN=$ADMIN
check_status "a platform admin approves it" 200 POST "/v1/tenants/$TA/code/secret/grants/$SECRET_GRANT/approve"
check_json "now active" active .state
check_status "approving again: 409" 409 POST "/v1/tenants/$TA/code/secret/grants/$SECRET_GRANT/approve"
check_json "grant_state_conflict" grant_state_conflict .code

# ---- running the owner's code -------------------------------------------------------
submit "$TA/prog"
check_eq "the grantee's job names owner/name, pinned" "201 $TA/prog@1" "$STATUS $(jb .spec.code)"
J=$(jb .id)
submit "$TA/secret@1"
check_eq "and the approved one" 201 "$STATUS"
JS=$(jb .id)
submit "$TA/prog@1"
J3=$(jb .id)
attempt "$J" granted
check_eq "the grantee's job runs the owner's program" 0 "$WRC"
check_match "the worker unpacked the owner's version" "code prog@1: 1 files" "$(cat "$TY_TMP/granted.err")"
y "$BOB" job logs "$J"
expect_rc "yardctl job logs" 0
check_match "the program's output is the job's log" "prog.sh of the owner, rank 0" "$OUT"
TOKEN=$BOB
api GET "/v1/jobs/$J"
check_json "the job succeeded" succeeded .state
check_eq "every step reported" 6 "$(q "SELECT max(step) FROM job_metrics WHERE job_id = '$J'")"
check_eq "the read is on record in the grantee's tenant, with the owner" "$TB_ID $TA code/prog@1" \
	"$(q "SELECT tenant_id || ' ' || (detail->>'code_tenant') || ' ' || resource FROM audit_log
		WHERE action = 'code.read' AND outcome = 'success' AND detail->>'attempt_id' = '$ATT'")"
COPY=$TRAINYARD_STORAGE_ROOT/tenants/$TB_ID/granted/$BUNDLE/$VERSION/bundle.tar
check "the sealed archive was copied into the grantee's tree" test -s "$COPY"
check_eq "as the grantee's user's" "$(q "SELECT uid FROM tenant_identities WHERE tenant_id = '$TB_ID'")" \
	"$(stat -c %u "$COPY")"
check_eq "still sealed: the owner's ciphertext, byte for byte" \
	"$(sha256sum <"$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/code/$BUNDLE/$VERSION/bundle.tar")" \
	"$(sha256sum <"$COPY")"
check "with no line of the program in it" bash -c "! grep -a -q 'prog.sh of the owner' '$COPY'"
CK=$(q "SELECT id FROM checkpoints WHERE job_id = '$J' AND step = 6")
check_status "its last checkpoint's lineage" 200 GET "/v1/checkpoints/$CK/lineage"
check_json "names the owner's code" "$TA prog 1 internal" \
	'"\(.code.owner) \(.code.bundle) \(.code.version) \(.code.classification)"'
TOKEN=$OLGA
api GET "/v1/tenants/$TA/reports/data-access?format=json"
check_json "the owner's data-access report lists the grantee's read" "$TB code/prog@1" \
	"[.sections[0].rows[] | select(.action == \"code.read\" and .tenant == \"$TB\")
		| \"\\(.tenant) \\(.file)\"] | first"
attempt "$JS" secret
check_eq "the confidential bundle runs too" 0 "$WRC"
check_eq "and its checkpoints are confidential, as their code" confidential \
	"$(q "SELECT DISTINCT classification FROM checkpoints WHERE job_id = '$JS'")"

# ---- revoking ----------------------------------------------------------------------
TOKEN=$OLGA
check_status "the owner revokes the grant" 204 DELETE "/v1/tenants/$TA/code/prog/grants/$PROG_GRANT"
check_status "a second revocation: 409" 409 DELETE "/v1/tenants/$TA/code/prog/grants/$PROG_GRANT"
check_eq "on record" 1 "$(q "SELECT count(*) FROM audit_log WHERE action = 'code.grant.revoke'
	AND outcome = 'success' AND resource = 'code/prog/grants/$PROG_GRANT'")"
submit "$TA/prog"
check_eq "after it no new job names the bundle" "422 unknown_code" "$STATUS $(jb '.errors[0].code')"
TOKEN=$BOB
api GET "/v1/tenants/$TB/shared-code"
check_json "nor is it listed as shared" "$TA/secret" '[.items[] | "\(.owner)/\(.name)"] | join(" ")'
attempt "$J3" revoked
check "an attempt of a job submitted before, started after, does not run" test "$WRC" -ne 0
check_match "it was refused the key" "/code/key: HTTP 403 grant_not_in_force" "$(cat "$TY_TMP/revoked.err")"
check_eq "and the refusal is on record" grant_not_in_force \
	"$(q "SELECT detail->>'code' FROM audit_log WHERE action = 'code.read' AND status = 403
		AND resource LIKE '%/$ATT/%'")"
TOKEN=$BOB
api GET "/v1/jobs/$J3"
check_json "its job failed" failed .state
check_eq "nothing of the program ran for it: no step" 0 \
	"$(q "SELECT count(*) FROM job_metrics WHERE job_id = '$J3'")"

TOKEN=$BOB
check_status "an editor of the grantee reads no report: 403" 403 GET "/v1/tenants/$TB/reports/permission-changes?format=json"
TOKEN=$ADMIN
api GET "/v1/tenants/$TB/reports/permission-changes?format=json"
check_json "the grantee's permission-changes report lists the grants to it, approval, revocation" \
	"code.grant code.grant.approve code.grant.revoke" \
	'[.sections[] | select(.name == "code") | .rows[].action] | unique | join(" ")'

# ---- the same through yardctl ------------------------------------------------------
y "$OLGA" code grant "$TA" prog "$TB" --expires "$SOON"
expect_rc "yardctl code grant" 0
check_match "shows the grant, active" 'state +active' "$OUT"
y "$ALICE" code grants "$TA" prog
expect_rc "yardctl code grants" 0
check_eq "lists both grants, one revoked" "active revoked" \
	"$(printf '%s\n' "$OUT" | awk 'NR > 1 { print $3 }' | sort | xargs)"
y "$BOB" code shared "$TB"
expect_rc "yardctl code shared" 0
check_match "lists the owner's bundles" "$TA +prog" "$OUT"
G=$(q "SELECT id FROM code_grants WHERE revoked_at IS NULL AND bundle_id = '$BUNDLE'")
y "$OLGA" code revoke "$TA" prog "$G"
expect_rc "yardctl code revoke" 0
check_eq "revoked" 0 "$(q "SELECT count(*) FROM code_grants WHERE revoked_at IS NULL AND bundle_id = '$BUNDLE'")"

summary
