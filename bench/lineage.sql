-- bench/lineage.sql - datasets, jobs and :checkpoints checkpoints for
-- bench/lineage: 100 tenants of 10 datasets with 2 versions each; jobs of
-- 10 checkpoints each, every job pinned to a version of one of its
-- tenant's datasets, one job in ten to a dataset another tenant granted.
-- Dataset ds-0-0 of tenant lt-0 is the popular one: every tenth job of
-- every tenant trains on it, and the next four jobs each start from the
-- newest checkpoint of the one before (training.init_from), chains four
-- deep that derive from ds-0-0 too.
\set ON_ERROR_STOP 1

INSERT INTO tenants (name) SELECT 'lt-' || i FROM generate_series(0, 99) i;
CREATE TEMP TABLE lt AS SELECT id, substr(name, 4)::int AS n FROM tenants WHERE name LIKE 'lt-%';
INSERT INTO datasets (tenant_id, name, classification)
	SELECT lt.id, 'ds-' || lt.n || '-' || k,
	       (ARRAY['public', 'internal', 'confidential', 'restricted'])[1 + k % 4]
	FROM lt, generate_series(0, 9) k;
INSERT INTO dataset_versions (id, dataset_id, version, format, shards, tokens, max_token, bytes,
                              sha256)
	SELECT gen_random_uuid(), d.id, v, 'tokens', 1, 1000000, 255, 2000000,
	       sha256(convert_to(d.id::text || v, 'UTF8'))
	FROM datasets d, generate_series(1, 2) v;
INSERT INTO dataset_grants (dataset_id, tenant_id, expires_at, approved_at)
	SELECT d.id, lt.id, now() + interval '30 days', now()
	FROM datasets d JOIN tenants dt ON dt.id = d.tenant_id AND dt.name = 'lt-0'
	CROSS JOIN lt WHERE d.name = 'ds-0-0' AND lt.n <> 0;

CREATE TEMP TABLE lj AS
	SELECT gen_random_uuid() AS id, i, lt.id AS tenant_id, lt.n AS tn
	FROM generate_series(0, :checkpoints / 10 - 1) i JOIN lt ON lt.n = i % 100;
INSERT INTO jobs (id, tenant_id, name, state, spec, devices)
	SELECT id, tenant_id, 'lj-' || i, 'succeeded',
	       '{"data": {"dataset": "bench"}, "model": {"preset": "tiny"}}', 1
	FROM lj;
INSERT INTO job_datasets (job_id, role, version_id)
	SELECT lj.id, 'train', v.id FROM lj
	JOIN tenants t ON t.name = CASE WHEN lj.i % 10 = 0 THEN 'lt-0' ELSE 'lt-' || lj.tn END
	JOIN datasets d ON d.tenant_id = t.id
	 AND d.name = CASE WHEN lj.i % 10 = 0 THEN 'ds-0-0' ELSE 'ds-' || lj.tn || '-' || (lj.i / 100) % 10 END
	JOIN dataset_versions v ON v.dataset_id = d.id AND v.version = 1 + (lj.i / 1000) % 2;
INSERT INTO checkpoints (job_id, step, world, bytes, shards, classification, parent_step)
	SELECT lj.id, s * 100, 1, 1000000, '[]', 'internal', nullif((s - 1) * 100, 0)
	FROM lj, generate_series(1, 10) s;
INSERT INTO job_init (job_id, checkpoint_id, source_job_id, step, classification)
	SELECT lj.id, c.id, src.id, c.step, 'internal' FROM lj
	JOIN lj src ON src.i = lj.i - 1
	JOIN checkpoints c ON c.job_id = src.id AND c.step = 1000
	WHERE lj.i % 10 BETWEEN 1 AND 4;
ANALYZE;
