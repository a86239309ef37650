/*
 * h_logs.c - GET /v1/jobs/{job}/logs[?follow=1]: the job's decrypted log.
 *
 * Each attempt's runtime writes one sealed log, "attempt-<n>.log" in the
 * job's logs area (storage_log_name), one record per line of output. The
 * answer is every attempt's records in attempt order, each followed by
 * "\n", as text/plain, streamed (api_stream): memory is one record.
 *
 * Follow. The answer stays open after the existing records and sends the
 * ones appended later. It ends when the newest attempt's log is closed
 * and the job is in a final state; when the job is final but the log is
 * not closed (a runtime that died), LOG_FINAL_GRACE_MS after the last
 * record; when the client goes away; or after TRAINYARD_LOG_FOLLOW_SECONDS.
 * With nothing to send, the reader answers API_STREAM_WAIT: the
 * connection is suspended and asked again every API_STREAM_POLL_MS
 * (stream_hub.h), so a follower holds no server thread. The job's state
 * and newest attempt are looked up at most every LOG_LOOK_MS, on a pooled
 * connection taken for that one statement. At most TRAINYARD_LOG_FOLLOWERS
 * answers follow at once, TRAINYARD_LOG_FOLLOWERS_PER_TENANT of one tenant's
 * jobs and TRAINYARD_LOG_FOLLOWERS_PER_TOKEN with one token (followers.h);
 * more answer 429 log_followers_full.
 *
 * A record that fails authentication ends the answer with the line
 * LOG_AUTH_MARKER: no byte of a bad record, and nothing after it, is
 * sent. A job without a data key has written nothing, so it answers what
 * there is (nothing, or for a follower what comes once it has a key); a
 * log on disk without its key (the tenant's keys destroyed) answers 503.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "followers.h"
#include "handlers.h"
#include "jobdata.h"
#include "jobstate.h"
#include "log.h"
#include "server.h"
#include "storage.h"
#include "tenantfs.h"

#define LOG_AUTH_MARKER    "trainyard: log record failed authentication\n"
#define LOG_IO_MARKER      "trainyard: log could not be read\n"
#define LOG_KEY_MARKER     "trainyard: the job's data key is unavailable\n"
#define LOG_LOOK_MS        1000
#define LOG_FINAL_GRACE_MS 5000
#define LOG_RETRY_AFTER    "10" /* seconds, when every follower slot is taken */

typedef struct log_stream {
	api_server *srv;
	char tenant_id[37], job_id[37];
	char token_id[40]; /* follow: whose follower slot it holds */
	char user_id[40];
	char request_id[REQUEST_ID_MAX + 1];
	crypt_object_ctx ctx;
	bool have_key;
	bool follow;      /* holds a follower slot */
	long long until;  /* follow: the end, monotonic ms */
	long long look;   /* follow: the next database look, monotonic ms */
	long long grace;  /* follow: when a final job's unclosed log is given up; 0 unset */
	int attempt;      /* whose log is open or next */
	int newest;       /* newest attempt number known; 0 none */
	bool final;       /* the job was in a final state at the last look */
	bool last_closed; /* the log read last ended with its closing record */
	crypt_log_reader *r;
	const char *out; /* pending output: a record or a marker */
	size_t out_len;
	bool newline; /* a "\n" follows out */
	bool done;    /* nothing more after the pending output */
} log_stream;

enum { ADV_DATA, ADV_WAIT, ADV_END };

