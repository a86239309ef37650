-- 0007_datasets.sql - the dataset registry (docs/datasets.md): a tenant's
-- named datasets, their immutable versions (sealed token shards in tenant
-- storage, under a data key of the dataset's own), and the versions each
-- job was pinned to at submission.

CREATE TABLE datasets (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id      uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name           text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    description    text NOT NULL DEFAULT '' CHECK (length(description) <= 1000),
    classification text NOT NULL
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    -- the patterns masked in raw text besides the built-in ones (lib/data/mask.h)
    mask_patterns  jsonb NOT NULL DEFAULT '[]',
    created_by     uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- a platform admin's leave to store a restricted dataset unmasked
    exempt_reason  text CHECK (length(exempt_reason) BETWEEN 1 AND 1000),
    exempt_by      uuid REFERENCES users(id) ON DELETE SET NULL,
    exempt_at      timestamptz,
    UNIQUE (tenant_id, name)
);

-- A version is registered whole, in the transaction that numbers it, once
-- its shards are sealed and in place: no row ever describes a partial one.
CREATE TABLE dataset_versions (
    id          uuid PRIMARY KEY,
    dataset_id  uuid NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    version     integer NOT NULL CHECK (version > 0),
    format      text NOT NULL CHECK (format IN ('tokens', 'text')),
    shards      integer NOT NULL CHECK (shards > 0),
    tokens      bigint NOT NULL CHECK (tokens > 0),
    -- the largest token id: a job's model must cover it
    max_token   integer NOT NULL CHECK (max_token BETWEEN 0 AND 65535),
    bytes       bigint NOT NULL CHECK (bytes >= 0),
    sha256      bytea NOT NULL CHECK (length(sha256) = 32),
    -- text only: the policy applied and the replacements per pattern
    masking     jsonb,
    unmasked    boolean NOT NULL DEFAULT false,
    created_by  uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (dataset_id, version)
);

-- One data key per dataset, wrapped by a version of its tenant's key like
-- a job's: rotation re-wraps it, shredding destroys it.
CREATE TABLE dataset_keys (
    dataset_id  uuid PRIMARY KEY REFERENCES datasets(id) ON DELETE CASCADE,
    tenant_id   uuid NOT NULL,
    key_version integer NOT NULL,
    wrapped     bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    FOREIGN KEY (tenant_id, key_version) REFERENCES tenant_keys (tenant_id, version)
        ON DELETE CASCADE
);

-- The versions a job trains and validates on, fixed when it is submitted.
CREATE TABLE job_datasets (
    job_id     uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('train', 'val')),
    version_id uuid NOT NULL REFERENCES dataset_versions(id),
    PRIMARY KEY (job_id, role)
);
CREATE INDEX job_datasets_by_version ON job_datasets (version_id);

-- Another tenant's leave to read a dataset, until it expires or is
-- revoked. A grant of a confidential or restricted dataset is in force
-- only once a platform admin approved it (approved_at); any other is
-- approved when it is made. Rows are never deleted: the history stays.
CREATE TABLE dataset_grants (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    dataset_id  uuid NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    tenant_id   uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    granted_by  uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at  timestamptz NOT NULL,
    approved_by uuid REFERENCES users(id) ON DELETE SET NULL,
    approved_at timestamptz,
    revoked_by  uuid REFERENCES users(id) ON DELETE SET NULL,
    revoked_at  timestamptz,
    CHECK (expires_at > created_at)
);
CREATE INDEX dataset_grants_by_grantee ON dataset_grants (tenant_id, dataset_id);

-- A checkpoint is classified as the most sensitive data it was trained on:
-- its job's datasets ('internal' for a job on data paths), fixed when it
-- is registered. Downloads obey it.
-- parent_step: the job's newest checkpoint when this one was registered,
-- the state its attempt resumed from or trained on from (NULL: the first).
ALTER TABLE checkpoints
    ADD COLUMN classification text NOT NULL DEFAULT 'internal'
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    ADD COLUMN parent_step integer;
