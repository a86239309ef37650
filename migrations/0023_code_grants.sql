-- 0023_code_grants.sql - another tenant's leave to run a code bundle
-- (docs/own-code.md), as dataset_grants (0007) are for datasets: until it
-- expires or is revoked, in force once approved (a confidential or
-- restricted bundle's by a platform admin, any other when it is made).
-- Rows are never deleted: the history stays.

CREATE TABLE code_grants (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    bundle_id   uuid NOT NULL REFERENCES code_bundles(id) ON DELETE CASCADE,
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
CREATE INDEX code_grants_by_grantee ON code_grants (tenant_id, bundle_id);
