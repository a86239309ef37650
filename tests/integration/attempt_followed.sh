#!/usr/bin/env bash
# tests/integration/attempt_followed.sh - the finish report of an attempt
# the scheduler follows (job_attempts.followed). A failure is kept on the
# attempt as its failure class (the body's failure_class, else the reason
# when it names a class of lib/job/failure.def, else "failed") and leaves the
# job's state alone; success makes the job succeeded; a failure while the
# job is being cancelled makes it cancelled. An attempt that is not
# followed fails its job as before and keeps no failure class. A
# failure_class that is not a class is refused with 422, and the
# database refuses to hold one (migration 0017's CHECK constraint).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
SFX=$$
T=fol-$SFX
T_ID=$(tenant_new "$T")
ALICE=$(member_new "$T" "fol-alice-$SFX" editor)

JOB=$(tiny_job fol 10 30)
I=/internal/v1/attempts
JOB_ID='' ATT='' CRED=''

# start DESC FOLLOWED: the admin submits a job (on a data path) and starts
# its attempt, which the scheduler follows when FOLLOWED is true; sets
# JOB_ID, ATT, CRED.
start() {
	TOKEN=$ADMIN api POST "/v1/tenants/$T/jobs" -H 'Content-Type: application/json' -d "$JOB"
	JOB_ID=$(printf '%s' "$BODY" | jq -r .id)
	TOKEN=$ADMIN
	check_status "$1: the admin starts an attempt" 201 POST "/v1/jobs/$JOB_ID/attempts"
	ATT=$(printf '%s' "$BODY" | jq -r .id)
	CRED=$(printf '%s' "$BODY" | jq -r .credential)
	check_eq "$1: the attempt is marked followed=$2" 1 \
		"$(q "UPDATE job_attempts SET followed = $2 WHERE id = '$ATT' RETURNING 1")"
}

# finish OUTCOME REASON: the attempt's runtime ends it.
finish() {
	TOKEN=$CRED api POST "$I/$ATT/finish" -H 'Content-Type: application/json' \
		-d "{\"outcome\": \"$1\", \"reason\": \"$2\"}"
}

job_state() { TOKEN=$ALICE api GET "/v1/jobs/$1" && printf '%s' "$BODY" | jq -r .state; }
attempt_row() { q "SELECT state, outcome, failure_class, ended_at IS NOT NULL FROM job_attempts WHERE id = '$1'"; }

# 1. a followed attempt that fails with a failure class: the job stays running
start "rank lost" true
J1=$JOB_ID A1=$ATT
TOKEN=$CRED
check_status "rank lost: a heartbeat" 200 POST "$I/$A1/heartbeat"
check_json "rank lost: makes the job running" running .job_state
finish failed rank_lost
check_eq "rank lost: the finish answers 200" 200 "$STATUS"
check_json "rank lost: the job's state is unchanged in the answer" running .job_state
check_eq "rank lost: and when read" running "$(job_state "$J1")"
check_eq "rank lost: the attempt ended, failed, with its failure class" "ended|failed|rank_lost|t" \
	"$(attempt_row "$A1")"
check_eq "rank lost: no job event moved the job to failed" 0 \
	"$(q "SELECT count(*) FROM job_events WHERE job_id = '$J1' AND to_state = 'failed'")"
check_eq "rank lost: the job is not finished" "t" \
	"$(q "SELECT finished_at IS NULL FROM jobs WHERE id = '$J1'")"
TOKEN=$CRED
check_status "rank lost: the ended attempt's credential stops working" 401 POST "$I/$A1/heartbeat"
check_json "rank lost: as attempt_ended" attempt_ended .code
check_eq "rank lost: the finish is audited under the attempt" 1 \
	"$(q "SELECT count(*) FROM audit_log WHERE action = 'attempt.finish' AND actor_name = 'attempt $A1'")"

# 2. a reason that is not a failure class is kept as "failed"
start "free text" true
J2=$JOB_ID A2=$ATT
finish failed "NCCL timeout on rank 3"
check_eq "free text: the finish answers 200" 200 "$STATUS"
check_json "free text: the job is running (the finish was its first report)" running .job_state
check_eq "free text: and when read" running "$(job_state "$J2")"
check_eq "free text: the failure class is failed" "ended|failed|failed|t" "$(attempt_row "$A2")"

# 3. a word that names no class of lib/job/failure.def is failed, never kept
start "long reason" true
A3=$ATT
finish failed "$(printf 'a%.0s' {1..41})"
check_json "long reason: the job's state is unchanged" running .job_state
check_eq "long reason: the failure class is failed" failed \
	"$(q "SELECT failure_class FROM job_attempts WHERE id = '$A3'")"
