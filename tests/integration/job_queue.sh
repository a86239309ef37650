#!/usr/bin/env bash
# tests/integration/job_queue.sh - the "queue" member of a job: a queued
# job's position among its tenant's queued jobs in admission order
# (priority first, then submission time, then id), counted up to 100
# (null past that), its tenant's rank in
# the scheduler's last fair-share cycle (scheduler_tenants) and how many
# tenants it ranked, why it waits and until when; null for a job that is
# not queued, and left out of lists.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh disable=SC1091
. "$HERE/lib.sh"

needs TRAINYARD_URL TRAINYARD_DB

ADMIN=$(admin_token)
SFX=$$
TA=que-a-$SFX TB=que-b-$SFX
TA_ID=$(tenant_new "$TA")
TB_ID=$(tenant_new "$TB")
ALICE=$(member_new "$TA" "que-alice-$SFX" editor)
BOB=$(member_new "$TB" "que-bob-$SFX" editor)

JOB=$(tiny_job que 10 30)

# submit DESC TENANT: the current TOKEN submits a job to TENANT; sets J.
J=''
submit() {
	check_status "$1" 201 POST "/v1/tenants/$2/jobs" -H 'Content-Type: application/json' -d "$JOB"
	J=$(printf '%s' "$BODY" | jq -r .id)
}

# The jobs read a data path, so the platform admin submits them
# (docs/datasets.md); a queue is its tenant's, whoever submitted.
TOKEN=$ADMIN
submit "a job is submitted in tenant B first" "$TB"
B1=$J
check_eq "and gets the highest priority" 1 \
	"$(q "UPDATE jobs SET priority = 100 WHERE id = '$B1' RETURNING 1")"
submit "job 1 is submitted in tenant A" "$TA"
J1=$J
check_json "its answer shows it first of its tenant's queue" 1 .queue.position
submit "job 2 is submitted" "$TA"
J2=$J
submit "job 3 is submitted" "$TA"
J3=$J
check_json "job 3 is third" 3 .queue.position
TOKEN=$ALICE

# pos JOB: the job's queue position as alice (or TOKEN=... pos) reads it
pos() { TOKEN=${TOKEN_POS:-$ALICE} api GET "/v1/jobs/$1" && printf '%s' "$BODY" | jq -r .queue.position; }

check_status "alice reads job 1" 200 GET "/v1/jobs/$J1"
check_json "queued, with a queue object" "object" '.queue | type'
check_json "position 1: another tenant's queue does not count" 1 .queue.position
check_json "no scheduler_tenants row: tenant_rank is null" null .queue.tenant_rank
check_json "tenants_ranked counts scheduler_tenants" "$(q "SELECT count(*) FROM scheduler_tenants")" \
	.queue.tenants_ranked
check_json "reason is the job's state_reason (empty)" "" .queue.reason
check_json "not_before is null" null .queue.not_before
check_eq "in submission order: job 2 is second" 2 "$(pos "$J2")"
check_eq "job 3 is third" 3 "$(pos "$J3")"

check_eq "job 2 gets a higher priority" 1 \
	"$(q "UPDATE jobs SET priority = 5 WHERE id = '$J2' RETURNING 1")"
check_eq "job 2 goes first" 1 "$(pos "$J2")"
check_eq "job 1 second" 2 "$(pos "$J1")"
check_eq "job 3 third" 3 "$(pos "$J3")"

# the same priority and submission time: the smaller id goes first
check_eq "job 3 gets job 1's submission time" 1 \
	"$(q "UPDATE jobs SET created_at = (SELECT created_at FROM jobs WHERE id = '$J1') WHERE id = '$J3' RETURNING 1")"
if [[ $(LC_ALL=C; [[ $J1 < $J3 ]] && echo lt) == lt ]]; then
	FIRST=$J1 SECOND=$J3
else
	FIRST=$J3 SECOND=$J1
fi
check_eq "the tie goes to the smaller id" "2 3" "$(pos "$FIRST") $(pos "$SECOND")"

# the scheduler's picture of the tenants
BEFORE=$(q "SELECT count(*) FROM scheduler_tenants")
check_eq "the scheduler ranks both tenants" 2 \
	"$(q "INSERT INTO scheduler_tenants (tenant_id, usage_hours, weight, rank) VALUES ('$TB_ID', 1.5, 1, 1), ('$TA_ID', 7.25, 1, 2) RETURNING 1" | wc -l)"
