-- 0026_scheduler_lease.sql - the scheduler's leadership as a lease with a
-- fencing number (scheduler/leader.h).
--
-- One row: who leads (holder, the scheduler's host:pid), its epoch (the
-- fencing number, one more at every take) and until when (deadline, by
-- the database's clock), and the leader's database session (its backend
-- pid and start). The leader renews the deadline every third of the
-- lease; a standby takes the row once the deadline has passed, or at once
-- when the leader's session is gone (it died or was disconnected).
--
-- Fencing: a scheduler's session sets trainyard.scheduler_epoch to the
-- epoch it took. Every table's statement trigger scheduler_fence() then
-- refuses a write from a session whose epoch is not the lease's (SQLSTATE
-- TYF01), so a leader that was stopped or cut off and comes back writes
-- nothing once another has taken over. The trigger holds the lease row
-- FOR SHARE until the writer's transaction ends, so a take waits for
-- writes already under way instead of overtaking them. Sessions that set
-- no epoch (the API, yardctl) pass untouched.
--
-- A table added later gets the trigger in its own migration (the
-- integration test sched_lease.sh checks that every table has it).

CREATE TABLE scheduler_lease (
    id       boolean PRIMARY KEY DEFAULT true CHECK (id),
    holder   text NOT NULL DEFAULT '',
    epoch    bigint NOT NULL DEFAULT 0,
    deadline timestamptz NOT NULL DEFAULT '-infinity',
    taken_at timestamptz,
    backend_pid integer,
    backend_start timestamptz
);
INSERT INTO scheduler_lease DEFAULT VALUES;

CREATE FUNCTION scheduler_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    mine text := current_setting('trainyard.scheduler_epoch', true);
    current bigint;
BEGIN
    IF mine IS NULL OR mine = '' THEN
        RETURN NULL;
    END IF;
    SELECT epoch INTO current FROM scheduler_lease FOR SHARE;
    IF current IS DISTINCT FROM mine::bigint THEN
        RAISE EXCEPTION 'scheduler epoch % is fenced: the lease is at epoch %', mine, current
            USING ERRCODE = 'TYF01';
    END IF;
    RETURN NULL;
END;
$$;

DO $$
DECLARE t text;
BEGIN
    FOR t IN SELECT tablename FROM pg_tables
             WHERE schemaname = current_schema()
               AND tablename NOT IN ('scheduler_lease', 'schema_migrations')
    LOOP
        EXECUTE format('CREATE TRIGGER scheduler_fence BEFORE INSERT OR UPDATE OR DELETE'
                       ' OR TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION scheduler_fence()',
                       t);
    END LOOP;
END;
$$;