start "unknown word" true
A4=$ATT
finish failed "$(printf 'b%.0s' {1..40})"
check_eq "unknown word: 40 letters that name no class are failed" failed \
	"$(q "SELECT failure_class FROM job_attempts WHERE id = '$A4'")"

# 3b. failure_class, typed: a class of lib/job/failure.def or refused
start "typed class" true
A8=$ATT
TOKEN=$CRED
check_status "unknown class: refused" 422 POST "$I/$A8/finish" -H 'Content-Type: application/json' \
	-d '{"outcome": "failed", "reason": "bogus_class", "failure_class": "bogus_class"}'
check_json "unknown class: the field error" "/failure_class=invalid_value" \
	'[.errors[] | "\(.pointer)=\(.code)"] | join(" ")'
check_status "a class with outcome succeeded: refused" 422 POST "$I/$A8/finish" \
	-H 'Content-Type: application/json' \
	-d '{"outcome": "succeeded", "failure_class": "rank_lost"}'
check_json "succeeded: the field error" "/failure_class=invalid_value" \
	'[.errors[] | "\(.pointer)=\(.code)"] | join(" ")'
check_eq "refused: the attempt has not ended" "t||" \
	"$(q "SELECT state <> 'ended', outcome, failure_class FROM job_attempts WHERE id = '$A8'")"
check_status "a known class is taken, whatever the reason" 200 POST "$I/$A8/finish" \
	-H 'Content-Type: application/json' \
	-d '{"outcome": "failed", "reason": "a checkpoint was refused", "failure_class": "storage_quota_exceeded"}'
check_eq "typed class: recorded" "ended|failed|storage_quota_exceeded|t" "$(attempt_row "$A8")"
ERR=$(q "UPDATE job_attempts SET failure_class = 'bogus_class' WHERE id = '$A8'" 2>&1)
check_match "the database refuses a class lib/job/failure.def lacks" \
	'violates check constraint "job_attempts_failure_class_check"' "$ERR"
check_eq "and keeps the class" storage_quota_exceeded \
	"$(q "SELECT failure_class FROM job_attempts WHERE id = '$A8'")"

# 4. a followed attempt that succeeds: the job succeeded
start "success" true
J5=$JOB_ID A5=$ATT
TOKEN=$CRED
check_status "success: a heartbeat" 200 POST "$I/$A5/heartbeat"
finish succeeded "all steps done"
check_eq "success: the finish answers 200" 200 "$STATUS"
check_json "success: the job succeeded" succeeded .job_state
check_eq "success: and when read" succeeded "$(job_state "$J5")"
check_eq "success: the attempt ended, succeeded, with no failure class" "ended|succeeded||t" \
	"$(attempt_row "$A5")"

# 5. a followed attempt that fails while its job is being cancelled: cancelled
start "cancelling" true
J6=$JOB_ID A6=$ATT
TOKEN=$CRED
check_status "cancelling: a heartbeat" 200 POST "$I/$A6/heartbeat"
TOKEN=$ALICE
check_status "cancelling: alice cancels the running job" 200 POST "/v1/jobs/$J6/cancel"
check_json "cancelling: it is cancelling" cancelling .state
finish failed rank_lost
check_eq "cancelling: the finish answers 200" 200 "$STATUS"
check_json "cancelling: the job is cancelled" cancelled .job_state
check_eq "cancelling: and when read" cancelled "$(job_state "$J6")"
check_eq "cancelling: the attempt keeps its failure class" "ended|failed|rank_lost|t" \
	"$(attempt_row "$A6")"

# 6. an attempt that is not followed fails its job, as before
start "not followed" false
J7=$JOB_ID A7=$ATT
finish failed rank_lost
check_eq "not followed: the finish answers 200" 200 "$STATUS"
check_json "not followed: the job failed" failed .job_state
check_eq "not followed: and when read" failed "$(job_state "$J7")"
check_eq "not followed: the attempt keeps no failure class" "ended|failed||t" \
	"$(attempt_row "$A7")"
check_eq "not followed: the job event carries the reason" rank_lost \
	"$(q "SELECT reason FROM job_events WHERE job_id = '$J7' AND to_state = 'failed'")"

# no scheduler follows these attempts: leave none for a later test's scheduler
q "UPDATE job_attempts SET followed = false
   WHERE job_id IN (SELECT id FROM jobs WHERE tenant_id = '$T_ID')" >/dev/null
summary
