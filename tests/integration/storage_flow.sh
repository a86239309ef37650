#!/usr/bin/env bash
# tests/integration/storage_flow.sh - the read routes over encrypted
# storage. tool_seal writes a job's sealed logs and an encrypted checkpoint
# with the job's data key, as the runtime and the trainer would; the
# tenant's users then read them decrypted: the log of every attempt in
# order, a follower that receives appended lines and ends by itself, the
# checkpoint's files with their registered SHA-256. Tampered bytes are
# never sent, other tenants see nothing, viewers may read logs but not
# download, followers are bounded, and destroyed keys answer 503. Every
# read and refusal is on record, as tenant A's data-access and denials
# reports show (and tenant B's do not).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB TRAINYARD_STORAGE_ROOT "$SEAL"

ADMIN=$(admin_token)
SFX=$$
TA=sto-a-$SFX TB=sto-b-$SFX
TA_ID=$(tenant_new "$TA")
tenant_new "$TB" >/dev/null
ALICE=$(member_new "$TA" "alice-$SFX" editor)
VIC=$(member_new "$TA" "vic-$SFX" viewer)
BOB=$(member_new "$TB" "bob-$SFX" owner)
TOKEN=$ADMIN

JOB=$(tiny_job sto 10 30)
I=/internal/v1/attempts
seal() { printf '%s\n' "$KEY" | "$SEAL" "$1" "$TRAINYARD_STORAGE_ROOT" "$TA_ID" "$J" "${@:2}"; }
lines() { [[ -f $1 ]] && wc -l <"$1" | tr -d ' ' || echo 0; }
has_lines() { [[ $(lines "$1") == "$2" ]]; }
# flip FILE OFFSET: invert the lowest bit of one byte in place
flip() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059 # the format is the byte's octal escape
	printf "$(printf '\\%03o' $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# get TOKEN PATH OUT: curl the route into OUT; prints "status curl_rc"
get() {
	local code rc=0
	code=$(curl -sS --max-time 30 -H "Authorization: Bearer $1" -o "$3" -w '%{http_code}' \
		"$TRAINYARD_URL$2" 2>"$TY_TMP/get.err") || rc=$?
	echo "${code:-000} $rc"
}

# the jobs read a data path, so the platform admin submits them (docs/datasets.md)
check_status "the admin submits a job" 201 POST "/v1/tenants/$TA/jobs" -H 'Content-Type: application/json' -d "$JOB"
J=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$ALICE
check_status "a job without attempts has an empty log" 200 GET "/v1/jobs/$J/logs"
check_eq "nothing in it" "" "$BODY"

# attempt 1 writes three lines and closes its log
TOKEN=$ADMIN
check_status "the admin starts attempt 1" 201 POST "/v1/jobs/$J/attempts"
A1=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$(printf '%s' "$BODY" | jq -r .credential)
check_status "its runtime fetches the job's data key" 200 POST "$I/$A1/key"
KEY=$(printf '%s' "$BODY" | jq -r .keys)
check "attempt 1 writes a sealed log of three lines" seal log 1 1 3 close
requeue "$A1" "$J"

# attempt 2 writes two lines, leaves its log open, and registers a checkpoint
TOKEN=$ADMIN
check_status "the admin starts attempt 2" 201 POST "/v1/jobs/$J/attempts"
A2=$(printf '%s' "$BODY" | jq -r .id)
CRED2=$(printf '%s' "$BODY" | jq -r .credential)
TOKEN=$CRED2
check_status "attempt 2 reports" 200 POST "$I/$A2/heartbeat"
check "attempt 2 writes two lines and keeps its log open" seal log 2 1 2 open
read -r BYTES SHA < <(seal checkpoint 2 150000)
check_match "an encrypted checkpoint of three chunks is written" '^150000 [0-9a-f]{64}$' "$BYTES $SHA"
check_status "and registered" 201 POST "$I/$A2/checkpoints" -H 'Content-Type: application/json' \
	-d "{\"step\": 2, \"world\": 1, \"shards\": [{\"name\": \"shard_00000_of_00001.bin\", \"bytes\": $BYTES, \"sha256\": \"$SHA\"}]}"
