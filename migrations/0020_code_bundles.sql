-- 0020_code_bundles.sql - the code bundle registry (docs/own-code.md): a
-- tenant's named bundles of training code, their immutable versions (one
-- sealed tar archive each in tenant storage, under a data key of the
-- bundle's own), and their place in the tenant's storage.

CREATE TABLE code_bundles (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id      uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name           text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    description    text NOT NULL DEFAULT '' CHECK (length(description) <= 1000),
    classification text NOT NULL
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    created_by     uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (tenant_id, name)
);

-- A version is registered whole, in the transaction that numbers it, once
-- its archive is sealed, in place and checked (lib/code/bundle.h): no row
-- ever describes a partial or refused one.
CREATE TABLE code_versions (
    id            uuid PRIMARY KEY,
    bundle_id     uuid NOT NULL REFERENCES code_bundles(id) ON DELETE CASCADE,
    version       integer NOT NULL CHECK (version > 0),
    files         integer NOT NULL CHECK (files >= 0),
    dirs          integer NOT NULL CHECK (dirs >= 0),
    symlinks      integer NOT NULL CHECK (symlinks >= 0),
    hardlinks     integer NOT NULL CHECK (hardlinks >= 0),
    -- the files' bytes unpacked, the archive's as uploaded, and sealed on disk
    bytes         bigint NOT NULL CHECK (bytes >= 0),
    archive_bytes bigint NOT NULL CHECK (archive_bytes > 0),
    sealed_bytes  bigint NOT NULL CHECK (sealed_bytes > 0),
    -- SHA-256 of the archive's bytes as uploaded
    sha256        bytea NOT NULL CHECK (length(sha256) = 32),
    created_by    uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (bundle_id, version)
);

-- A bundle's data key, a ring of generations like a dataset's
-- (0007, 0016): rotation re-wraps it, shredding destroys it.
CREATE TABLE code_keys (
    bundle_id   uuid NOT NULL REFERENCES code_bundles(id) ON DELETE CASCADE,
    tenant_id   uuid NOT NULL,
    key_version integer NOT NULL,
    wrapped     bytea NOT NULL,
    generation  integer NOT NULL DEFAULT 1 CHECK (generation BETWEEN 1 AND 1024),
    epoch       integer NOT NULL DEFAULT 1 CHECK (epoch > 0),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (bundle_id, generation),
    FOREIGN KEY (tenant_id, key_version) REFERENCES tenant_keys (tenant_id, version)
        ON DELETE CASCADE
);

-- The storage a tenant uses (0014) counts its code versions too.
DROP FUNCTION tenant_storage_bytes(uuid);
DROP FUNCTION tenant_storage(uuid);

CREATE FUNCTION tenant_storage(tenant uuid)
    RETURNS TABLE (checkpoints bigint, datasets bigint, logs bigint, code bigint)
    LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT (SELECT coalesce(sum(c.bytes), 0)::bigint FROM checkpoints c
              JOIN jobs j ON j.id = c.job_id WHERE j.tenant_id = tenant),
           (SELECT coalesce(sum(v.sealed_bytes), 0)::bigint FROM dataset_versions v
              JOIN datasets d ON d.id = v.dataset_id WHERE d.tenant_id = tenant),
           (SELECT coalesce(sum(a.log_bytes), 0)::bigint FROM job_attempts a
              JOIN jobs j ON j.id = a.job_id WHERE j.tenant_id = tenant),
           (SELECT coalesce(sum(v.sealed_bytes), 0)::bigint FROM code_versions v
              JOIN code_bundles b ON b.id = v.bundle_id WHERE b.tenant_id = tenant);
END;

CREATE FUNCTION tenant_storage_bytes(tenant uuid) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (SELECT s.checkpoints + s.datasets + s.logs + s.code FROM tenant_storage(tenant) s);
