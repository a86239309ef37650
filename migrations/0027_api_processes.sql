-- 0027_api_processes.sql - the API processes serving the platform, so that
-- each holds its share of the platform's limits (api/peers.h).
--
-- Every process keeps its row here, seen_at renewed every two seconds by
-- a thread of its own; the processes seen in the last six are live, and
-- with N live each allows 1/N of every rate limit and stream cap. A
-- process deletes its row when it stops; rows of processes that died are
-- deleted an hour after they were last seen.

CREATE TABLE api_processes (
    id         uuid PRIMARY KEY,
    host       text NOT NULL,
    pid        integer NOT NULL,
    listen     text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    seen_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX api_processes_seen ON api_processes (seen_at);

-- a scheduler writes none of it; fenced as every table is (0026)
CREATE TRIGGER scheduler_fence BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_processes
    FOR EACH STATEMENT EXECUTE FUNCTION scheduler_fence();
