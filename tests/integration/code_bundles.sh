#!/usr/bin/env bash
# tests/integration/code_bundles.sh - the code bundle registry from outside
# (docs/own-code.md). Registering: names and classifications checked,
# duplicates refused, viewers and other tenants kept out. Uploading a
# version: a tar archive made with tar(1), plain and gzip, stored sealed
# (no plaintext on disk), numbered, its SHA-256 the archive's, its members
# counted, audited, its sealed bytes counted in the tenant's storage. Bad
# archives (not a tar, cut short, an absolute or '..' member, a link out,
# a device, a set-ID file, past the unpacked limit) and the wrong
# Content-Type are refused with stable codes and leave no version and no
# file behind.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_STORAGE_ROOT

SFX=$$
TA=code-a-$SFX TB=code-b-$SFX
TA_ID=$(tenant_new "$TA")
tenant_new "$TB" >/dev/null
ALICE=$(member_new "$TA" "code-alice-$SFX" editor)
VIC=$(member_new "$TA" "code-vic-$SFX" viewer)
BOB=$(member_new "$TB" "code-bob-$SFX" editor)
JSON=(-H 'Content-Type: application/json')
jb() { printf '%s' "$BODY" | jq -r "$1" 2>&1; } # jb FILTER: the filter over the last answer

# ---- registering -----------------------------------------------------------
TOKEN=$ALICE
check_status "a code bundle is registered" 201 POST "/v1/tenants/$TA/code" "${JSON[@]}" \
	-d '{"name": "trainer", "description": "our DDP trainer", "classification": "internal"}'
check_json "with its classification and no version yet" "internal null" \
	'"\(.classification) \(.latest_version)"'
check_status "the same name again: 409" 409 POST "/v1/tenants/$TA/code" "${JSON[@]}" \
	-d '{"name": "trainer", "classification": "public"}'
check_json "code_exists" code_exists .code
check_status "a bad name: 422" 422 POST "/v1/tenants/$TA/code" "${JSON[@]}" \
	-d '{"name": "Bad/Name", "classification": "public"}'
check_json "at /name" /name '.errors[0].pointer'
check_status "an unknown field: 422" 422 POST "/v1/tenants/$TA/code" "${JSON[@]}" \
	-d '{"name": "x1", "classification": "public", "command": "rm -rf /"}'
TOKEN=$VIC
check_status "a viewer sees the bundle" 200 GET "/v1/tenants/$TA/code/trainer"
check_status "but registers none: 403" 403 POST "/v1/tenants/$TA/code" "${JSON[@]}" \
	-d '{"name": "mine", "classification": "public"}'
TOKEN=$BOB
check_status "another tenant's member does not see it: 404" 404 GET "/v1/tenants/$TA/code/trainer"
check_status "nor uploads to it" 404 POST "/v1/tenants/$TA/code/trainer/versions" \
	-H 'Content-Type: application/x-tar' --data-binary 'x'

# ---- a version ---------------------------------------------------------------
SRC=$TY_TMP/src
mkdir -p "$SRC/pkg/data"
cat >"$SRC/pkg/train.py" <<'PY'
# a line only the plaintext holds: train the model
print("step 1 loss 4.2")
PY
printf 'how to run\n' >"$SRC/README"
ln -s train.py "$SRC/pkg/latest.py"
tar -cf "$TY_TMP/code.tar" -C "$SRC" .
tar -czf "$TY_TMP/code.tgz" -C "$SRC" .
upload() { # upload TENANT BUNDLE CONTENT_TYPE FILE
	api POST "/v1/tenants/$1/code/$2/versions" -H "Content-Type: $3" --data-binary "@$4"
}
used_before=$(q "SELECT tenant_storage_bytes('$TA_ID')")
TOKEN=$ALICE
upload "$TA" trainer application/x-tar "$TY_TMP/code.tar"
check_eq "a tar archive is version 1" "201 1" "$STATUS $(jb .version)"
check_json "its members counted (files, directories but the top ./, links)" "2 2 1 0" \
	'"\(.files) \(.dirs) \(.symlinks) \(.hardlinks)"'
check_json "its SHA-256 is the archive's" "$(sha256sum "$TY_TMP/code.tar" | cut -d' ' -f1)" .sha256
check_json "its bytes are the archive's" "$(stat -c %s "$TY_TMP/code.tar")" .archive_bytes
V1=$(jb .id)
SEALED=$(jb .sealed_bytes)
BUNDLE_ID=$(q "SELECT id FROM code_bundles WHERE name = 'trainer' AND tenant_id = '$TA_ID'")
VDIR=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/code/$BUNDLE_ID/$V1
check "its archive is on disk" test -s "$VDIR/bundle.tar"
check_eq "sealed: the size the API counted" "$SEALED" "$(stat -c %s "$VDIR/bundle.tar")"
check_eq "in a private directory" 700 "$(stat -c %a "$VDIR")"
check "no byte of the code appears in the stored file" \
	bash -c "! grep -a -q -e 'only the plaintext' -e 'how to run' '$VDIR/bundle.tar'"
