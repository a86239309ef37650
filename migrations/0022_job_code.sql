-- 0022_job_code.sql - the code version a command job runs (docs/own-code.md),
-- pinned at submission: every attempt and retry of the job unpacks the
-- same bytes, and a checkpoint's lineage names the code that wrote it.

CREATE TABLE job_code (
    job_id     uuid PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    version_id uuid NOT NULL REFERENCES code_versions(id)
);
CREATE INDEX job_code_by_version ON job_code (version_id);
