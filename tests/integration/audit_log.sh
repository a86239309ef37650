#!/usr/bin/env bash
# tests/integration/audit_log.sh - the verifiable audit log and its reports
# (docs/audit.md), from outside, as an auditor works with them:
#   - the log's public key and a head signed on demand; an export that
#     yardctl audit verify accepts with the key alone, and against a head
#     seen before; an edited or cut export refused, naming the record;
#   - a record's inclusion proof and a consistency proof between two
#     heads, checked by yardctl against the signed roots;
#   - the log's tables refuse UPDATE, DELETE and TRUNCATE, and a change
#     whose record cannot be written is not made (fail closed);
#   - the six reports over activity seeded here: each row what was done,
#     by whom, with the sequence numbers of its records, one of them
#     proved included in the report's own head; a tenant's owner and
#     auditor get their tenant's report and nothing of another tenant's;
#     bad kinds, times and periods answer 400 with their codes;
#   - the HTML page printed by headless Chromium reads as the report, with
#     a hostile value shown as text.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
SFX=$$
TA=al-a-$SFX TB=al-b-$SFX
tenant_new "$TA" >/dev/null
tenant_new "$TB" >/dev/null
ALICE=$(member_new "$TA" "al-alice-$SFX" owner)
AUD=$(member_new "$TA" "al-aud-$SFX" auditor)
VIC=$(member_new "$TA" "al-vic-$SFX" viewer)
BOB=$(member_new "$TB" "al-bob-$SFX" owner)
member_new "$TA" "al-gone-$SFX" editor >/dev/null
TOKEN=$ADMIN api POST /v1/users -H 'Content-Type: application/json' \
	-d "{\"name\": \"al-pa-$SFX\", \"platform_role\": \"auditor\"}"
PA=$(TRAINYARD_TOKEN=$ADMIN yardctl token create "al-pa-$SFX")
JSON=(-H 'Content-Type: application/json')

# ---- seeded activity ------------------------------------------------------
TOKEN=$ADMIN
check_status "the admin revokes al-gone's role in A" 204 DELETE "/v1/tenants/$TA/members/al-gone-$SFX"
check_status "the admin changes A's quota" 200 PUT "/v1/tenants/$TA/quota" "${JSON[@]}" \
	-d '{"max_gpus": 8, "max_running_jobs": 2, "gpu_hours_per_month": 100,
	     "max_storage_bytes": 1000000, "weight": 2}'
check_status "the admin rotates A's key" 200 POST "/v1/tenants/$TA/keys/rotate"
# a key version that has wrapped its limit is rotated when the next job's key is made
JOB=$(tiny_job al 10)
check_status "the admin submits a job (on a data path)" 201 POST "/v1/tenants/$TA/jobs" \
	"${JSON[@]}" -d "$JOB"
J=$(printf '%s' "$BODY" | jq -r .id)
q "UPDATE tenant_keys SET wraps = $((1 << 24)) WHERE tenant_id = (SELECT id FROM tenants WHERE name = '$TA')" >/dev/null
check_status "the admin starts its attempt" 201 POST "/v1/jobs/$J/attempts"
A=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
check_status "whose runtime fetches the job's data key" 200 POST "/internal/v1/attempts/$A/key"
check_eq "wrapped by a key version rotated for it" 3 "$(q "SELECT key_version FROM job_keys WHERE job_id = '$J'")"
TOKEN=$VIC
check_status "a viewer of A may not change its quota" 403 PUT "/v1/tenants/$TA/quota" "${JSON[@]}" \
	-d '{"max_gpus": 1}'
TOKEN=$BOB
check_status "B's owner reaching for A's members is hidden" 404 GET "/v1/tenants/$TA/members"
TOKEN=ty_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
check_status "a made-up token is refused" 401 GET "/v1/tenants"
# a path that carries markup, refused and on record, for the HTML page
TOKEN=$ADMIN
check_status "the admin grants a role to a user that does not exist" 404 \
	PUT "/v1/tenants/$TA/members/x%3Cb%3E%22boom%26" "${JSON[@]}" -d '{"role": "viewer"}'

