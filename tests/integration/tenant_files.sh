#!/usr/bin/env bash
# tests/integration/tenant_files.sh - what a tenant plants in its own tree
# steers nothing (docs/identity.md, "What a tenant's user may plant").
# A job's attempt registers a checkpoint whose shard is named master.key;
# as the tenant's Unix user, a symbolic link replaces each level of the
# checkpoint's path in turn (the job's directory, checkpoints/, the step,
# the file), pointing at the directory that holds the platform's master
# key; a second job starts from that checkpoint and asks for the file: the
# API refuses (storage_unsafe) and sends no byte of the key. A FIFO
# planted as the checkpoint's manifest.json and as the job's log answers
# at once, ten at a time, and /healthz and another tenant's requests go on
# being answered.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_STORAGE_ROOT "$SEAL" /usr/bin/setpriv

ADMIN=$(admin_token)
SFX=$$
TA=tf-a-$SFX TB=tf-b-$SFX
TA_ID=$(tenant_new "$TA")
tenant_new "$TB" >/dev/null
ALICE=$(member_new "$TA" "tf-alice-$SFX" owner)
BOB=$(member_new "$TB" "tf-bob-$SFX" owner)
JSON=(-H 'Content-Type: application/json')
I=/internal/v1/attempts
read -r TUID TGID < <(q "SELECT uid || ' ' || gid FROM tenant_identities WHERE tenant_id = '$TA_ID'")
as_tenant() { setpriv --reuid="$TUID" --regid="$TGID" --clear-groups -- "$@"; }
KEY_DIR=$(dirname "$TRAINYARD_STORAGE_ROOT")
MASTER=$KEY_DIR/master.key
check "the stack's master key lies beside the storage root" test -s "$MASTER"
KEY_HEX=$(tr -d '\n' <"$MASTER")

# job 1: a checkpoint at step 1 with a shard named master.key, and a log
TOKEN=$ADMIN
check_status "the admin submits job 1" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" \
	-d "$(tiny_job tf1 10 30)"
J1=$(printf '%s' "$BODY" | jq -r .id)
check_status "and starts its attempt" 201 POST "/v1/jobs/$J1/attempts"
A1=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
check_status "which fetches the job's data key" 200 POST "$I/$A1/key"
KEY=$(printf '%s' "$BODY" | jq -r .keys)
seal() { printf '%s\n' "$KEY" | "$SEAL" "$1" "$TRAINYARD_STORAGE_ROOT" "$TA_ID" "$J1" "${@:2}"; }
check "the attempt writes a sealed log" seal log 1 1 2 close
read -r BYTES SHA < <(seal checkpoint 1 1000)
STEPDIR=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/jobs/$J1/checkpoints/step_00000001
check "its shard is named master.key" \
	as_tenant mv "$STEPDIR/shard_00000_of_00001.bin" "$STEPDIR/master.key"