C=$(printf '%s' "$BODY" | jq -r .id)

EXPECT=$TY_TMP/expect
printf 'attempt 1 line %d\n' 1 2 3 >"$EXPECT"
printf 'attempt 2 line %d\n' 1 2 >>"$EXPECT"
check_eq "alice reads the log" "200 0" "$(get "$ALICE" "/v1/jobs/$J/logs" "$TY_TMP/log")"
check "exactly the lines of both attempts, in order" cmp "$EXPECT" "$TY_TMP/log"
check "yardctl job logs prints the same lines" \
	cmp "$EXPECT" <(TRAINYARD_TOKEN=$ALICE "$YARDCTL" job logs "$J")
rc=0
TRAINYARD_TOKEN=$BOB "$YARDCTL" job logs "$J" >"$TY_TMP/bob.out" 2>"$TY_TMP/bob.err" || rc=$?
check_eq "and another tenant's owner gets exit 4 (not found) and no line" "4 0" \
	"$rc $(wc -c <"$TY_TMP/bob.out")"
TOKEN=$ALICE
api GET "/v1/jobs/$J/logs"
check_match "as text/plain" '^text/plain' "$(header Content-Type)"
check_status "follow=maybe is refused" 400 GET "/v1/jobs/$J/logs?follow=maybe"
TOKEN=$VIC
check_status "a viewer reads the log" 200 GET "/v1/jobs/$J/logs"
TOKEN=$BOB
check_status "another tenant's owner does not see it" 404 GET "/v1/jobs/$J/logs"
check_json "job_not_found" job_not_found .code

# a follower gets the lines appended while it streams, and ends by itself
FOLLOW=$TY_TMP/follow
curl -sS -N --max-time 40 -H "Authorization: Bearer $ALICE" -o "$FOLLOW" \
	"$TRAINYARD_URL/v1/jobs/$J/logs?follow=1" 2>"$TY_TMP/follow.err" &
FPID=$!
check "the follower receives the five lines there are" wait_until 10 has_lines "$FOLLOW" 5
check "attempt 2 appends two lines" seal log 2 3 2 open
check "the follower receives them" wait_until 10 has_lines "$FOLLOW" 7
check "attempt 2 writes its last line and closes its log" seal log 2 5 1 close
check "the follower receives it" wait_until 10 has_lines "$FOLLOW" 8
sleep 1.5
check "the follower stays while the job is running" kill -0 "$FPID"
TOKEN=$CRED2
check_status "attempt 2 ends" 200 POST "$I/$A2/finish" -H 'Content-Type: application/json' \
	-d '{"outcome": "succeeded", "reason": "all steps done"}'
gone() { ! kill -0 "$FPID" 2>/dev/null; }
check "the follower ends by itself once the job is final" wait_until 10 gone
frc=0
wait "$FPID" || frc=$?
check_eq "with a complete answer" 0 "$frc"
printf 'attempt 2 line %d\n' 3 4 5 >>"$EXPECT"
check "holding exactly every line" cmp "$EXPECT" "$FOLLOW"

# checkpoint files
SHARD_Q="/v1/checkpoints/$C/download?file=shard_00000_of_00001.bin"
check_eq "alice downloads the shard" "200 0" "$(get "$ALICE" "$SHARD_Q" "$TY_TMP/shard")"
check_eq "its SHA-256 is the registered one" "$SHA" "$(sha256sum <"$TY_TMP/shard" | cut -d' ' -f1)"
TOKEN=$ALICE
api GET "/v1/checkpoints/$C/download"
check_eq "the manifest is the default" 200 "$STATUS"
check_match "as application/json" '^application/json' "$(header Content-Type)"
check_json "listing the shard's hash" "$SHA" '.shards[0].sha256'
check_status "a file the checkpoint does not list" 404 GET "/v1/checkpoints/$C/download?file=shard_00001_of_00001.bin"
check_json "checkpoint_not_found" checkpoint_not_found .code
check_status "a path outside the checkpoint" 404 GET "/v1/checkpoints/$C/download?file=../../logs/attempt-1.log"
check_eq "the admin downloads too" "200 0" "$(get "$ADMIN" "$SHARD_Q" "$TY_TMP/shard3")"
TOKEN=$VIC
check_status "a viewer may not download" 403 GET "$SHARD_Q"
check_json "forbidden" forbidden .code
TOKEN=$BOB
check_status "another tenant's owner does not see the checkpoint" 404 GET "$SHARD_Q"
check_json "checkpoint_not_found" checkpoint_not_found .code

