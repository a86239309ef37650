-- 0001_init.sql - tenants, users, tokens, roles, quotas, jobs, events,
-- idempotency keys and the audit log.
--
-- Applied by lib/db/migrate.c inside one transaction under an advisory lock.
-- Job states here must match enum job_state in lib/job/jobstate.h
-- (tests/integration checks the CHECK constraint against the C table).

CREATE TABLE tenants (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL UNIQUE CHECK (name ~ '^[a-z][a-z0-9-]{0,61}[a-z0-9]$'),
    display_name text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE quotas (
    tenant_id           uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    max_gpus            integer NOT NULL CHECK (max_gpus >= 0),
    max_running_jobs    integer NOT NULL CHECK (max_running_jobs >= 0),
    gpu_hours_per_month bigint  NOT NULL CHECK (gpu_hours_per_month >= 0),
    max_storage_bytes   bigint  NOT NULL CHECK (max_storage_bytes >= 0),
    weight              double precision NOT NULL CHECK (weight > 0),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL UNIQUE CHECK (name ~ '^[a-z][a-z0-9-]{0,61}[a-z0-9]$'),
    email        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- One row per (user, scope). tenant_id NULL means a platform role.
CREATE TABLE role_bindings (
    user_id    uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    tenant_id  uuid REFERENCES tenants(id) ON DELETE CASCADE,
    role       text NOT NULL,
    granted_by uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((tenant_id IS NULL AND role IN ('admin', 'auditor'))
        OR (tenant_id IS NOT NULL AND role IN ('owner', 'editor', 'viewer', 'auditor')))
);
CREATE UNIQUE INDEX role_bindings_tenant ON role_bindings (user_id, tenant_id) WHERE tenant_id IS NOT NULL;
CREATE UNIQUE INDEX role_bindings_platform ON role_bindings (user_id) WHERE tenant_id IS NULL;
CREATE INDEX role_bindings_by_tenant ON role_bindings (tenant_id);

-- Only the SHA-256 of a token is stored; the secret is shown once.
CREATE TABLE api_tokens (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         text NOT NULL DEFAULT '',
    hash         bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    last_used_at timestamptz
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id);

CREATE TABLE jobs (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id    uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    submitter_id uuid REFERENCES users(id) ON DELETE SET NULL,
    name         text NOT NULL,
    state        text NOT NULL DEFAULT 'queued'
        CONSTRAINT jobs_state_check CHECK (state IN ('queued', 'dispatching', 'scheduled', 'running',
            'cancelling', 'succeeded', 'failed', 'cancelled')),
    state_reason text NOT NULL DEFAULT '',
    priority     integer NOT NULL DEFAULT 0,
    spec         jsonb NOT NULL,
    devices      integer NOT NULL CHECK (devices > 0),
    attempts     integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz
);
CREATE INDEX jobs_by_tenant ON jobs (tenant_id, created_at DESC, id DESC);
CREATE INDEX jobs_by_state ON jobs (state) WHERE state NOT IN ('succeeded', 'failed', 'cancelled');

-- Every state change of a job, written by jobstate_transition() in lib/job/jobstate.c.
CREATE TABLE job_events (
    id         bigserial PRIMARY KEY,
    job_id     uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    from_state text,
    to_state   text NOT NULL,
    reason     text NOT NULL DEFAULT '',
    actor_id   uuid REFERENCES users(id) ON DELETE SET NULL,
    detail     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX job_events_by_job ON job_events (job_id, id);

-- A retried submission with the same key and body returns the first job.
CREATE TABLE idempotency_keys (
    user_id    uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    tenant_id  uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    key        text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    body_hash  bytea NOT NULL,
    job_id     uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, tenant_id, key)
);

-- Append-only record of every mutation and every denial. prev_hash/hash
-- leave room for a tamper-evident hash chain over (id order).
CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_id    uuid,
    actor_name  text NOT NULL DEFAULT '',
    tenant_id   uuid,
    action      text NOT NULL,
    resource    text NOT NULL DEFAULT '',
    outcome     text NOT NULL CHECK (outcome IN ('success', 'denied', 'failure')),
    status      integer NOT NULL,
    request_id  text NOT NULL DEFAULT '',
    client_addr text NOT NULL DEFAULT '',
    detail      jsonb NOT NULL DEFAULT '{}',
    prev_hash   bytea,
    hash        bytea
);
CREATE INDEX audit_log_by_tenant ON audit_log (tenant_id, id);