# ---- heads, export, verification -----------------------------------------
TOKEN=$ADMIN
check_status "the signing key is public" 200 GET /v1/audit/signing-key
PUB=$(printf '%s' "$BODY" | jq -r .public_key)
check_match "an Ed25519 public key" '^[0-9a-f]{64}$' "$PUB"
check_status "a head on demand" 201 POST /v1/audit/heads
printf '%s\n' "$BODY" >"$TY_TMP/head1.json"
H1_SIZE=$(printf '%s' "$BODY" | jq -r .size)
check "signed by that key" test "$(printf '%s' "$BODY" | jq -r .algorithm)" = ed25519
TOKEN=$VIC
check_status "a viewer may not ask for a head" 403 POST /v1/audit/heads

y "$ADMIN" audit export
expect_rc "the admin exports the log" 0
printf '%s\n' "$OUT" >"$TY_TMP/export.jsonl"
y "" audit verify "$TY_TMP/export.jsonl" --pubkey "$PUB" -o json
expect_rc "the export verifies with the public key alone" 0
check_eq "every record of the head" "$(head -n 1 "$TY_TMP/export.jsonl" | jq .size)" "$(jq_out .records)"
check "and more than the head before" test "$(jq_out .records)" -gt "$H1_SIZE"
y "" audit verify "$TY_TMP/export.jsonl" --pubkey "$PUB" --previous-head "$TY_TMP/head1.json"
expect_rc "consistent with the head seen before" 0
y "" audit verify "$TY_TMP/export.jsonl" --pubkey "$(printf '%064d' 7)"
expect_rc "another key refuses it" 1
check_match "as forged" "not signed by this key" "$ERR"

# an edited record: the last record of A's rotation says another version
REC=$(grep -n '"action":"key.rotate"' "$TY_TMP/export.jsonl" | tail -n 1)
LINE=${REC%%:*}
SEQ=$(printf '%s' "${REC#*:}" | jq -r .seq)
sed "${LINE}s/\"version\":\([0-9]*\)/\"version\":9\1/" "$TY_TMP/export.jsonl" >"$TY_TMP/edited.jsonl"
check_fails "the edit changed the record" 1 cmp -s "$TY_TMP/export.jsonl" "$TY_TMP/edited.jsonl"
y "" audit verify "$TY_TMP/edited.jsonl" --pubkey "$PUB"
expect_rc "an edited record fails" 1
check_match "at the window of records that holds it" "from seq [0-9]+ to seq [0-9]+ do not give the root" "$ERR"
sed "${LINE}d" "$TY_TMP/export.jsonl" >"$TY_TMP/deleted.jsonl"
y "" audit verify "$TY_TMP/deleted.jsonl" --pubkey "$PUB"
expect_rc "a deleted record fails" 1
check_match "naming it" "records seq $SEQ to seq $SEQ are missing" "$ERR"
head -n $(($(wc -l <"$TY_TMP/export.jsonl") - 3)) "$TY_TMP/export.jsonl" >"$TY_TMP/cut.jsonl"
y "" audit verify "$TY_TMP/cut.jsonl" --pubkey "$PUB"
expect_rc "a cut export fails" 1
check_match "as truncated" "truncated" "$ERR"
TOKEN=$ADMIN
check_status "the log grows" 201 POST /v1/users "${JSON[@]}" -d "{\"name\": \"al-late-$SFX\"}"
check_status "and gets a head" 201 POST /v1/audit/heads
printf '%s\n' "$BODY" >"$TY_TMP/head3.json"
y "" audit verify "$TY_TMP/export.jsonl" --pubkey "$PUB" --previous-head "$TY_TMP/head3.json"
expect_rc "against that later head, the earlier export is a rollback" 1
check_match "said so" "rolled back: the export's head has size [0-9]+, a head seen before has size" "$ERR"

