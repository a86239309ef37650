-- 0021_code_files.sql - each code bundle version's members (docs/own-code.md),
-- as the bundle check handed them over at the upload: what a version
-- holds can be listed without unsealing it, and a job's command can be
-- checked against it when the job is submitted.

CREATE TABLE code_files (
    version_id uuid NOT NULL REFERENCES code_versions(id) ON DELETE CASCADE,
    path       text NOT NULL CHECK (length(path) BETWEEN 1 AND 1024),
    kind       text NOT NULL CHECK (kind IN ('file', 'dir', 'symlink', 'hardlink')),
    size       bigint NOT NULL DEFAULT 0 CHECK (size >= 0),
    mode       integer NOT NULL CHECK (mode BETWEEN 0 AND 1023),
    -- a link's target
    target     text,
    PRIMARY KEY (version_id, path)
);
