-- 0012_token_parent.sql - a token made with another token (POST
-- /v1/users/{user}/tokens) lives no longer than that token, its parent: it
-- expires no later, and it is revoked with it, as are its own children.
-- The rule holds in the database whoever changes a token: the API's
-- revocation, an operator's UPDATE, an expiry cut short. A token is made
-- valid again by nobody, so a child never comes back with its parent.
--
-- Tokens from before this migration, and the first admin's from `yardctl
-- bootstrap`, have no parent. A parent deleted (its user deleted) takes its
-- children with it.
ALTER TABLE api_tokens ADD COLUMN parent_id uuid REFERENCES api_tokens(id) ON DELETE CASCADE;
CREATE INDEX api_tokens_by_parent ON api_tokens (parent_id) WHERE parent_id IS NOT NULL;

-- A child's expiry is cut to its parent's, and a revoked parent's child is
-- born revoked; a child's expiry set later than its parent's is cut again.
CREATE FUNCTION api_token_within_parent() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    p api_tokens%ROWTYPE;
BEGIN
    SELECT * INTO p FROM api_tokens WHERE id = NEW.parent_id;
    IF FOUND THEN
        NEW.expires_at := least(NEW.expires_at, p.expires_at);
        NEW.revoked_at := coalesce(NEW.revoked_at, p.revoked_at);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER api_tokens_within_parent
    BEFORE INSERT OR UPDATE OF parent_id, expires_at, revoked_at ON api_tokens
    FOR EACH ROW WHEN (NEW.parent_id IS NOT NULL)
    EXECUTE FUNCTION api_token_within_parent();

-- A token revoked or cut short does the same to every descendant, in one
-- statement (the descendants' own firings then find nothing left to do).
CREATE FUNCTION api_token_end_children() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    WITH RECURSIVE d AS (
        SELECT id FROM api_tokens WHERE parent_id = NEW.id
        UNION
        SELECT t.id FROM api_tokens t JOIN d ON t.parent_id = d.id
    )
    UPDATE api_tokens SET expires_at = least(expires_at, NEW.expires_at),
                          revoked_at = coalesce(revoked_at, NEW.revoked_at)
     WHERE id IN (SELECT id FROM d)
       AND (expires_at > NEW.expires_at
            OR (revoked_at IS NULL AND NEW.revoked_at IS NOT NULL));
    RETURN NULL;
END
$$;
CREATE TRIGGER api_tokens_end_children
    AFTER UPDATE OF expires_at, revoked_at ON api_tokens
    FOR EACH ROW
    WHEN (NEW.expires_at < OLD.expires_at
          OR (NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL))
    EXECUTE FUNCTION api_token_end_children();