check_eq "the tenant's storage counts it" "$((used_before + SEALED))" \
	"$(q "SELECT tenant_storage_bytes('$TA_ID')")"
check_eq "the usage readout shows it as code" "$SEALED" \
	"$(TOKEN=$ALICE api GET "/v1/tenants/$TA/usage" >/dev/null; jb .quota.storage.code)"
upload "$TA" trainer application/gzip "$TY_TMP/code.tgz"
check_eq "a gzip-compressed archive is version 2" "201 2" "$STATUS $(jb .version)"
check_json "with the same members" "2 2 1" '"\(.files) \(.dirs) \(.symlinks)"'
check_status "the bundle lists both versions" 200 GET "/v1/tenants/$TA/code/trainer"
check_json "oldest first" "1,2 2" '"\([.versions[].version] | join(",")) \(.latest_version)"'
check_eq "each upload is audited with the archive's hash" \
	"code/trainer@1 $(sha256sum "$TY_TMP/code.tar" | cut -d' ' -f1)" \
	"$(q "SELECT resource || ' ' || (detail->>'sha256') FROM audit_log
		WHERE action = 'code.version.create' AND outcome = 'success'
		AND tenant_id = '$TA_ID' ORDER BY id LIMIT 1")"
check_eq "under a data key of the bundle's own" 1 \
	"$(q "SELECT count(*) FROM code_keys WHERE bundle_id = '$BUNDLE_ID'")"
# the members, as tar(1) lists them (the top ./ and trailing slashes aside)
want=$(tar -tf "$TY_TMP/code.tar" | sed -e 's|^\./||' -e 's|/$||' | grep -v '^$' | LC_ALL=C sort |
	paste -sd, -)
TOKEN=$VIC
check_status "a viewer lists version 1's members" 200 \
	GET "/v1/tenants/$TA/code/trainer/versions/1/files"
check_json "every member, in path order" "$want" '[.items[].path] | join(",")'
# shellcheck disable=SC2016 # $l and $f are jq's
check_json "with kinds, sizes, modes and link targets" \
	"symlink train.py file $(stat -c %s "$SRC/pkg/train.py") $((8#$(stat -c %a "$SRC/pkg/train.py")))" \
	'(.items[] | select(.path == "pkg/latest.py")) as $l |
	(.items[] | select(.path == "pkg/train.py")) as $f |
	"\($l.kind) \($l.target) \($f.kind) \($f.size) \($f.mode)"'
pages=0 got="" cursor=""
while :; do
	api GET "/v1/tenants/$TA/code/trainer/versions/1/files?limit=2${cursor:+&cursor=$cursor}" >/dev/null
	pages=$((pages + 1))
	got=$got${got:+,}$(jb '[.items[].path] | join(",")')
	cursor=$(jb '.next_cursor // empty')
	[[ -n $cursor && $pages -lt 10 ]] || break
done
check_eq "two at a time, the cursor walks them all" "$want 3" "$got $pages"
check_status "a version that does not exist: 404" 404 \
	GET "/v1/tenants/$TA/code/trainer/versions/9/files"
check_json "code_not_found" code_not_found .code
check_status "a cursor it did not hand out: 400" 400 \
	GET "/v1/tenants/$TA/code/trainer/versions/1/files?cursor=zz"
TOKEN=$BOB
check_status "another tenant sees none of them: 404" 404 \
	GET "/v1/tenants/$TA/code/trainer/versions/1/files"
TOKEN=$ALICE

# ---- the same through yardctl (a file, gzip found by its first bytes; stdin) --
y "$ALICE" code create "$TA" cli-trainer --classification confidential
expect_rc "yardctl code create" 0
y "$ALICE" -o json code upload "$TA" cli-trainer "$TY_TMP/code.tgz"
expect_rc "yardctl code upload FILE (gzip)" 0
check_eq "its version and hash" "1 $(sha256sum "$TY_TMP/code.tgz" | cut -d' ' -f1)" \
	"$(printf '%s' "$OUT" | jq -r '"\(.version) \(.sha256)"')"
OUT=$(TRAINYARD_TOKEN=$ALICE "$YARDCTL" -o json code upload "$TA" cli-trainer - \
	<"$TY_TMP/code.tar" 2>&1) || true
