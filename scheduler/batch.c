/*
 * batch.c - an attempt's batch script, environment and submission.
 */
#include "batch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "storage.h"

void batch_tenant_spool(const sched *s, const char *tenant_id, char *out, size_t n)
{
	snprintf(out, n, "%s/tenants/%s", s->spool, tenant_id);
}

void batch_credential_path(const sched *s, const char *tenant_id, const char *attempt_id, char *out,
                           size_t n)
{
	snprintf(out, n, "%s/tenants/%s/%s.credential", s->spool, tenant_id, attempt_id);
}

static void output_path(const sched *s, const dispatch_item *it, char *out, size_t n)
{
	snprintf(out, n, "%s/tenants/%s/%s-%d.out", s->spool, it->tenant_id, it->job_id,
	         it->number);
}

/* The overrides the retry policy writes; nothing else may reach a script. */
static int override_known(const char *o)
{
	static const char *const known[] = {"training.recompute=full", NULL};
	for (int i = 0; known[i]; i++)
		if (strcmp(o, known[i]) == 0)
			return 1;
	return 0;
}

int batch_script(const sched *s, const dispatch_item *it, char *out, size_t n)
{
	/* the worker's path is ours, but quote it: no quote may end the word early */
	if (strchr(s->worker_bin, '\'') || strchr(s->worker_bin, '\n'))
		return -1;
	int len = snprintf(out, n,
	                   "#!/bin/sh\n"
	                   "# trainyard: attempt %d of job %s\n"
	                   "exec '%s' attempt --slots %d",
	                   it->number, it->job_id, s->worker_bin, it->nodes * it->ranks_per_node);
	for (int i = 0; i < it->n_overrides && len >= 0 && (size_t)len < n; i++) {
		if (!override_known(it->overrides[i]))
			return -1;
		len += snprintf(out + len, n - (size_t)len, " --set '%s'", it->overrides[i]);
	}
	if (len >= 0 && (size_t)len < n)
		len += snprintf(out + len, n - (size_t)len, "\n");
	return len < 0 || (size_t)len >= n ? -1 : 0;
}

/* NAME=value into env[*k], from the heap. */
static void env_add(char **env, int *k, const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 2;
	char *e = malloc(n);
	if (!e)
		return;
	snprintf(e, n, "%s=%s", name, value);
	env[(*k)++] = e;
}

int batch_submit(sched *s, dispatch_item *it, char err[SL_ERR_MAX])
{
	char script[4096], cred[PATH_MAX], out[PATH_MAX], comment[96], name[48], account[80],
	    hb[16], home[PATH_MAX];
	if (it->uid == 0 || it->gid == 0) {
		/* never the scheduler's own user: admission holds a tenant without one */
		snprintf(err, SL_ERR_MAX, "the tenant has no Unix user to run the job as");
		return -1;
	}
	if (batch_script(s, it, script, sizeof(script)) < 0) {
		snprintf(err, SL_ERR_MAX, "the batch script could not be written");
		return -1;
	}
	batch_credential_path(s, it->tenant_id, it->attempt_id, cred, sizeof(cred));
	batch_tenant_spool(s, it->tenant_id, home, sizeof(home));
	output_path(s, it, out, sizeof(out));
	snprintf(comment, sizeof(comment), SL_COMMENT_PREFIX "%s attempt=%d", it->job_id,
	         it->number);
	snprintf(name, sizeof(name), "ty-%s", it->job_id);
	sched_account_name(it->tenant, account);
	snprintf(hb, sizeof(hb), "%d", s->cfg->heartbeat_s);
	const char *path = getenv("PATH");
	char *env[16];
	int k = 0;
	env_add(env, &k, "PATH", path ? path : "/usr/local/bin:/usr/bin:/bin");
	env_add(env, &k, "LANG", "C.UTF-8");
	env_add(env, &k, "HOME", home);
	env_add(env, &k, "TRAINYARD_URL", s->cfg->url);
	if (s->cfg->ca_file[0])
		env_add(env, &k, "TRAINYARD_CA_FILE", s->cfg->ca_file);
	env_add(env, &k, "TRAINYARD_ATTEMPT", it->attempt_id);
	env_add(env, &k, "TRAINYARD_ATTEMPT_TOKEN_FILE", cred);
	env_add(env, &k, "TRAINYARD_STORAGE_ROOT", s->storage_root);
	env_add(env, &k, "TRAINYARD_DATA_ROOT", s->data_root);
	env_add(env, &k, "TRAINYARD_HEARTBEAT_S", hb);
	env[k] = NULL;
	int warn = it->time_limit_minutes * 6; /* a tenth of the limit, in seconds */
	sl_submit sub = {
	    .name = name,
	    .comment = comment,
	    .account = account,
	    .partition = it->partition,
	    .script = script,
	    .work_dir = home,
	    .std_out = out,
	    .env = env,
	    .nodes = it->nodes,
	    .tasks_per_node = it->ranks_per_node,
	    .gpus_per_node = it->gpus_per_node,
	    .time_limit_minutes = it->time_limit_minutes,
	    .warn_seconds = warn < BATCH_WARN_SECONDS ? warn : BATCH_WARN_SECONDS,
	    .uid = it->uid,
	    .gid = it->gid,
	};
	int rc = sl_submit_batch(&sub, &it->slurm_id, err);
	for (int i = 0; i < k; i++)
		free(env[i]);
	return rc;
}

int batch_spool_prepare(const sched *s)
{
	char err[1024];
	/* both levels are shared: opened to 0711 for the tenants' users to pass */
	storage_owners o = storage_owners_for(geteuid(), getegid());
	const char *steps[] = {"tenants"};
	if (storage_private_dirs_as(s->spool, steps, 1, &o, err, sizeof(err)) != 0) {
		log_printf(LOG_ERROR, "the spool: %s", err);
		return -1;
	}
	return 0;
}