# ---- proofs ----------------------------------------------------------------
head -n 1 "$TY_TMP/export.jsonl" >"$TY_TMP/head2.json"
ENTRY=$(grep "^{\"seq\":$SEQ," "$TY_TMP/export.jsonl")
y "$AUD" audit proof inclusion --seq "$SEQ" --head "$TY_TMP/head2.json" --pubkey "$PUB" --entry "$ENTRY"
expect_rc "a tenant auditor may not ask for proofs (platform)" 3
y "$PA" audit proof inclusion --seq "$SEQ" --head "$TY_TMP/head2.json" --pubkey "$PUB" \
	--entry "$ENTRY" -o json
expect_rc "the rotation's record is in the head's tree" 0
check_eq "verified against the signed root" true "$(jq_out .verified)"
OTHER=$(grep "^{\"seq\":$((SEQ - 1))," "$TY_TMP/export.jsonl")
y "$PA" audit proof inclusion --seq "$SEQ" --head "$TY_TMP/head2.json" --pubkey "$PUB" --entry "$OTHER"
expect_rc "another record's bytes are not that leaf" 1
y "$PA" audit proof consistency --previous-head "$TY_TMP/head1.json" --head "$TY_TMP/head2.json" \
	--pubkey "$PUB" -o json
expect_rc "the earlier head's log is a prefix of the later's" 0
check_eq "verified" true "$(jq_out .verified)"
TOKEN=$ADMIN
check_status "a proof in a tree larger than the log" 400 GET \
	"/v1/audit/proof/inclusion?seq=0&tree_size=$((1 << 40))"
check_json "audit_range_invalid" audit_range_invalid .code

# ---- append-only, fail closed ---------------------------------------------
check_fails "audit_log refuses UPDATE" 1 psql "$TRAINYARD_DB" -X -qtA -v ON_ERROR_STOP=1 \
	-c "UPDATE audit_log SET action = 'x' WHERE id = (SELECT min(id) FROM audit_log)"
check_fails "audit_leaves refuses DELETE" 1 psql "$TRAINYARD_DB" -X -qtA -v ON_ERROR_STOP=1 \
	-c "DELETE FROM audit_leaves WHERE seq = 0"
check_fails "audit_heads refuses TRUNCATE" 1 psql "$TRAINYARD_DB" -X -qtA -v ON_ERROR_STOP=1 \
	-c "TRUNCATE audit_heads"
q "ALTER TABLE audit_log ADD CONSTRAINT al_refuse_$SFX CHECK (action <> 'tenant.create') NOT VALID" >/dev/null
check_status "a tenant whose record cannot be written" 500 POST /v1/tenants "${JSON[@]}" \
	-d "{\"name\": \"al-c-$SFX\"}"
q "ALTER TABLE audit_log DROP CONSTRAINT al_refuse_$SFX" >/dev/null
check_eq "is not made" 0 "$(q "SELECT count(*) FROM tenants WHERE name = 'al-c-$SFX'")"

# ---- reports ---------------------------------------------------------------
# report TOKEN PATH: GET PATH (json unless it asks) into BODY
report() { TOKEN=$1 api GET "$2"; }
rows() { printf '%s' "$BODY" | jq -c "[.sections[] | select(.name == \"$1\") | .rows[]]"; }
count() { printf '%s' "$BODY" | jq "[.sections[] | select(.name == \"$1\") | .rows[] | select($2)] | length"; }

# the viewer has been around for 120 days, and last used a token 100 days ago
q "UPDATE users SET created_at = now() - interval '120 days' WHERE name = 'al-vic-$SFX'" >/dev/null
q "UPDATE api_tokens SET last_used_at = now() - interval '100 days'
   WHERE user_id = (SELECT id FROM users WHERE name = 'al-vic-$SFX')" >/dev/null
report "$ALICE" "/v1/tenants/$TA/reports/access-review"
check_eq "A's owner gets A's access review" 200 "$STATUS"
check_eq "the viewer is idle, with the role they hold" "al-vic-$SFX $TA:viewer" \
	"$(rows idle-users | jq -r 'map("\(.user) \(.roles)") | join(";")')"
