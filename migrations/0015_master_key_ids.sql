-- 0015_master_key_ids.sql - which master key wrapped each stored key, so
-- that the master key can be rotated online (docs/storage.md, "Rotating
-- the master key").
--
-- A master key is named by its id: the first 8 bytes of
-- SHA-256("trainyard key id v1" | key) in hex (crypt_key_id()), which says
-- nothing of the key. tenant_keys.master_key_id and
-- webhooks.secret_master_key_id record the master key each row is wrapped
-- by; NULL marks a row wrapped before ids were kept, by whichever master
-- key the server held then. master_keys lists the master keys a rotation
-- has met: the one it wrapped into, and the one it emptied, retired once no
-- row names it any more.

CREATE TABLE master_keys (
    id         text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    retired_at timestamptz
);

ALTER TABLE tenant_keys
    ADD COLUMN master_key_id text CHECK (master_key_id ~ '^[0-9a-f]{16}$');
CREATE INDEX tenant_keys_by_master ON tenant_keys (master_key_id);

ALTER TABLE webhooks
    ADD COLUMN secret_master_key_id text CHECK (secret_master_key_id ~ '^[0-9a-f]{16}$');
