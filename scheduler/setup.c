/*
 * setup.c - the scheduler's state from its settings: who it is, where its
 * spool, storage and data roots and worker are, and its policy numbers.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "log.h"
#include "scheduler.h"

/* The path of trainyard-worker beside this program. */
static void worker_beside(char *out, size_t n)
{
	char self[PATH_MAX / 2];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k <= 0) {
		snprintf(out, n, "trainyard-worker");
		return;
	}
	self[k] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(out, n, "%s/trainyard-worker", self);
}

/* An absolute form of a path the settings give relative to the working directory. */
static void absolute(const char *in, char *out, size_t n)
{
	char cwd[PATH_MAX / 2];
	if (in[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(out, n, "%s", in);
	else
		snprintf(out, n, "%s/%s", cwd, in);
}

int sched_setup(sched *s, const ty_config *cfg)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	char host[64] = "localhost";
	gethostname(host, sizeof(host) - 1);
	snprintf(s->owner, sizeof(s->owner), "%s:%ld", host, (long)getpid());
	/* absolute paths (config.def's PATH), which every Slurm node sees alike */
	snprintf(s->spool, sizeof(s->spool), "%s", cfg->sched_spool);
	snprintf(s->storage_root, sizeof(s->storage_root), "%s", cfg->storage_root);
	snprintf(s->data_root, sizeof(s->data_root), "%s", cfg->data_root);
	absolute(".", s->work_dir, sizeof(s->work_dir));
	if (cfg->sched_worker_bin[0])
		absolute(cfg->sched_worker_bin, s->worker_bin, sizeof(s->worker_bin));
	else
		worker_beside(s->worker_bin, sizeof(s->worker_bin));
	s->lease_s = cfg->sched_lease_s;
	s->lost_s = cfg->sched_lost_s;
	s->backoff_s = cfg->retry_backoff_s;
	s->batch = cfg->sched_batch;
	s->max_admit = cfg->sched_max_admit;
	s->halflife_h = cfg->fairshare_halflife_h;
	s->sync_accounts = cfg->sched_accounts != 0;
	const char *crash = getenv("TRAINYARD_SCHED_CRASH_AT");
	s->crash_at = crash && crash[0] ? crash : NULL;
	if (access(s->worker_bin, X_OK) < 0) {
		log_printf(LOG_ERROR, "the worker %s is not an executable file", s->worker_bin);
		return -1;
	}
	return batch_spool_prepare(s);
}

void sched_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}
