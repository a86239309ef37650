/*
 * auditseq.c - see auditseq.h.
 */
#include "auditseq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "db.h"
#include "log.h"

struct auditseq {
	const ty_config *cfg;
	const audit_signer *signer;
	pthread_t thread;
	atomic_bool stopping;
};

static void nap(auditseq *s, int ms)
{
	for (int slept = 0; slept < ms && !atomic_load(&s->stopping); slept += 50)
		nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
}

static void *run(void *arg)
{
	auditseq *s = arg;
	auditlog_policy p = {.head_records = s->cfg->audit_head_records,
	                     .head_seconds = s->cfg->audit_head_s};
	PGconn *c = NULL;
	bool warned = false;
	while (!atomic_load(&s->stopping)) {
		char err[512];
		if (!c && !(c = db_connect(s->cfg->db, err, sizeof(err)))) {
			if (!warned)
				log_printf(LOG_WARN, "audit sequencer waits for the database: %s",
				           err);
			warned = true;
			nap(s, s->cfg->db_retry_ms);
			continue;
		}
		auditlog_step_result r;
		int rc = auditlog_step(c, s->signer, &p, false, &r);
		if (rc) {
			if (!warned)
				log_printf(LOG_WARN,
				           "audit sequencer: step failed (%s); trying again",
				           err_info((err_code)-rc)->code);
			warned = true;
			db_close(c);
			c = NULL;
			nap(s, s->cfg->db_retry_ms);
			continue;
		}
		warned = false;
		if (r.signed_now)
			log_event(LOG_INFO, "audit tree head",
			          json_pack("{s:I, s:s}", "size", (json_int_t)r.head.size, "key_id",
			                    r.head.key_id));
		if (!r.more)
			nap(s, AUDITSEQ_IDLE_MS);
	}
	db_close(c);
	return NULL;
}

auditseq *auditseq_start(const ty_config *cfg, const audit_signer *signer)
{
	auditseq *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = cfg;
	s->signer = signer;
	atomic_init(&s->stopping, false);
	if (pthread_create(&s->thread, NULL, run, s) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

void auditseq_stop(auditseq *s)
{
	if (!s)
		return;
	atomic_store(&s->stopping, true);
	pthread_join(s->thread, NULL);
	free(s);
}