check_match "last seen 100 days ago" "^20" "$(rows idle-users | jq -r '.[0].last_used')"
check_eq "computed from a head whose signature verifies" verified "$(printf '%s' "$BODY" | jq -r .head.signature_status)"
check_eq "owner, auditor and viewer of A, granted by the admin" \
	"al-alice-$SFX owner admin;al-aud-$SFX auditor admin;al-vic-$SFX viewer admin" \
	"$(rows tenant-roles | jq -r 'map("\(.user) \(.role) \(.granted_by)") | join(";")')"
check_eq "the revoked member holds nothing" 0 "$(count tenant-roles ".user == \"al-gone-$SFX\"")"
check_eq "no platform roles in a tenant's review" 0 "$(count platform-roles true)"
check_eq "the members' tokens, one each" 3 "$(count tokens '.tokens == 1')"
check_eq "each role names the record that granted it" 0 "$(count tenant-roles '(.seqs | length) != 1')"
SEQ_ROW=$(rows tenant-roles | jq -r '.[0].seqs[0]')
printf '%s' "$BODY" | jq -c .head >"$TY_TMP/report-head.json"
y "$PA" audit proof inclusion --seq "$SEQ_ROW" --head "$TY_TMP/report-head.json" --pubkey "$PUB"
expect_rc "a row's record is proved in the report's own head" 0

report "$AUD" "/v1/tenants/$TA/reports/access-review?format=csv"
check_eq "A's auditor gets it as CSV" 200 "$STATUS"
check_match "headed by the report and its head" "^# trainyard report: access-review" "$BODY"
check_match "its rows" "$TA,al-alice-$SFX,owner,admin," "$BODY"
report "$VIC" "/v1/tenants/$TA/reports/access-review"
check_eq "a viewer may not" 403 "$STATUS"
report "$BOB" "/v1/tenants/$TA/reports/access-review"
check_eq "B's owner does not see A's" 404 "$STATUS"
report "$ALICE" "/v1/reports/access-review?tenant=$TA"
check_eq "the platform route is not a tenant owner's" 403 "$STATUS"
report "$ALICE" "/v1/tenants/$TA/reports/denials?tenant=$TB"
check_eq "nor may the tenant route name another tenant" 400 "$STATUS"

report "$PA" "/v1/reports/access-review"
check_eq "the platform auditor reviews every tenant" 200 "$STATUS"
check_eq "with the platform's auditors" 1 "$(count platform-roles ".user == \"al-pa-$SFX\" and .role == \"auditor\" and .granted_by == \"admin\"")"
check_eq "and its admin" 1 "$(count platform-roles '.role == "admin" and .user == "admin"')"
check_eq "and B's owner" 1 "$(count tenant-roles ".tenant == \"$TB\" and .user == \"al-bob-$SFX\"")"
report "$PA" "/v1/reports/access-review?to=2000-01-01"
check_eq "a review before any of it holds no roles" 0 "$(count tenant-roles true)"

report "$ALICE" "/v1/tenants/$TA/reports/permission-changes"
check_eq "A's permission changes" 200 "$STATUS"
check_eq "alice's grant, by the admin" 1 "$(count changes ".action == \"member.grant\" and .subject == \"al-alice-$SFX\" and .from == \"none\" and .to == \"owner\" and .actor == \"admin\"")"
check_eq "al-gone's revocation" 1 "$(count changes ".action == \"member.revoke\" and .subject == \"al-gone-$SFX\" and .from == \"editor\"")"
check_eq "the quota change" 1 "$(count changes '.action == "quota.update" and (.to | fromjson | .max_gpus) == 8')"
check_eq "one record a row" 0 "$(count changes '(.seqs | length) != 1')"

report "$ALICE" "/v1/tenants/$TA/reports/key-management"
check_eq "the rotation, with A's new key version" 1 "$(count keys '.action == "key.rotate" and .actor == "admin" and .key_version >= 1')"
check_eq "and its record's number" "$SEQ" "$(printf '%s' "$BODY" | jq '[.sections[0].rows[] | select(.action == "key.rotate")][-1].seqs[0]')"
check_eq "the rotation made for the attempt's key, with the version it made" 1 \
	"$(count keys ".action == \"key.release (rotated)\" and .actor == \"attempt $A\" and .key_version == 3")"

