-- 0009_tenant_identity.sql - the Unix user each tenant's attempts run as
-- (docs/identity.md). A tenant has at most one; a uid belongs to at most
-- one tenant, for good (tenants are never deleted, and the files a uid
-- owns stay its tenant's). source: 'pool' when the platform gave it from
-- TRAINYARD_TENANT_UID_MIN..MAX, 'admin' when an operator recorded it.
CREATE TABLE tenant_identities (
    tenant_id   uuid PRIMARY KEY REFERENCES tenants(id),
    uid         integer NOT NULL UNIQUE CHECK (uid > 0),
    gid         integer NOT NULL CHECK (gid > 0),
    source      text NOT NULL DEFAULT 'admin' CHECK (source IN ('pool', 'admin')),
    assigned_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The user whose Slurm association the scheduler made in the tenant's
-- account: the tenant's, once it has one.
ALTER TABLE slurm_accounts ADD COLUMN assoc_uid integer;