check_eq "and says why and until when job 1 waits" 1 \
	"$(q "UPDATE jobs SET state_reason = 'retry 1 after rank_lost', not_before = '2030-01-02 03:04:05.678+00' WHERE id = '$J1' RETURNING 1")"
TOKEN=$ALICE
check_status "alice reads job 1 again" 200 GET "/v1/jobs/$J1"
check_json "tenant_rank is the tenant's row" 2 .queue.tenant_rank
check_json "tenants_ranked counts the rows" "$((BEFORE + 2))" .queue.tenants_ranked
check_json "reason is the state_reason" "retry 1 after rank_lost" .queue.reason
check_json "not_before is a timestamp like the others" "2030-01-02T03:04:05.678Z" .queue.not_before
check_json "the job is still queued" queued .state
TOKEN=$BOB
check_status "bob reads tenant B's job" 200 GET "/v1/jobs/$B1"
check_json "first of tenant B, ranked first" "1 1" '"\(.queue.position) \(.queue.tenant_rank)"'

# jobs that are not queued
TOKEN=$ADMIN
check_status "the admin starts job 2's attempt" 201 POST "/v1/jobs/$J2/attempts"
TOKEN=$ALICE
check_status "alice reads job 2" 200 GET "/v1/jobs/$J2"
check_json "scheduled" scheduled .state
check_json "its queue is null" null '.queue'
check_json "and present" true 'has("queue")'
check_eq "job 1 and job 3 move up" "1 2" "$(pos "$FIRST") $(pos "$SECOND")"
check_status "alice cancels job 3" 200 POST "/v1/jobs/$J3/cancel"
check_json "the cancel answer: cancelled, queue null" "cancelled null" '"\(.state) \(.queue)"'
check_eq "job 1 is alone in the queue" 1 "$(pos "$J1")"

# the position is counted up to 100: deeper in the queue it reads null
TC=que-c-$SFX
tenant_new "$TC" >/dev/null
TOKEN=$ADMIN
submit "the admin submits a job in tenant C" "$TC"
JC=$J
# ahead N SQL_EXTRA: N copies of job C queued ahead of it (SQL_EXTRA sets
# priority and created_at). Jobs added beside the API announce nothing (a
# notifying commit would serialise submissions), so a position the API read
# less than TRAINYARD_READ_CACHE_MS (1 s) ago may be that old: wait it out.
ahead() {
	q "INSERT INTO jobs (tenant_id, submitter_id, name, spec, devices, priority, created_at)
	   SELECT tenant_id, submitter_id, 'que-ahead', spec, devices, $2 FROM jobs j,
	   generate_series(1, $1) WHERE j.id = '$JC' RETURNING 1" | wc -l
	sleep 1.1
}
check_eq "98 jobs submitted before it" 98 "$(ahead 98 "priority, created_at - interval '1 s'")"
check_eq "put it 99th" 99 "$(TOKEN_POS=$ADMIN pos "$JC")"
check_eq "one submitted after it with a higher priority" 1 "$(ahead 1 "priority + 5, now() + interval '1 s'")"
check_eq "goes ahead of it too: 100th" 100 "$(TOKEN_POS=$ADMIN pos "$JC")"
check_eq "one more ahead" 1 "$(ahead 1 "priority, created_at - interval '2 s'")"
check_status "the admin reads job C" 200 GET "/v1/jobs/$JC"
check_json "101st: past the count, its position is null" null .queue.position
check_json "while it stays queued, with its queue object" "queued object" '"\(.state) \(.queue | type)"'
check_eq "one ahead of it leaves the queue" 1 \
	"$(q "UPDATE jobs SET state = 'cancelled' WHERE id = (SELECT id FROM jobs WHERE tenant_id = (SELECT tenant_id FROM jobs WHERE id = '$JC') AND name = 'que-ahead' LIMIT 1) RETURNING 1")"
check_eq "and it is 100th again" 100 "$(TOKEN_POS=$ADMIN pos "$JC")"

TOKEN=$ALICE
check_status "alice lists her tenant's jobs" 200 GET "/v1/tenants/$TA/jobs"
check_json "lists leave queue out" false '[.items[] | has("queue")] | any'
q "DELETE FROM scheduler_tenants WHERE tenant_id IN ('$TA_ID', '$TB_ID')" >/dev/null
summary
