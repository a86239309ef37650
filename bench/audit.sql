-- bench/audit.sql - an audit log of :records records over :tenants tenants
-- and :users users, for bench/audit. Each user holds a role in one tenant
-- and a token; the records spread over the last 29 days in id order, each
-- by one user in their tenant: submissions mostly, and every kind the
-- reports read (grants, quota changes, log reads, checkpoint downloads,
-- data keys released, denials, failed authentications, key rotations),
-- one in twenty with platform-admin rights. The log's trigger queues
-- every record for the API's sequencer, as a request's would be.
\set ON_ERROR_STOP 1

INSERT INTO tenants (name) SELECT 'bt-' || i FROM generate_series(0, :tenants - 1) i;
INSERT INTO users (name) SELECT 'bu-' || i FROM generate_series(0, :users - 1) i;
CREATE TEMP TABLE bt AS SELECT id, name, substr(name, 4)::int AS n FROM tenants WHERE name LIKE 'bt-%';
CREATE TEMP TABLE bu AS SELECT id, name, substr(name, 4)::int AS n FROM users WHERE name LIKE 'bu-%';
CREATE INDEX ON bt (n);
CREATE INDEX ON bu (n);
INSERT INTO role_bindings (user_id, tenant_id, role)
	SELECT bu.id, bt.id, (ARRAY['owner', 'editor', 'viewer', 'auditor'])[1 + bu.n % 4]
	FROM bu JOIN bt ON bt.n = bu.n % :tenants;
INSERT INTO api_tokens (user_id, name, hash, expires_at, last_used_at)
	SELECT id, 'bench', sha256(convert_to(id::text, 'UTF8')), now() + interval '60 days',
	       now() - (n % 200) * interval '1 day'
	FROM bu;

INSERT INTO audit_log (at, actor_id, actor_name, actor_role, tenant_id, action, resource,
                       outcome, status, request_id, client_addr, detail)
SELECT now() - interval '29 days' + g.i * (interval '27 days' / :records),
       CASE WHEN g.i % 20 = 6 THEN NULL ELSE u.id END,
       CASE WHEN g.i % 20 = 6 THEN '' ELSE u.name END,
       CASE WHEN g.i % 20 = 0 THEN 'admin' ELSE '' END,
       CASE WHEN g.i % 20 = 6 THEN NULL ELSE t.id END,
       k.action, k.resource, k.outcome, k.status, 'bench-' || g.i, '127.0.0.1', k.detail
FROM generate_series(1, :records) g(i)
JOIN bu u ON u.n = g.i % :users
JOIN bt t ON t.n = u.n % :tenants
CROSS JOIN LATERAL (SELECT md5(g.i::text)::uuid AS job) j
CROSS JOIN LATERAL (SELECT * FROM (VALUES
	(0, 'quota.update', 'tenant/' || t.name || '/quota', 'success', 200,
	 jsonb_build_object('max_gpus', g.i % 64, 'weight', 1)),
	(1, 'member.grant', 'tenant/' || t.name || '/member/' || u.id, 'success', 200,
	 jsonb_build_object('user_id', u.id, 'from', 'viewer', 'to', 'editor')),
	(2, 'log.read', 'job/' || j.job || '/logs', 'success', 200,
	 jsonb_build_object('job_id', j.job, 'follow', false, 'tenant_key_version', 1)),
	(3, 'checkpoint.download', 'checkpoint/' || j.job, 'success', 200,
	 jsonb_build_object('job_id', j.job, 'file', 'shard_00000_of_00001.bin', 'step', g.i % 1000,
	                    'tenant_key_version', 1)),
	(4, 'key.release', 'job/' || j.job || '/key', 'success', 200,
	 jsonb_build_object('attempt_id', j.job, 'tenant_key_version', 1)),
	(5, 'authz.deny', '/v1/tenants/' || t.name || '/quota', 'denied', 403,
	 jsonb_build_object('route', '/v1/tenants/{tenant}/quota', 'method', 'PUT',
	                    'permission', 'quota.write', 'reason', 'missing permission')),
	(6, 'authz.deny', '/v1/tenants', 'denied', 401,
	 jsonb_build_object('route', '/v1/tenants', 'method', 'GET', 'permission',
	                    'authenticated', 'reason', 'unauthenticated')),
	(7, 'key.rotate', 'tenant/' || t.name || '/keys', 'success', 200,
	 jsonb_build_object('version', 1 + g.i / 1000, 'rewrapped', g.i % 50)),
	(8, 'job.submit', 'job/' || j.job, 'success', 201, '{}'::jsonb)
	) v(kind, action, resource, outcome, status, detail)
	WHERE v.kind = CASE WHEN g.i % 1000 = 7 THEN 7 WHEN g.i % 20 < 7 THEN g.i % 20 ELSE 8 END
) k;

ANALYZE;
