-- 0018_quota_use.sql - the one definition of what a tenant uses of its
-- quota (lib/job/quota.h), and the shape of the cluster the scheduler last saw.
--
-- job_devices_held: every job in a state that holds devices
-- (job_holds_devices, 0011) with the devices it holds: those of its current
-- attempt (a retry on fewer nodes holds fewer), or the job's own before its
-- first attempt exists. tenant_quota_use(tenant): the devices its jobs hold,
-- how many jobs hold them, and the GPU-hours its GPU jobs' attempts ran
-- this calendar month (UTC; CPU jobs are never charged GPU-hours).
-- Submission, admission, the queue ETA, the usage route and both metrics
-- read these and nothing else.
CREATE VIEW job_devices_held AS
    SELECT r.id AS job_id, r.tenant_id, r.state, coalesce(a.devices, r.devices) AS devices
    FROM jobs r LEFT JOIN job_attempts a ON a.job_id = r.id AND a.number = r.attempts
    WHERE job_holds_devices(r.state);

CREATE FUNCTION tenant_quota_use(tenant uuid, OUT devices bigint, OUT running_jobs bigint,
                                 OUT month_gpu_hours double precision)
    LANGUAGE sql STABLE
    AS $$
    SELECT (SELECT coalesce(sum(h.devices), 0) FROM job_devices_held h WHERE h.tenant_id = tenant),
           (SELECT count(*) FROM job_devices_held h WHERE h.tenant_id = tenant),
           (SELECT coalesce(sum(a.devices * extract(epoch FROM coalesce(a.ended_at, now())
                   - greatest(a.started_at, date_trunc('month', now()))) / 3600), 0)
            FROM job_attempts a JOIN jobs j ON j.id = a.job_id
            WHERE j.tenant_id = tenant AND a.started_at IS NOT NULL
            AND (j.spec->'resources'->>'gpus_per_node')::int > 0
            AND coalesce(a.ended_at, now()) > date_trunc('month', now()))
    $$;

-- The cluster's nodes at the scheduler's last cycle (all Slurm knows but
-- those planned for later), with what each holds in all, not what is free,
-- and whether it is up. A job that needs more than all of them can never
-- start, and is refused at submission (cluster_never_fits). Empty until a
-- scheduler has run a cycle: nothing is refused then.
CREATE TABLE scheduler_cluster (
    node    text PRIMARY KEY,
    cpus    integer NOT NULL CHECK (cpus >= 0),
    gpus    integer NOT NULL CHECK (gpus >= 0),
    up      boolean NOT NULL,
    seen_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
