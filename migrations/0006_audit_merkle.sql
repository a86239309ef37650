-- 0006_audit_merkle.sql - the audit log becomes a verifiable log: a Merkle
-- tree in the manner of RFC 6962 over every record, with signed tree heads
-- (docs/audit.md).
--
-- A change still writes its record into audit_log in its own transaction;
-- a trigger queues the record in audit_pending, in the same transaction.
-- The sequencer (lib/audit/auditlog.c, run by the API) then gives queued records
-- gap-free sequence numbers in one order, one batch per transaction under
-- an advisory lock: each becomes a leaf (audit_leaves: its canonical
-- encoding and leaf hash), and each subtree it completes a node
-- (audit_nodes). Tree heads, signed with Ed25519, go to audit_heads.
-- Nothing of the log is ever updated or deleted: triggers refuse it.

-- the hash chain 0001 left room for is replaced by the tree
ALTER TABLE audit_log DROP COLUMN prev_hash, DROP COLUMN hash;
-- the platform role the actor acted with: admin, auditor or '' (the admin-actions report)
ALTER TABLE audit_log ADD COLUMN actor_role text NOT NULL DEFAULT ''
    CHECK (actor_role IN ('', 'admin', 'auditor'));
CREATE INDEX audit_log_by_at ON audit_log (at);
CREATE INDEX audit_log_by_action ON audit_log (action, at);

CREATE TABLE audit_pending (
    id bigint PRIMARY KEY
);

CREATE TABLE audit_leaves (
    seq   bigint PRIMARY KEY CHECK (seq >= 0),
    id    bigint NOT NULL UNIQUE REFERENCES audit_log (id),
    entry text NOT NULL,
    hash  bytea NOT NULL CHECK (length(hash) = 32)
);

CREATE TABLE audit_nodes (
    level smallint NOT NULL CHECK (level BETWEEN 1 AND 63),
    idx   bigint NOT NULL CHECK (idx >= 0),
    hash  bytea NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (level, idx)
);

CREATE TABLE audit_heads (
    size      bigint PRIMARY KEY CHECK (size >= 0),
    root      bytea NOT NULL CHECK (length(root) = 32),
    signed_at timestamptz NOT NULL,
    signature bytea NOT NULL CHECK (length(signature) = 64),
    key_id    text NOT NULL
);

CREATE FUNCTION audit_queue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO audit_pending (id) VALUES (NEW.id);
	RETURN NULL;
END
$$;
CREATE TRIGGER audit_log_queue AFTER INSERT ON audit_log
	FOR EACH ROW EXECUTE FUNCTION audit_queue();

CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the audit log is append-only: % on % refused', TG_OP, TG_TABLE_NAME
		USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
	FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
	FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_leaves_append_only BEFORE UPDATE OR DELETE ON audit_leaves
	FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_leaves_no_truncate BEFORE TRUNCATE ON audit_leaves
	FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_nodes_append_only BEFORE UPDATE OR DELETE ON audit_nodes
	FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_nodes_no_truncate BEFORE TRUNCATE ON audit_nodes
	FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_heads_append_only BEFORE UPDATE OR DELETE ON audit_heads
	FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_heads_no_truncate BEFORE TRUNCATE ON audit_heads
	FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();

-- the records written before: queued in id order, the log's first leaves
INSERT INTO audit_pending (id) SELECT id FROM audit_log ORDER BY id;
