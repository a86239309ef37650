-- 0003_scheduler.sql - what the scheduler keeps: each attempt's Slurm job
-- and story, the dispatch lease, retry backoff, the tenants' Slurm accounts
-- and the fair-share picture of the last scheduling cycle.

-- An attempt the scheduler dispatched has a Slurm job. slurm_job_id is NULL
-- between the dispatch transaction and the submission (a crash there is
-- found again by the job's id in the Slurm comment). The layout columns are
-- what the attempt was given; the end columns are what became of it.
ALTER TABLE job_attempts
    ADD COLUMN slurm_job_id  bigint UNIQUE,
    ADD COLUMN slurm_state   text NOT NULL DEFAULT '',
    ADD COLUMN nodes         integer CHECK (nodes > 0),
    ADD COLUMN devices       integer CHECK (devices > 0),
    ADD COLUMN node_list     text NOT NULL DEFAULT '',
    ADD COLUMN config        jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN started_at    timestamptz,
    ADD COLUMN failure_class text NOT NULL DEFAULT '',
    ADD COLUMN steps_done    integer NOT NULL DEFAULT 0 CHECK (steps_done >= 0),
    ADD COLUMN steps_lost    integer NOT NULL DEFAULT 0 CHECK (steps_lost >= 0),
    ADD COLUMN followed      boolean NOT NULL DEFAULT false;

-- followed: the scheduler still follows the attempt's Slurm job (it is
-- submitted, or about to be, and has not ended): the set reconciliation
-- walks each cycle.
CREATE INDEX job_attempts_followed ON job_attempts (job_id) WHERE followed;
-- Usage for fair share and the monthly GPU-hour budget: recent attempts.
CREATE INDEX job_attempts_recent ON job_attempts (created_at);

-- dispatch_owner/dispatch_lease_until: the scheduler that moved the job to
-- dispatching, and until when no other scheduler may touch it.
-- not_before: the earliest time a retried job may be admitted again.
-- nodes: the nodes the next attempt asks for (NULL: the spec's);
-- overrides: spec overrides the next attempt runs with (a smaller memory
-- footprint after out of memory).
ALTER TABLE jobs
    ADD COLUMN dispatch_owner       text NOT NULL DEFAULT '',
    ADD COLUMN dispatch_lease_until timestamptz,
    ADD COLUMN not_before           timestamptz,
    ADD COLUMN next_nodes           integer CHECK (next_nodes > 0),
    ADD COLUMN next_overrides       jsonb NOT NULL DEFAULT '[]';

-- A tenant's jobs that hold devices now, for its quota.
CREATE INDEX jobs_active ON jobs (tenant_id)
    WHERE state IN ('dispatching', 'scheduled', 'running', 'cancelling');
-- The head of each tenant's queue, in the order admission takes it.
CREATE INDEX jobs_queue ON jobs (tenant_id, priority DESC, created_at, id) WHERE state = 'queued';

-- A tenant's Slurm account as last written, so a quota change is noticed.
CREATE TABLE slurm_accounts (
    tenant_id uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    account   text NOT NULL UNIQUE,
    grp_tres  text NOT NULL,
    synced_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The fair-share picture of the last cycle, one row per tenant with
-- queued or running work: decayed usage, weight, rank (1 goes first).
CREATE TABLE scheduler_tenants (
    tenant_id   uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    usage_hours double precision NOT NULL,
    weight      double precision NOT NULL,
    rank        integer NOT NULL,
    reason      text NOT NULL DEFAULT '',
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
