-- 0024_deployment_keys.sql - the keys a deployment's database belongs with
-- (api/keys_record.h): the ids (crypt_key_id, auditsign_key_id: 16 hex
-- digits, which say nothing of the keys) of the master key and of the
-- audit signing key the first API process started with. Every later API
-- process must hold the same ones, or refuses to start; a master-key
-- rotation moves the master's row to the new key.

CREATE TABLE deployment_keys (
    role        text PRIMARY KEY CHECK (role IN ('master', 'audit')),
    key_id      text NOT NULL CHECK (key_id ~ '^[0-9a-f]{16}$'),
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