report "$ALICE" "/v1/tenants/$TA/reports/denials"
check_eq "the viewer's refused quota change" 1 "$(count denials ".actor == \"al-vic-$SFX\" and .route == \"PUT /v1/tenants/{tenant}/quota\" and .denials == 1")"
check_eq "B's owner reaching into A" 1 "$(count denials ".actor == \"al-bob-$SFX\" and .route == \"GET /v1/tenants/{tenant}/members\"")"
check_eq "nothing without a tenant" 0 "$(count denials '.actor == "(unauthenticated)"')"
report "$PA" "/v1/reports/denials"
check_eq "failed authentications on the platform's report" 1 \
	"$(count denials '.actor == "(unauthenticated)" and .route == "GET /v1/tenants" and .failed_authentications >= 1')"

report "$PA" "/v1/reports/admin-actions?tenant=$TA"
check_eq "the admin's work on A" 1 "$(count actions ".action == \"tenant.create\" and .resource == \"tenant/$TA\"")"
check_eq "not the viewer's" 0 "$(count actions ".actor == \"al-vic-$SFX\"")"

# tenant B's reports hold nothing of A's: no name, no user
for kind in access-review permission-changes data-access denials key-management admin-actions; do
	report "$BOB" "/v1/tenants/$TB/reports/$kind?format=csv"
	check_eq "B's $kind report" 200 "$STATUS"
	check "holds nothing of tenant A" bash -c '! grep -q -e "al-a-" -e "al-alice-" -e "al-aud-" -e "al-vic-" -e "al-gone-" <<<"$1"' _ "$BODY"
done

report "$PA" "/v1/reports/who-knows"
check_eq "an unknown kind" 400 "$STATUS"
check_json "report_kind_unknown" report_kind_unknown .code
report "$PA" "/v1/reports/denials?from=yesterday"
check_json "a time that is not RFC 3339" report_param_invalid .code
report "$PA" "/v1/reports/denials?from=2026-02-30"
check_json "a day that does not exist" report_param_invalid .code
report "$PA" "/v1/reports/denials?from=2026-12-05T00:00:00Z&to=2026-12-04T00:00:00Z"
check_json "from after to" report_range_invalid .code
report "$PA" "/v1/reports/denials?from=2020-01-01&to=2026-01-01"
check_json "a period over the limit" report_range_invalid .code
report "$PA" "/v1/reports/denials?format=xml"
check_json "an unknown format" report_param_invalid .code
report "$PA" "/v1/reports/denials?tenant=al-none-$SFX"
check_json "an unknown tenant" tenant_not_found .code

# ---- the printable page ----------------------------------------------------
report "$PA" "/v1/reports/admin-actions?format=html"
check_eq "admin-actions as HTML" 200 "$STATUS"
check_match "text/html" '^text/html' "$(header Content-Type)"
printf '%s' "$BODY" >"$TY_TMP/report.html"
check "no script and no external asset" bash -c \
	'! grep -qiE "<script|<link|src=|url\\(|@import" "$1"' _ "$TY_TMP/report.html"
check "the hostile path is escaped" grep -qF "members/x&lt;b&gt;&quot;boom&amp;" "$TY_TMP/report.html"
PDF=$TY_TMP/report.pdf
chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer \
	--user-data-dir="$TY_TMP/chromium" --print-to-pdf="$PDF" "file://$TY_TMP/report.html" \
	>"$TY_TMP/chromium.log" 2>&1
check "headless Chromium prints the page" test -s "$PDF"
TEXT=$(pdftotext -raw "$PDF" - 2>/dev/null | tr -s ' \n' ' ')
check_match "its title" "Admin actions" "$TEXT"
check_match "the head's signature verified" "Signature verified \(Ed25519" "$TEXT"
check_match "a row: the tenant A's creation" "tenant/$TA( |$)" "$TEXT"
check_match "the markup as text" 'members/x<b>"boom&' "$TEXT"
check_match "the section's summary" "rows [0-9]+ records behind them [0-9]+" "$TEXT"

summary
