-- 0005_read_cache.sql - tell the API what its read cache must drop
-- (api/readcache.h). Every change a job's answer depends on sends a
-- notification on the channel trainyard_reads when it commits, whoever
-- makes it (the API, the scheduler, psql): a job's change names its
-- tenant, whose jobs' answers go (their queue positions may have moved
-- too); a change of a token's validity, a user, a role binding or a
-- tenant sends '*', and every answer goes. A new job sends nothing: a
-- notifying commit takes a lock every other notifying commit waits for,
-- and submissions must not queue behind one another; the API that made
-- the job drops its tenant's answers itself, and no other answer is
-- older than TRAINYARD_READ_CACHE_MS.

CREATE FUNCTION reads_changed_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('trainyard_reads', OLD.tenant_id::text);
	IF TG_OP = 'UPDATE' AND NEW.tenant_id IS DISTINCT FROM OLD.tenant_id THEN
		PERFORM pg_notify('trainyard_reads', NEW.tenant_id::text);
	END IF;
	RETURN NULL;
END
$$;

CREATE FUNCTION reads_changed_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('trainyard_reads', '*');
	RETURN NULL;
END
$$;

CREATE TRIGGER jobs_reads_update AFTER UPDATE ON jobs
	FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION reads_changed_tenant();
CREATE TRIGGER jobs_reads_delete AFTER DELETE ON jobs
	FOR EACH ROW EXECUTE FUNCTION reads_changed_tenant();
CREATE TRIGGER jobs_reads_truncate AFTER TRUNCATE ON jobs
	FOR EACH STATEMENT EXECUTE FUNCTION reads_changed_all();

-- last_used_at moves once a minute per token and changes no answer
CREATE TRIGGER api_tokens_reads AFTER UPDATE OF hash, user_id, revoked_at, expires_at OR DELETE
	OR TRUNCATE ON api_tokens FOR EACH STATEMENT EXECUTE FUNCTION reads_changed_all();
CREATE TRIGGER users_reads AFTER UPDATE OR DELETE OR TRUNCATE ON users
	FOR EACH STATEMENT EXECUTE FUNCTION reads_changed_all();
CREATE TRIGGER role_bindings_reads AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON role_bindings
	FOR EACH STATEMENT EXECUTE FUNCTION reads_changed_all();
CREATE TRIGGER tenants_reads AFTER UPDATE OR DELETE OR TRUNCATE ON tenants
	FOR EACH STATEMENT EXECUTE FUNCTION reads_changed_all();