SHARD_FILE=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/jobs/$J/checkpoints/step_00000002/shard_00000_of_00001.bin
cp "$SHARD_FILE" "$TY_TMP/shard.orig"
flip "$SHARD_FILE" $((42 + 65552 + 100)) # inside the second chunk
read -r code rc <<<"$(get "$ALICE" "$SHARD_Q" "$TY_TMP/bad")"
check_eq "a shard altered in its second chunk starts as 200" 200 "$code"
check "but the transfer fails" test "$rc" -ne 0
check "sending no byte past the authenticated first chunk" \
	cmp "$TY_TMP/bad" <(head -c "$(wc -c <"$TY_TMP/bad")" "$TY_TMP/shard")
check "so not the plaintext" test "$(wc -c <"$TY_TMP/bad")" -le 65536
cp "$TY_TMP/shard.orig" "$SHARD_FILE"
flip "$SHARD_FILE" 50 # inside the first chunk
TOKEN=$ALICE
check_status "a shard altered in its first chunk answers 500" 500 GET "$SHARD_Q"
check_json "data_auth_failed" data_auth_failed .code
cp "$TY_TMP/shard.orig" "$SHARD_FILE"
check_eq "the restored shard downloads again" "200 0" "$(get "$ALICE" "$SHARD_Q" "$TY_TMP/shard2")"

LOG_FILE=$TRAINYARD_STORAGE_ROOT/tenants/$TA_ID/jobs/$J/logs/attempt-1.log
cp "$LOG_FILE" "$TY_TMP/log.orig"
flip "$LOG_FILE" $((42 + 4 + 16 + 16 + 4 + 2)) # the second record's ciphertext
get "$ALICE" "/v1/jobs/$J/logs" "$TY_TMP/badlog" >/dev/null
check_eq "an altered record ends the log with the marker, after the good lines" \
	"$(printf 'attempt 1 line 1\ntrainyard: log record failed authentication')" "$(cat "$TY_TMP/badlog")"
cp "$TY_TMP/log.orig" "$LOG_FILE"

# every read of the tenant's data is on record: the data-access report
TOKEN=$ADMIN
check_status "tenant A's data-access report" 200 GET "/v1/tenants/$TA/reports/data-access?format=json"
ROWS=$(printf '%s' "$BODY" | jq -c '.sections[0].rows[]')
rows() { printf '%s\n' "$ROWS" | jq -s "map(select($1)) | length"; }
check_eq "lists alice's downloads of the shard, with the tenant key version" 1 \
	"$(($(rows ".actor == \"alice-$SFX\" and .action == \"checkpoint.download\" and .file == \"shard_00000_of_00001.bin\" and .outcome == \"success\" and (.key_version | type) == \"number\" and .job == \"$J\"") >= 2))"
check_eq "the admin's download" 1 \
	"$(rows '.actor == "admin" and .action == "checkpoint.download" and .outcome == "success"')"
check_eq "the download refused for its altered first chunk" 1 \
	"$(rows ".actor == \"alice-$SFX\" and .action == \"checkpoint.download\" and .outcome == \"failure\"")"
check_eq "the viewer's log read" 1 \
	"$(rows ".actor == \"vic-$SFX\" and .action == \"log.read\" and .outcome == \"success\"")"
check_eq "and the viewer's refused download" 1 \
	"$(rows ".actor == \"vic-$SFX\" and .action == \"checkpoint.download\" and .outcome == \"denied\"")"
check_eq "the key released to attempt 1, with its version" 1 \
	"$(rows '.action == "key.release" and .outcome == "success" and .key_version != null')"
