-- Upstream owners' terms travel with what is trained from their data
-- (docs/datasets.md, "Terms that travel"). held_for lists the tenants
-- whose checkpoint or dataset a job trained from under a grant that did
-- not let it leave: another tenant's restricted checkpoint, one granted
-- without download, or another tenant's dataset (a dataset grant allows
-- reading by attempts only). Fixed when the job is submitted (job_init)
-- and when a checkpoint is registered (checkpoints), inherited along the
-- chain, never shortened. A checkpoint held for a tenant other than its
-- own cannot be downloaded by its tenant, granted to another, or shared.
ALTER TABLE job_init ADD COLUMN held_for uuid[] NOT NULL DEFAULT '{}';
ALTER TABLE checkpoints ADD COLUMN held_for uuid[] NOT NULL DEFAULT '{}';
