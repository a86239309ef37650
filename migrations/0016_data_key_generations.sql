-- 0016_data_key_generations.sql - data keys that rotate for new objects
-- (docs/storage.md, "Rotating data keys").
--
-- A job's or a dataset's data key now has generations 1, 2, ...: every
-- object and log segment names in its header the generation that sealed
-- it, so old objects stay readable while new ones are sealed under the
-- newest. tenants.data_key_epoch counts the tenant's data-key rotations; a
-- job or dataset whose newest generation was made in an earlier epoch gets
-- a new generation the next time a key is taken to write with (an
-- attempt's start, a dataset upload). The rows from before hold
-- generation 1 of epoch 1.

ALTER TABLE tenants
    ADD COLUMN data_key_epoch integer NOT NULL DEFAULT 1 CHECK (data_key_epoch > 0);

ALTER TABLE job_keys
    ADD COLUMN generation integer NOT NULL DEFAULT 1 CHECK (generation BETWEEN 1 AND 1024),
    ADD COLUMN epoch integer NOT NULL DEFAULT 1 CHECK (epoch > 0),
    DROP CONSTRAINT job_keys_pkey,
    ADD PRIMARY KEY (job_id, generation);

ALTER TABLE dataset_keys
    ADD COLUMN generation integer NOT NULL DEFAULT 1 CHECK (generation BETWEEN 1 AND 1024),
    ADD COLUMN epoch integer NOT NULL DEFAULT 1 CHECK (epoch > 0),
    DROP CONSTRAINT dataset_keys_pkey,
    ADD PRIMARY KEY (dataset_id, generation);