check_eq "every row names its record" 0 "$(rows '(.seqs | length) != 1')"
check_status "tenant B's data-access report" 200 GET "/v1/tenants/$TB/reports/data-access?format=json"
check_eq "holds none of tenant A's reads" 0 "$(printf '%s' "$BODY" | jq '.sections[0].summary.rows')"
check_status "tenant A's denials report" 200 GET "/v1/tenants/$TA/reports/denials?format=json"
check_eq "holds tenant B's owner reaching for A's checkpoint and log" 2 \
	"$(printf '%s' "$BODY" | jq "[.sections[0].rows[] | select(.actor == \"bob-$SFX\")] | length")"

# Followers are bounded, wait without holding a server thread, end at the
# follow limit, free their slot when the client goes, and do not keep the
# server from stopping.
check "restart the API with 2 threads and 4 followers of at most 6 s" \
	env TRAINYARD_THREADS=2 TRAINYARD_LOG_FOLLOWERS=4 TRAINYARD_LOG_FOLLOW_SECONDS=6 \
	"$TY_ROOT/deploy/stack" api-restart
TOKEN=$ADMIN
check_status "a second job" 201 POST "/v1/tenants/$TA/jobs" -H 'Content-Type: application/json' -d "$JOB"
J3=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$ALICE
follow3() { # follow3 SECONDS: follow J3's log in the background
	curl -sS -N --max-time "$1" -H "Authorization: Bearer $ALICE" -o /dev/null \
		"$TRAINYARD_URL/v1/jobs/$J3/logs?follow=1" 2>/dev/null &
}
start=$SECONDS
LONG=()
for _ in 1 2 3; do
	follow3 20
	LONG+=($!)
done
follow3 1.5
SHORT=$!
sleep 0.7
check_status "a fifth follower is refused" 429 GET "/v1/jobs/$J3/logs?follow=1"
check_json "log_followers_full" log_followers_full .code
check_match "with Retry-After" '^[1-9][0-9]*$' "$(header Retry-After)"
TY_CURL_TIMEOUT=2 check_status "four waiting followers leave both threads free" 200 GET /v1/whoami
check_status "reading without follow still works" 200 GET "/v1/jobs/$J3/logs"
wait "$SHORT"
free_slot() { TY_CURL_TIMEOUT=1 api GET "/v1/jobs/$J3/logs?follow=1" && [[ $STATUS == 200 ]]; }
check "a follower that went away frees its slot before its limit" wait_until 2 free_slot
rcs=""
for p in "${LONG[@]}"; do
	r=0
	wait "$p" || r=$?
	rcs="$rcs $r"
done
check_eq "the followers of a queued job end at the follow limit, complete" " 0 0 0" "$rcs"
check "after about 6 s" test $((SECONDS - start)) -ge 5 -a $((SECONDS - start)) -le 10
follow3 20
LAST=$!
sleep 0.5
check "restore the API's defaults while a follower waits" "$TY_ROOT/deploy/stack" api-restart
last_gone() { ! kill -0 "$LAST" 2>/dev/null; }
check "the stopping server closed the follower's connection" wait_until 5 last_gone
wait "$LAST" 2>/dev/null

# One tenant, or one token, that fills its own follower slots leaves the
# server's other slots to the other tenants.
check "restart the API with 4 followers, 2 per tenant and 1 per token" \
	env TRAINYARD_LOG_FOLLOWERS=4 TRAINYARD_LOG_FOLLOWERS_PER_TENANT=2 \
	TRAINYARD_LOG_FOLLOWERS_PER_TOKEN=1 TRAINYARD_LOG_FOLLOW_SECONDS=20 \
	"$TY_ROOT/deploy/stack" api-restart
ALICE2=$(user_token "alice-$SFX")
TOKEN=$ADMIN
check_status "a job in tenant B" 201 POST "/v1/tenants/$TB/jobs" \
	-H 'Content-Type: application/json' -d "$JOB"
JB=$(printf '%s' "$BODY" | jq -r .id)
HOLDERS=() HELD=
hold() { # hold TOKEN JOB: follow JOB's log in the background; HELD is the answer's status
	local h=$TY_TMP/hold.${#HOLDERS[@]}
	curl -sS -N --max-time 20 -H "Authorization: Bearer $1" -D "$h" -o /dev/null \
		"$TRAINYARD_URL/v1/jobs/$2/logs?follow=1" 2>/dev/null &
	HOLDERS+=($!)
	wait_until 5 grep -q '^HTTP/' "$h"
	HELD=$(awk 'NR == 1 { print $2 }' "$h" 2>/dev/null)
}
codes=""
for t in "$ALICE" "$ALICE" "$ALICE2" "$VIC"; do
	hold "$t" "$J3"
	codes="$codes $HELD"
done
check_eq "tenant A gets two followers of four, one per token" " 200 429 200 429" "$codes"
TOKEN=$ALICE
TY_CURL_TIMEOUT=3 check_status "alice's token has its one follower" 429 GET "/v1/jobs/$J3/logs?follow=1"
check_json "log_followers_full" log_followers_full .code
check_match "the token's limit, says the detail" "with this token" "$(printf '%s' "$BODY" | jq -r .detail)"
TOKEN=$VIC
TY_CURL_TIMEOUT=3 check_status "vic's token has none, but tenant A has its two" 429 GET "/v1/jobs/$J3/logs?follow=1"
check_match "the tenant's limit, says the detail" "of this tenant's jobs" "$(printf '%s' "$BODY" | jq -r .detail)"
check_match "with Retry-After" '^[1-9][0-9]*$' "$(header Retry-After)"
hold "$BOB" "$JB"
check_eq "tenant B still follows its job's log" 200 "$HELD"
for p in "${HOLDERS[@]}"; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
for _ in $(seq 1 25); do
	hold "$VIC" "$J3"
	[[ $HELD == 200 ]] && break
	sleep 0.2
done
check_eq "once the followers went away, vic follows" 200 "$HELD"
kill "${HOLDERS[-1]}" 2>/dev/null
wait "${HOLDERS[-1]}" 2>/dev/null
check "restore the API's defaults" "$TY_ROOT/deploy/stack" api-restart

# A user's tokens share the user's follower slots: more tokens make no more room.
check "restart the API with 2 followers per user and 1 per token" \
	env TRAINYARD_LOG_FOLLOWERS=8 TRAINYARD_LOG_FOLLOWERS_PER_TENANT=8 \
	TRAINYARD_LOG_FOLLOWERS_PER_USER=2 TRAINYARD_LOG_FOLLOWERS_PER_TOKEN=1 \
	TRAINYARD_LOG_FOLLOW_SECONDS=20 "$TY_ROOT/deploy/stack" api-restart
ALICE3=$(user_token "alice-$SFX")
codes="" # HOLDERS grows on: each holder answers into a file of its own
for t in "$ALICE" "$ALICE2" "$ALICE3"; do
	hold "$t" "$J3"
	codes="$codes $HELD"
done
check_eq "alice's three tokens get two followers" " 200 200 429" "$codes"
TOKEN=$ALICE3
TY_CURL_TIMEOUT=3 check_status "her third token has a slot, but she has none" 429 GET "/v1/jobs/$J3/logs?follow=1"
check_json "log_followers_full" log_followers_full .code
check_match "the user's limit, says the detail" "by this user" "$(printf '%s' "$BODY" | jq -r .detail)"
hold "$VIC" "$J3"
check_eq "vic, of the same tenant, still follows" 200 "$HELD"
for p in "${HOLDERS[@]}"; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
check "restore the API's defaults" "$TY_ROOT/deploy/stack" api-restart

# destroyed keys
TOKEN=$ADMIN
check_status "the admin destroys tenant A's keys" 204 DELETE "/v1/tenants/$TA/keys"
TOKEN=$ALICE
check_status "the log cannot be read any more" 503 GET "/v1/jobs/$J/logs"
check_json "keys_unavailable" keys_unavailable .code
check_status "nor the checkpoint" 503 GET "$SHARD_Q"
check_json "keys_unavailable" keys_unavailable .code
check_status "a job that wrote nothing still answers its empty log" 200 GET "/v1/jobs/$J3/logs"
summary
