-- 0028_preemption.sql - quota in two parts, priority classes and
-- preemption (scheduler/README.md, "Borrowing and preemption").
--
-- quotas.max_gpus is what a tenant is guaranteed; borrow_gpus is how many
-- devices more it may hold while others leave theirs idle. An attempt
-- records how many of its devices were borrowed when it was admitted
-- (borrowed_devices): those jobs are the first a reclaim preempts.
-- quotas.priority_classes names the classes a tenant's members may choose
-- beside the default one, "normal".
ALTER TABLE quotas
    ADD COLUMN borrow_gpus integer NOT NULL DEFAULT 0 CHECK (borrow_gpus >= 0),
    ADD COLUMN priority_classes text[] NOT NULL DEFAULT '{}';

-- Priority classes, set by platform admins. A job takes its class's value
-- as jobs.priority at submission (the queue's order, 0003's jobs_queue);
-- a class's new value is written to the queued jobs of that class.
CREATE TABLE priority_classes (
    name        text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9-]{0,30}[a-z0-9]$'),
    value       integer NOT NULL CHECK (value BETWEEN -1000 AND 1000),
    description text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO priority_classes (name, value, description)
    VALUES ('normal', 0, 'every tenant''s jobs, unless they choose another class');

ALTER TABLE jobs
    ADD COLUMN priority_class text NOT NULL DEFAULT 'normal'
        REFERENCES priority_classes(name) ON UPDATE CASCADE,
    ADD COLUMN preemptible boolean NOT NULL DEFAULT true;

ALTER TABLE job_attempts
    ADD COLUMN borrowed_devices integer NOT NULL DEFAULT 0 CHECK (borrowed_devices >= 0);

-- A new job state: preempting, a running job asked to checkpoint and stop
-- for another. It holds its devices until its attempt ends.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check CHECK (state IN ('queued', 'dispatching',
    'scheduled', 'running', 'preempting', 'cancelling', 'succeeded', 'failed', 'cancelled'));

CREATE OR REPLACE FUNCTION job_holds_devices(state text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN state IN ('dispatching', 'scheduled', 'running', 'preempting', 'cancelling');
DROP INDEX jobs_active;
CREATE INDEX jobs_active ON jobs (tenant_id)
    WHERE state IN ('dispatching', 'scheduled', 'running', 'preempting', 'cancelling');

-- What a tenant uses, with the borrowed part (lib/job/quota.h).
CREATE OR REPLACE VIEW job_devices_held AS
    SELECT r.id AS job_id, r.tenant_id, r.state, coalesce(a.devices, r.devices) AS devices,
           coalesce(a.borrowed_devices, 0) AS borrowed
    FROM jobs r LEFT JOIN job_attempts a ON a.job_id = r.id AND a.number = r.attempts
    WHERE job_holds_devices(r.state);

DROP FUNCTION tenant_quota_use(uuid);
CREATE FUNCTION tenant_quota_use(tenant uuid, OUT devices bigint, OUT running_jobs bigint,
                                 OUT month_gpu_hours double precision, OUT borrowed bigint)
    LANGUAGE sql STABLE
    AS $$
    SELECT (SELECT coalesce(sum(h.devices), 0) FROM job_devices_held h WHERE h.tenant_id = tenant),
           (SELECT count(*) FROM job_devices_held h WHERE h.tenant_id = tenant),
           (SELECT coalesce(sum(a.devices * extract(epoch FROM coalesce(a.ended_at, now())
                   - greatest(a.started_at, date_trunc('month', now()))) / 3600), 0)
            FROM job_attempts a JOIN jobs j ON j.id = a.job_id
            WHERE j.tenant_id = tenant AND a.started_at IS NOT NULL
            AND (j.spec->'resources'->>'gpus_per_node')::int > 0
            AND coalesce(a.ended_at, now()) > date_trunc('month', now())),
           (SELECT coalesce(sum(h.borrowed), 0) FROM job_devices_held h WHERE h.tenant_id = tenant)
    $$;

-- Every preemption: the victim's attempt, the job it made room for, why,
-- the grace it was given and how it ended. outcome: '' while it runs;
-- checkpointed (the runtime saved and stopped), cancelled (the grace ran
-- out; Slurm ended it), finished (it ended otherwise before either).
CREATE TABLE preemptions (
    id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    job_id                uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt_id            uuid NOT NULL REFERENCES job_attempts(id) ON DELETE CASCADE,
    tenant_id             uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    priority_class        text NOT NULL,
    beneficiary_job_id    uuid REFERENCES jobs(id) ON DELETE SET NULL,
    beneficiary_tenant_id uuid REFERENCES tenants(id) ON DELETE SET NULL,
    reason                text NOT NULL CHECK (reason IN ('reclaim', 'priority')),
    borrowed_devices      integer NOT NULL,
    grace_s               integer NOT NULL CHECK (grace_s >= 0),
    asked_at              timestamptz NOT NULL DEFAULT now(),
    ended_at              timestamptz,
    outcome               text NOT NULL DEFAULT ''
                          CHECK (outcome IN ('', 'checkpointed', 'cancelled', 'finished')),
    steps_done            integer,
    steps_lost            integer
);
CREATE UNIQUE INDEX preemptions_open ON preemptions (attempt_id) WHERE ended_at IS NULL;
CREATE INDEX preemptions_beneficiary ON preemptions (beneficiary_job_id) WHERE ended_at IS NULL;
CREATE INDEX preemptions_job ON preemptions (job_id);

CREATE TRIGGER scheduler_fence BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON priority_classes
    FOR EACH STATEMENT EXECUTE FUNCTION scheduler_fence();
CREATE TRIGGER scheduler_fence BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON preemptions
    FOR EACH STATEMENT EXECUTE FUNCTION scheduler_fence();