check_eq "and from a pipe, sent chunked as a plain tar" "2 2" \
	"$(printf '%s' "$OUT" | jq -r '"\(.version) \(.files)"')"
y "$VIC" code list "$TA"
check_match "yardctl code list" "cli-trainer +confidential +2" "$OUT"
y "$VIC" -o json code show "$TA" cli-trainer
check_eq "yardctl code show lists both versions" "1,2" \
	"$(printf '%s' "$OUT" | jq -r '[.versions[].version] | join(",")')"
y "$ALICE" code create "$TA" cli-x --classification secret
expect_rc "an unknown classification is a usage error" 2

# ---- what is refused ---------------------------------------------------------
versions() { q "SELECT count(*) FROM code_versions WHERE bundle_id = '$BUNDLE_ID'"; }
leftovers() { find "$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/code" -name '*.partial' | wc -l; }
refused() { # refused DESC FILE WORD: a 422 code_bundle_invalid whose message holds WORD
	upload "$TA" trainer application/x-tar "$2"
	check_eq "$1: 422 code_bundle_invalid" "422 code_bundle_invalid" "$STATUS $(jb .code)"
	check_match "$1: the message says why" "$3" "$(jb .detail)"
}
# what a crash would leave: a version no row names, a partial upload, both old
BDIR=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/code/$BUNDLE_ID
ORPHAN=$BDIR/0b9e0c52-0000-4000-8000-00000000aaaa
mkdir -m 700 "$ORPHAN" "$ORPHAN.partial" "$BDIR/0b9e0c52-0000-4000-8000-00000000bbbb.partial"
touch -d '2 days ago' "$ORPHAN" "$ORPHAN.partial"
head -c 5000 /dev/urandom >"$TY_TMP/noise.bin"
refused "bytes that are no archive" "$TY_TMP/noise.bin" "not a tar archive"
check "the next upload swept what the crash left" test ! -e "$ORPHAN" -a ! -e "$ORPHAN.partial"
check "but not a partial upload of today" \
	test -d "$BDIR/0b9e0c52-0000-4000-8000-00000000bbbb.partial"
rmdir "$BDIR/0b9e0c52-0000-4000-8000-00000000bbbb.partial"
head -c 1000 "$TY_TMP/code.tar" >"$TY_TMP/cut.tar"
refused "an archive cut short" "$TY_TMP/cut.tar" "."
tar -cPf "$TY_TMP/abs.tar" "$SRC/README" 2>/dev/null
refused "an absolute member" "$TY_TMP/abs.tar" "must be relative"
mkdir -p "$TY_TMP/up/inner"
printf 'x\n' >"$TY_TMP/up/escape.py"
# -P keeps the '..' that tar would otherwise strip
tar -cPf "$TY_TMP/dotdot.tar" -C "$TY_TMP/up/inner" ../escape.py
refused "a '..' member" "$TY_TMP/dotdot.tar" "escape.py"
mkdir -p "$TY_TMP/lnk"
ln -s /etc/passwd "$TY_TMP/lnk/passwd"
tar -cf "$TY_TMP/link.tar" -C "$TY_TMP/lnk" passwd
refused "a link out of the bundle" "$TY_TMP/link.tar" "symbolic link"
mkdir -p "$TY_TMP/dev"
tar -cf "$TY_TMP/dev.tar" -C / dev/null
refused "a device" "$TY_TMP/dev.tar" "device"
mkdir -p "$TY_TMP/suid"
printf '#!/bin/sh\n' >"$TY_TMP/suid/run.sh"
chmod 4755 "$TY_TMP/suid/run.sh"
tar -cf "$TY_TMP/suid.tar" -C "$TY_TMP/suid" run.sh
refused "a set-user-ID file" "$TY_TMP/suid.tar" "set-user-ID"
upload "$TA" trainer text/plain "$TY_TMP/code.tar"
check_eq "the wrong Content-Type: 415 unsupported_media_type" "415 unsupported_media_type" \
	"$STATUS $(jb .code)"
upload "$TA" nothing application/x-tar "$TY_TMP/code.tar"
check_eq "a bundle that does not exist: 404" "404 code_not_found" "$STATUS $(jb .code)"
check_eq "nothing refused was registered: still two versions" 2 "$(versions)"
check_eq "and nothing of it is left on disk" 0 "$(leftovers)"
check_eq "only the two versions' directories remain" 2 \
	"$(find "$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/code/$BUNDLE_ID" -mindepth 1 -maxdepth 1 | wc -l)"
check_eq "every refused upload is on record as a failure" 9 \
	"$(q "SELECT count(*) FROM audit_log WHERE action = 'code.version.create'
		AND outcome <> 'success' AND tenant_id = '$TA_ID'")"
summary
