#!/usr/bin/env bash
# tests/integration/attempt_flow.sh - job attempts and the worker runtime's
# routes against a stack: an admin starts an attempt of a queued job and
# gets its credential once; the credential reads its job, heartbeats,
# reports metrics and checkpoints and ends the attempt; the tenant's users
# read the results. Isolation: user tokens are refused on the runtime's
# routes, the credential is refused everywhere else and on another
# attempt's routes, another tenant's users see none of it, and an ended
# attempt's credential stops working.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
SFX=$$
TA=att-a-$SFX TB=att-b-$SFX
TA_ID=$(tenant_new "$TA")
tenant_new "$TB" >/dev/null
ALICE=$(member_new "$TA" "alice-$SFX" editor)
BOB=$(member_new "$TB" "bob-$SFX" owner)

JOB=$(tiny_job att 10 30)
# on a data path, so the platform admin submits them (docs/datasets.md)
TOKEN=$ADMIN
check_status "a job is submitted" 201 POST "/v1/tenants/$TA/jobs" \
	-H 'Content-Type: application/json' -d "$JOB"
J=$(printf '%s' "$BODY" | jq -r .id)
check_status "a second job is submitted" 201 POST "/v1/tenants/$TA/jobs" \
	-H 'Content-Type: application/json' -d "$JOB"
J2=$(printf '%s' "$BODY" | jq -r .id)

TOKEN=$ALICE
check_status "an editor may not start an attempt" 403 POST "/v1/jobs/$J/attempts"
TOKEN=$BOB
check_status "another tenant's owner does not see the job" 404 POST "/v1/jobs/$J/attempts"
TOKEN=$ADMIN
check_status "the admin starts an attempt" 201 POST "/v1/jobs/$J/attempts"
A=$(printf '%s' "$BODY" | jq -r .id)
CRED=$(printf '%s' "$BODY" | jq -r .credential)
check_match "the credential is an attempt credential" '^tya_[A-Za-z0-9_-]{43}$' "$CRED"
check_json "attempt number 1" 1 .number
check_status "the job is scheduled" 200 GET "/v1/jobs/$J"
check_json "state scheduled" scheduled .state
check_status "a second attempt of a scheduled job is refused" 409 POST "/v1/jobs/$J/attempts"
check_status "an attempt of the second job" 201 POST "/v1/jobs/$J2/attempts"
A2=$(printf '%s' "$BODY" | jq -r .id)
CRED2=$(printf '%s' "$BODY" | jq -r .credential)

I=/internal/v1/attempts
TOKEN=$ALICE
check_status "a user token is refused on the runtime's routes" 401 GET "$I/$A"
TOKEN=$ADMIN
check_status "so is the admin's" 401 POST "$I/$A/heartbeat"
TOKEN=$CRED
check_status "the credential reads its attempt" 200 GET "$I/$A"
check_json "with its job's spec" 10 .spec.training.steps
check_json "and its tenant" "$TA_ID" .tenant_id
check_status "the credential cannot read another attempt" 404 GET "$I/$A2"
check_status "nor report for it" 404 POST "$I/$A2/heartbeat"
check_status "the credential is refused on user routes" 401 GET "/v1/jobs/$J"
check_status "and on the platform's" 401 GET /v1/whoami
check_status "a heartbeat" 200 POST "$I/$A/heartbeat"
check_json "makes the job running" running .job_state
check_status "metrics, batched" 200 POST "$I/$A/metrics" -H 'Content-Type: application/json' \
	-d '{"steps": [{"step": 1, "loss": 5.5}, {"step": 2, "loss": 5.25}]}'
check_status "a step again replaces it" 200 POST "$I/$A/metrics" -H 'Content-Type: application/json' \
	-d '{"steps": [{"step": 2, "loss": 5.0}]}'
check_status "a step without a number is refused" 422 POST "$I/$A/metrics" \
	-H 'Content-Type: application/json' -d '{"steps": [{"loss": 1}]}'
check_json "naming the field" /steps/0/step '.errors[0].pointer'
SHA=$(printf 'x' | sha256sum | cut -d' ' -f1)
check_status "a checkpoint" 201 POST "$I/$A/checkpoints" -H 'Content-Type: application/json' \
	-d "{\"step\": 2, \"world\": 1, \"shards\": [{\"name\": \"shard_00000_of_00001.bin\", \"bytes\": 4096, \"sha256\": \"$SHA\"}]}"
C=$(printf '%s' "$BODY" | jq -r .id)
check_status "a checkpoint whose shards do not match its world is refused" 422 POST "$I/$A/checkpoints" \
	-H 'Content-Type: application/json' -d '{"step": 3, "world": 2, "shards": []}'
