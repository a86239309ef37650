-- 0008_checkpoint_sharing.sql - starting a job from a checkpoint, of its own
-- tenant or of another that granted it (docs/datasets.md, "Sharing
-- checkpoints").

-- Another tenant's leave to start jobs from a checkpoint and, when download
-- is set, to download it, until it expires or is revoked. As with
-- dataset grants, a grant of a confidential or restricted checkpoint is in
-- force only once a platform admin approved it, and rows are never
-- deleted while the checkpoint is kept. Only checkpoints of ended jobs are
-- granted: a running job's checkpoints may still be replaced or pruned.
CREATE TABLE checkpoint_grants (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    checkpoint_id uuid NOT NULL REFERENCES checkpoints(id) ON DELETE CASCADE,
    tenant_id     uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    download      boolean NOT NULL DEFAULT false,
    granted_by    uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at    timestamptz NOT NULL,
    approved_by   uuid REFERENCES users(id) ON DELETE SET NULL,
    approved_at   timestamptz,
    revoked_by    uuid REFERENCES users(id) ON DELETE SET NULL,
    revoked_at    timestamptz,
    CHECK (expires_at > created_at)
);
CREATE INDEX checkpoint_grants_by_grantee ON checkpoint_grants (tenant_id, checkpoint_id);
CREATE INDEX checkpoint_grants_by_checkpoint ON checkpoint_grants (checkpoint_id);

-- The checkpoint a job takes its initial weights from (training.init_from),
-- fixed at submission: the source job and step stay for lineage after the
-- checkpoint's row is gone; grant_id is the grant it was taken through
-- (NULL: the job's own tenant); each attempt that starts needs a grant in
-- force again. classification is the checkpoint's, which the job's
-- checkpoints inherit.
CREATE TABLE job_init (
    job_id         uuid PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    checkpoint_id  uuid REFERENCES checkpoints(id) ON DELETE SET NULL,
    source_job_id  uuid REFERENCES jobs(id) ON DELETE SET NULL,
    step           integer NOT NULL CHECK (step > 0),
    grant_id       uuid REFERENCES checkpoint_grants(id) ON DELETE SET NULL,
    classification text NOT NULL
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted'))
);
CREATE INDEX job_init_by_source ON job_init (source_job_id);
