#!/usr/bin/env bash
# tests/integration/api_contract.sh - the API against its OpenAPI document
# (api/openapi.json): tests/js/contract.mjs sends every operation a valid
# request, built from the document with resources it creates, and bad ones
# (no token, malformed JSON, a body that is not JSON, one over the limit),
# and holds each answer's status, headers and body to the document with
# openapi-backend and ajv (from tests/js's lock file, deploy/deps); the
# attempt it starts writes its sealed log and checkpoint with tool_seal, so
# that the download routes send files; a
# method a path lacks answers 405 with Allow, HEAD answers as GET, and
# timestamps carry milliseconds. Then Spectral lints the document with
# tests/js/.spectral.yaml: no error, no warning. And the document the API
# serves is the one in the tree.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

JS=$TY_ROOT/tests/js
DOC=$TY_ROOT/api/openapi.json
NODE=$(command -v node || true)
needs TRAINYARD_URL TRAINYARD_CA_FILE TRAINYARD_STORAGE_ROOT NODE "$SEAL" "$JS/node_modules/.bin/spectral"

ADMIN=$(admin_token)

# a code bundle's archive: one script, which the command job names
mkdir -p "$TY_TMP/code"
printf '#!/bin/sh\necho contract\n' >"$TY_TMP/code/run.sh"
tar -cf "$TY_TMP/code.tar" -C "$TY_TMP/code" .

# ---- the operations ------------------------------------------------------------------
# Each "ok -" and "not ok -" line of the run is one check here; "note -"
# lines (what could not be exercised, and why) are printed and counted.
NOTES=0
rc=0
CONTRACT_URL=$TRAINYARD_URL CONTRACT_TOKEN=$ADMIN CONTRACT_CA=$TRAINYARD_CA_FILE \
	CONTRACT_DOC=$DOC CONTRACT_CODE_TAR=$TY_TMP/code.tar CONTRACT_SUFFIX=$$ \
	CONTRACT_SEAL=$SEAL CONTRACT_STORAGE_ROOT=$TRAINYARD_STORAGE_ROOT \
	CONTRACT_BODY_LIMIT=${TRAINYARD_BODY_LIMIT:-1048576} \
	timeout 120 "$NODE" "$JS/contract.mjs" >"$TY_TMP/contract.out" 2>&1 || rc=$?
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "contract: ${line#ok - }" ;;
	"not ok - "*) not_ok "contract: ${line#not ok - }" ;;
	"note - "*)
		NOTES=$((NOTES + 1))
		echo "# note: ${line#note - }"
		;;
	"#"*) echo "$line" ;;
	*) echo "# $line" ;;
	esac
done <"$TY_TMP/contract.out"
if ((rc == 0 || rc == 1)); then
	ok "the contract run ended (exit status $rc)"
else
	not_ok "the contract run ended (exit status $rc)" "$(tail -n 20 "$TY_TMP/contract.out")"
fi
echo "# $NOTES notes"

# ---- the lint ------------------------------------------------------------------------
# One failure a finding: rule, place in the document, message.
lrc=0
(cd "$JS" && ./node_modules/.bin/spectral lint -q -r .spectral.yaml -f json "$DOC") \
	>"$TY_TMP/lint.json" 2>"$TY_TMP/lint.err" || lrc=$?
if ! jq -e 'type == "array"' "$TY_TMP/lint.json" >/dev/null 2>&1; then
	not_ok "spectral lint ran (exit status $lrc)" "$(cat "$TY_TMP/lint.err")" "$(head -c 2000 "$TY_TMP/lint.json")"
else
	findings=$(jq -r '.[] | "\(["error", "warning", "info", "hint"][.severity]) \(.code) at /\(.path | map(tostring | gsub("~"; "~0") | gsub("/"; "~1")) | join("/")) (line \(.range.start.line + 1)): \(.message)"' "$TY_TMP/lint.json")
	count=0
	while IFS= read -r f; do
		[[ -n $f ]] || continue
		case $f in
		error* | warning*)
			count=$((count + 1))
			not_ok "lint: $f"
			;;
		*) echo "# lint: $f" ;;
		esac
	done <<<"$findings"
	((count == 0)) && ok "spectral lint: no error and no warning in api/openapi.json"
fi

# ---- the document served -------------------------------------------------------------
TOKEN=''
api GET /v1/openapi.json
check_eq "the API serves api/openapi.json" "$(jq -S . "$DOC" | sha256sum)" \
	"$(printf '%s' "$BODY" | jq -S . 2>&1 | sha256sum)"

summary
