-- 0002_worker.sql - what the worker runtime needs: attempts and their
-- credentials, the envelope keys of tenants and jobs, per-step metrics and
-- registered checkpoints.

-- One run of a job inside one allocation. The worker runtime authenticates
-- with the attempt's credential (only its SHA-256 is kept), which is valid
-- for this attempt alone and only while it is live (not ended, not expired).
CREATE TABLE job_attempts (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    job_id       uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    number       integer NOT NULL CHECK (number > 0),
    credential   bytea NOT NULL UNIQUE CHECK (length(credential) = 32),
    state        text NOT NULL DEFAULT 'starting'
        CHECK (state IN ('starting', 'running', 'ended')),
    outcome      text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at   timestamptz NOT NULL,
    heartbeat_at timestamptz,
    ended_at     timestamptz,
    UNIQUE (job_id, number)
);

-- A tenant's key-encryption keys, wrapped by the master key. The newest
-- version that is not retired wraps new data keys; rotation adds a version
-- and re-wraps the data keys. Deleting a tenant's rows (crypto-shredding)
-- leaves its data unreadable.
CREATE TABLE tenant_keys (
    tenant_id  uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    version    integer NOT NULL CHECK (version > 0),
    wrapped    bytea NOT NULL,
    wraps      bigint NOT NULL DEFAULT 0 CHECK (wraps >= 0),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    retired_at timestamptz,
    PRIMARY KEY (tenant_id, version)
);

-- Tenants whose keys were destroyed: they get no keys again.
CREATE TABLE tenant_key_shreds (
    tenant_id uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    at        timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One data key per job, wrapped by a version of its tenant's key.
CREATE TABLE job_keys (
    job_id      uuid PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    tenant_id   uuid NOT NULL,
    key_version integer NOT NULL,
    wrapped     bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    FOREIGN KEY (tenant_id, key_version) REFERENCES tenant_keys (tenant_id, version)
        ON DELETE CASCADE
);

-- The trainer's step lines, as the runtime reports them (batched).
CREATE TABLE job_metrics (
    job_id     uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt_id uuid NOT NULL REFERENCES job_attempts(id) ON DELETE CASCADE,
    step       integer NOT NULL CHECK (step > 0),
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    data       jsonb NOT NULL,
    PRIMARY KEY (job_id, attempt_id, step)
);

-- A checkpoint whose manifest is complete, registered by the runtime.
CREATE TABLE checkpoints (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    job_id     uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt_id uuid REFERENCES job_attempts(id) ON DELETE SET NULL,
    step       integer NOT NULL CHECK (step > 0),
    world      integer NOT NULL CHECK (world > 0),
    bytes      bigint NOT NULL CHECK (bytes >= 0),
    shards     jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (job_id, step)
);
