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

void batch_credential_path(const sched *s, const char *attempt_id, char *out, size_t n)
{
	snprintf(out, n, "%s/credentials/%s", s->spool, attempt_id);
}

static void output_path(const sched *s, const dispatch_item *it, char *out, size_t n)
{
	snprintf(out, n, "%s/output/%s-%d.out", s->spool, it->job_id, it->number);
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
	    hb[16];
	if (batch_script(s, it, script, sizeof(script)) < 0) {
		snprintf(err, SL_ERR_MAX, "the batch script could not be written");
		return -1;
	}
	batch_credential_path(s, it->attempt_id, cred, sizeof(cred));
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
	env_add(env, &k, "HOME", s->spool);
	env_add(env, &k, "TRAINYARD_URL", s->cfg->url);
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
	    .work_dir = s->work_dir,
	    .std_out = out,
	    .env = env,
	    .nodes = it->nodes,
	    .tasks_per_node = it->ranks_per_node,
	    .gpus_per_node = it->gpus_per_node,
	    .time_limit_minutes = it->time_limit_minutes,
	    .warn_seconds = warn < BATCH_WARN_SECONDS ? warn : BATCH_WARN_SECONDS,
	    .uid = getuid(),
	    .gid = getgid(),
	};
	int rc = sl_submit_batch(&sub, &it->slurm_id, err);
	for (int i = 0; i < k; i++)
		free(env[i]);
	return rc;
}

/* Create path 0700 if missing; either way it must pass the storage's check. */
static int mkdir_private(const char *path)
{
	char err[512];
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		log_printf(LOG_ERROR, "could not create %s: %s", path, strerror(errno));
		return -1;
	}
	if (storage_dir_check(path, err, sizeof(err)) != 0) {
		log_printf(LOG_ERROR, "the spool is not private: %s", err);
		return -1;
	}
	return 0;
}

int batch_spool_prepare(const sched *s)
{
	char p[PATH_MAX];
	if (mkdir_private(s->spool) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/credentials", s->spool);
	if (mkdir_private(p) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/output", s->spool);
	return mkdir_private(p);
}
