-- 0004_slurm_identity.sql - a Slurm job id is no identity. slurmctld hands
-- an id out again after it restarts from a state saved before its newest
-- jobs, and ids wrap at MaxJobId: two attempts may carry the same
-- slurm_job_id. The scheduler tells them apart by the comment each Slurm
-- job carries ("trainyard job=<id> attempt=<n>"), on every read.
ALTER TABLE job_attempts DROP CONSTRAINT job_attempts_slurm_job_id_key;
CREATE INDEX job_attempts_slurm_job ON job_attempts (slurm_job_id) WHERE slurm_job_id IS NOT NULL;