check_status "and registers a checkpoint whose shard is named master.key" 201 POST \
	"$I/$A1/checkpoints" "${JSON[@]}" -d "{\"step\": 1, \"world\": 1, \"shards\":
	[{\"name\": \"master.key\", \"bytes\": $BYTES, \"sha256\": \"$SHA\"}]}"
C=$(printf '%s' "$BODY" | jq -r .id)
check_status "the attempt ends" 200 POST "$I/$A1/finish" "${JSON[@]}" \
	-d '{"outcome": "succeeded", "reason": "all steps done"}'

# job 2 starts from that checkpoint (a data path: the admin submits it)
TOKEN=$ADMIN
check_status "job 2 starts from it" 201 POST "/v1/tenants/$TA/jobs" "${JSON[@]}" \
	-d "$(tiny_job tf2 10 30 | jq -c --arg c "$C" '.training.init_from = $c')"
J2=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$ADMIN
check_status "its attempt starts" 201 POST "/v1/jobs/$J2/attempts"
A2=$(printf '%s' "$BODY" | jq -r .id)
CRED2=$(printf '%s' "$BODY" | jq -r .credential)

JOBDIR=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/jobs/$J1
# the levels a link replaces, and where each link points: following it
# finds the master key where the API looks for the shard
mkdir -p "$TY_TMP/out/checkpoints/step_00000001" "$TY_TMP/out/step_00000001"
for d in "$TY_TMP/out/checkpoints/step_00000001" "$TY_TMP/out/step_00000001" "$TY_TMP/out"; do
	cp "$MASTER" "$d/master.key"
done
chmod -R o+rx "$TY_TMP"
LEVELS=("$JOBDIR" "$JOBDIR/checkpoints" "$STEPDIR" "$STEPDIR/master.key")
TARGETS=("$TY_TMP/out" "$TY_TMP/out" "$KEY_DIR" "$MASTER")

TOKEN=$CRED2
check_status "the shard as it is stored is served" 200 GET "$I/$A2/init/files/master.key"
for i in "${!LEVELS[@]}"; do
	at=${LEVELS[$i]} name=${LEVELS[$i]#"$TRAINYARD_STORAGE_ROOT"/tenants/"$TA_ID"/}
	as_tenant mv "$at" "$at.moved"
	check "the tenant's user links $name to ${TARGETS[$i]}" as_tenant ln -s "${TARGETS[$i]}" "$at"
	check_status "the file through a link at $name is refused" 500 GET "$I/$A2/init/files/master.key"
	check_json "storage_unsafe" storage_unsafe .code
	check "and no byte of the master key is sent" bash -c "! grep -qF '$KEY_HEX' <<<\"\$1\"" _ "$BODY"
	TOKEN=$ALICE
	check_status "the owner's download through it is refused too" 500 GET \
		"/v1/checkpoints/$C/download?file=master.key"
	check_json "storage_unsafe" storage_unsafe .code
	TOKEN=$CRED2
	as_tenant rm "$at"
	as_tenant mv "$at.moved" "$at"
done

# a FIFO as manifest.json and as the job's log: answers at once, ten at a time
check "the tenant's user plants a FIFO as the checkpoint's manifest" \
	as_tenant bash -c "rm -f '$STEPDIR/manifest.json' && mkfifo '$STEPDIR/manifest.json'"
LOG=$JOBDIR/logs/attempt-1.log
check "and one as the job's log" as_tenant bash -c "rm -f '$LOG' && mkfifo '$LOG'"
fetch() { # fetch TOKEN PATH OUT: status of the route within 10 s (000 when it hangs)
	curl -sS --max-time 10 -H "Authorization: Bearer $1" -o "$3" -w '%{http_code}' \
		"$TRAINYARD_URL$2" 2>/dev/null || true
}
pids=()
for n in $(seq 1 10); do
	fetch "$ALICE" "/v1/checkpoints/$C/download" "$TY_TMP/m$n" >"$TY_TMP/m$n.code" &
	pids+=($!)
	fetch "$ALICE" "/v1/jobs/$J1/logs" "$TY_TMP/l$n" >"$TY_TMP/l$n.code" &
	pids+=($!)
done
wait "${pids[@]}"
codes() { # codes PREFIX: "STATUSxCOUNT " for each status the PREFIX*.code files hold
	local f
	for f in "$TY_TMP/$1"*.code; do
		cat "$f"
		echo
	done | sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' '
}
check_eq "ten downloads of the FIFO manifest answer 500 at once" "500x10 " "$(codes m)"
check_eq "ten reads of the FIFO log answer at once" "200x10 " "$(codes l)"
check "saying the log could not be read" grep -q "log could not be read" "$TY_TMP/l1"
check "/healthz answers" api_healthy
TOKEN=$BOB
check_status "another tenant's request is answered" 200 GET "/v1/tenants/$TB/jobs"
TOKEN=$CRED2
check_status "the FIFO manifest, asked for by job 2, is refused" 500 \
	GET "$I/$A2/init/files/manifest.json"
check_json "storage_unsafe" storage_unsafe .code

summary
