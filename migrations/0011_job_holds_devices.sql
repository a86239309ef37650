-- 0011_job_holds_devices.sql - the one definition of the job states that
-- hold devices: a job dispatching, scheduled, running or cancelling counts
-- against its tenant's quota; queued and final jobs do not. Admission
-- (scheduler/cycle.c), the follower (scheduler/reconcile.c), the quota and
-- ETA readouts (api/h_goodput.c, api/h_eta.c) and the metrics
-- (api/telemetry.c) all ask job_holds_devices(state).
--
-- The function is inlined where it is called, so a query that asks it of
-- a tenant's jobs still uses the partial index jobs_active (0003), whose
-- predicate names the same four states. A migration that changes this
-- list must recreate that index with it.
CREATE FUNCTION job_holds_devices(state text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN state IN ('dispatching', 'scheduled', 'running', 'cancelling');