# shard_named NAME: a checkpoint of step 3 with one shard named NAME (a JSON string)
shard_named() {
	api POST "$I/$A/checkpoints" -H 'Content-Type: application/json' \
		-d "{\"step\": 3, \"world\": 1, \"shards\": [{\"name\": $1, \"bytes\": 1, \"sha256\": \"$SHA\"}]}"
	printf '%s %s %s' "$STATUS" "$(printf '%s' "$BODY" | jq -r .code)" \
		"$(printf '%s' "$BODY" | jq -r '[.errors[]?.pointer] | join(",")')"
}
LONG_NAME=\"$(printf 'a%.0s' $(seq 1 129))\"
for bad in '".."' '"."' '"manifest.json"' '"a/b"' '"../x"' '"/etc/passwd"' '""' \
	'"a b"' '"caf\u00e9"' "$LONG_NAME"; do
	check_eq "a shard named ${bad:0:20} is refused, naming the field" \
		"422 validation_failed /shards/0/name" "$(shard_named "$bad")"
done
check_eq "a shard named Shard-0.bin is taken" "201 null " "$(shard_named '"Shard-0.bin"')"
check_status "a checkpoint listing one shard twice is refused" 422 POST "$I/$A/checkpoints" \
	-H 'Content-Type: application/json' -d "{\"step\": 4, \"world\": 2, \"shards\": [
	{\"name\": \"s.bin\", \"bytes\": 1, \"sha256\": \"$SHA\"},
	{\"name\": \"s.bin\", \"bytes\": 1, \"sha256\": \"$SHA\"}]}"
check_json "naming the second" /shards/1/name '.errors[0].pointer'
# sizes: each shard and their sum at most 2^53 bytes (exact in JSON), so the
# sum cannot overflow
# shards_sized SIZE...: a checkpoint of step 3, one shard of each SIZE
shards_sized() {
	local i=0 list= size
	for size in "$@"; do
		list+="${list:+,}{\"name\": \"s$i.bin\", \"bytes\": $size, \"sha256\": \"$SHA\"}"
		i=$((i + 1))
	done
	api POST "$I/$A/checkpoints" -H 'Content-Type: application/json' \
		-d "{\"step\": 3, \"world\": $#, \"shards\": [$list]}"
	printf '%s %s %s' "$STATUS" "$(printf '%s' "$BODY" | jq -r .code)" \
		"$(printf '%s' "$BODY" | jq -r '[.errors[]?.pointer] | join(",")')"
}
check_eq "a shard of 2^53 + 1 bytes is refused, naming it" \
	"422 validation_failed /shards/0/bytes" "$(shards_sized 9007199254740993)"
check_eq "so are two of 2^62, whose sum overflows 64 bits" \
	"422 validation_failed /shards/0/bytes,/shards/1/bytes" \
	"$(shards_sized 4611686018427387904 4611686018427387904)"
check_eq "shards adding up past 2^53 are refused, naming the list" \
	"422 validation_failed /shards" \
	"$(shards_sized 4503599627370496 4503599627370496 1)"
# room in the tenant's storage quota for a checkpoint that large
TOKEN=$ADMIN api PUT "/v1/tenants/$TA/quota" -H 'Content-Type: application/json' \
	-d '{"max_storage_bytes": 9223372036854775807}'
check_eq "shards adding up to 2^53 are taken" "201 null " \
	"$(shards_sized 4503599627370496 4503599627370496)"
check_eq "and their sum recorded" 9007199254740992 \
	"$(q "SELECT bytes FROM checkpoints WHERE job_id = '$J' AND step = 3")"
check_status "a fallback event" 201 POST "$I/$A/events" -H 'Content-Type: application/json' \
	-d '{"kind": "fallback", "reason": "out_of_memory", "detail": {"from": {"data_parallel": 2}, "to": {"data_parallel": 1}, "steps_lost": 3}}'
# one as a worker wrote it before the layout's names were one vocabulary:
# migration 0019 rewrites it (run here again, on the migrated database),
# and running it once more changes nothing
check_status "a fallback event in the old names" 201 POST "$I/$A/events" \
	-H 'Content-Type: application/json' -d '{"kind": "fallback", "reason": "rank_lost", "detail":
	{"from": {"dp": 2, "tp": 4, "pp": 2, "zero": 1, "micro_batch": 4, "grad_accum": 8, "ranks": 16},
	 "to": {"dp": 1, "tp": 4, "pp": 2, "zero": 1, "micro_batch": 4, "grad_accum": 16, "ranks": 8},
	 "steps_lost": 2}}'
old_event="SELECT detail->'from', detail->'to' FROM job_events
	WHERE job_id = '$J' AND reason = 'fallback: rank_lost'"
migrate_0019() {
	psql "$TRAINYARD_DB" -X -tA -v ON_ERROR_STOP=1 -f "$HERE/../../migrations/0019_layout_vocabulary.sql"
}
check_match "stored as it came" '^\{"dp": 2, "pp": 2, "tp": 4, "zero": 1, ' "$(q "$old_event")"
check_eq "migration 0019 rewrites one event" "UPDATE 1" "$(migrate_0019)"
check_eq "to the layout's names, the rest kept" \
	'{"ranks": 16, "grad_accum": 8, "zero_stage": 1, "micro_batch": 4, "data_parallel": 2, "tensor_parallel": 4, "pipeline_parallel": 2}|{"ranks": 8, "grad_accum": 16, "zero_stage": 1, "micro_batch": 4, "data_parallel": 1, "tensor_parallel": 4, "pipeline_parallel": 2}' \
	"$(q "$old_event")"
check_eq "run again, it rewrites nothing" "UPDATE 0" "$(migrate_0019)"
check_eq "and no stored fallback event names a layout's field the old way" 0 \
	"$(q "SELECT count(*) FROM job_events WHERE detail->>'kind' = 'fallback'
		AND (detail->'from' ?| ARRAY['dp', 'tp', 'pp', 'zero']
			OR detail->'to' ?| ARRAY['dp', 'tp', 'pp', 'zero'])")"

TOKEN=$ALICE
check_status "alice reads the metrics" 200 GET "/v1/jobs/$J/metrics"
check_json "two steps" 2 '.items | length'
check_json "the replaced line" 5 '.items[1].data.loss'
check_status "a page after step 1" 200 GET "/v1/jobs/$J/metrics?after=1"
check_json "holds step 2" 2 '.items[0].step'
check_status "alice lists the checkpoints" 200 GET "/v1/jobs/$J/checkpoints"
check_json "two, at steps 2 and 3: no refused one" "2 3" '[.items[].step] | sort | map(tostring) | join(" ")'
check_status "and reads one" 200 GET "/v1/checkpoints/$C"
check_json "with its shard hash" "$SHA" '.shards[0].sha256'
check_status "the fallback is a job event" 200 GET "/v1/jobs/$J/events"
check_json "with its reason and detail" "fallback: out_of_memory 3" \
	'[.items[] | select(.reason | startswith("fallback"))][0] | "\(.reason) \(.detail.steps_lost)"'
TOKEN=$BOB
check_status "bob does not see the metrics" 404 GET "/v1/jobs/$J/metrics"
check_status "nor the checkpoints" 404 GET "/v1/jobs/$J/checkpoints"
check_status "nor the checkpoint" 404 GET "/v1/checkpoints/$C"
check_status "an unknown checkpoint id" 404 GET /v1/checkpoints/00000000-0000-4000-8000-000000000000

# keys: the data key, rotation (data keys re-wrapped, not changed), shredding
TOKEN=$CRED
check_status "the attempt fetches its job's data key" 200 POST "$I/$A/key"
K1=$(printf '%s' "$BODY" | jq -r .keys)
check_match "a 256-bit key" '^[0-9a-f]{64}$' "$K1"
check_status "and again" 200 POST "$I/$A/key"
check_json "the same key" "$K1" .keys
TOKEN=$CRED2
check_status "the other job gets its own key" 200 POST "$I/$A2/key"
K2=$(printf '%s' "$BODY" | jq -r .keys)
check "different jobs have different keys" test "$K1" != "$K2"
check_status "an attempt cannot fetch another attempt's key" 404 POST "$I/$A/key"
TOKEN=$ALICE
check_status "an editor may not rotate the tenant's key" 403 POST "/v1/tenants/$TA/keys/rotate"
TOKEN=$BOB
check_status "another tenant's owner does not see it" 404 POST "/v1/tenants/$TA/keys/rotate"
TOKEN=$ADMIN
check_status "the admin rotates tenant A's key" 200 POST "/v1/tenants/$TA/keys/rotate"
check_json "to version 2, re-wrapping both data keys" "2 2" '"\(.version) \(.rewrapped)"'
check_eq "only version 2 of the tenant's key remains" 2 \
	"$(q "SELECT string_agg(version::text, ',') FROM tenant_keys WHERE tenant_id = '$TA_ID'")"
check_eq "the data keys are wrapped by it" "2 2" \
	"$(q "SELECT count(*), min(key_version) FROM job_keys WHERE tenant_id = '$TA_ID'" | tr '|' ' ')"
check_eq "no key material is stored in the clear" 0 \
	"$(q "SELECT count(*) FROM job_keys WHERE position(decode('$K1', 'hex') IN wrapped) > 0")"
TOKEN=$CRED
check_status "after rotation the job's key" 200 POST "$I/$A/key"
check_json "is unchanged" "$K1" .keys
TOKEN=$ADMIN
check_status "key operations are audited" 200 GET /v1/whoami
check_eq "four releases, one rotation" "4 1" \
	"$(q "SELECT (SELECT count(*) FROM audit_log WHERE action = 'key.release' AND tenant_id = '$TA_ID' AND outcome = 'success'), (SELECT count(*) FROM audit_log WHERE action = 'key.rotate' AND tenant_id = '$TA_ID' AND outcome = 'success')" | tr '|' ' ')"
check_eq "and the key is in no audit record" 0 \
	"$(q "SELECT count(*) FROM audit_log WHERE detail::text LIKE '%$K1%'")"

TOKEN=$CRED
check_status "the attempt ends" 200 POST "$I/$A/finish" -H 'Content-Type: application/json' \
	-d '{"outcome": "succeeded", "reason": "all steps done"}'
check_json "the job succeeded" succeeded .job_state
check_status "the ended attempt's credential stops working" 401 POST "$I/$A/heartbeat"
check_json "as attempt_ended" attempt_ended .code
TOKEN=$CRED2
check_status "the other attempt fails" 200 POST "$I/$A2/finish" -H 'Content-Type: application/json' \
	-d '{"outcome": "failed", "reason": "data_error"}'
check_json "its job failed (it never reported, so it ran first)" failed .job_state
# a job that ends while its attempt is still live (moved by the platform):
# the credential stops working with the job, whatever its expiry says
TOKEN=$ADMIN
check_status "a third job is submitted" 201 POST "/v1/tenants/$TA/jobs" \
	-H 'Content-Type: application/json' -d "$JOB"
J4=$(printf '%s' "$BODY" | jq -r .id)
check_status "with an attempt" 201 POST "/v1/jobs/$J4/attempts"
A4=$(printf '%s' "$BODY" | jq -r .id)
CRED4=$(printf '%s' "$BODY" | jq -r .credential)
TOKEN=$CRED4
check_status "whose credential reads it" 200 GET "$I/$A4"
for final in succeeded failed cancelled; do
	q "UPDATE jobs SET state = '$final' WHERE id = '$J4'" >/dev/null
	check_status "the job $final: its live attempt's credential is refused" 401 GET "$I/$A4"
	check_json "as attempt_ended" attempt_ended .code
	check_status "and gets no key" 401 POST "$I/$A4/key"
done
check_eq "though the attempt has not ended nor its credential expired" t \
	"$(q "SELECT state <> 'ended' AND expires_at > now() FROM job_attempts WHERE id = '$A4'")"
TOKEN=$BOB
check_status "a tenant owner may not destroy its keys" 403 DELETE "/v1/tenants/$TB/keys"
TOKEN=$ADMIN
check_status "the admin destroys tenant A's keys" 204 DELETE "/v1/tenants/$TA/keys"
check_eq "its keys are gone" "0 0" \
	"$(q "SELECT (SELECT count(*) FROM tenant_keys WHERE tenant_id = '$TA_ID'), (SELECT count(*) FROM job_keys WHERE tenant_id = '$TA_ID')" | tr '|' ' ')"
check_status "a new job of the shredded tenant" 201 POST "/v1/jobs/$(TOKEN=$ADMIN api POST "/v1/tenants/$TA/jobs" \
	-H 'Content-Type: application/json' -d "$JOB" >/dev/null; printf '%s' "$BODY" | jq -r .id)/attempts"
CRED3=$(printf '%s' "$BODY" | jq -r .credential)
A3=$(printf '%s' "$BODY" | jq -r .id)
TOKEN=$CRED3
check_status "gets no key" 503 POST "$I/$A3/key"
check_json "keys_unavailable" keys_unavailable .code
TOKEN=$ADMIN
check_status "the audit log" 200 GET "/v1/jobs/$J"
check_eq "the runtime's reports are audited under the attempt" 1 \
	"$(psql "$TRAINYARD_DB" -tAc "SELECT count(*) FROM audit_log WHERE action = 'attempt.finish' AND actor_name = 'attempt $A'")"
summary
