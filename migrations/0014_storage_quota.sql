-- 0014_storage_quota.sql - the one definition of the storage a tenant
-- uses, against its quota's max_storage_bytes: the sealed bytes of what is
-- on disk in its tree, as the platform knows them.
--   checkpoints  the shard bytes of its jobs' registered checkpoints (a
--                checkpoint the trainer pruned loses its row, and so stops
--                counting);
--   datasets     the sealed size of its dataset versions, shards as
--                written (sealed_bytes, new here);
--   logs         the sealed logs of its jobs' attempts, as each worker
--                last reported its size (log_bytes, new here).
-- A dataset upload (api/h_dataset_upload.c), a checkpoint's registration
-- and every report of an attempt (api/h_attempts.c), the usage readout
-- (api/h_goodput.c) and the metrics (api/telemetry.c) all ask
-- tenant_storage_bytes(tenant).

ALTER TABLE dataset_versions ADD COLUMN sealed_bytes bigint CHECK (sealed_bytes >= 0);

-- Versions stored before this migration: each shard's sealed size is its
-- tokens (2 bytes each) plus a 42-byte header and a 16-byte tag per
-- 64 KiB chunk begun; summed over the version, off by at most 16 bytes a
-- shard.
UPDATE dataset_versions
   SET sealed_bytes = 2 * tokens + 58 * shards + 16 * ((2 * tokens) / 65536);

ALTER TABLE dataset_versions ALTER COLUMN sealed_bytes SET NOT NULL;

ALTER TABLE job_attempts ADD COLUMN log_bytes bigint NOT NULL DEFAULT 0
    CHECK (log_bytes >= 0);

CREATE FUNCTION tenant_storage(tenant uuid)
    RETURNS TABLE (checkpoints bigint, datasets bigint, logs bigint)
    LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT (SELECT coalesce(sum(c.bytes), 0)::bigint FROM checkpoints c
              JOIN jobs j ON j.id = c.job_id WHERE j.tenant_id = tenant),
           (SELECT coalesce(sum(v.sealed_bytes), 0)::bigint FROM dataset_versions v
              JOIN datasets d ON d.id = v.dataset_id WHERE d.tenant_id = tenant),
           (SELECT coalesce(sum(a.log_bytes), 0)::bigint FROM job_attempts a
              JOIN jobs j ON j.id = a.job_id WHERE j.tenant_id = tenant);
END;

CREATE FUNCTION tenant_storage_bytes(tenant uuid) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (SELECT s.checkpoints + s.datasets + s.logs FROM tenant_storage(tenant) s);
