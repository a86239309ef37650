-- 0010_alerts.sql - alerts on jobs and tenants, and the tenants' webhooks
-- that deliver them (README, "Alerts and webhooks").
--
-- alerts: one row per alert raised; job_id NULL for a tenant's own
-- (quota_nearly_spent). webhooks: a tenant's endpoints, each with its
-- signing secret sealed by the master key (shown once, at creation), the
-- kinds it takes (NULL: all) and whether a platform admin allowed it a
-- private address. webhook_deliveries: one row per alert and webhook, its
-- attempts and their outcome, kept.
CREATE TABLE alerts (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id  uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    job_id     uuid REFERENCES jobs(id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('loss_spike', 'non_finite', 'stalled', 'slow_steps',
                                             'restarts', 'quota_nearly_spent')),
    detail     jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX alerts_by_tenant ON alerts (tenant_id, created_at DESC);
CREATE INDEX alerts_by_job ON alerts (job_id, kind, created_at DESC) WHERE job_id IS NOT NULL;

CREATE TABLE webhooks (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id     uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    url           text NOT NULL,
    secret_sealed bytea NOT NULL,
    kinds         text[],
    allow_private boolean NOT NULL DEFAULT false,
    created_by    uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    deleted_at    timestamptz
);
CREATE INDEX webhooks_by_tenant ON webhooks (tenant_id) WHERE deleted_at IS NULL;

CREATE TABLE webhook_deliveries (
    id           bigserial PRIMARY KEY,
    webhook_id   uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    alert_id     uuid NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
    state        text NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_status  integer,
    last_error   text NOT NULL DEFAULT '',
    delivered_at timestamptz,
    UNIQUE (webhook_id, alert_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'pending';

-- Raise an alert of kind for a tenant (and a job), unless one of the same
-- kind was raised for the same job (or, without a job, the same tenant)
-- within quiet: a job event records it, and every webhook of the tenant
-- that takes the kind gets a delivery. RET the alert's id, or NULL when
-- it was quieted. The one place alerts are raised, by the API and the
-- scheduler alike.
CREATE FUNCTION raise_alert(p_tenant uuid, p_job uuid, p_kind text, p_detail jsonb,
                            p_quiet interval) RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
    a uuid;
BEGIN
    IF EXISTS (SELECT 1 FROM alerts
               WHERE tenant_id = p_tenant AND job_id IS NOT DISTINCT FROM p_job
               AND kind = p_kind AND created_at > clock_timestamp() - p_quiet) THEN
        RETURN NULL;
    END IF;
    INSERT INTO alerts (tenant_id, job_id, kind, detail)
        VALUES (p_tenant, p_job, p_kind, p_detail) RETURNING id INTO a;
    IF p_job IS NOT NULL THEN
        INSERT INTO job_events (job_id, from_state, to_state, reason, detail)
            SELECT id, state, state, 'alert: ' || p_kind,
                   p_detail || jsonb_build_object('kind', 'alert', 'alert', p_kind, 'alert_id', a)
            FROM jobs WHERE id = p_job;
    END IF;
    INSERT INTO webhook_deliveries (webhook_id, alert_id)
        SELECT w.id, a FROM webhooks w
        WHERE w.tenant_id = p_tenant AND w.deleted_at IS NULL
        AND (w.kinds IS NULL OR p_kind = ANY (w.kinds));
    RETURN a;
END $$;
