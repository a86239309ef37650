/*
 * identity.c - a tenant's Unix user, before its jobs are dispatched
 * (docs/identity.md).
 *
 * Every cycle, each tenant with queued jobs is checked before admission:
 * it has a Unix user of its own (given from the pool on first need), not
 * root and not the scheduler's; the user has an association in the
 * tenant's Slurm account; and the tenant's directories in the storage
 * root, the data root and the spool exist as that user's, mode 0700. A
 * tenant that fails any of these is held with the reason on its first job
 * ("identity: ..."): its jobs never fall back to another user.
 */
#include <stdio.h>

#include "scheduler.h"

int sched_tenant_ready(sched *s, const char *tenant_id, const char *name, char *why, size_t n)
{
	tenant_identity id;
	char msg[512];
	int rc = identity_ensure(s->db, s->cfg, tenant_id, &id, msg, sizeof(msg));
	if (rc < 0)
		return -1;
	if (rc == 0 && identity_usable(&id, msg, sizeof(msg)) < 0)
		rc = 1;
	if (rc == 0 && s->sync_accounts) {
		rc = accounts_associate(s, tenant_id, name, &id);
		if (rc < 0)
			return -1;
		if (rc)
			snprintf(msg, sizeof(msg),
			         "Slurm refused an association for the tenant's user %s", id.user);
	}
	const char *roots[] = {s->storage_root, s->data_root, s->spool};
	if (rc == 0 && identity_tenant_dirs(roots, 3, tenant_id, &id, msg, sizeof(msg)) != 0)
		rc = 1;
	if (rc)
		snprintf(why, n, "identity: %s", msg);
	return rc;
}