/* The job's state and newest attempt. RET 0 or -ERR_*. */
static int job_progress(PGconn *c, const char *job_id, bool *final, int *newest)
{
	const char *p[] = {job_id};
	PGresult *r;
	int rc = db_query(c, &r,
	                  "SELECT j.state, (SELECT coalesce(max(a.number), 0) FROM job_attempts a"
	                  " WHERE a.job_id = j.id) FROM jobs j WHERE j.id = $1",
	                  1, p);
	if (rc == 0 && PQntuples(r) != 1)
		rc = -ERR_JOB_NOT_FOUND;
	if (rc == 0) {
		int s = job_state_parse(PQgetvalue(r, 0, 0));
		*final = s >= 0 && job_state_final((job_state)s);
		*newest = atoi(PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	return rc;
}

/* Follow: refresh the job's progress, at most every LOG_LOOK_MS. */
static void look(log_stream *ls)
{
	long long now = clock_mono_ms();
	if (now < ls->look)
		return;
	ls->look = now + LOG_LOOK_MS;
	PGconn *c;
	if (db_acquire(ls->srv->pool, &c) < 0)
		return; /* try again at the next look */
	bool final = ls->final;
	int newest = ls->newest;
	if (job_progress(c, ls->job_id, &final, &newest) == 0) {
		ls->final = final;
		ls->newest = newest > ls->newest ? newest : ls->newest;
	}
	if (!ls->have_key && ls->srv->has_master &&
	    jobdata_ctx(ls->srv, c, ls->tenant_id, ls->job_id, &ls->ctx, NULL) == 0)
		ls->have_key = true;
	db_release(ls->srv->pool, c);
}

static int emit_marker(log_stream *ls, const char *marker, const char *why)
{
	log_event(LOG_ERROR, "job log answer ended",
	          json_pack("{s:s, s:s, s:i, s:s}", "request_id", ls->request_id, "job", ls->job_id,
	                    "attempt", ls->attempt, "reason", why));
	ls->out = marker;
	ls->out_len = strlen(marker);
	ls->newline = false;
	ls->done = true;
	return ADV_DATA;
}

/* Nothing to send now. Follow: wait, or end once the job is over. */
static int idle(log_stream *ls, bool closed)
{
	if (!ls->follow)
		return ADV_END;
	if (ls->final) {
		long long now = clock_mono_ms();
		if (closed || (ls->grace && now >= ls->grace))
			return ADV_END;
		if (!ls->grace)
			ls->grace = now + LOG_FINAL_GRACE_MS;
	}
	return ADV_WAIT;
}

enum { OPEN_OK, OPEN_MISSING, OPEN_WAIT, OPEN_MARKER };

/* Open the current attempt's log. RET OPEN_*; OPEN_MARKER: a marker ends the answer. */
static int open_log(log_stream *ls)
{
	char name[32], rel[STORAGE_NAME_MAX + 1], err[512];
	if (storage_log_name(ls->attempt, name, sizeof(name)) < 0 ||
	    storage_object_rel(ls->job_id, STORAGE_LOGS, name, rel, sizeof(rel)) < 0)
		return emit_marker(ls, LOG_IO_MARKER, "invalid log path"), OPEN_MARKER;
	int fd =
	    tenantfs_open_file(ls->srv->cfg->storage_root, ls->tenant_id, rel, err, sizeof(err));
	if (fd == -ERR_STORAGE_IO && errno == ENOENT)
		return OPEN_MISSING;
	if (fd < 0) {
		log_event(LOG_ERROR, "tenant storage refused",
		          json_pack("{s:s, s:s, s:s}", "tenant_id", ls->tenant_id, "job_id",
		                    ls->job_id, "reason", err));
		return emit_marker(ls, LOG_IO_MARKER,
		                   fd == -ERR_STORAGE_UNSAFE
		                       ? "the log in storage is not a plain file of the tenant's"
		                       : "the log could not be read"),
		       OPEN_MARKER;
	}
	if (!ls->have_key) {
		look(ls); /* a log is there: its key must be too */
		if (!ls->have_key) {
			close(fd);
			return ls->follow && !ls->final
			           ? OPEN_WAIT
			           : (emit_marker(ls, LOG_KEY_MARKER, "no data key"), OPEN_MARKER);
		}
	}
	int rc = crypt_log_reader_open(fd, name, &ls->ctx, name, &ls->r, err, sizeof(err));
	if (rc < 0)
		return emit_marker(ls, LOG_IO_MARKER, err), OPEN_MARKER;
	return OPEN_OK;
}

/* Move to the next pending output. RET ADV_*. */
static int advance(log_stream *ls)
{
	for (;;) {
		if (ls->done || (ls->follow && clock_mono_ms() >= ls->until))
			return ADV_END;
		if (!ls->r) {
			if (ls->attempt > ls->newest) {
				if (ls->follow)
					look(ls);
				if (ls->attempt <= ls->newest)
					continue;
				return idle(ls, ls->last_closed || ls->newest == 0);
			}
			int o = open_log(ls);
			if (o == OPEN_MARKER)
				return ADV_DATA;
			if (o == OPEN_MISSING && ls->follow && ls->attempt == ls->newest)
				look(ls); /* the newest attempt may not have written yet */
			if (o == OPEN_MISSING && (!ls->follow || ls->attempt < ls->newest)) {
				ls->last_closed = false;
				ls->attempt++;
				continue;
			}
			if (o != OPEN_OK)
				return idle(ls, false);
		}
		const void *rec;
		size_t len;
		char err[512];
		int rc = crypt_log_next(ls->r, &rec, &len, err, sizeof(err));
		if (rc == CRYPT_LOG_RECORD) {
			ls->out = rec;
			ls->out_len = len;
			ls->newline = true;
			ls->grace = 0;
			return ADV_DATA;
		}
		if (rc < 0)
			return emit_marker(
			    ls, rc == -ERR_DATA_AUTH_FAILED ? LOG_AUTH_MARKER : LOG_IO_MARKER, err);
		crypt_log_state st;
		crypt_log_reader_state(ls->r, &st);
		if (ls->follow && !st.closed && ls->attempt >= ls->newest)
			look(ls);
		if (st.closed || !ls->follow || ls->attempt < ls->newest) {
			crypt_log_reader_free(ls->r);
			ls->r = NULL;
			ls->last_closed = st.closed;
			ls->attempt++;
			continue;
		}
		return idle(ls, false);
	}
}

static ssize_t log_read(void *arg, char *buf, size_t max)
{
	log_stream *ls = arg;
	size_t n = 0;
	int adv = ADV_DATA;
	while (n < max) {
		if (ls->out_len > 0) {
			size_t k = ls->out_len < max - n ? ls->out_len : max - n;
			memcpy(buf + n, ls->out, k);
			ls->out += k;
			ls->out_len -= k;
			n += k;
			continue;
		}
		if (ls->newline) {
			buf[n++] = '\n';
			ls->newline = false;
			continue;
		}
		if ((adv = advance(ls)) != ADV_DATA)
			break;
	}
	if (n > 0)
		return (ssize_t)n;
	return adv == ADV_WAIT ? API_STREAM_WAIT : API_STREAM_END;
}

static void log_stream_free(void *arg)
{
	log_stream *ls = arg;
	if (!ls)
		return;
	crypt_log_reader_free(ls->r);
	crypt_object_ctx_clear(&ls->ctx);
	if (ls->follow)
		followers_give_user(ls->srv->followers, ls->tenant_id, ls->user_id, ls->token_id);
	free(ls);
}

/* Whether any attempt up to newest left a log file. */
static bool any_log(const api_req *rq, int newest)
{
	for (int n = 1; n <= newest; n++) {
		char name[32], path[4096];
		struct stat st;
		if (storage_log_name(n, name, sizeof(name)) == 0 &&
		    storage_object_path(rq->cfg->storage_root, rq->scope.tenant_id,
		                        rq->scope.job_id, STORAGE_LOGS, name, path,
		                        sizeof(path)) == 0 &&
		    lstat(path, &st) == 0)
			return true;
	}
	return false;
}

/* RET 0 with *follow, or an error answered (< 0). */
static int follow_arg(api_req *rq, bool *follow)
{
	const char *f = api_query(rq, "follow");
	*follow = f && (strcmp(f, "1") == 0 || strcmp(f, "true") == 0);
	if (f && !*follow && strcmp(f, "0") != 0 && strcmp(f, "false") != 0)
		return api_fail(rq, ERR_BAD_REQUEST, "follow is 1 or 0"), -1;
	return 0;
}

/* A follower slot for the job's tenant and the caller's token. RET 0, or 429 answered (< 0). */
static int follower_take(api_req *rq)
{
	followers_result r = followers_take_user(rq->srv->followers, rq->scope.tenant_id,
	                                         rq->who.user_id, rq->who.token_id);
	if (r == FOLLOWERS_TAKEN)
		return 0;
	snprintf(rq->retry_after, sizeof(rq->retry_after), "%s", LOG_RETRY_AFTER);
	if (r == FOLLOWERS_TENANT_FULL)
		api_fail(rq, ERR_LOG_FOLLOWERS_FULL,
		         "%d logs of this tenant's jobs are being followed already",
		         rq->cfg->log_followers_per_tenant);
	else if (r == FOLLOWERS_USER_FULL)
		api_fail(rq, ERR_LOG_FOLLOWERS_FULL,
		         "%d job logs are being followed by this user already, over all of the "
		         "user's tokens",
		         rq->cfg->log_followers_per_user);
	else if (r == FOLLOWERS_TOKEN_FULL)
		api_fail(rq, ERR_LOG_FOLLOWERS_FULL,
		         "%d job logs are being followed with this token already",
		         rq->cfg->log_followers_per_token);
	else
		api_fail(rq, ERR_LOG_FOLLOWERS_FULL, "%d job logs are being followed already",
		         rq->cfg->log_followers);
	return -1;
}

int h_job_logs(api_req *rq)
{
	bool follow;
	if (follow_arg(rq, &follow) < 0)
		return 0;
	log_stream *ls = calloc(1, sizeof(*ls));
	if (!ls)
		return api_fail(rq, ERR_INTERNAL, "out of memory");
	ls->srv = rq->srv;
	snprintf(ls->tenant_id, sizeof(ls->tenant_id), "%s", rq->scope.tenant_id);
	snprintf(ls->job_id, sizeof(ls->job_id), "%s", rq->scope.job_id);
	snprintf(ls->request_id, sizeof(ls->request_id), "%s", rq->request_id);
	ls->attempt = 1;
	int version = 0;
	int rc = api_db(rq);
	if (rc == 0)
		rc = job_progress(rq->db, ls->job_id, &ls->final, &ls->newest);
	if (rc == 0) {
		rc = jobdata_ctx(rq->srv, rq->db, ls->tenant_id, ls->job_id, &ls->ctx, &version);
		ls->have_key = rc == 0;
		/* no key and no log: nothing was written, so there is nothing to decrypt */
		if (rc == -ERR_KEYS_UNAVAILABLE && rq->srv->has_master && !any_log(rq, ls->newest))
			rc = 0;
	}
	if (rc) {
		free(ls);
		return rc == -ERR_JOB_NOT_FOUND ? api_fail(rq, rc, "%s", err_info(-rc)->doc)
		                                : jobdata_fail(rq, rc);
	}
	char res[64];
	snprintf(res, sizeof(res), "job/%s/logs", ls->job_id);
	if (jobdata_audit(rq, res, json_pack("{s:b}", "follow", follow), version) < 0 ||
	    (follow && follower_take(rq) < 0)) {
		log_stream_free(ls);
		return 0;
	}
	snprintf(ls->token_id, sizeof(ls->token_id), "%s", rq->who.token_id);
	snprintf(ls->user_id, sizeof(ls->user_id), "%s", rq->who.user_id);
	ls->follow = follow;
	ls->until = clock_mono_ms() + (long long)rq->cfg->log_follow_s * 1000;
	ls->look = clock_mono_ms() + LOG_LOOK_MS;
	rq->status = 200;
	rq->stream = (api_stream){
	    .read = log_read,
	    .free = log_stream_free,
	    .ctx = ls,
	    .content_type = "text/plain; charset=utf-8",
	    .size = API_STREAM_SIZE_UNKNOWN,
	    .idle_s = follow ? rq->cfg->log_follow_s + 60 : 0,
	};
	return 0;
}
