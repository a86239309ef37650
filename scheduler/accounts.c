/*
 * accounts.c - each tenant is a Slurm account whose GrpTRES mirrors its
 * quota, so Slurm enforces the quota too.
 *
 * A tenant may hold max_gpus guaranteed and borrow_gpus borrowed devices:
 * GPUs, or CPU ranks for CPU jobs. Every task of a batch job takes one CPU
 * and, on GPU nodes, one GPU, so the account's limit is
 * GrpTRES=cpu=<n>,gres/gpu=<n> with n = max_gpus + borrow_gpus: Slurm
 * holds a tenant to what it may ever hold, and which of its devices are
 * borrowed is the scheduler's business (scheduler/preempt.h). Slurm's own
 * preemption stays off (deploy/slurm leaves PreemptType at preempt/none): it would
 * stop jobs without the checkpoint trainyard asks for first, and the jobs
 * it is given are only those trainyard admitted, so its priorities are
 * not mirrored either.
 * sacctmgr runs through sl_tool() with an argv array (tenant names match
 * ^[a-z][a-z0-9-]*$ and no shell sees them); it is called only when a
 * tenant is new or its quota changed, which slurm_accounts remembers.
 *
 * Batch jobs run as their tenant's Unix user (docs/identity.md), which
 * needs an association in the tenant's account (deploy/slurm enforces
 * associations): accounts_associate() makes it before the tenant's first
 * dispatch, and slurm_accounts.assoc_uid remembers whose it made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "log.h"
#include "scheduler.h"

void sched_account_name(const char *tenant, char out[80])
{
	snprintf(out, 80, "ty-%s", tenant);
}

/* sacctmgr -i -Q with args. RET its exit status, or -1 when it could not run. */
static int sacctmgr(const char *const *args)
{
	const char *argv[16] = {"sacctmgr", "-i", "-Q"};
	int k = 3;
	for (int i = 0; args[i] && k < 15; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	return sl_tool(argv, NULL, 0);
}

static int sync_one(sched *s, const char *tenant_id, const char *name, const char *tres,
                    bool exists)
{
	char account[80], tres_arg[128], name_arg[96];
	sched_account_name(name, account);
	snprintf(tres_arg, sizeof(tres_arg), "GrpTRES=%s", tres);
	snprintf(name_arg, sizeof(name_arg), "name=%s", account);
	if (!exists) {
		const char *add[] = {"add",
		                     "account",
		                     account,
		                     "Description=trainyard tenant",
		                     "Organization=trainyard",
		                     NULL};
		sacctmgr(add); /* an account that exists already is fine */
	}
	const char *mod[] = {"modify", "account", name_arg, "set", tres_arg, NULL};
	int rc = sacctmgr(mod);
	if (rc != 0 && rc != 1) { /* 1: nothing to change */
		log_printf(LOG_WARN, "sacctmgr could not set %s on account %s (status %d)",
		           tres_arg, account, rc);
		return -1;
	}
	const char *p[] = {tenant_id, account, tres};
	return db_query(
	    s->db, NULL,
	    "INSERT INTO slurm_accounts (tenant_id, account, grp_tres) VALUES ($1, $2, $3)"
	    " ON CONFLICT (tenant_id) DO UPDATE SET grp_tres = $3,"
	    " synced_at = clock_timestamp()",
	    3, p);
}

int accounts_sync(sched *s)
{
	if (!s->sync_accounts)
		return 0;
	PGresult *r;
	int rc = db_query(s->db, &r,
	                  "SELECT t.id, t.name, 'cpu=' || (q.max_gpus + q.borrow_gpus) || "
	                  "',gres/gpu=' || (q.max_gpus + q.borrow_gpus),"
	                  " a.tenant_id IS NOT NULL"
	                  " FROM tenants t JOIN quotas q ON q.tenant_id = t.id"
	                  " LEFT JOIN slurm_accounts a ON a.tenant_id = t.id"
	                  " WHERE a.grp_tres IS DISTINCT FROM"
	                  " 'cpu=' || (q.max_gpus + q.borrow_gpus) || ',gres/gpu=' || (q.max_gpus "
	                  "+ q.borrow_gpus)",
	                  0, NULL);
	if (rc) {
		PQclear(r);
		return -1;
	}
	int failed = 0;
	for (int i = 0; i < PQntuples(r); i++)
		failed += sync_one(s, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
		                   PQgetvalue(r, i, 3)[0] == 't') != 0;
	if (PQntuples(r) > 0)
		log_printf(LOG_INFO, "Slurm accounts: %d synced, %d failed", PQntuples(r) - failed,
		           failed);
	PQclear(r);
	return failed ? -1 : 0;
}

int accounts_associate(sched *s, const char *tenant_id, const char *name, const tenant_identity *id)
{
	char uid[16];
	snprintf(uid, sizeof(uid), "%u", (unsigned)id->uid);
	const char *p[] = {tenant_id, uid};
	PGresult *r;
	int rc = db_query(s->db, &r,
	                  "SELECT 1 FROM slurm_accounts WHERE tenant_id = $1"
	                  " AND assoc_uid = $2::int",
	                  2, p);
	int done = rc == 0 ? PQntuples(r) : 0;
	PQclear(r);
	if (rc || done)
		return rc ? -1 : 0;
	char account[80], acc_arg[96];
	sched_account_name(name, account);
	snprintf(acc_arg, sizeof(acc_arg), "account=%s", account);
	/* the user's name comes from passwd (identity_usable), never from a request */
	const char *assoc[] = {"add", "user", id->user, acc_arg, NULL};
	rc = sacctmgr(assoc);
	if (rc != 0 && rc != 1) { /* 1: it is there already */
		log_printf(LOG_WARN, "sacctmgr could not add user %s to account %s (status %d)",
		           id->user, account, rc);
		return 1;
	}
	log_printf(LOG_INFO, "Slurm: user %s (uid %s) may run jobs in account %s", id->user, uid,
	           account);
	rc = db_query(s->db, NULL,
	              "UPDATE slurm_accounts SET assoc_uid = $2::int WHERE tenant_id = $1", 2, p);
	return rc ? -1 : 0;
}
